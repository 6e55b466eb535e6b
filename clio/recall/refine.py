"""The stages after fusion: what one ranked list of messages cannot see on its own.

:func:`refine` takes the fused candidates of one search (best first, each with a positive
score) and adjusts them with three generic signals of a conversation, then returns them best
first. Each stage adds a share of an existing score, so a candidate that no stage concerns keeps
its score and their order is kept.

- **Session relevance** (a retrieval unit above the single message): the scores of the best
  :data:`SESSION_TOP` candidates are summed per session; every candidate gains
  :data:`SESSION_WEIGHT` x its session's share of the best such sum x the best score. A
  message from a session that is about the query as a whole beats a stray match elsewhere.
- **The reply to a question**: a message that asks something (a '?' near its end) lends
  :data:`ANSWER_WEIGHT` of its score to the next message of its session, which is where the
  answer is, often without the query's words ("Who's your favourite team?" -> "The Wolves!").
  Every hit also lends :data:`NEIGHBOUR_WEIGHT` to both adjacent messages (a reply such as
  "Yes, that one" is about what came just before). Neighbours that were not candidates join
  the list; only the best :data:`EXPAND_TOP` candidates lend, so a search costs at most twice
  that many indexed look-ups.
- **Time for "when" questions**: when the query asks for a time ("when did...", "what year...",
  "how long ago..."), candidates that state one (a date, a weekday or month, "yesterday", "last
  week", "ago"...) gain :data:`WHEN_WEIGHT` x the best score.
- **The time a query names** ("in November 2023", "on 1 May 2022", "yesterday":
  :mod:`clio.recall.dates`): candidates written in that period, from :data:`PERIOD_BEFORE` before
  it to :data:`PERIOD_AFTER` after it (what happened is often told later), gain
  :data:`PERIOD_WEIGHT` x the best score.

Measured on the LoCoMo dev conversations (benches/recall_locomo.py, docs/memory.md section 6).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clio.lazy_re import lazy
from clio.recall.dates import DAY, named_period

SESSION_WEIGHT = 0.2
SESSION_TOP = 10
ANSWER_WEIGHT = 0.6
NEIGHBOUR_WEIGHT = 0.1
EXPAND_TOP = 50
WHEN_WEIGHT = 0.3
REFINE_TOP = 100  # fused candidates the stages weigh (the rest are too far down to come up)
ASK_TAIL = 120  # a '?' this close to the end: the message asks something

WHEN_QUESTION = lazy(
    r"\b(when|what (date|day|time|year|month)|which (date|day|year|month)|how long ago)\b", re.IGNORECASE
)
TIME_WORDS = frozenset(
    """yesterday today tonight tomorrow ago recently lately since weekend monday tuesday wednesday
    thursday friday saturday sunday january february march april may june july august september
    october november december jan feb aug sep sept oct nov dec""".split()  # noqa: SIM905
)
RELATIVE = frozenset("last next this past coming previous".split())  # noqa: SIM905 ("last week")
WORD = lazy(r"[a-z0-9:]+")
NUMBER_TIME = lazy(r"(19|20)\d\d|\d{1,2}:\d\d|\d{1,2}(st|nd|rd|th)")  # 2023, 14:30, 5th
PERIOD_WEIGHT = 1.0  # a message of the named time beats one that only shares words
PERIOD_BEFORE = 3 * DAY
PERIOD_AFTER = 7 * DAY
TIME_CHARS = 2_000  # how much of a message is read for a time
WHEN_TOP = 100  # candidates looked at for a time


@dataclass
class Candidate:
    """One message of the index as a search sees it (``score`` > 0 ranks it; higher is better)."""

    id: int
    session_id: str
    role: str
    seq: int
    ts: float
    body: str
    score: float

    def row(self) -> tuple[str, str, int, float, str, float]:
        """The shape :func:`clio.recall.query.shape_results` reads (the score negated, as a rank)."""
        return (self.session_id, self.role, self.seq, self.ts, self.body, -self.score)


def asks(text: str) -> bool:
    """Whether a message asks something: a question mark near its end."""
    return "?" in text[-ASK_TAIL:]


def boost_sessions(cands: list[Candidate], weight: float = SESSION_WEIGHT, top: int = SESSION_TOP) -> None:
    """Raise every candidate by its session's share of the best candidates' scores."""
    best = sorted(cands, key=lambda c: -c.score)[:top]
    if not best or best[0].score <= 0:
        return
    sums: dict[str, float] = {}
    for c in best:
        sums[c.session_id] = sums.get(c.session_id, 0.0) + c.score
    peak, high = max(sums.values()), best[0].score
    for c in cands:
        c.score += weight * sums.get(c.session_id, 0.0) / peak * high


Neighbours = Callable[[list[Candidate]], dict[int, tuple[Candidate | None, Candidate | None]]]

_NEIGHBOURS = """
WITH c(cid, sid) AS (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))
SELECT c.cid, m.id, m.session_id, m.role, m.seq, m.ts, m.body, 0.0 FROM c JOIN msgs m ON m.id IN (
    (SELECT max(p.id) FROM msgs p WHERE p.session_id = c.sid AND p.id < c.cid),
    (SELECT min(n.id) FROM msgs n WHERE n.session_id = c.sid AND n.id > c.cid))
"""


def neighbours_in(conn: sqlite3.Connection, keep: Callable[[str, int], bool]) -> Neighbours:
    """The previous and next indexed message of each candidate's session, read from ``msgs`` in
    one query (None at a session's ends, or where ``keep(session_id, seq)`` refuses the message)."""

    def read(cands: list[Candidate]) -> dict[int, tuple[Candidate | None, Candidate | None]]:
        found: dict[int, list[Candidate | None]] = {c.id: [None, None] for c in cands}
        pairs = json.dumps([[c.id, c.session_id] for c in cands])
        for row in conn.execute(_NEIGHBOURS, (pairs,)):
            if keep(row[2], row[4]):
                found[row[0]][row[1] > row[0]] = Candidate(*row[1:])
        return {i: (p, n) for i, (p, n) in found.items()}

    return read


def expand(
    cands: list[Candidate],
    neighbours: Neighbours,
    answer: float = ANSWER_WEIGHT,
    adjacent: float = NEIGHBOUR_WEIGHT,
    top: int = EXPAND_TOP,
) -> list[Candidate]:
    """Lend each of the best ``top`` candidates' score to its neighbours (more to the reply of a
    question); returns the candidates with the neighbours that were not among them."""
    by_id = {c.id: c for c in cands}
    lent: dict[int, float] = {}
    lenders = [c for c in sorted(cands, key=lambda c: -c.score)[:top] if c.score > 0]
    around = neighbours(lenders) if lenders else {}
    for c in lenders:
        prev, nxt = around.get(c.id, (None, None))
        for n, share in ((prev, adjacent), (nxt, adjacent + (answer if asks(c.body) else 0.0))):
            if n is None or not share:
                continue
            by_id.setdefault(n.id, n)
            lent[n.id] = lent.get(n.id, 0.0) + share * c.score
    for i, extra in lent.items():
        by_id[i].score += extra
    return list(by_id.values())


def states_time(text: str) -> bool:
    """Whether a text states a time: a date, a weekday or month, "yesterday", "last week"..."""
    words = WORD.findall(text[:TIME_CHARS].lower())
    for n, w in enumerate(words):
        if w in TIME_WORDS or (w in RELATIVE and n + 1 < len(words)):
            return True
        if w[0].isdigit() and NUMBER_TIME.fullmatch(w):
            return True
    return False


def boost_when(query: str, cands: list[Candidate], weight: float = WHEN_WEIGHT, top: int = WHEN_TOP) -> None:
    """For a question about time, raise the best ``top`` candidates that state a time."""
    if not cands or not WHEN_QUESTION.search(query):
        return
    best = sorted(cands, key=lambda c: -c.score)[:top]
    high = best[0].score
    if high <= 0:
        return
    for c in best:
        if states_time(c.body):
            c.score += weight * high


def boost_period(
    period: tuple[float, float] | None,
    cands: list[Candidate],
    weight: float = PERIOD_WEIGHT,
    before: float = PERIOD_BEFORE,
    after: float = PERIOD_AFTER,
) -> None:
    """Raise the candidates written in ``period`` (epoch seconds), from ``before`` its start to
    ``after`` its end, by ``weight`` x the best score."""
    if period is None or not cands:
        return
    high = max(c.score for c in cands)
    if high <= 0:
        return
    start, end = period[0] - before, period[1] + after
    for c in cands:
        if start <= c.ts < end:
            c.score += weight * high


def refine(
    query: str, cands: list[Candidate], neighbours: Neighbours, now: float | None = None
) -> list[Candidate]:
    """Every stage in turn; the candidates best first (ties keep their fused order). ``now``
    (epoch seconds) places the times a query names relative to today ("yesterday"); without
    it, only dates the query spells out count."""
    if not cands or max(c.score for c in cands) <= 0:
        return cands  # unscored rows (the common-words path): nothing to weigh
    order = {c.id: n for n, c in enumerate(cands)}
    boost_sessions(cands, SESSION_WEIGHT, SESSION_TOP)
    cands = expand(cands, neighbours, ANSWER_WEIGHT, NEIGHBOUR_WEIGHT, EXPAND_TOP)
    boost_when(query, cands, WHEN_WEIGHT, WHEN_TOP)
    boost_period(named_period(query, now), cands, PERIOD_WEIGHT, PERIOD_BEFORE, PERIOD_AFTER)
    return sorted(cands, key=lambda c: (-c.score, order.get(c.id, len(order))))


def refine_rows(
    conn: sqlite3.Connection,
    query: str,
    rows: list[tuple[Any, ...]],
    keep: Callable[[str, int], bool] | None = None,
    now: float | None = None,
) -> list[tuple[Any, ...]]:
    """Fused index rows (id, session_id, role, seq, ts, body, rank) through :func:`refine`, the
    neighbours read from ``msgs``, only those ``keep(session_id, seq)`` accepts (give it every
    exclusion of the search); returns rows without the id."""
    cands = [Candidate(r[0], r[1], r[2], r[3], r[4], r[5], -float(r[6])) for r in rows[:REFINE_TOP]]
    deeper = {r[0]: -float(r[6]) for r in rows[REFINE_TOP:]}  # a neighbour found there keeps its score
    read = neighbours_in(conn, keep or (lambda sid, seq: True))

    def neighbours(lenders: list[Candidate]) -> dict[int, tuple[Candidate | None, Candidate | None]]:
        found = read(lenders)
        for pair in found.values():
            for n in pair:
                if n is not None:
                    n.score = deeper.get(n.id, 0.0)
        return found

    return [c.row() for c in refine(query, cands, neighbours, now)]
