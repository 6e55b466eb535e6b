"""The hooks the orchestrator calls back into the running clio, and the user's questions.

:class:`AppHooks` is a mixin of :class:`clio.app.app.App`: what happens when a turn starts,
what recall adds to the user's message, what follows a trim (the memory re-ranked), the text
that recovers the thread after one, the progress checkpoint before one, each archived message's
redaction, and the questions put to the user (approvals, ``request_input``). It declares what of
the App it uses; the App is the one class that builds them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from clio.agent.orchestrator import Orchestrator
from clio.agent.prompt import PromptBuilder
from clio.agent.turn import TurnUI
from clio.agent.window import Window
from clio.app.approvals import Approvals
from clio.app.auto_recall import AutoRecall
from clio.app.checkpoint import checkpoint_text
from clio.app.consolidate import Consolidator
from clio.app.memory_services import Injected
from clio.memory.behaviours import Behaviours
from clio.memory.meaning import Meaning
from clio.messages import Message, meta
from clio.paths import Paths
from clio.prompts import load_prompt
from clio.safety.redact import Redactor
from clio.store.atomic import atomic_write_text
from clio.store.sessions import Session
from clio.tools.git_repo import recent_git_activity
from clio.tools.todos import format_todos
from clio.wording import plural


class AppHooks:
    """The orchestrator's hooks and the user's questions (a mixin: it uses the App's objects
    below, and its ``agent``, ``ready_mcp``, ``consolidates``, ``todos``, ``latest_task`` and
    ``refresh_memory``)."""

    paths: Paths
    err: Console
    ui: TurnUI
    _ask: Any  # callable(question: str) -> str | None
    writes: bool
    window: Window
    redactor: Redactor
    redacted_total: int
    approvals: Approvals
    auto_recall: AutoRecall
    skills: Behaviours
    meaning: Meaning
    injected: Injected
    consolidator: Consolidator
    session: Session | None
    orchestrator: Orchestrator | None
    prompt: PromptBuilder | None
    _ranked_on_task: bool

    if TYPE_CHECKING:  # the App's

        @property
        def agent(self) -> Orchestrator: ...
        @property
        def consolidates(self) -> bool: ...
        def ready_mcp(self) -> None: ...
        def todos(self) -> list[dict[str, Any]]: ...
        def latest_task(self) -> str: ...
        def refresh_memory(self) -> None: ...

    # -- the orchestrator's hooks ----------------------------------------------------------------
    def _turn_started(self) -> None:
        """The first message of a session (new or resumed) in this run: rank memory against it.

        Memory was ranked when the session was attached, before the user typed anything (a new
        session has no task then). Ranking again here, once, and after every trim keeps the
        front of the request stable between trims (prefix caches) while the first request
        already carries what matters for the task. MCP servers must be up before the request."""
        self.ready_mcp()
        if not self._ranked_on_task:
            self._ranked_on_task = True
            self.meaning.arm()  # a request is about to be sent: the embedding model may load now
            if self.consolidates and self.session is not None:  # before ranking: what it learns counts
                self.consolidator.look_back(self.session.id, self.agent.ask, self.ui.notice)
            self.refresh_memory()
        self.skills.turn_sent()

    def _carried(self, quoted: bool) -> dict[str, set[int]]:
        """What the request carries now, by session and sequence number (never recalled again):
        the window's messages, and with ``quoted`` the archived messages its recall blocks quote."""
        if self.orchestrator is None or self.session is None:
            return {}
        out: dict[str, set[int]] = {self.session.id: set()}
        for m in self.orchestrator.engine.window:
            info = meta(m)
            if isinstance(seq := info.get("seq"), int):
                out[self.session.id].add(seq)
            for hit in (info.get("recalled") or ()) if quoted else ():
                if isinstance(hit, dict) and isinstance(hit.get("seq"), int):
                    out.setdefault(str(hit.get("session")), set()).add(hit["seq"])
        return out

    def _recall(self, user: Message) -> Message | None:
        summary = self.agent.engine.summary
        return self.auto_recall(user, summary.current_task if summary is not None else "")

    def _after_trim(self) -> None:
        self.skills.trimmed()  # learned behaviours are drawn again with the memory re-rank
        self.refresh_memory()

    def recovery_text(self) -> str:
        # the thread summary is not repeated here: the engine sends it right before this message
        todos = self.todos()
        return load_prompt("recovery.md").format(
            todos=("Todo list:\n" + format_todos(todos)) if todos else "",
            git=recent_git_activity(self.paths.root),
            task=self.latest_task()[: self.window.shares.task_chars()],
        )

    def _checkpoint(self, iteration: int) -> None:
        if not self.writes or self.session is None:
            return
        text = checkpoint_text(self.session, iteration, self.latest_task(), self.todos())
        atomic_write_text(self.paths.memory_dir / "session_progress.md", self.redactor.redact(text)[0])

    def _redact_message(self, msg: Message) -> Message:
        new, hits = self.redactor.redact_message(msg)
        if hits:
            self.redacted_total += hits
            meta(new)["redacted"] = hits
            role = str(msg.get("role", "message"))
            article = "an" if role == "assistant" else "a"  # a user, a tool, a system; an assistant
            self.ui.notice(f"redacted {plural(hits, 'secret')} from {article} {role} message")
        return new

    # -- user interaction ------------------------------------------------------------------------
    def confirm(self, question: str) -> bool:
        return self.approvals.confirm(question)

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

    def _prompt_sources(self) -> list[str]:
        """What untrusted text the system prompt carries now: it taints every turn's memory writes."""
        out = []
        prompt = self.prompt
        if prompt is not None and prompt.instructions and not prompt.instructions_trusted:
            out.append("instructions of an untrusted project (" + ", ".join(n for n, _ in prompt.instructions) + ")")
        if any(e.foreign for e in self.injected.entries):
            out.append("memory not written by clio here")
        return out

    def _ask_user(self, question: str) -> str | None:
        if self._ask is None:
            return None
        self.err.print(Text(question, style="bold"))
        return self._prompt_user("answer> ")
