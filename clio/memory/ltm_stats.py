"""Long-term memory upkeep: pruning stale or doubtful entries, and the numbers /memory stats shows.

Pure, like :mod:`clio.memory.ltm`: entries in, entries (or text) out.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from clio.memory.ltm import DAY, TYPES, Entry

KEEP_TYPES = ("rule", "failure")  # survive pruning by age when confident (see prune)
KEEP_CONFIDENCE = 0.8


def prune(
    entries: list[Entry], now: float, max_age_days: float = 90.0, min_confidence: float = 0.3
) -> tuple[list[Entry], list[Entry]]:
    """Split into (kept, removed).

    An entry is removed when its confidence is below ``min_confidence``, OR when it was
    last confirmed more than ``max_age_days`` days before ``now`` -- except that rules and
    failures with confidence >= KEEP_CONFIDENCE (0.8) never expire by age alone (a hard
    rule or a lesson from a failure does not go stale because nobody repeated it).
    """
    kept: list[Entry] = []
    removed: list[Entry] = []
    for e in entries:
        too_old = (now - e.last_confirmed) > max_age_days * DAY
        protected = e.type in KEEP_TYPES and e.confidence >= KEEP_CONFIDENCE
        if e.confidence < min_confidence or (too_old and not protected):
            removed.append(e)
        else:
            kept.append(e)
    return kept, removed


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
    )


def day(ts: float | None) -> str:
    return "-" if ts is None else time.strftime("%Y-%m-%d", time.localtime(ts))


def format_stats(s: LtmStats) -> str:
    if not s.total:
        return "Long-term memory is empty."
    counts = ", ".join(f"{n} {t}" for t, n in s.by_type.items() if n)
    origin = f" {s.tainted} written after reading untrusted content." if s.tainted else ""
    origin += f" {s.unknown_origin} of unknown origin (older than provenance)." if s.unknown_origin else ""
    return (
        f"Long-term memory: {s.total} entries ({counts}); mean confidence {s.mean_confidence or 0:.2f}; "
        f"oldest {day(s.oldest)}, newest {day(s.newest)}, last confirmed {day(s.last_confirmed)}.{origin}"
    )
