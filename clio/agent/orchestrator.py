"""The turn loop: build the request, stream, run the tool calls, append results, repeat.

Every message goes through ``Session.append`` (on disk, redacted) before anything else
sees it; every tool call gets exactly one result; the context engine fits each request to
the window and reacts when the endpoint still rejects it for length. The loop is also the
one door for trimming: a proactive or reactive trim in a turn, ``trim_now`` and ``compact``
(whose request goes through the same path as a turn's) all end in ``_after_trim``. What happens
reaches the running clio as events (:class:`clio.agent.turn.TurnEvents`) that carry what their
handlers need; nothing the loop reports to calls back into it.
"""

from __future__ import annotations

import time
from typing import Any

from clio.agent.prompt import PromptBuilder, to_api
from clio.agent.stuck import RepeatGuard
from clio.agent.turn import (
    LoopSettings,
    NoEvents,
    SessionLog,
    TrimReport,
    TurnEvents,
    TurnResult,
    TurnUI,
    working_files,
)
from clio.agent.window import Window
from clio.context.engine import ContextEngine, Prepared
from clio.context.stm import latest_user_index
from clio.llm.client import ChatResult, LLMClient
from clio.llm.errors import ContextLengthError
from clio.llm.recover import recover_tool_calls
from clio.messages import Message, make, prompt_meta, tool_call_args
from clio.prompts import load_prompt
from clio.safety.redact import Redactor
from clio.tools.context import ToolContext
from clio.tools.describe import summarize_args
from clio.tools.registry import Registry
from clio.tools.results import maybe_store

MAX_REACTIVE = 3
COMPACT_WORDS, COMPACT_MAX_TOKENS = 400, 1200


class Orchestrator:
    def __init__(
        self,
        *,
        session: SessionLog,
        engine: ContextEngine,
        client: LLMClient,
        registry: Registry,
        tool_ctx: ToolContext,
        prompt: PromptBuilder,
        window: Window,
        ui: TurnUI,
        events: TurnEvents | None = None,
        redactor: Redactor | None = None,
        limits: LoopSettings | None = None,
    ) -> None:
        self.session = session
        self.engine = engine
        self.client = client
        self.registry = registry
        self.tool_ctx = tool_ctx
        self.prompt = prompt
        self.window = window
        self.ui = ui
        self.events: TurnEvents = events or NoEvents()
        self.redactor = redactor  # the safety net on outgoing text (messages were redacted when archived)
        self.limits = limits or LoopSettings()
        self._shown = 0  # the highest count shown since the window last shrank (shown_tokens)

    @property
    def profile(self) -> str:
        """The tool profile in use ("full" or "lean"); the window may change it mid-turn."""
        return self.window.profile

    def reply_cap(self) -> int | None:
        """``max_tokens`` of a request: the configured cap; else, with ``cap_replies`` and a window
        the endpoint stated itself, the reply reserve (a guessed window could be too large, and a
        server that counts max_tokens against its window, as vLLM does, would reject requests that
        fit); else none."""
        if self.limits.max_output_tokens:
            return self.limits.max_output_tokens
        if self.limits.cap_replies and self.window.stated_by_endpoint:
            return self.window.budget.reserve or None
        return None

    # -- helpers the app and commands use ----------------------------------------------------------
    def tools(self) -> list[dict[str, Any]]:
        """The tool schemas sent with the next request (the current profile's)."""
        return self.registry.schemas(self.profile, self.window.budget.limit)

    def add(self, msg: Message) -> Message:
        """Archive a message (on disk first) and put it in the window."""
        msg = self.session.append(msg)
        self.engine.append(msg)
        return msg

    def save_state(self) -> None:
        state = self.engine.state()
        state["archived"] = len(self.session.messages)  # what the window has seen, for a crash resume
        state["head"] = {"profile": self.window.profile, "window": self.window.size}  # kept on resume
        self.session.save_state(state)

    def used_tokens(self) -> int:
        """Estimated prompt tokens of the next request as things stand (no trimming)."""
        return self.engine.used_tokens(self.prompt.system(), self.tools())

    def shown_tokens(self) -> int:
        """:meth:`used_tokens` for a screen (the REPL toolbar): never lower than a figure shown
        before while the conversation only grew. Before the first reply the estimate counts with a
        default characters-per-token ratio; the endpoint's first usage teaches the real one, which
        would make the count drop although nothing left the window. A trim, /compact or /clear
        (the window truly shrank) starts again from the estimate."""
        self._shown = max(self._shown, self.used_tokens())
        return self._shown

    def latest_task(self) -> str:
        """The latest user request of the session ("" before the first)."""
        msgs = self.session.messages
        i = latest_user_index(msgs)
        content = msgs[i].get("content") if i is not None else None
        return content if isinstance(content, str) else ""

    def working_files(self) -> list[str]:
        return working_files(self.session.messages)

    # -- the one door for trimming ---------------------------------------------------------------
    def _after_trim(self, iteration: int) -> None:
        """After any trim: checkpoint, a new thread in the archive, memory re-ranked."""
        task = self.latest_task()
        self._shown = 0  # the window shrank: the count may drop
        self.events.trimming(iteration, task)
        self.session.new_thread()
        self.events.trimmed(task, self.working_files())

    def trim_now(self) -> TrimReport:
        """Fold the oldest half of the window into the thread summary now (/session trim)."""
        system, tools = self.prompt.system(), self.tools()
        before = self.engine.used_tokens(system, tools)
        limit = self.window.budget.limit
        target = 0.5 if before > 0.5 * limit else before / limit / 2
        prep = self.engine.force_trim(system, tools, target=target)
        if not prep.dropped:
            return TrimReport(before, before)
        self._after_trim(0)
        self.save_state()
        return TrimReport(before, self.used_tokens(), len(prep.dropped))

    def compact(self, focus: str = "") -> TrimReport | None:
        """Ask the model to summarise the conversation and carry on from its summary (/compact).

        The request goes through the same path as a turn's (redaction net, retries after a length
        rejection, usage learning). None when there is nothing to compact; ValueError when the
        model returned no summary (the conversation is then unchanged)."""
        if not self.engine.window:
            return None
        before = self.used_tokens()
        extra = f" Pay particular attention to: {focus.strip()}." if focus.strip() else ""
        ask = make("user", load_prompt("compact.md").format(max_words=COMPACT_WORDS, focus=extra), meta=prompt_meta("compact"))
        tools = self.tools()
        try:
            result = self._send(
                self._prepare(tools, TurnResult()), tools, TurnResult(), extra=[ask], max_tokens=COMPACT_MAX_TOKENS
            )
        finally:
            self.ui.pause()  # the waiting spinner ends with the request, not with the next turn
        text = result.content.strip()
        if result.interrupted or not text:
            raise ValueError("The model returned no summary; the conversation is unchanged.")
        note = make("system", f"<conversation_summary>\n{text}\n</conversation_summary>", meta={"kind": "compact"})
        task = self.latest_task() or None
        after = self.engine.tokens_if_compacted(note, task, self.prompt.system(), tools)
        if after >= before:  # a short conversation: the summary would take more room than it frees
            return TrimReport(before, after, 0, applied=False)
        self.engine.compacted(self.session.append(note), task)
        self._after_trim(0)
        self.save_state()
        return TrimReport(before, self.used_tokens(), 0)

    def clear(self) -> None:
        """Empty the window and drop the summary (/clear); the archive keeps every message."""
        self.engine.clear()
        self._shown = 0
        self.save_state()

    # -- the loop --------------------------------------------------------------------------------
    def run_turn(self, text: str, user_meta: dict[str, Any] | None = None) -> TurnResult:
        out = TurnResult()
        self.tool_ctx.refused.clear()
        user = self.add(make("user", text, meta=dict(user_meta or {})))
        self.save_state()
        self.window.probe_once()  # the user's message is on disk; nothing sent yet
        self.events.turn_started(self.latest_task())
        summary = self.engine.summary
        recalled = self.events.recall(user, summary.current_task if summary is not None else "")
        if recalled is not None:  # archived (never indexed) and in the window with its message
            self.add(recalled)
            self.save_state()
        guard = RepeatGuard()
        while out.iterations < self.limits.max_iterations:
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
            if not calls and self.limits.tool_recovery and content and not result.interrupted:
                content, calls = recover_tool_calls(
                    content,
                    set(self.registry.offered(self.profile, self.window.budget.limit)),
                    call_required=choice == "required",
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
            if self._run_tools(calls, out, guard):
                self.save_state()
                return out
            self.save_state()
            if guard.stuck:
                out.stuck = guard.reason(self.tool_ctx.interactive)
                self.ui.notice(out.stuck)
                return out
        out.hit_cap = True
        self.ui.notice(
            f"Stopped after {self.limits.max_iterations} tool iterations (max_iterations); "
            "send another message to let the agent continue."
        )
        return out

    def _prepare(self, tools: list[dict[str, Any]], out: TurnResult) -> Prepared:
        prep = self.engine.prepare(self.prompt.system(), tools)
        if prep.trimmed:
            out.trims += 1
            self._after_trim(out.iterations)  # memory re-ranked for the new situation
            prep = self.engine.prepare(self.prompt.system(), tools)
            self.save_state()
        return prep

    def _choice(self, iteration: int) -> str | None:
        """The tool_choice of a request: a call must happen first, then the model may answer."""
        if self.limits.tool_choice == "required" and iteration > 1:
            return "auto"
        return self.limits.tool_choice

    def _send(
        self,
        prep: Prepared,
        tools: list[dict[str, Any]],
        out: TurnResult,
        tool_choice: str | None = None,
        *,
        extra: list[Message] | None = None,
        max_tokens: int | None = None,
    ) -> ChatResult:
        """Send one request; after a length rejection trim harder (three levels) and send again.

        ``extra`` follows the window without joining it (the /compact question): such a request
        carries the same tools as a turn's (the head a prompt cache keeps) with ``tool_choice``
        "none", and streams nothing to the screen."""
        level = 0
        while True:
            messages = to_api([*prep.messages, *(extra or [])])
            if self.redactor is not None:
                for m in messages:
                    if isinstance(m.get("content"), str):
                        m["content"] = self.redactor.redact(m["content"])[0]
            self.ui.waiting()
            try:
                result = self.client.chat(
                    messages,
                    tools,
                    on_text=None if extra else self.ui.text,
                    on_retry=lambda reason, wait: self.ui.notice(f"{reason}; retrying in {wait:.1f}s"),
                    tool_choice="none" if extra and tools else tool_choice,
                    temperature=self.limits.temperature,
                    max_tokens=max_tokens or self.reply_cap(),
                )
            except ContextLengthError as exc:
                level += 1
                if level > MAX_REACTIVE:
                    raise
                if exc.window:
                    self.window.rejected(exc.window)  # trust the server's own figure from now on
                self._after_trim(out.iterations)
                tools = self.tools()  # a stated window may have switched the profile
                recovery = self.events.recovery_text(self.latest_task())
                prep = self.engine.reactive(level, self.prompt.system(), tools, recovery)
                out.trims += 1
                self.save_state()
                continue
            if result.usage is not None:
                if not extra:  # the estimator learns from requests whose shape it counted
                    self.engine.observe(prep.messages, tools, result.usage.prompt_tokens)
                    self.window.learned()
                self.session.add_usage(result.usage.as_dict())
                out.usage.append(result.usage.as_dict())
            return result

    def _changes(self) -> list[dict[str, str]]:
        """The file changes the call just made: shown (unless the user saw them when approving)
        and kept, redacted, in the result's meta (the export shows them; never sent)."""
        changes, self.tool_ctx.changes = self.tool_ctx.changes, []
        if not changes:
            return []
        from clio.tools.diffs import clip  # (difflib) only once the file tool changed something

        out = []
        for change, seen in changes:
            if not seen:
                shown, left = clip(change.diff)
                self.ui.diff(shown, left)
            diff = self.redactor.redact(change.diff)[0] if self.redactor is not None else change.diff
            out.append({"path": change.path, "diff": diff})
        return out

    def _run_tools(self, calls: list[dict[str, Any]], out: TurnResult, guard: RepeatGuard) -> bool:
        """Run every call, append one result each (a repeated result replaced by the guard's
        tool error). Returns True when the user interrupted."""
        for i, call in enumerate(calls):
            name = call["function"]["name"]
            args = tool_call_args(call)
            self.ui.tool_start(name, args)
            started = time.monotonic()
            try:
                text, ok = self.registry.run(
                    self.tool_ctx, name, call["function"]["arguments"], self.profile, self.window.budget.limit
                )
            except KeyboardInterrupt:
                for rest in calls[i:]:
                    self.add(make("tool", "[interrupted by the user]", tool_call_id=rest["id"]))
                self.ui.tool_done(name, False, "interrupted")
                out.interrupted = True
                return True
            repeated = guard.observe(
                name, call["function"]["arguments"], text, out.iterations, f"{name} {summarize_args(name, args, 50)}"
            )
            if repeated is not None:
                text, ok = repeated, False
            text = maybe_store(self.tool_ctx, name, text)
            meta: dict[str, Any] = {"tool": name, "ok": ok, "ms": int((time.monotonic() - started) * 1000)}
            diffs = self._changes()
            if diffs:
                meta["diffs"] = diffs
            msg = self.add(make("tool", text, tool_call_id=call["id"], meta=meta))
            out.tool_calls += 1
            self.ui.tool_done(name, ok, str(msg.get("content") or ""))
        return False
