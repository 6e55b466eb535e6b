"""Wiring: config -> store -> memory -> model client -> tools -> orchestrator.

The App owns every object of a running clio and the I/O the pure tiers ask for
(checkpoints, ratio persistence, approvals). The REPL and the one-shot runner drive it.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.console import Console
from rich.text import Text

import clio.tools.builtin  # noqa: F401  (registers the tools)
from clio.agent.orchestrator import Hooks, Orchestrator, TurnResult, TurnUI
from clio.agent.profile import INSTRUCTIONS_SHARE, TASK_MAX_CHARS, TASK_SHARE, chars_for, choose_profile
from clio.agent.prompt import PromptBuilder, load_prompt
from clio.app_memory import memory_blocks, open_memory_services
from clio.app_model import load_model, probe_once, save_ratio, window_learned
from clio.config import Settings
from clio.llm.client import LLMClient
from clio.memory.context import ContextEngine
from clio.memory.tokens import TokenEstimator
from clio.memory.trim import Budget
from clio.messages import Message, meta, tool_call_args
from clio.paths import Paths
from clio.safety.redact import Redactor
from clio.store.atomic import atomic_write_text
from clio.store.sessions import Session, SessionStore
from clio.tools.git import recent_git_activity
from clio.tools.registry import REGISTRY, ToolContext
from clio.tools.results import result_chars_for
from clio.tools.todos import format_todos, load_todos
from clio.ui.render import summarize_args


class App:
    estimator: TokenEstimator  # set by app_model.load_model
    budget: Budget

    def __init__(
        self,
        settings: Settings,
        paths: Paths,
        *,
        interactive: bool,
        console: Console,
        err: Console,
        ui: TurnUI,
        ask: Any = None,
    ) -> None:
        self.settings = settings
        self.paths = paths
        self.interactive = interactive
        self.console = console
        self.err = err
        self.ui = ui
        self._ask = ask  # callable(question: str) -> str | None, for approvals and request_input
        self.writes = not settings.incognito
        self.services: dict[str, Any] = {}
        self.redactor = Redactor(settings.redaction)
        self.services["redactor"] = self.redactor  # tools that persist their arguments redact them
        self.sessions = SessionStore(paths.sessions_dir if self.writes else None)
        self.services["sessions"] = self.sessions
        self.client = LLMClient(
            settings.endpoint(),
            settings.require_key(),
            settings.model,
            timeout=settings.request_timeout,
            max_retries=settings.max_retries,
        )
        self.window_probe = False  # ask a local endpoint for its window before the first request
        load_model(self, settings.model)
        open_memory_services(self)
        self.session: Session | None = None
        self.orchestrator: Orchestrator | None = None
        self.prompt: PromptBuilder | None = None
        self.redacted_total = 0
        self.full_fixed_tokens = 0  # what the full profile's fixed part would cost, for /context

    # -- sessions --------------------------------------------------------------------------------
    def open_session(self, resume: str | None = None) -> Session:
        """Resume the session ``resume`` names (id, prefix or name), or start a new one."""
        if resume:
            info = self.sessions.find(resume)
            if self.session is not None and self.session.id == info.id:
                return self.session
            session = self.sessions.open(info.id)
        else:
            session = self.sessions.create(self.settings.model)
        if self.session is not None:
            self.close()
        self._attach(session)
        return session

    def resume_latest(self) -> Session:
        infos = self.sessions.list()
        return self.open_session(infos[0].id if infos else None)

    def _attach(self, session: Session) -> None:
        session.transform = self._redact_message
        self.session = session
        self.services["session"] = session
        engine = self._restore_engine(session)
        blocks = [] if (self.settings.no_ltm or self.settings.incognito) else memory_blocks(self)
        self.prompt = PromptBuilder(
            self.paths.root,
            self.paths.cwd,
            custom_instructions=not (self.settings.no_custom_instructions or self.settings.incognito),
            memory=blocks,
            transform=lambda s: self.redactor.redact(s)[0],
        )
        self.tool_ctx = ToolContext(
            root=self.paths.root,
            session_dir=session.dir,
            approve=self._approve,
            ask_user=self._ask_user,
            sandbox=self.settings.sandbox,
            interactive=self.interactive,
            yes=self.settings.yes,
            services=self.services,
        )
        self.orchestrator = Orchestrator(
            session=session,
            engine=engine,
            client=self.client,
            registry=REGISTRY,
            tool_ctx=self.tool_ctx,
            prompt=self.prompt,
            ui=self.ui,
            hooks=Hooks(
                before_trim=self._checkpoint,
                after_trim=self.refresh_memory,
                recovery_text=self.recovery_text,
                learned=lambda: save_ratio(self),
                window_learned=lambda tokens: window_learned(self, tokens),
                turn_started=lambda: probe_once(self),
                redact_text=lambda s: self.redactor.redact(s)[0],
            ),
            max_iterations=self.settings.max_iterations,
            tool_recovery=self.settings.tool_call_recovery,
            temperature=self.settings.temperature,
            max_output_tokens=self.settings.max_output_tokens,
            tool_choice=self.settings.tool_choice,
        )
        self._apply_profile()
        self.refresh_memory()

    def _apply_profile(self) -> bool:
        """Choose the tool profile for the current prompt budget and scale what scales with it.

        The profile in use is ``orchestrator.profile``. Returns True when it changed."""
        assert self.prompt is not None and self.orchestrator is not None
        limit, cpt = self.budget.limit, self.estimator.chars_per_token
        self.prompt.set_profile(self.prompt.profile, chars_for(limit, INSTRUCTIONS_SHARE, cpt))
        full = [{"role": "system", "content": self.prompt.static_text("full")}]
        self.full_fixed_tokens = self.estimator.count_messages(full) + self.estimator.count_tools(
            REGISTRY.schemas("full")
        )
        profile = choose_profile(self.settings.profile, limit, self.full_fixed_tokens)
        changed = profile != self.orchestrator.profile
        self.prompt.set_profile(profile, self.prompt.instructions_max_chars)
        self.orchestrator.profile = profile
        self.tool_ctx.result_chars = result_chars_for(limit, cpt)
        return changed

    def _restore_engine(self, session: Session) -> ContextEngine:
        """The window as it was saved, plus anything archived after the save (a crash mid-turn)."""
        state = session.load_state()
        if not state:
            return ContextEngine(self.estimator, self.budget, window=list(session.messages))
        engine = ContextEngine.from_state(self.estimator, self.budget, state, session.messages)
        archived = state.get("archived")
        if isinstance(archived, int) and 0 <= archived < len(session.messages):
            engine.extend(session.messages[archived:])
        return engine

    def trimmed(self, iteration: int = 0) -> None:
        """Bookkeeping after a trim done outside the loop (/session trim, /compact)."""
        assert self.orchestrator is not None and self.session is not None
        self._checkpoint(iteration)
        self.session.new_thread()
        self.refresh_memory()
        self.orchestrator.save_state()

    def switch_model(self, name: str) -> None:
        """Use another model from the next request on; the session carries on."""
        assert self.session is not None and self.orchestrator is not None
        self.orchestrator.save_state()
        self.settings.model = name
        self.client.model = name
        load_model(self, name)
        self._attach(self.session)

    # -- turns -----------------------------------------------------------------------------------
    def run_turn(self, text: str) -> TurnResult:
        assert self.orchestrator is not None
        return self.orchestrator.run_turn(text)

    def latest_task(self) -> str:
        for m in reversed(self.session.messages if self.session else []):
            if m.get("role") == "user" and isinstance(m.get("content"), str):
                return str(m["content"])
        return ""

    def working_files(self, limit: int = 20) -> list[str]:
        files: list[str] = []
        for m in reversed(self.session.messages if self.session else []):
            for call in m.get("tool_calls") or []:
                path = tool_call_args(call).get("path")
                if isinstance(path, str) and path not in files:
                    files.append(path)
            if len(files) >= limit:
                break
        return files

    def refresh_memory(self) -> None:
        if self.prompt is not None:
            self.prompt.refresh_memory(self.latest_task(), self.working_files())

    # -- hooks -----------------------------------------------------------------------------------
    def recovery_text(self) -> str:
        # the thread summary is not repeated here: the engine sends it right before this message
        todos = load_todos(self.tool_ctx)
        return load_prompt("recovery.md").format(
            todos=("Todo list:\n" + format_todos(todos)) if todos else "",
            git=recent_git_activity(self.paths.root),
            task=self.latest_task()[
                : chars_for(self.budget.limit, TASK_SHARE, self.estimator.chars_per_token, TASK_MAX_CHARS)
            ],
        )

    def _checkpoint(self, iteration: int) -> None:
        if not self.writes or self.session is None:
            return
        lines = [
            "# Session progress checkpoint",
            f"Session: {self.session.id} ({self.session.info.name})",
            f"Written: {time.strftime('%Y-%m-%d %H:%M:%S')} (iteration {iteration})",
            "",
            "## Task",
            self.latest_task()[:2000] or "(none yet)",
            "",
            "## Todos",
            format_todos(load_todos(self.tool_ctx)) or "(none)",
            "",
            "## Recent tool calls",
        ]
        recent: list[str] = []
        for m in reversed(self.session.messages):
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                recent.append(
                    f"- {fn.get('name')} {summarize_args(fn.get('name', ''), tool_call_args(call))}"
                )
            if len(recent) >= 10:
                break
        lines += list(reversed(recent[:10])) or ["(none)"]
        text = self.redactor.redact("\n".join(lines) + "\n")[0]
        atomic_write_text(self.paths.memory_dir / "session_progress.md", text)

    def _redact_message(self, msg: Message) -> Message:
        new, hits = self.redactor.redact_message(msg)
        if hits:
            self.redacted_total += hits
            meta(new)["redacted"] = hits
            role = str(msg.get("role", "message"))
            article = "an" if role[:1] in "aeiou" else "a"
            self.ui.notice(f"redacted {hits} secret{'s' if hits != 1 else ''} from {article} {role} message")
        return new

    # -- user interaction ------------------------------------------------------------------------
    def confirm(self, question: str) -> bool:
        if not self.interactive and self.settings.yes:
            return True
        answer = self._prompt_user(f"{question} [y/N] ")
        return answer is not None and answer.strip().lower() in ("y", "yes")

    def _prompt_user(self, question: str) -> str | None:
        if self._ask is None:
            return None
        pause = getattr(self.ui, "pause", None)
        if pause:
            pause()
        try:
            answer = self._ask(question)
            return str(answer) if answer is not None else None
        except (EOFError, KeyboardInterrupt):
            return None

    def _approve(self, kind: str, summary: str, *, destructive: bool = False) -> bool:
        s = self.settings
        if destructive:
            if self._ask is None:  # nobody to ask: only --yes lets it through
                return s.yes
            return self.confirm(f"⚠ destructive {kind}: {summary}\nRun it?")
        if s.yes:
            return True
        policy = getattr(s.approvals, kind, "ask")
        if kind == "shell" and s.sandbox:
            policy = "ask"
        if policy == "allow":
            return True
        if self._ask is None:
            return False
        return self.confirm(f"{kind}: {summary}\nAllow?")

    def _ask_user(self, question: str) -> str | None:
        if self._ask is None:
            return None
        self.err.print(Text(question, style="bold"))
        return self._prompt_user("answer> ")

    def close(self) -> None:
        if self.session is not None:
            if self.orchestrator is not None:
                self.orchestrator.save_state()
            self.session.close()


def stderr_console(color: bool) -> Console:
    return Console(file=sys.stderr, no_color=not color, highlight=False, soft_wrap=False)
