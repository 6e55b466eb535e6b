"""The project's long-term memory file, ``.clio/ltm.json``: ``{"version": 1, "entries": [...]}``.

Every change is a read-modify-write under the inter-process lock
(:func:`clio.store.atomic.locked_update`) applied to what is on disk at that moment, so
several agents in one project never lose each other's entries. A file that does not
parse is quarantined by ``read_json`` (and reported); a single stored entry that does
not parse is kept in the file untouched and left out of ``all()``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clio.memory import ltm, ltm_stats
from clio.memory.ltm import Entry
from clio.memory.ltm_stats import LtmStats
from clio.memory.provenance import Provenance
from clio.store.atomic import locked_update, read_json

VERSION = 1

Raw = dict[str, Any]


def _empty() -> Raw:
    return {"version": VERSION, "entries": []}


def _valid(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("entries"), list)


def _split(data: Raw) -> tuple[list[Entry], list[Any]]:
    """(parsed entries, raw items that are not valid entries -- kept as they are)."""
    good: list[Entry] = []
    bad: list[Any] = []
    for item in data.get("entries", []):
        try:
            good.append(Entry.from_dict(item))
        except ltm.LtmError:
            bad.append(item)
    return good, bad


def _join(data: Raw, entries: list[Entry], bad: list[Any]) -> Raw:
    out = {k: v for k, v in data.items() if k not in ("version", "entries")}
    return {"version": VERSION, **out, "entries": [e.to_dict() for e in entries] + bad}


class LtmStore:
    """Long-term memory on disk; ``path=None`` disables it (incognito: no reads, no writes)."""

    def __init__(self, path: Path | None, *, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path) if path is not None else None
        self.clock = clock

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def _update(self, change: Callable[[list[Entry]], list[Entry]]) -> None:
        """Apply ``change`` to the entries on disk, under the lock."""
        assert self.path is not None

        def apply(data: Raw) -> Raw:
            entries, bad = _split(data)
            return _join(data, change(entries), bad)

        locked_update(self.path, apply, _empty, validate=_valid)

    def all(self) -> list[Entry]:
        if self.path is None:
            return []
        return _split(read_json(self.path, _empty, validate=_valid))[0]

    def get(self, entry_id: str) -> Entry | None:
        return next((e for e in self.all() if e.id == entry_id), None)

    def add(
        self,
        type: str,
        *,
        confidence: float = ltm.DEFAULT_CONFIDENCE,
        provenance: Provenance | None = None,
        **fields: Any,
    ) -> tuple[Entry, bool]:
        """Add an entry or confirm its near-duplicate; returns (stored entry, created).

        ``provenance`` says who wrote it (the model's writes always carry one). Raises
        ``ltm.LtmError`` for bad fields. When disabled, validates and returns (entry, False)
        without writing.
        """
        entry = ltm.make_entry(type, fields, confidence=confidence, now=self.clock(), provenance=provenance)
        if self.path is None:
            return entry, False
        result: list[tuple[Entry, bool]] = []

        def change(entries: list[Entry]) -> list[Entry]:
            out, stored, created = ltm.upsert(entries, entry)
            result.append((stored, created))
            return out

        self._update(change)
        return result[-1]

    def delete(self, entry_id: str) -> bool:
        if self.path is None:
            return False
        found: list[bool] = []

        def change(entries: list[Entry]) -> list[Entry]:
            kept = [e for e in entries if e.id != entry_id]
            found.append(len(kept) != len(entries))
            return kept

        self._update(change)
        return found[-1]

    def clear(self) -> int:
        """Remove every entry (including unparsable ones); returns how many were there."""
        if self.path is None:
            return 0
        count: list[int] = []

        def wipe(data: Raw) -> Raw:
            count.append(len(data.get("entries", [])))
            return _empty()

        locked_update(self.path, wipe, _empty, validate=_valid)
        return count[-1]

    def prune(
        self, max_age_days: float = 90.0, min_confidence: float = 0.3, now: float | None = None
    ) -> list[Entry]:
        """Remove stale or doubtful entries (rules in ``ltm_stats.prune``); returns the removed ones."""
        if self.path is None:
            return []
        at = self.clock() if now is None else now
        removed: list[list[Entry]] = []

        def change(entries: list[Entry]) -> list[Entry]:
            kept, gone = ltm_stats.prune(entries, at, max_age_days, min_confidence)
            removed.append(gone)
            return kept

        self._update(change)
        return removed[-1]

    def stats(self) -> LtmStats:
        return ltm_stats.stats(self.all())

    def prompt_block(
        self, task: str, files: list[str], budget_tokens: int, count_tokens: Callable[[str], int]
    ) -> str:
        """The ranked, budgeted markdown block for the system prompt ('' when empty or disabled).

        Framed as notes to verify, never as instructions; tainted entries are marked."""
        chosen = ltm.select_for_prompt(self.all(), task, files, self.clock(), budget_tokens, count_tokens)
        return ltm.render_ltm(chosen)
