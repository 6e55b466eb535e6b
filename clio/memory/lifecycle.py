"""The lifecycle of long-term memory entries: reinforcement, pruning, compaction.

Pure, like :mod:`clio.memory.ltm`: entries and a time in, entries (or ids) out; the store
(:mod:`clio.memory.ltm_store`) reads, locks and writes.

- **Decay by type** (:data:`clio.memory.ltm_rank.DECAY_CLASS`): facts (discovery, solution,
  pattern, workflow) halve every 90 days, events (failure) every 30, preferences (rule)
  never. Effective score = confidence x decay since the last confirmation or use
  (:func:`clio.memory.ltm_rank.effective_score`).
- **Reinforcement**: an entry recalled by the memory tool, or injected into a turn that
  then uses it (:func:`used_in_turn`), gets ``last_used = now`` and ``uses + 1``: its decay
  restarts, and its half-life stretches 25% per use (up to 2x at 4 uses).
- **Pruning** (:func:`prune`): below an effective score of 0.1, or 180 days without
  confirmation or use (types that never decay excepted), unless pinned.
- **Compaction** (:func:`compaction_groups`, :func:`compact`): old, low-score entries of
  one type on one topic become one summary entry written by the model; the old wordings
  stay in its ``history``. Offered past :data:`AUTO_COMPACT_AT` entries.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from clio.memory import ltm
from clio.memory.ltm import DAY, Entry
from clio.memory.ltm_rank import effective_score, half_life
from clio.memory.provenance import Provenance, combine
from clio.memory.similarity import anchors, contains_run, jaccard, terms, tokenize

PRUNE_SCORE = 0.1  # effective score below which an entry goes
PRUNE_UNUSED_DAYS = 180.0  # days without confirmation or use after which an entry goes
COMPACT_SCORE = 0.35  # entries below this effective score may be compacted...
COMPACT_AGE_DAYS = 30.0  # ... when not confirmed or used for this long
COMPACT_MIN_GROUP, COMPACT_MAX_GROUP = 3, 12  # a summary replaces 3 to 12 entries
TOPIC_JACCARD = 0.3  # content-word Jaccard from which two entries are on one topic
AUTO_COMPACT_AT = 300  # entries from which the app should compact on its own
USED_TERMS_MAX = 5  # distinctive words a turn must repeat (at most) to count as using an entry


def reinforce(entry: Entry, now: float) -> Entry:
    """``entry`` recalled or used at ``now``: decay restarts, one more use."""
    return dataclasses.replace(entry, last_used=max(now, entry.last_used or now), uses=entry.uses + 1)


def _meaningful(anchor: tuple[str, ...]) -> bool:
    """An anchor specific enough to tell that a text names it (not '2', not 'a')."""
    if len(anchor) > 1:
        return True
    tok = anchor[0]
    return len(tok) >= 3 and not (tok.isdigit() and len(tok) < 3)


def distinctive(text: str) -> set[str]:
    """Stemmed content words of 4+ letters: what a text that uses this entry would repeat."""
    return {t for t in terms(text) if len(t) >= 4 and not t.isdigit()}


def used_in_turn(entry: Entry, assistant_texts: Iterable[str], tool_args: Iterable[Any]) -> bool:
    """Whether a turn used ``entry``: one of its anchors (identifier, path, number, name) is
    named in what the assistant wrote or passed to tools, or at least half of its
    distinctive words (capped at :data:`USED_TERMS_MAX`) are repeated there."""
    parts = list(assistant_texts)
    parts += [a if isinstance(a, str) else json.dumps(a, ensure_ascii=False) for a in tool_args]
    haystack = "\n".join(parts)
    if not haystack.strip():
        return False
    text = entry.full_text()
    toks = tokenize(haystack)
    for a in anchors(text):
        if _meaningful(a) and contains_run(toks, a):
            return True
    words = distinctive(entry.text())
    if not words:
        return False
    seen = set(terms(haystack))
    need = min(USED_TERMS_MAX, math.ceil(len(words) / 2))
    return len(words & seen) >= need


def prunable(entry: Entry, now: float, max_unused_days: float, min_score: float) -> bool:
    """Whether ``entry`` goes: not pinned, and its effective score is below ``min_score`` or
    (for a type that decays) it was not confirmed or used for ``max_unused_days``."""
    if entry.pinned and not entry.foreign:  # a foreign entry's pin is not honoured
        return False
    if effective_score(entry, now) < min_score:
        return True
    return half_life(entry) is not None and now - entry.active > max_unused_days * DAY


def prune(
    entries: list[Entry],
    now: float,
    max_unused_days: float = PRUNE_UNUSED_DAYS,
    min_score: float = PRUNE_SCORE,
) -> tuple[list[Entry], list[Entry]]:
    """Split into (kept, removed) by :func:`prunable`."""
    kept: list[Entry] = []
    removed: list[Entry] = []
    for e in entries:
        (removed if prunable(e, now, max_unused_days, min_score) else kept).append(e)
    return kept, removed


# ---------------------------------------------------------------- compaction


def compactable(entry: Entry, now: float) -> bool:
    """Old and faded: not pinned, a type that decays, effective score below COMPACT_SCORE,
    not confirmed or used for COMPACT_AGE_DAYS."""
    return (
        not (entry.pinned and not entry.foreign)
        and half_life(entry) is not None
        and effective_score(entry, now) < COMPACT_SCORE
        and now - entry.active >= COMPACT_AGE_DAYS * DAY
    )


def _topic_keys(e: Entry) -> tuple[set[tuple[str, ...]], frozenset[str]]:
    text = e.text()
    return {a for a in anchors(text) if _meaningful(a)}, frozenset(distinctive(text))


def compaction_groups(entries: Sequence[Entry], now: float) -> list[list[str]]:
    """Ids of entries to compact together, oldest first in each group, groups oldest first.

    Among :func:`compactable` entries of one type, two are on one topic when they share a
    (meaningful) anchor or their distinctive words have Jaccard >= TOPIC_JACCARD; topics are
    the connected groups. Groups of 3 to 12 entries are returned; a larger topic is cut in
    runs of 12 by age (a remainder under 3 waits for the next round).
    """
    cands = sorted((e for e in entries if compactable(e, now)), key=lambda e: (e.first_seen, e.id))
    parent = list(range(len(cands)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    keys = [_topic_keys(e) for e in cands]
    by_key: dict[tuple[str, Any], list[int]] = {}
    for i, (names, words) in enumerate(keys):
        for a in names:
            by_key.setdefault((cands[i].type, ("a", a)), []).append(i)
        for w in words:
            by_key.setdefault((cands[i].type, ("w", w)), []).append(i)
    checked: set[tuple[int, int]] = set()
    for (_type, (kind, _key)), members in by_key.items():
        for x, i in enumerate(members):
            for k in members[x + 1 :]:
                if find(i) == find(k):
                    continue
                if kind == "a":  # a shared anchor: one topic
                    parent[find(k)] = find(i)
                elif (i, k) not in checked:
                    checked.add((i, k))
                    if jaccard(keys[i][1], keys[k][1]) >= TOPIC_JACCARD:
                        parent[find(k)] = find(i)
    topics: dict[int, list[int]] = {}
    for i in range(len(cands)):
        topics.setdefault(find(i), []).append(i)
    groups: list[list[str]] = []
    for members in sorted(topics.values(), key=lambda m: m[0]):
        for start in range(0, len(members), COMPACT_MAX_GROUP):
            run = members[start : start + COMPACT_MAX_GROUP]
            if len(run) >= COMPACT_MIN_GROUP:
                groups.append([cands[i].id for i in run])
    return groups


def compact(entries: list[Entry], ids: Sequence[str], summary: Entry) -> tuple[list[Entry], Entry | None]:
    """Replace the entries ``ids`` (those still there) by ``summary``, which keeps their
    wordings (and their own histories) in its ``history``, the earliest first_seen, the
    uses added up and the combined provenance (tainted if any of them was).

    Returns (entries, the stored summary); (entries unchanged, None) when none of ``ids``
    is there any more.
    """
    wanted = set(ids)
    group = [e for e in entries if e.id in wanted]
    if not group:
        return list(entries), None
    history: list[dict[str, Any]] = []
    origin: Provenance | None = summary.provenance
    for e in sorted(group, key=lambda e: (e.first_seen, e.id)):
        history += [*e.history, ltm.snapshot(e, "compacted")]
        origin = combine(e.provenance, origin) if origin is not None else e.provenance
    kept = [e for e in entries if e.id not in wanted]
    taken = {e.id for e in kept}
    stored = dataclasses.replace(
        summary,
        id=summary.id if summary.id not in taken else ltm.entry_id(summary.type, summary.text(), taken),
        first_seen=min(e.first_seen for e in group),
        uses=sum(e.uses for e in group),
        history=[*summary.history, *history],
        provenance=origin,
    )
    return [*kept, stored], stored


def group_texts(entries: Sequence[Entry], ids: Sequence[str]) -> list[str]:
    """One rendered line per entry of a group (for the compaction prompt and /memory compact)."""
    wanted = set(ids)
    return [ltm.render_entry(e)[2:] for e in entries if e.id in wanted]
