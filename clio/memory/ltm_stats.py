"""Long-term memory upkeep: pruning faded entries, and the numbers /memory stats shows.

Pure, like :mod:`clio.memory.ltm`: entries in, entries (or text) out.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from clio.memory import lifecycle
from clio.memory.ltm import TYPES, Entry
from clio.wording import plural


def prune(
    entries: list[Entry],
    now: float,
    max_unused_days: float = lifecycle.PRUNE_UNUSED_DAYS,
    min_score: float = lifecycle.PRUNE_SCORE,
) -> tuple[list[Entry], list[Entry]]:
    """Split into (kept, removed): an entry goes when its effective score (confidence x decay
    by type) is below ``min_score`` or, for a type that decays, it was not confirmed or used
    for ``max_unused_days``; pinned entries stay (:func:`clio.memory.lifecycle.prune`)."""
    return lifecycle.prune(entries, now, max_unused_days, min_score)


@dataclass
class LtmStats:
    total: int
    by_type: dict[str, int]
    oldest: float | None  # earliest first_seen
    newest: float | None  # latest first_seen
    last_confirmed: float | None
    mean_confidence: float | None
    tainted: int = 0  # written in a turn that had read untrusted content
    unknown_origin: int = 0  # written before provenance was recorded
    pinned: int = 0


def stats(entries: list[Entry]) -> LtmStats:
    counts = Counter(e.type for e in entries)
    return LtmStats(
        total=len(entries),
        by_type={t: counts.get(t, 0) for t in TYPES},
        oldest=min((e.first_seen for e in entries), default=None),
        newest=max((e.first_seen for e in entries), default=None),
        last_confirmed=max((e.last_confirmed for e in entries), default=None),
        mean_confidence=sum(e.confidence for e in entries) / len(entries) if entries else None,
        tainted=sum(1 for e in entries if e.tainted),
        unknown_origin=sum(1 for e in entries if e.provenance is None),
        pinned=sum(1 for e in entries if e.pinned),
    )


def day(ts: float | None) -> str:
    return "-" if ts is None else time.strftime("%Y-%m-%d", time.localtime(ts))


def format_stats(s: LtmStats) -> str:
    if not s.total:
        return "Long-term memory is empty."
    counts = ", ".join(f"{n} {t}" for t, n in s.by_type.items() if n)
    origin = f" {s.tainted} written after reading untrusted content." if s.tainted else ""
    origin += f" {s.unknown_origin} of unknown origin (older than provenance)." if s.unknown_origin else ""
    origin += f" {s.pinned} pinned." if s.pinned else ""
    return (
        f"Long-term memory: {plural(s.total, 'entry', 'entries')} ({counts}); mean confidence {s.mean_confidence or 0:.2f}; "
        f"oldest {day(s.oldest)}, newest {day(s.newest)}, last confirmed {day(s.last_confirmed)}.{origin}"
    )
