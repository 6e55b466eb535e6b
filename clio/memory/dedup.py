"""Lossless dedup of long-term memory: merge only true duplicates, queue the doubtful pairs.

Pure: entries in, entries out. The rule (:func:`clio.memory.similarity.classify`), for a new
entry against an older one of the same type:

- it names an anchor the older one does not (identifier, path, number, version, name): a
  different fact, kept separate;
- word-set Jaccard >= 0.85, no anchor of the older one missing, no word replaced by another:
  a true duplicate, merged (:func:`clio.memory.ltm.merge`: the NEWER wording, the older one in
  ``history``);
- Jaccard 0.5-0.85 (or >= 0.85 with a replaced word or a dropped anchor): ambiguous, kept
  separate and listed by :func:`ambiguous_pairs` for the model to decide during consolidation
  (:func:`apply_decision`);
- otherwise distinct.

Semantic candidates are optional (``(id, id, cosine)`` found by the caller with the embedding
model, :mod:`clio.memory.meaning`): pairs the words miss but the vectors find (cosine >=
:data:`SEMANTIC_MIN`, no anchor difference) are queued as ambiguous too, for the model to
decide; vectors alone never merge. Nothing here loads a model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Literal

from clio.memory import ltm
from clio.memory.ltm import Entry, LtmError
from clio.memory.similarity import (
    AMBIGUOUS,
    AMBIGUOUS_MIN,
    DUPLICATE,
    anchors,
    classify,
    near_duplicates,
    similar_pairs,
    unnamed,
    word_set,
)

# Entries of one type from which the all-pairs scan uses MinHash LSH instead of checking
# every pair. Measured (benches/bench_ltm_dedup.py, cold signature cache, 2 shared cores):
# 200 entries exact 13 ms vs LSH 13 ms, 300: 30 vs 20, 500: 82 vs 41, 1,000: 341 vs 44,
# 5,000: 9.0 s vs 0.43 s, and LSH found every pair the exact scan found.
LSH_MIN = 300
# The one-new-entry check (upsert) stays exact at every size: a size bound and one Jaccard
# per candidate beat computing MinHash signatures in pure Python (1,000 entries: 10 ms vs
# 38 ms; 5,000: 55 vs 202).
MINHASH_MIN: int | None = None
# Cosine from which two entries the words call distinct may be one fact (queued for the model,
# never merged). Measured (benches/bench_ltm_semantic.py, the shipped static table), dev pairs:
# 0.60 queues 8/8 reworded duplicates and 1/8 related distinct facts, 0.70 7/8 and 1/8, 0.75
# 5/8 and 0/8, 0.90 2/8; no pair of 48 unrelated facts reaches 0.60.
SEMANTIC_MIN = 0.6
SEMANTIC_MAX = 2000  # entries of one type above which semantic candidates are not searched (O(n^2))

Decision = Literal["merge", "keep_both", "replace"]
DECISIONS: tuple[str, ...] = ("merge", "keep_both", "replace")


def upsert(
    entries: list[Entry], new: Entry, threshold: float = ltm.DEDUP_THRESHOLD
) -> tuple[list[Entry], Entry, bool]:
    """Add ``new`` or merge it into a same-type TRUE duplicate (see the module doc); anything
    else is kept as a separate entry, so nothing is lost.

    Returns (entries, the stored entry, created).
    """
    same = [i for i, e in enumerate(entries) if e.type == new.type]
    sets = [word_set(entries[i].text()) for i in same]
    hits = near_duplicates(word_set(new.text()), sets, threshold, prefilter_min=MINHASH_MIN)
    out = list(entries)
    for k, j in hits:
        idx = same[k]
        if classify(out[idx].text(), new.text(), j)[0] == DUPLICATE:
            out[idx] = ltm.merge(out[idx], new)
            return out, out[idx], False
    taken = {e.id for e in entries}
    if new.id in taken:
        new = dataclasses.replace(new, id=ltm.entry_id(new.type, new.text(), taken))
    out.append(new)
    return out, new, True


def _older_first(a: Entry, b: Entry) -> tuple[Entry, Entry]:
    return (a, b) if (a.first_seen, a.id) <= (b.first_seen, b.id) else (b, a)


def _decided(a: Entry, b: Entry) -> bool:
    return b.id in a.distinct or a.id in b.distinct


def ambiguous_pairs(
    entries: Sequence[Entry],
    semantic: Iterable[tuple[str, str, float]] | None = None,
    *,
    lsh_min: int | None = LSH_MIN,
) -> list[tuple[str, str, float]]:
    """(older id, newer id, score) of same-type pairs that may be one fact, best first.

    Lexical pairs: :func:`classify` says AMBIGUOUS (score = word-set Jaccard). Semantic pairs
    (only with ``semantic``: (id, id, cosine) candidates the caller found with the embedding
    model, ``clio.memory.meaning``): same type, cosine >= SEMANTIC_MIN, neither names an anchor
    the other lacks, not a true duplicate by the words (score = cosine). Vectors alone never
    merge anything: these pairs go to the model like the lexical ones. Pairs the model already
    kept apart (``distinct``) are left out.
    """
    found: dict[tuple[str, str], float] = {}
    by_type: dict[str, list[Entry]] = {}
    for e in entries:
        by_type.setdefault(e.type, []).append(e)
    for group in by_type.values():
        texts = [e.text() for e in group]
        sets = [word_set(t) for t in texts]
        for i, k, j in similar_pairs(sets, AMBIGUOUS_MIN, lsh_min=lsh_min):
            old, new = _older_first(group[i], group[k])
            if _decided(old, new):
                continue
            if classify(old.text(), new.text(), j)[0] == AMBIGUOUS:
                found[(old.id, new.id)] = j
    by_id = {e.id: e for e in entries}
    for a_id, b_id, c in semantic or ():
        a, b = by_id.get(a_id), by_id.get(b_id)
        if a is None or b is None or a.id == b.id or a.type != b.type or c < SEMANTIC_MIN:
            continue
        if len(by_type[a.type]) > SEMANTIC_MAX:
            continue
        old, new = _older_first(a, b)
        if (old.id, new.id) in found or _decided(old, new):
            continue
        ot, nt = old.text(), new.text()
        if unnamed(anchors(nt), ot) or unnamed(anchors(ot), nt):
            continue  # another identifier, path, number, version or name: another fact
        if classify(ot, nt)[0] == DUPLICATE:
            continue  # upsert merges those; here only what the words call distinct or doubtful
        found[(old.id, new.id)] = c
    pairs = [(a, b, s) for (a, b), s in found.items()]
    pairs.sort(key=lambda t: (-t[2], t[0], t[1]))
    return pairs


def apply_decision(entries: list[Entry], a_id: str, b_id: str, decision: str) -> list[Entry]:
    """The entries after the model's decision on the pair (a_id, b_id):

    - ``merge``: one fact; the newer wording is kept under the older entry's id, the older
      wording goes to ``history`` (:func:`clio.memory.ltm.merge`);
    - ``keep_both``: two facts; each lists the other in ``distinct`` so the pair is not
      queued again;
    - ``replace``: ``a_id`` supersedes ``b_id``; b is removed and its wording kept in a's
      ``history`` (why: "replaced").

    Raises LtmError for an unknown decision or a pair of one id. When either id is no longer
    there (removed by another writer), the entries come back unchanged.
    """
    if decision not in DECISIONS:
        raise LtmError(f"unknown decision {decision!r}; use one of: {', '.join(DECISIONS)}")
    if a_id == b_id:
        raise LtmError("a pair needs two different ids")
    index = {e.id: i for i, e in enumerate(entries)}
    if a_id not in index or b_id not in index:
        return list(entries)
    a, b = entries[index[a_id]], entries[index[b_id]]
    out = list(entries)
    if decision == "keep_both":
        out[index[a_id]] = dataclasses.replace(a, distinct=list(dict.fromkeys([*a.distinct, b.id])))
        out[index[b_id]] = dataclasses.replace(b, distinct=list(dict.fromkeys([*b.distinct, a.id])))
        return out
    if decision == "merge":
        old, new = (a, b) if (a.last_confirmed, a.first_seen) <= (b.last_confirmed, b.first_seen) else (b, a)
        merged = ltm.merge(old, new, why="merged by the model")
        merged = dataclasses.replace(merged, first_seen=min(old.first_seen, new.first_seen))
        out[index[old.id]] = merged
        del out[index[new.id]]
        return out
    kept = dataclasses.replace(
        a,
        history=[*a.history, *b.history, ltm.snapshot(b, "replaced")],
        pinned=a.pinned or b.pinned,
        distinct=[d for d in dict.fromkeys([*a.distinct, *b.distinct]) if d != a.id],
    )
    out[index[a_id]] = kept
    del out[index[b_id]]
    return out
