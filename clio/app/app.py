"""One running clio: the services wired together, a session opened, a turn run, the loop's events.

``App.start`` is the one start-up path of the REPL and the one-shot runner. The App composes small
services, each owning its state: the memory service (:mod:`clio.app.memory`), the recall service
(:mod:`clio.app.recall`, :mod:`clio.app.auto_recall`), approvals and the user's questions
(:mod:`clio.app.approvals`), the MCP servers (:mod:`clio.app.mcp_servers`), the model client and
the window. A session brings its prompt builder, tool context, side request and turn loop
(:meth:`App._attach`). The loop (:mod:`clio.agent.orchestrator`) reports what happens through
:class:`clio.agent.turn.TurnEvents`, implemented here (``turn_started``, ``recall``, ``trimming``,
``trimmed``, ``recovery_text``) with the data it passes: no handler calls back into the loop.
Slash commands reach the App only through ``clio.commands.registry.CommandContext``: the
operations of :class:`clio.app.commands_surface.CommandSurface`, a mixin of the App.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

import clio.tools.builtin  # noqa: F401  (registers the tools)
from clio.agent.orchestrator import Orchestrator
from clio.agent.prompt import PromptBuilder
from clio.agent.side import SideRequest
from clio.agent.turn import LoopSettings, TurnResult, TurnUI, working_files
from clio.agent.window import Window
from clio.app.approvals import Approvals, Questions
from clio.app.auto_recall import AutoRecall
from clio.app.checkpoint import checkpoint_text
from clio.app.commands_surface import CommandSurface
from clio.app.mcp_servers import McpSession
from clio.app.memory import MemoryService
from clio.app.recall import LazyRecall, carried
from clio.app.served_model import choose_served_model, needs_choice
from clio.app.turn_lock import users_turn
from clio.config import ConfigError, Settings
from clio.context.engine import ContextEngine
from clio.llm.client import LLMClient
from clio.messages import Message, meta, typed_words, with_notes
from clio.paths import Paths
from clio.prompts import load_prompt
from clio.recall.encoder_client import EncoderClient
from clio.safety.hide import Private, hidden_paths
from clio.safety.redact import Redactor
from clio.store.atomic import atomic_write_text
from clio.store.model_state import ModelStateStore
from clio.store.sessions import Session, SessionStore
from clio.store.snapshots import Snapshots
from clio.tools.context import Services, ToolContext
from clio.tools.git_repo import recent_git_activity
from clio.tools.policy import PolicyError, ToolPolicy, parse_names
from clio.tools.registry import REGISTRY, Registry
from clio.tools.todos import format_todos
from clio.wording import plural


class App(CommandSurface):
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
        s = self.settings = settings
        self.paths, self.interactive, self.console, self.err, self.ui = paths, interactive, console, err, ui
        self.writes = not s.incognito
        # what no tool reads: $CLIO_HOME and the credential stores (clio.safety.hide; @file mentions too)
        self.private = Private(paths.home, s.credential_stores)
        try:  # --allow-tools, --deny-tools, --plan (clio.tools.policy)
            known, aliases = REGISTRY.names(), REGISTRY.aliases()
            allow = parse_names(s.allow_tools, known, "--allow-tools", aliases)
            self.policy = ToolPolicy(allow, parse_names(s.deny_tools, known, "--deny-tools", aliases), s.plan)
        except PolicyError as exc:
            raise ConfigError(str(exc)) from None
        self.questions = Questions(ask, err, getattr(ui, "pause", lambda: None))
        self.approvals = Approvals(
            s,
            self.questions.prompt if ask is not None else None,
            ui.diff,
            lambda: self.tool_ctx,
            on_answer=lambda granted: self.memory.skills.approval(granted),  # learned behaviours
        )
        self.approvals.allowed = self.policy.allowed
        if getattr(ask, "one_key", None) is not None:  # the REPL on a terminal: y/n/a/d without Enter
            self.approvals.ask_key = self.questions.key
        self.redactor = Redactor(s.redaction)  # the one redactor: archive, requests, tools
        self.sessions = SessionStore(paths.sessions_dir if self.writes else None, redact=self.redactor.text)
        self.client = LLMClient(s.client_endpoint())
        self.window = Window(
            s,
            ModelStateStore(paths.clio_dir / "token_ratios.json" if self.writes else None),
            tiktoken_dir=paths.home / "tiktoken" if self.writes else None,
            notice=ui.notice,
        )
        self.services = Services(redactor=self.redactor, sessions=self.sessions)
        self.memory = MemoryService(
            self.services, paths if self.writes else None, self.sessions, self.redactor, s, self.window,
            ui.notice, keep_tainted=lambda: self.tool_ctx is not None and self.tool_ctx.keeps_unconfirmed(),
        )  # fmt: skip
        recall = LazyRecall(paths.clio_dir / "recall.sqlite" if self.writes else None, self.sessions, self.services)
        recall.carried = self._carried  # the window's messages are not recalled
        self.services.recall = recall
        idle = s.recall_encoder_idle_minutes * 60
        served = s.embeddings_endpoint()
        encoder = EncoderClient(paths.home, paths.clio_dir, idle_s=idle, endpoint=served) if s.recall_encoder and self.writes else None
        if encoder is not None:
            encoder.judge = s.recall_judge
            encoder.defer_start = not interactive  # a one-shot run starts the helper after its own search
        recall.encoder = self.encoder = encoder
        self.model_judge = None
        if s.recall_judge_model:  # imported only when named: nothing of it on a run's path otherwise
            from clio.app.model_judge import ModelJudge

            self.model_judge = ModelJudge.of(s, self.redactor.text, ui.notice, lambda: self.services.session)
            if self.model_judge is not None:
                recall.order = self.model_judge.order  # the memory tool's results, in its order
        self.auto_recall = AutoRecall(self.services, self.window, s, encoder, self.model_judge)
        self.session: Session | None = None
        self.pending_notes: list[str] = []  # told to the model with the user's next message
        self.orchestrator: Orchestrator | None = None
        self.prompt: PromptBuilder | None = None
        self.tool_ctx: ToolContext | None = None
        self.redacted_total = 0
        self._ranked_on_task = False
        self.model_pending = False  # the endpoint's model list is still to decide the model (settle_model)
        compactor = self.services.ltm_compactor
        if compactor is not None:  # /memory compact asks the model: settled first

            def settled_compactor(group: list[Any]) -> dict[str, Any] | None:
                self.settle_model()
                return compactor(group)

            self.services.ltm_compactor = settled_compactor
        # a stdio server is a program clio runs: clio's own folder is out of its reach, as for commands
        self.mcp = McpSession(s.mcp_servers, paths.root, REGISTRY.copy(), hidden_paths(paths.home, False))
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
        settle_model: bool = True,
        first: str = "",
    ) -> App:
        """Build the app and open its session: ``resume`` None starts a new one, "" resumes the
        most recent, anything else names one (id, prefix or name). With a base URL and no model
        chosen, the endpoint's model list decides it first (:mod:`clio.app.served_model`); with
        ``settle_model`` False (a one-shot slash command, which may send nothing), only when
        something is about to be sent (:meth:`settle_model`). ``first``: a one-shot run's message,
        which the encoder helper recalls for (or embeds) once the session is open (its recall
        finds it done, or the query embedded)."""
        listing = choose_served_model(settings) if settle_model else None
        app = cls(settings, paths, interactive=interactive, console=console, err=err, ui=ui, ask=ask)
        app.window.listing = listing
        app.model_pending = not settle_model and needs_choice(settings)
        try:
            if resume is None:
                app.open_session()
            elif resume:
                app.open_session(resume)
            else:
                infos = app.sessions.list()
                app.open_session(infos[0].id if infos else None)
            if first and app.orchestrator is not None:  # the helper recalls for it (else embeds it) meanwhile
                summary = app.orchestrator.engine.summary
                app.auto_recall.ahead(first, summary.current_task if summary is not None else "")
            if interactive:  # the REPL: servers start while the user types (a one-shot: on first need)
                app.mcp.start()
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
        """Wire a session: its prompt, tool context, side request and turn loop."""
        s = self.settings
        session.transform = self._redact_message
        self.session = self.services.session = session
        self.memory.skills.attach(session.id)
        folder = session.dir / "snapshots" if (self.writes and session.dir is not None) else None
        self.services.snapshots = Snapshots(folder, self.redactor)
        self.prompt = PromptBuilder(
            self.paths.root,
            self.paths.cwd,
            custom_instructions=not (s.no_custom_instructions or s.incognito),
            instructions_trusted=s.project is not None and s.project.instructions_trusted,
            redactor=self.redactor,
        )
        self.tool_ctx = ToolContext(
            root=self.paths.root,
            session_dir=session.dir,
            approve=self.approvals,
            ask_user=self.questions.ask_user,
            sandbox=s.sandbox,
            sandbox_network=s.sandbox_network,
            plan=s.plan,
            hidden=hidden_paths(self.paths.home, s.sandbox, s.credential_stores),
            private=self.private,
            prompt_sources=self._prompt_sources,
            interactive=self.interactive,
            yes=s.yes,
            project_trusted=self.project_trusted,
            services=self.services,
        )
        self.memory.ask = SideRequest(self.client, self.window, self.redactor, session.add_usage, s.temperature)
        self.orchestrator = Orchestrator(
            session=session,
            engine=self._restore_engine(session),
            client=self.client,
            registry=self.registry,
            tool_ctx=self.tool_ctx,
            prompt=self.prompt,
            window=self.window,
            ui=self.ui,
            events=self,
            redactor=self.redactor,
            limits=LoopSettings.of(s),
        )
        self.prompt.set_note(load_prompt("plan.md").strip() if self.policy.plan else "")
        self._ranked_on_task = False
        self._measure_fixed()
        self._rank_memory(self.orchestrator.latest_task(), working_files(session.messages))

    def _restore_engine(self, session: Session) -> ContextEngine:
        """The window as it was saved, plus anything archived after the save (a crash mid-turn)."""
        est, budget = self.window.estimator, self.window.budget
        actions = self.registry.actions()  # what each tool operation does, for the thread summary
        state = session.load_state()
        head = state.get("head") if isinstance(state, dict) else None
        if isinstance(head, dict):  # the profile the session was sent with (Window.keep_profile)
            self.window.keep_profile(head.get("profile"), head.get("window"))
        else:
            self.window.keep_profile(None, None)
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

    # -- the window and the MCP servers ------------------------------------------------------------
    def _measure_fixed(self) -> None:
        """How the window counts the full profile's fixed part (again when MCP tools join)."""
        prompt, registry = self.prompt, self.registry
        if prompt is None:
            return
        self.window.measure_full_with(
            lambda est, cap: est.count_messages([{"role": "system", "content": prompt.static_text("full", cap)}])
            + est.count_tools(registry.schemas("full"))
        )

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

    def settle_model(self, *, strict: bool = True) -> None:
        """Before the first request of a run that started without it: the model the endpoint's
        list decides (:func:`clio.app.served_model.choose_served_model`), switched to. ``strict``
        False (listing the models, /model): a server serving several leaves the model as it is,
        to be decided later, instead of stopping."""
        if not self.model_pending:
            return
        self.model_pending = False
        try:
            listing = choose_served_model(self.settings)
        except ConfigError:
            if strict:
                raise
            self.model_pending = True  # decided when something is sent (and stops the run then)
            return
        self.window.listing = listing
        name = self.settings.model
        if name != self.client.model and self.session is not None:
            if not self.session.messages:
                self.session.info.model = name
            self.switch_model(name)

    # -- a turn ------------------------------------------------------------------------------------
    def run_turn(self, text: str, meta: dict[str, Any] | None = None) -> TurnResult:
        """One turn; ``meta`` goes with the user's message (``attached``: the @file paths; a built-in
        command's prompt: :func:`clio.messages.prompt_meta`)."""
        self.settle_model()
        start = len(self.session.messages) if self.session is not None else 0
        meta = dict(meta or {})
        skills = self.memory.skills
        skills.begin_turn(typed_words({"role": "user", "content": text, "meta": meta}), start)  # the user's words
        if self.services.snapshots is not None:
            self.services.snapshots.begin(start)  # the files this turn changes are kept together
        # what the model must know first (an /undo), before the user's words, marked as clio's
        text = with_notes(text, self.pending_notes, meta)
        self.pending_notes.clear()
        try:
            with users_turn(self.settings, self.paths):  # a local server answers the user first
                result = self.agent.run_turn(text, meta)
            if self.model_judge is not None:
                self.model_judge.charge(result)  # its requests: the automatic recall's came first
            return result
        finally:
            if self.model_judge is not None:
                self.model_judge.spent()  # an interrupted turn's judge requests are not the next turn's
            self.mcp.report(self.ui.notice)  # a server that died or hung in this turn: one line
            turn = self.session.messages[start + 1 :] if self.session is not None else None
            skills.end_turn(turn)
            if turn is not None:
                self.memory.reinforce(turn)
            if self.encoder is not None:
                self.encoder.turn_ended()  # the helper embeds what this turn's searches indexed

    # the loop's events (clio.agent.turn.TurnEvents)
    def turn_started(self, task: str) -> None:
        """MCP servers up before the request; on the first message of a session in this run, memory
        ranked against it (it was ranked at attach, before any task; once here and after every
        trim keeps the request's front stable between trims, for prefix caches)."""
        self.ready_mcp()
        if not self._ranked_on_task and self.session is not None:
            self._ranked_on_task = True
            self.memory.meaning.arm()  # a request is about to be sent: the embedding model may load now
            self._rank_memory(task, working_files(self.session.messages))
        self.memory.skills.turn_sent()

    def recall(self, user: Message, task: str) -> Message | None:
        try:
            return self.auto_recall(user, task)
        finally:
            if self.encoder is not None:
                self.encoder.recall_decided()  # a helper this run found missing starts now

    def trimming(self, iteration: int, task: str) -> None:
        """The progress checkpoint, before a trim drops messages."""
        if self.writes and self.session is not None:
            text = checkpoint_text(self.session, iteration, task, self.todos())
            atomic_write_text(self.paths.memory_dir / "session_progress.md", self.redactor.redact(text)[0])

    def trimmed(self, task: str, files: list[str]) -> None:
        self._rank_memory(task, files)  # the behaviours stay as drawn: once per session

    def redraw_behaviours(self) -> None:
        """The user changed the behaviours: a new draw from the next request on (/skills)."""
        self.memory.skills.redraw()
        if self.orchestrator is not None and self.session is not None:
            self._rank_memory(self.orchestrator.latest_task(), working_files(self.session.messages))

    def recovery_text(self, task: str) -> str:
        # the thread summary is not repeated here: the engine sends it right before this message
        todos = self.todos()
        return load_prompt("recovery.md").format(
            todos=("Todo list:\n" + format_todos(todos)) if todos else "",
            git=recent_git_activity(self.paths.root),
            task=task[: self.window.shares.task_chars()],
        )

    def _rank_memory(self, task: str, files: list[str]) -> None:
        if self.prompt is not None:
            self.prompt.set_memory(self.memory.text(task, files))

    def _carried(self, quoted: bool) -> dict[str, set[int]]:
        """What the request carries now (never recalled again): :func:`clio.app.recall.carried`."""
        if self.orchestrator is None or self.session is None:
            return {}
        return carried(self.orchestrator.engine.window, self.session.id, quoted)

    def _redact_message(self, msg: Message) -> Message:
        new, hits = self.redactor.redact_message(msg)
        if hits:
            self.redacted_total += hits
            meta(new)["redacted"] = hits
            role = str(msg.get("role", "message"))
            article = "an" if role == "assistant" else "a"  # a user, a tool, a system; an assistant
            self.ui.notice(f"redacted {plural(hits, 'secret')} from {article} {role} message")
        return new

    def _prompt_sources(self) -> list[str]:
        """What untrusted text the system prompt carries now: it taints every turn's memory writes."""
        out = []
        prompt = self.prompt
        if prompt is not None and prompt.instructions and not prompt.instructions_trusted:
            out.append("instructions of an untrusted project (" + ", ".join(n for n, _ in prompt.instructions) + ")")
        if self.memory.foreign_in_prompt():
            out.append("memory not written by clio here")
        return out

    @property
    def project_trusted(self) -> bool:
        """The user trusts this project (its config, by ``clio --trust``): content read from it
        may still be remembered, marked, in a run nobody can confirm (one-shot)."""
        project = self.settings.project
        return project is not None and project.trusted
