"""Wiring: config -> store -> memory -> model client -> window -> tools -> orchestrator.

The App owns every object of a running clio and the I/O the pure tiers ask for (checkpoints,
approvals). ``App.start`` is the one start-up path of the REPL and the one-shot runner. Slash
commands see the App only through ``clio.commands.registry.CommandContext``: those operations
are the :class:`clio.app.operations.Operations` mixin; the orchestrator's hooks and the user's
questions are the :class:`clio.app.hooks.AppHooks` mixin. This module builds and wires.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

import clio.tools.builtin  # noqa: F401  (registers the tools)
from clio.agent.orchestrator import Orchestrator
from clio.agent.prompt import PromptBuilder
from clio.agent.turn import Hooks, TurnResult, TurnUI
from clio.agent.window import Window
from clio.app.approvals import Approvals
from clio.app.auto_recall import AutoRecall
from clio.app.consolidate import Consolidator
from clio.app.hooks import AppHooks
from clio.app.mcp_servers import McpSession
from clio.app.memory_services import (
    Injected,
    LazyRecall,
    compact_faded,
    memory_blocks,
    memory_services,
    summarize_group,
)
from clio.app.operations import Operations
from clio.config import ConfigError, Settings
from clio.context.engine import ContextEngine
from clio.llm.client import LLMClient
from clio.memory.behaviours import Behaviours
from clio.memory.meaning import Meaning
from clio.messages import Message, tool_call_args
from clio.paths import Paths
from clio.prompts import load_prompt
from clio.safety.hide import hidden_paths
from clio.safety.redact import Redactor
from clio.store.model_state import ModelStateStore
from clio.store.sessions import Session, SessionStore
from clio.store.snapshots import Snapshots
from clio.tools.context import Services, ToolContext
from clio.tools.policy import PolicyError, ToolPolicy, parse_names
from clio.tools.registry import REGISTRY, Registry


class App(Operations, AppHooks):
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
        self.approvals = Approvals(
            settings,
            self._prompt_user if ask is not None else None,
            ui.diff,
            lambda: self.tool_ctx,
            on_answer=lambda granted: self.skills.approval(granted),  # learned behaviours
        )
        self.writes = not settings.incognito
        try:  # --allow-tools, --deny-tools, --plan (clio.tools.policy)
            known, aliases = REGISTRY.names(), REGISTRY.aliases()
            self.policy = ToolPolicy(
                parse_names(settings.allow_tools, known, "--allow-tools", aliases),
                parse_names(settings.deny_tools, known, "--deny-tools", aliases),
                settings.plan,
            )
        except PolicyError as exc:
            raise ConfigError(str(exc)) from None
        self.approvals.allowed = self.policy.allowed
        self.redactor = Redactor(settings.redaction)  # the one redactor: archive, requests, tools
        self.sessions = SessionStore(paths.sessions_dir if self.writes else None, redact=self.redactor.text)
        self.client = LLMClient(settings.client_endpoint())
        self.window = Window(
            settings,
            ModelStateStore(paths.clio_dir / "token_ratios.json" if self.writes else None),
            tiktoken_dir=paths.home / "tiktoken" if self.writes else None,
            notice=ui.notice,
        )
        self.services = Services(redactor=self.redactor, sessions=self.sessions)
        memory_services(self.services, paths if self.writes else None, self.sessions, self.redactor, settings)
        self.services.ltm_compactor = self._summarize_group
        if isinstance(self.services.recall, LazyRecall):  # the window's messages are not recalled
            self.services.recall.carried = self._carried
        self.auto_recall = AutoRecall(self.services, self.window, settings)
        assert self.services.skills is not None
        self.skills: Behaviours = self.services.skills
        self.skills.enabled = self.writes and not settings.no_ltm  # learned behaviours (memory/behaviours.py)
        self.injected = Injected()  # the LTM entries in the system prompt, to reinforce those a turn uses
        assert self.services.ltm is not None
        self.meaning = Meaning(ui.notice)  # LTM by meaning: ranking and dedup candidates (memory/meaning.py)
        self.consolidator = Consolidator(
            self.services.ltm,
            self.sessions,
            self.redactor,
            max_chars=lambda: self.window.shares.consolidation_chars(),
            semantic=self.meaning.dedup_candidates,
            keep_tainted=lambda: self.tool_ctx is not None and self.tool_ctx.keeps_unconfirmed(),
        )
        self.session: Session | None = None
        self.pending_notes: list[str] = []  # told to the model with the user's next message
        self.orchestrator: Orchestrator | None = None
        self.prompt: PromptBuilder | None = None
        self.tool_ctx: ToolContext | None = None
        self.redacted_total = 0
        # a stdio server is a program clio runs: clio's own folder is out of its reach, as for commands
        self.mcp = McpSession(settings.mcp_servers, paths.root, REGISTRY.copy(), hidden_paths(paths.home, False))
        self.registry: Registry = self.mcp.registry  # the built-in tools, plus the MCP servers'
        self.registry.hidden, self.registry.gate = self.policy.denied, self.policy.refusal
        self.window.subscribe(self._window_changed)

    @classmethod
    def start(
        cls,
        settings: Settings,
        paths: Paths,
        *,
        resume: str | None,
        interactive: bool,
        console: Console,
        err: Console,
        ui: TurnUI,
        ask: Any = None,
    ) -> App:
        """Build the app and open its session: ``resume`` None starts a new one, "" resumes the
        most recent, anything else names one (id, prefix or name)."""
        app = cls(settings, paths, interactive=interactive, console=console, err=err, ui=ui, ask=ask)
        try:
            if resume is None:
                app.open_session()
            elif resume:
                app.open_session(resume)
            else:
                infos = app.sessions.list()
                app.open_session(infos[0].id if infos else None)
            if interactive:  # the REPL: servers start while the user types (a one-shot: on first need)
                app.start_mcp()
        except BaseException:
            app.close()
            raise
        return app

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
            self._close_session()
        self._attach(session)
        return session

    def _attach(self, session: Session) -> None:
        s = self.settings
        session.transform = self._redact_message
        self.session = session
        self.services.session = session
        self.skills.attach(session.id)
        folder = session.dir / "snapshots" if (self.writes and session.dir is not None) else None
        self.services.snapshots = Snapshots(folder, self.redactor)
        self.prompt = PromptBuilder(
            self.paths.root,
            self.paths.cwd,
            custom_instructions=not (s.no_custom_instructions or s.incognito),
            instructions_trusted=s.project is not None and s.project.instructions_trusted,
            memory=[] if (s.no_ltm or s.incognito) else memory_blocks(self.services, self.window, s, self.injected, self.meaning),
            redactor=self.redactor,
        )
        self.tool_ctx = ToolContext(
            root=self.paths.root,
            session_dir=session.dir,
            approve=self.approvals,
            ask_user=self._ask_user,
            sandbox=s.sandbox,
            sandbox_network=s.sandbox_network,
            hidden=hidden_paths(self.paths.home, s.sandbox, s.sandbox_hide),
            prompt_sources=self._prompt_sources,
            interactive=self.interactive,
            yes=s.yes,
            project_trusted=self.project_trusted,
            services=self.services,
        )
        self.orchestrator = Orchestrator(
            session=session,
            engine=self._restore_engine(session),
            client=self.client,
            registry=self.registry,
            tool_ctx=self.tool_ctx,
            prompt=self.prompt,
            window=self.window,
            ui=self.ui,
            hooks=Hooks(
                before_trim=self._checkpoint,
                after_trim=self._after_trim,
                recovery_text=self.recovery_text,
                turn_started=self._turn_started,
                recall=self._recall,
            ),
            redactor=self.redactor,
            max_iterations=s.max_iterations,
            tool_recovery=s.tool_call_recovery,
            temperature=s.temperature,
            max_output_tokens=s.max_output_tokens,
            tool_choice=s.tool_choice,
            cap_replies=s.is_local_endpoint(),
        )
        self.prompt.set_note(load_prompt("plan.md").strip() if self.policy.plan else "")
        self._ranked_on_task = False
        self._measure_fixed()
        self.refresh_memory()

    def _measure_fixed(self) -> None:
        """How the window counts the full profile's fixed part (again when MCP tools join)."""
        prompt, registry = self.prompt, self.registry
        if prompt is None:
            return
        self.window.measure_full_with(
            lambda est, cap: est.count_messages([{"role": "system", "content": prompt.static_text("full", cap)}])
            + est.count_tools(registry.schemas("full"))
        )

    # -- MCP servers (clio.app.mcp_servers) ---------------------------------------------------------------
    def start_mcp(self) -> None:
        self.mcp.start()

    def ready_mcp(self) -> None:
        """The servers up (or left out, one line each) and their tools offered, before a request."""
        self.mcp.ready(self.ui.notice, self._measure_fixed)

    def _window_changed(self, window: Window) -> None:
        """The window's size, ratio or profile changed: hand the new figures to their users."""
        shares = window.shares
        if self.prompt is not None:
            self.prompt.set_profile(window.profile, shares.instructions_chars())
        if self.orchestrator is not None:
            self.orchestrator.engine.budget = window.budget
            self.orchestrator.engine.estimator = window.estimator
        if self.tool_ctx is not None:
            self.tool_ctx.result_chars = shares.result_chars()

    def _restore_engine(self, session: Session) -> ContextEngine:
        """The window as it was saved, plus anything archived after the save (a crash mid-turn)."""
        est, budget = self.window.estimator, self.window.budget
        state = session.load_state()
        actions = self.registry.actions()  # what each tool operation does, for the thread summary
        if not state:
            return ContextEngine(est, budget, window=list(session.messages), actions=actions)
        engine = ContextEngine.from_state(est, budget, state, session.messages, actions)
        archived = state.get("archived")
        if isinstance(archived, int) and 0 <= archived < len(session.messages):
            engine.extend(session.messages[archived:])
        return engine

    @property
    def agent(self) -> Orchestrator:
        assert self.orchestrator is not None, "no session is open"
        return self.orchestrator

    # -- turns -----------------------------------------------------------------------------------
    def run_turn(self, text: str, meta: dict[str, Any] | None = None) -> TurnResult:
        """One turn; ``meta`` goes with the user's message (``attached``: the @file paths)."""
        start = len(self.session.messages) if self.session is not None else 0
        self.skills.begin_turn(text, start)  # before any note is added: the user's words
        if self.services.snapshots is not None:
            self.services.snapshots.begin(start)  # the files this turn changes are kept together
        if self.pending_notes:  # what the model must know first (an /undo), with the user's words
            text = "\n".join(self.pending_notes) + "\n\n" + text
            self.pending_notes.clear()
        try:
            return self.agent.run_turn(text, meta)
        finally:
            self.mcp.report(self.ui.notice)  # a server that died or hung in this turn: one line
            self.skills.end_turn(self.session.messages[start + 1 :] if self.session is not None else None)
            if self.session is not None:
                self._reinforce(self.session.messages[start + 1 :])

    def _reinforce(self, turn: list[Message]) -> None:
        """Injected memory the turn used decays from now on, not from when it was written."""
        ltm_store = self.services.ltm
        if ltm_store is None or not self.writes or not self.injected.entries:
            return
        used = self.injected.used_by(turn)
        if used:
            ltm_store.reinforce(used)

    def _summarize_group(self, entries: list[Any]) -> dict[str, Any] | None:
        return summarize_group(self.agent.ask, entries) if self.orchestrator is not None else None

    def upkeep(self) -> int:
        """At the end of a REPL session: past a size, faded topics are compacted by the model."""
        if self.services.ltm is None or not self.writes or self.orchestrator is None:
            return 0
        return compact_faded(self.services.ltm, self._summarize_group)

    def latest_task(self) -> str:
        return self.orchestrator.latest_task() if self.orchestrator is not None else ""

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

    @property
    def project_trusted(self) -> bool:
        """The user trusts this project (its config, by ``clio --trust``): content read from it
        may still be remembered, marked, in a run nobody can confirm (one-shot)."""
        project = self.settings.project
        return project is not None and project.trusted

    def refresh_memory(self) -> None:
        if self.prompt is not None:
            self.prompt.refresh_memory(self.latest_task(), self.working_files())

    def close(self) -> None:
        """The session closed and the MCP servers stopped (the end of the run)."""
        try:
            self._close_session()
        finally:
            self.mcp.close()

    def _close_session(self) -> None:
        if self.session is not None:
            if self.orchestrator is not None:
                self.orchestrator.save_state()
            self.session.close()
