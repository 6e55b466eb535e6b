"""The turn loop: build the request, stream, run the tool calls, append results, repeat.

Every message goes through ``Session.append`` (on disk, redacted) before anything else
sees it; every tool call gets exactly one result; the context engine fits each request to
the window and reacts when the endpoint still rejects it for length.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from clio.agent.prompt import PromptBuilder, to_api
from clio.llm.client import ChatResult, LLMClient
from clio.llm.errors import ContextLengthError
from clio.llm.recover import recover_tool_calls
from clio.memory.context import ContextEngine, Prepared
from clio.messages import Message, make, tool_call_args
from clio.store.sessions import Session
from clio.tools.registry import Registry, ToolContext
from clio.tools.results import maybe_store

MAX_REACTIVE = 3


class TurnUI(Protocol):
    def waiting(self) -> None: ...
    def text(self, delta: str) -> None: ...
    def answer_done(self, content: str, *, interrupted: bool, final: bool) -> None: ...
    def tool_start(self, name: str, args: dict[str, Any]) -> None: ...
    def tool_done(self, name: str, ok: bool, result: str) -> None: ...
    def notice(self, text: str) -> None: ...


@dataclass
class TurnResult:
    content: str = ""
    iterations: int = 0
    interrupted: bool = False
    hit_cap: bool = False
    tool_calls: int = 0
    trims: int = 0
    usage: list[dict[str, int]] = field(default_factory=list)


@dataclass
class Hooks:
    """I/O the loop triggers but does not own (the app provides them)."""

    before_trim: Callable[[int], None] = lambda iteration: None  # write the progress checkpoint
    after_trim: Callable[[], None] = lambda: None  # re-rank memory into the system prompt
    recovery_text: Callable[[], str] = lambda: ""  # summary + todos + git + task anchor
    learned: Callable[[], None] = lambda: None  # persist the estimator's ratio
    window_learned: Callable[[int], None] = lambda tokens: None  # the server stated a smaller window
    redact_text: Callable[[str], str] = lambda s: s  # safety net on outgoing text
    turn_started: Callable[[], None] = lambda: None  # the user's message is on disk; nothing sent yet


class Orchestrator:
    def __init__(
        self,
        *,
        session: Session,
        engine: ContextEngine,
        client: LLMClient,
        registry: Registry,
        tool_ctx: ToolContext,
        prompt: PromptBuilder,
        ui: TurnUI,
        hooks: Hooks | None = None,
        max_iterations: int = 40,
        tool_recovery: bool = True,
        temperature: float | None = None,
        max_output_tokens: int | None = None,
        profile: str = "full",
        tool_choice: str | None = None,
    ) -> None:
        self.session = session
        self.engine = engine
        self.client = client
        self.registry = registry
        self.tool_ctx = tool_ctx
        self.prompt = prompt
        self.ui = ui
        self.hooks = hooks or Hooks()
        self.max_iterations = max_iterations
        self.tool_recovery = tool_recovery
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens
        self.profile = profile  # "full" or "lean" (clio.agent.profile); the app may change it mid-turn
        self.tool_choice = tool_choice  # "required" applies to a turn's first request; later ones are auto
        self.last_sent: list[dict[str, Any]] = []

    # -- helpers the app and commands use ----------------------------------------------------------
    def tools(self) -> list[dict[str, Any]]:
        """The tool schemas sent with the next request (the current profile's)."""
        return self.registry.schemas(self.profile)

    def add(self, msg: Message) -> Message:
        """Archive a message (on disk first) and put it in the window."""
        msg = self.session.append(msg)
        self.engine.append(msg)
        return msg

    def save_state(self) -> None:
        state = self.engine.state()
        state["archived"] = len(self.session.messages)  # what the window has seen, for a crash resume
        self.session.save_state(state)

    # -- the loop --------------------------------------------------------------------------------
    def run_turn(self, text: str) -> TurnResult:
        out = TurnResult()
        self.add(make("user", text))
        self.save_state()
        self.hooks.turn_started()
        while out.iterations < self.max_iterations:
            out.iterations += 1
            tools = self.tools()
            prep = self._prepare(tools, out)
            try:
                choice = self._choice(out.iterations)
                result = self._send(prep, tools, out, choice)
            except KeyboardInterrupt:
                out.interrupted = True
                self.ui.answer_done("", interrupted=True, final=True)
                self.save_state()
                return out
            content, calls = result.content, result.tool_calls
            if not calls and self.tool_recovery and content and not result.interrupted:
                content, calls = recover_tool_calls(
                    content, set(self.registry.offered(self.profile)), call_required=choice == "required"
                )
            meta: dict[str, Any] = {}
            if result.interrupted:
                meta["interrupted"] = True
            if result.usage is not None:
                meta["usage"] = result.usage.as_dict()
            self.add(
                make("assistant", content or ("" if not calls else None), tool_calls=calls or None, meta=meta)
            )
            self.ui.answer_done(content, interrupted=result.interrupted, final=not calls)
            if result.interrupted:
                if calls:  # every call gets a result, even an interrupted one
                    for call in calls:
                        self.add(
                            make("tool", "[interrupted by the user before it ran]", tool_call_id=call["id"])
                        )
                out.interrupted, out.content = True, content
                self.save_state()
                return out
            if not calls:
                out.content = content
                self.save_state()
                return out
            if self._run_tools(calls, out):
                self.save_state()
                return out
            self.save_state()
        out.hit_cap = True
        self.ui.notice(
            f"Stopped after {self.max_iterations} tool iterations (max_iterations); "
            "send another message to let the agent continue."
        )
        return out

    def _prepare(self, tools: list[dict[str, Any]], out: TurnResult) -> Prepared:
        prep = self.engine.prepare(self.prompt.system(), tools)
        if prep.trimmed:
            out.trims += 1
            self.hooks.before_trim(out.iterations)
            self.session.new_thread()
            self.hooks.after_trim()  # memory re-ranked for the new situation
            prep = self.engine.prepare(self.prompt.system(), tools)
            self.save_state()
        return prep

    def _choice(self, iteration: int) -> str | None:
        """The tool_choice of a request: a call must happen first, then the model may answer."""
        if self.tool_choice == "required" and iteration > 1:
            return "auto"
        return self.tool_choice

    def _send(
        self, prep: Prepared, tools: list[dict[str, Any]], out: TurnResult, tool_choice: str | None = None
    ) -> ChatResult:
        level = 0
        while True:
            messages = to_api(prep.messages)
            for m in messages:
                if isinstance(m.get("content"), str):
                    m["content"] = self.hooks.redact_text(m["content"])
            self.last_sent = messages
            self.ui.waiting()
            try:
                result = self.client.chat(
                    messages,
                    tools,
                    on_text=self.ui.text,
                    on_retry=lambda reason, wait: self.ui.notice(f"{reason}; retrying in {wait:.1f}s"),
                    tool_choice=tool_choice,
                    temperature=self.temperature,
                    max_tokens=self.max_output_tokens,
                )
            except ContextLengthError as exc:
                level += 1
                if level > MAX_REACTIVE:
                    raise
                if exc.window and exc.window < self.engine.budget.context_window:
                    self.hooks.window_learned(exc.window)  # trust the server's own figure from now on
                self.hooks.before_trim(out.iterations)
                self.session.new_thread()
                self.hooks.after_trim()
                tools = self.tools()  # a stated window may have switched the profile
                prep = self.engine.reactive(level, self.prompt.system(), tools, self.hooks.recovery_text())
                out.trims += 1
                self.save_state()
                continue
            if result.usage is not None:
                self.engine.observe(prep.messages, tools, result.usage.prompt_tokens)
                self.session.add_usage(result.usage.as_dict())
                out.usage.append(result.usage.as_dict())
                self.hooks.learned()
            return result

    def _run_tools(self, calls: list[dict[str, Any]], out: TurnResult) -> bool:
        """Run every call, append one result each. Returns True when the user interrupted."""
        for i, call in enumerate(calls):
            name = call["function"]["name"]
            args = tool_call_args(call)
            self.ui.tool_start(name, args)
            started = time.monotonic()
            try:
                text, ok = self.registry.run(self.tool_ctx, name, call["function"]["arguments"], self.profile)
            except KeyboardInterrupt:
                for rest in calls[i:]:
                    self.add(make("tool", "[interrupted by the user]", tool_call_id=rest["id"]))
                self.ui.tool_done(name, False, "interrupted")
                out.interrupted = True
                return True
            text = maybe_store(self.tool_ctx, name, text)
            msg = self.add(
                make(
                    "tool",
                    text,
                    tool_call_id=call["id"],
                    meta={"tool": name, "ok": ok, "ms": int((time.monotonic() - started) * 1000)},
                )
            )
            out.tool_calls += 1
            self.ui.tool_done(name, ok, str(msg.get("content") or ""))
        return False
