"""What slash commands may ask of the running clio (``clio.commands.registry.CommandContext``).

:class:`Operations` is a mixin of :class:`clio.app.app.App`: the operations a command asks for
(switch or list models, trim, compact, clear, the todo list, /context's figures, the MCP servers'
status, plan mode, /undo, consolidation), on the objects the App wired. It declares what of the
App it uses; the App is the one class that builds them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clio.agent.orchestrator import Orchestrator
from clio.agent.prompt import PromptBuilder
from clio.agent.turn import TrimReport
from clio.agent.window import Window
from clio.app.auto_recall import AutoRecall
from clio.app.consolidate import Consolidator, Outcome
from clio.app.mcp_servers import McpSession
from clio.app.undo import undo_note, undo_turns
from clio.config import Settings
from clio.llm.client import LLMClient
from clio.memory.behaviours import Behaviours
from clio.paths import Paths
from clio.prompts import load_prompt
from clio.store.sessions import Session
from clio.store.snapshots import Restored
from clio.tools.context import Services, ToolContext
from clio.tools.policy import ToolPolicy
from clio.tools.todos import load_todos


class Operations:
    """The App's command-facing operations (a mixin: it uses the App's objects below, and its
    ``agent``, ``ready_mcp``, ``_attach`` and ``confirm``)."""

    settings: Settings
    paths: Paths
    writes: bool
    client: LLMClient
    window: Window
    mcp: McpSession
    auto_recall: AutoRecall
    policy: ToolPolicy
    services: Services
    skills: Behaviours
    consolidator: Consolidator
    session: Session | None
    orchestrator: Orchestrator | None
    prompt: PromptBuilder | None
    tool_ctx: ToolContext | None
    pending_notes: list[str]

    if TYPE_CHECKING:  # the App's

        @property
        def agent(self) -> Orchestrator: ...
        def ready_mcp(self) -> None: ...
        def _attach(self, session: Session) -> None: ...
        def confirm(self, question: str) -> bool: ...

    def switch_model(self, name: str) -> None:
        """Use another model from the next request on; the session carries on."""
        assert self.session is not None
        self.agent.save_state()
        self.settings.model = name
        self.client.model = name
        self.window.load(name)
        self._attach(self.session)

    def list_models(self) -> list[str]:
        return self.client.list_models()

    def trim_now(self) -> TrimReport:
        return self.agent.trim_now()

    def compact(self, focus: str) -> TrimReport | None:
        return self.agent.compact(focus)

    def clear_window(self) -> None:
        self.agent.clear()

    def todos(self) -> list[dict[str, Any]]:
        assert self.tool_ctx is not None
        return load_todos(self.tool_ctx)

    def context_figures(self) -> dict[str, object]:
        self.ready_mcp()
        orch, w = self.agent, self.window
        system, tools = orch.prompt.system(), orch.tools()
        est, budget, summary = w.estimator, w.budget, orch.engine.summary
        return {
            "context_window": budget.context_window,
            "window_source": w.source,
            "used_tokens": orch.engine.used_tokens(system, tools),
            "chars_per_token": round(est.chars_per_token, 3),
            "ratio_samples": est.samples,
            "exact_tokenizer": est.exact,
            "limit_tokens": budget.limit,
            "reserve_output": budget.reserve,
            "proactive_at_tokens": int(budget.limit * budget.proactive_at),
            "fixed_tokens": est.count_messages(system) + est.count_tools(tools),
            "profile": orch.profile,
            "tools": [t["function"]["name"] for t in tools],
            "mcp_tool_tokens": est.count_tools([t for t in tools if t["function"]["name"] in self.mcp.names]),
            "full_fixed_tokens": w.full_fixed_tokens,
            "window_messages": len(orch.engine.window),
            "archived_messages": len(self.session.messages) if self.session else 0,
            "summary": summary is not None,
            "trims": summary.trims if summary is not None else 0,
            "model": self.settings.model,
            "recall": self.auto_recall.describe(orch.engine.window),
        }

    def mcp_status(self) -> list[dict[str, object]]:
        self.ready_mcp()
        return self.mcp.status()

    def set_plan(self, on: bool) -> None:
        """Plan mode on or off from the next request on (/plan); the model hears when it ends."""
        if on == self.policy.plan:
            return
        self.policy.plan = self.settings.plan = on
        if self.prompt is not None:
            self.prompt.set_note(load_prompt("plan.md").strip() if on else "")
        if not on and self.session is not None and self.session.messages:
            self.pending_notes.append("[clio: the user turned plan mode off: you may now make changes.]")

    def undo(self, turns: int) -> list[Restored]:
        """Put back the files the last ``turns`` turns changed; the model hears of it next turn."""
        snapshots = self.services.snapshots
        if snapshots is None:
            return []
        undone = [t.turn for t in snapshots.last(turns)]
        results = undo_turns(snapshots, turns, self.confirm, self.paths.root)
        if results:
            self.skills.undone(undone)  # an implicit signal against the behaviours of those turns
        if results:
            self.pending_notes.append(undo_note(results, self.paths.root))
        return results

    @property
    def consolidates(self) -> bool:
        s = self.settings
        return self.writes and s.consolidate and not s.no_ltm and self.orchestrator is not None

    def consolidate(self, *, force: bool = False) -> Outcome | None:
        """Read the running session back into long-term memory (REPL exit, /memory consolidate);
        None when consolidation is off here (incognito, --no-ltm, ``consolidate: false``)."""
        if not self.consolidates or self.session is None:
            return None
        return self.consolidator.run(self.session, self.agent.ask, force=force)
