"""Wiring of the memory tiers into the app: services for tools and commands, prompt blocks.

- ``ltm``: project knowledge in ``.clio/ltm.json``
- ``notes``: key-value notes in ``.clio/memory/<key>.json``
- ``prefs``: the user's preferences in ``$CLIO_HOME/preferences.json`` (they follow the user)
- ``recall``: the ranked index over every archived session (``.clio/recall.sqlite``), opened lazily

In incognito nothing is read from or written to disk: the stores run in memory.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import clio.tools.memory  # noqa: F401  (registers memory_operations)
import clio.tools.prefs  # noqa: F401  (registers preferences)
from clio.agent.profile import LTM_SHARE, PREFS_SHARE, scaled_budget
from clio.agent.prompt import MemoryBlock
from clio.store.ltm_store import LtmStore
from clio.store.notes import NoteStore
from clio.store.prefs_store import PrefStore
from clio.store.sessions import SessionStore

if TYPE_CHECKING:
    from clio.app import App

SCENARIO = "coding"


class LazyRecall:
    """Opens the recall index on first use, so starting clio never waits for a rebuild."""

    def __init__(self, db_path: Path | None, sessions: SessionStore, current: Any) -> None:
        self.db_path = db_path
        self.sessions = sessions
        self.current = current  # () -> id of the running session (its window is already in context)
        self._index: Any = None

    def search(self, query: str, max_sessions: int = 5, max_results: int = 10) -> list[dict[str, Any]]:
        if self._index is None:
            from clio.store.recall_index import RecallIndex

            self._index = RecallIndex(self.db_path, self.sessions)
        hits: list[dict[str, Any]] = self._index.search(
            query, max_sessions=max_sessions, max_results=max_results, exclude_session=self.current()
        )
        return hits


def open_memory_services(app: App) -> None:
    """Register the memory stores in ``app.services``."""
    writes = app.writes
    app.services["ltm"] = LtmStore(app.paths.clio_dir / "ltm.json" if writes else None)
    app.services["notes"] = NoteStore(app.paths.memory_dir if writes else None)
    app.services["prefs"] = PrefStore(app.paths.home / "preferences.json" if writes else None)
    app.services["recall"] = LazyRecall(
        app.paths.clio_dir / "recall.sqlite" if writes else None,
        app.sessions,
        lambda: app.session.id if app.session is not None else None,
    )


def memory_blocks(app: App) -> list[MemoryBlock]:
    """The prompt blocks long-term memory and preferences contribute, ranked per task.

    Their budgets are the settings, scaled down in small windows (clio.agent.profile)."""
    ltm: LtmStore = app.services["ltm"]
    prefs: PrefStore = app.services["prefs"]
    count = app.estimator.count_text
    s = app.settings

    def ltm_block(task: str, files: list[str]) -> str:
        budget = scaled_budget(s.ltm_budget_tokens, app.budget.limit, LTM_SHARE)
        return ltm.prompt_block(task, files, budget, count)

    def prefs_block(task: str, files: list[str]) -> str:
        return prefs.prompt_block(
            SCENARIO, scaled_budget(s.prefs_budget_tokens, app.budget.limit, PREFS_SHARE), count
        )

    return [ltm_block, prefs_block]
