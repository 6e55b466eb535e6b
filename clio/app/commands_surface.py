"""What slash commands may ask of a running clio (``clio.commands.registry.CommandContext``): the
operations :class:`clio.app.app.App` offers them, apart from its start-up and its turn loop. A
mixin of the App: it owns no state; the attributes below are the App's, named here for the type
checker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clio.app.figures import context_figures
from clio.app.undo import undo
from clio.prompts import load_prompt
from clio.tools.todos import load_todos

if TYPE_CHECKING:
    from clio.agent.orchestrator import Orchestrator
    from clio.agent.prompt import PromptBuilder
    from clio.agent.turn import TrimReport
    from clio.agent.window import Window
    from clio.app.approvals import Approvals
    from clio.app.auto_recall import AutoRecall
    from clio.app.consolidate import Outcome
    from clio.app.mcp_servers import McpSession
    from clio.app.memory import MemoryService
    from clio.config import Settings
    from clio.llm.client import LLMClient
    from clio.paths import Paths
    from clio.store.sessions import Session
    from clio.store.snapshots import Restored
    from clio.tools.context import Services, ToolContext
    from clio.tools.policy import ToolPolicy


class CommandSurface:
    """The App's operations for slash commands (``confirm``, ``switch_model``, ``trim_now``...)."""

    if TYPE_CHECKING:  # the App's, for the type checker

        settings: Settings
        paths: Paths
        approvals: Approvals
        client: LLMClient
        window: Window
        session: Session | None
        tool_ctx: ToolContext | None
        prompt: PromptBuilder | None
        policy: ToolPolicy
        mcp: McpSession
        auto_recall: AutoRecall
        memory: MemoryService
        services: Services
        pending_notes: list[str]

        @property
        def agent(self) -> Orchestrator:
            ...

        def settle_model(self, *, strict: bool = True) -> None:
            ...

        def ready_mcp(self) -> None:
            ...

        def _attach(self, session: Session) -> None:
            ...

    def confirm(self, question: str) -> bool:
        return self.approvals.confirm(question)

    def switch_model(self, name: str) -> None:
        """Use another model from the next request on; the session carries on."""
        assert self.session is not None
        self.agent.save_state()
        self.settings.model = self.client.model = name
        self.window.load(name)
        self._attach(self.session)

    def list_models(self) -> list[str]:
        self.settle_model(strict=False)  # several models: listed, none chosen yet
        return self.client.list_models()

    def trim_now(self) -> TrimReport:
        return self.agent.trim_now()

    def compact(self, focus: str) -> TrimReport | None:
        self.settle_model()
        return self.agent.compact(focus)

    def clear_window(self) -> None:
        self.agent.clear()

    def todos(self) -> list[dict[str, Any]]:
        return load_todos(self.tool_ctx) if self.tool_ctx is not None else []

    def context_figures(self) -> dict[str, object]:
        self.ready_mcp()
        return context_figures(self.agent, self.window, self.mcp.names, self.session, self.settings, self.auto_recall)

    def mcp_status(self) -> list[dict[str, object]]:
        self.ready_mcp()
        return self.mcp.status()

    def set_plan(self, on: bool) -> None:
        """Plan mode on or off from the next request on (/plan); the model hears when it ends."""
        if on == self.policy.plan:
            return
        self.policy.plan = self.settings.plan = on
        if self.tool_ctx is not None:
            self.tool_ctx.plan = on
        if self.prompt is not None:
            self.prompt.set_note(load_prompt("plan.md").strip() if on else "")
        if not on and self.session is not None and self.session.messages:
            self.pending_notes.append("[clio: the user turned plan mode off: you may now make changes.]")

    def undo(self, turns: int) -> list[Restored]:
        """Put back the files the last ``turns`` turns changed; the model hears of it next turn."""
        results, note = undo(self.services.snapshots, turns, self.confirm, self.paths.root, self.memory.skills)
        self.pending_notes.extend([note] if note else [])
        return results

    def consolidate(self, *, force: bool = False) -> Outcome | None:
        """Read the running session back into long-term memory (REPL exit, /memory consolidate);
        None when consolidation is off here (incognito, --no-ltm, ``consolidate: false``)."""
        self.settle_model()
        return self.memory.consolidate(self.session, force=force) if self.session is not None else None

    def upkeep(self) -> int:
        """At the end of a REPL session: past a size, faded topics are compacted by the model."""
        return self.memory.upkeep()
