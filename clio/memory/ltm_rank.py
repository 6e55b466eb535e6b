"""Long-term memory ranking and decay, pure: which entries a task gets, and how an entry fades.

- decay by type (each type's class, :mod:`clio.memory.types`; docs/memory.md says why), stretched
  by use: :func:`half_life`, :func:`recency`, :func:`effective_score`;
- ranking for the prompt: BM25 relevance to the task and working files, confidence x recency, and
  optionally semantic similarity fused by RRF: :func:`rank`, :func:`select_for_prompt`;
- :func:`by_relevance` for a query asked by name (``clio mcp``'s ``recall``): rules judged by their words;
- :func:`search` for the memory tool and ``/memory search``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from clio.memory.ltm import DAY, HEADER, Entry, render_entry, render_ltm
from clio.memory.similarity import bm25, rrf, terms
from clio.memory.types import HALF_LIFE_BY_CLASS, TYPES

# Decay by type and prompt caps: read from each type's declaration (clio.memory.types)
DECAY_CLASS: dict[str, str] = {name: spec.decay for name, spec in TYPES.items()}
DEFAULT_CAPS: dict[str, int] = {name: spec.cap for name, spec in TYPES.items()}
EVERY_TASK = frozenset(name for name, spec in TYPES.items() if spec.every_task)
HALF_LIFE_DAYS = 90.0  # for a type without a class
USE_STRETCH, USE_STRETCH_MAX = 0.25, 4  # each use (up to 4) stretches the half-life by 25%
W_RELEVANCE, W_BASE = 0.65, 0.35  # score = W_RELEVANCE*relevance + W_BASE*confidence*recency
RRF_K = 10  # the k of the lexical + semantic fusion (benches/bench_ltm_semantic.py: 5-10 rank the answer highest)


def half_life(entry: Entry) -> float | None:
    """Days for ``entry``'s weight to halve (None: never decays): its type's class, stretched
    by 25% per use up to 4 uses (2x), so what keeps being used fades slower."""
    base = HALF_LIFE_BY_CLASS.get(DECAY_CLASS.get(entry.type, "fact"), HALF_LIFE_DAYS)
    if base is None:
        return None
    return base * (1.0 + USE_STRETCH * min(entry.uses, USE_STRETCH_MAX))


def recency(entry: Entry, now: float, half_life_days: float | None = None) -> float:
    """0.5 ** (days since last confirmed or used / half-life of its type); 1.0 for a type
    that never decays and for entries active 'in the future'."""
    hl = half_life(entry) if half_life_days is None else half_life_days
    if hl is None:
        return 1.0
    age_days = max(0.0, now - entry.active) / DAY
    return float(0.5 ** (age_days / hl))


decay = recency


def effective_score(entry: Entry, now: float) -> float:
    """Importance (confidence) x decay by type since the last reinforcement."""
    return entry.confidence * recency(entry, now)


def relevance(entries: list[Entry], query: str, every_task: frozenset[str] = EVERY_TASK) -> list[float]:
    """BM25 relevance to ``query`` scaled to 0..1 by the best entry; types that apply to every
    task (rules, for the prompt) are always 1; with ``every_task`` empty every entry is judged by
    its words (a query asked by name: :func:`by_relevance`)."""
    raw = bm25([terms(e.full_text()) for e in entries], terms(query))
    best = max((r for r, e in zip(raw, entries, strict=True) if e.type not in every_task), default=0.0)
    return [
        1.0 if e.type in every_task else (r / best if best > 0 else 0.0)
        for r, e in zip(raw, entries, strict=True)
    ]


def fuse(
    entries: list[Entry], lexical: list[float], semantic: dict[str, float], every_task: frozenset[str] = EVERY_TASK
) -> list[float]:
    """Relevance from the lexical and semantic rankings fused by RRF (k=RRF_K), scaled to 0..1 by
    the best entry; rules (every-task types) stay 1. Entries without a semantic score rank only lexically."""
    lex_order = [e.id for r, e in sorted(zip(lexical, entries, strict=True), key=lambda t: -t[0]) if r > 0]
    sem_order = [k for k, v in sorted(semantic.items(), key=lambda t: -t[1]) if v > 0]
    fused = rrf([lex_order, sem_order], k=RRF_K)
    best = max((fused.get(e.id, 0.0) for e in entries if e.type not in every_task), default=0.0)
    return [1.0 if e.type in every_task else (fused.get(e.id, 0.0) / best if best > 0 else 0.0) for e in entries]


def rank(
    entries: list[Entry],
    query: str,
    now: float,
    semantic: dict[str, float] | None = None,
    every_task: frozenset[str] = EVERY_TASK,
) -> list[tuple[float, Entry]]:
    """(score, entry) best first: W_RELEVANCE*relevance + W_BASE*effective score (confidence x
    decay by type). With ``semantic`` (entry id -> similarity to the query, from
    :mod:`clio.recall.embedder` when its model is loaded), relevance is the RRF fusion of the
    lexical and semantic rankings; without it, BM25 alone."""
    rel = relevance(entries, query, every_task)
    if semantic:
        rel = fuse(entries, rel, semantic, every_task)
    scored = [
        (W_RELEVANCE * r + W_BASE * effective_score(e, now), e) for r, e in zip(rel, entries, strict=True)
    ]
    scored.sort(key=lambda t: (-t[0], -t[1].last_confirmed, t[1].id))
    return scored


def select_for_prompt(
    entries: list[Entry],
    task: str,
    files: list[str],
    now: float,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    caps: dict[str, int] | None = None,
    semantic: dict[str, float] | None = None,
) -> list[Entry]:
    """The most useful entries for this task within ``budget_tokens`` and the per-type caps.

    Ranked by :func:`rank` (relevance to the task and files, confidence, recency), never by
    insertion order. ``count_tokens(render_ltm(result)) <= budget_tokens`` always holds.
    """
    limits = {**DEFAULT_CAPS, **(caps or {})}
    if budget_tokens <= 0 or not entries:
        return []
    used = count_tokens(HEADER) + 1
    per_type: Counter[str] = Counter()
    chosen: list[Entry] = []
    room = sum(limits.get(t, 0) for t in TYPES)
    for _score, e in rank(entries, " ".join([task, *files]), now, semantic):  # path components become words
        if len(chosen) >= room or budget_tokens - used < 3:
            break
        if per_type[e.type] >= limits.get(e.type, 0):
            continue
        cost = count_tokens(render_entry(e)) + 1
        if per_type[e.type] == 0:
            cost += count_tokens(TYPES[e.type].heading + ":") + 1
        if used + cost > budget_tokens:
            continue
        used += cost
        per_type[e.type] += 1
        chosen.append(e)
    while chosen and count_tokens(render_ltm(chosen)) > budget_tokens:
        chosen.pop()  # token counts of joined text can exceed the sum of the parts
    return chosen


def by_relevance(entries: list[Entry], query: str, now: float, semantic: dict[str, float] | None = None) -> list[Entry]:
    """``entries`` (those :func:`select_for_prompt` chose) in the order of :func:`rank` for a query
    asked by name (``clio mcp``'s ``recall``): rules judged by their words like every other type,
    not put first because they apply to every task, so the entry the query is about comes first."""
    return [e for _score, e in rank(entries, query, now, semantic, every_task=frozenset())]


def search(entries: list[Entry], query: str, limit: int = 20) -> list[tuple[float, Entry]]:
    """Entries sharing (stemmed) words with ``query``: (relevance scaled to 0..1, entry), best first."""
    raw = bm25([terms(e.full_text()) for e in entries], terms(query))
    best = max(raw, default=0.0)
    hits = [(r / best, e) for r, e in zip(raw, entries, strict=True) if r > 0]
    hits.sort(key=lambda t: (-t[0], -t[1].last_confirmed, t[1].id))
    return hits[:limit]


# ---------------------------------------------------------------- rendering
