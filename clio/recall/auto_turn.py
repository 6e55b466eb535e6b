"""One user message's automatic recall, from its words to its block, over a search and scores it
is handed: the app runs it in process (:mod:`clio.app.auto_recall`), the encoder helper for a
one-shot run whose message it was sent at start (:mod:`clio.recall.encoder_recall`). No I/O of its
own; the decision is :mod:`clio.recall.auto`'s and :mod:`clio.recall.relevance`'s.

Two steps, so the helper can do the first ahead and the second once the run knows the block's
room (the window is probed after the run starts): :func:`search_and_score` (whether the message
asks anything, the search, the hits with their scores) and :func:`outcome` (the units chosen, the
block within ``budget`` characters, what ``/context`` tells).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from clio.recall import auto, verdict
from clio.recall.common_words import is_common
from clio.recall.orders import asked_after, asks_the_past
from clio.recall.relevance import asks_something, is_question, is_task, only_work_at_hand, own_words
from clio.recall.remarks import is_remark

if TYPE_CHECKING:
    from clio.recall.encoder_models import Verdict

SEARCH_RESULTS = 8  # candidate units scored per message
SEARCH_SESSIONS = 5
NEAR_ASKED = 8  # messages nearest by meaning asked of the encoder helper (their units: after the words')
SHORT_QUERY_WORDS = 3  # a message with fewer own words is searched together with the task
NO_ROOM = "no room in the window"
# an order pulls no block (clio.recall.relevance.THRESHOLD_TASK, COSINE_TASK): nothing is searched
AN_ORDER = "an order of new work: what it needs is long-term memory's, or one recall_sessions call away"
A_REMARK = "nothing it asks: a remark, no trouble reported"  # clio.recall.remarks
# not searched, yet a message of substance: the archive is kept in step as a search would keep it
# (indexed now, embedded by the helper once the turn ends), so the next question finds it ready
KEPT_IN_STEP = frozenset([AN_ORDER, A_REMARK])


class Scores(Protocol):
    """The encoder's side of one message (:class:`clio.recall.encoder_pending.Pending`, or the
    helper's own): the messages nearest by meaning, then each unit's cosine."""

    def near(self) -> list[int]: ...

    def finish(self, query: str, units: list[list[str]]) -> list[float | None] | None: ...

    def judge(self, query: str, texts: list[str]) -> list[float] | None: ...

    def close(self) -> None: ...


@dataclass
class Searched:
    """What :func:`search_and_score` found: ``skipped`` (why nothing was searched) or the hits."""

    query: str = ""
    hits: list[auto.Hit] = field(default_factory=list)
    skipped: str = ""
    ms: float = 0.0
    results: list[dict[str, Any]] = field(default_factory=list)  # the search's, which the hits score

    def unscored(self) -> bool:
        """Whether a unit was left without a cosine (the encoder could not embed it in time)."""
        return any(h.features.cosine is None for h in self.hits)


def plan(text: str, task: str) -> tuple[str, str]:
    """(the query, '') when ``text`` asks something worth a search, else ('', why not). A short
    follow-up ("and the staging one?") is read with the task it belongs to. An order of new work
    is not searched: it would quote nothing (:func:`clio.recall.relevance.is_task`)."""
    own = own_words(text)
    at_hand = only_work_at_hand(text, own)  # "run the linter", "CI is failing": the task in front of the user
    follow_up = bool(own) and not at_hand and len(own) < SHORT_QUERY_WORDS and bool(task) and task.strip() != text
    query = f"{text}\n{task}" if follow_up else text
    # alone (a one-shot run, or the task's first message) a message must ask something itself:
    # "wait" or "same error again" would match some archived message by their one common word
    # an order that also asks to be told what was settled ("... and remind me what
    # max-tasks-per-child we set") is searched for that; one that asks after it ("...; what's the
    # dead-letter topic called again?") is searched by what it asks, not by the order's words
    past = asks_the_past(text)
    if follow_up or past or asks_something(text, is_common, own):
        if not orders_work(text, query):
            return query, ""
        asked = asked_after(text)
        if asked and asks_something(asked, is_common):
            return asked, ""
        return (query, "") if past else ("", AN_ORDER)
    if not own:
        return "", "no words of its own"
    if at_hand:
        return "", "nothing it asks: only the work at hand"
    if is_task(text):
        return "", AN_ORDER  # an order that reads as a remark ("please bump the port to 6544")
    return "", A_REMARK if is_remark(text, own) else "nothing it asks: one everyday word"


def orders_work(text: str, query: str) -> bool:
    """Whether the message orders new work: read with its task when it is a short follow-up (an
    order's "and staging" carries it on), but a follow-up asked as a question ("and staging?",
    "which port?") asks, whatever its task."""
    return is_task(query) and not (query != text and is_question(text))


def search_and_score(
    text: str,
    task: str,
    room: int | None,
    *,
    search: Callable[[str, Callable[[], Sequence[int]] | None], list[dict[str, Any]]],
    frequencies: Callable[[list[str]], tuple[dict[str, int], int]],
    said_elsewhere: Callable[[str, list[str]], bool] | None,
    begin: Callable[[str], Scores | None] | None,
    current: str | None,
    cosine_ask: float,
    weights: Verdict | None = None,
) -> Searched:
    """The message's hits, scored. ``search(query, nearby)``: the archive's units for the query
    (lexical; ``nearby()`` the row ids the encoder found by meaning, or None); ``begin(query)``:
    the encoder's scores for it, started before the search (None: words only); ``room``: the
    block's, when known already (too little: no search; None: told to :func:`outcome`, as the
    helper is); ``weights``: the encoder model's :class:`clio.recall.encoder_models.Verdict`, with
    which the helper's judge reads the best units (None: the decision without it). Raises what the
    search raises (the caller says so and sends no block)."""
    query, why = plan(text, task)
    if not query:
        return Searched(skipped=why)
    if room is not None and room < auto.MIN_BLOCK_CHARS:
        return Searched(skipped=NO_ROOM)
    started = time.perf_counter()
    pending = begin(query) if begin is not None else None  # embedded while we search
    try:
        results = search(query, pending.near if pending is not None else None)
        similarity = pending.finish if pending is not None else None
        hits = (
            auto.score_hits(query, results, current, frequencies, similarity, cosine_ask, said_elsewhere, task=False)
            if results
            else []
        )
        if weights is not None and pending is not None:
            hits = judged(hits, query, pending, weights)
    finally:
        if pending is not None:
            pending.close()  # when nothing was scored
    return Searched(query=query, hits=hits, ms=(time.perf_counter() - started) * 1000, results=results)


def judged(hits: list[auto.Hit], query: str, scores: Scores, weights: Verdict, top: int = verdict.JUDGED) -> list[auto.Hit]:
    """The hits with the judge's reading of the best admissible ones (:mod:`clio.recall.verdict`),
    ``top`` of them; as they were when the helper has no judge, or gave no answer in time."""
    picked = verdict.to_judge(hits, top)
    if not picked or any(hits[i].features.cosine is None for i in picked):
        return hits  # a unit without its cosine (a first fill under way): the fit never saw one
    read = [i for i in picked if verdict.reachable(hits[i], weights)]  # the others stay under the bar
    texts = [verdict.hit_text(hits[i], query) for i in read]
    logits = scores.judge(query, texts)  # none to read: whether the helper has a judge
    if logits is None or len(logits) != len(read):
        return hits
    got: dict[int, float | None] = dict.fromkeys(picked)
    got.update(zip(read, logits, strict=True))
    return verdict.judged(hits, got, weights)


def outcome(
    found: Searched, budget: int, named: Sequence[auto.Hit] | None = None
) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """(the block, '' for none; what ``/context`` tells of it, without the encoder's state; the
    units quoted, as the block's message keeps them). A room of none says so whatever the
    message; one too small for a block, unless the message was not searched for its own reason.
    ``named``: the units the user's judge model named (:mod:`clio.recall.model_judge`), quoted
    instead of the packaged decision's choice."""
    if budget < auto.MIN_BLOCK_CHARS and (not found.skipped or not budget):
        found = Searched(skipped=NO_ROOM)
    if found.skipped:
        return "", {"state": "skipped", "why": found.skipped}, []
    chosen = auto.choose(found.hits) if named is None else list(named)[: auto.MAX_HITS]
    block = auto.render(chosen, found.query, budget)
    said = "named by the judge model; " if named is not None else ""
    quoted = [dict(h.to_dict(), why=said + h.why()) for h in chosen] if block else []
    last = {
        "state": "recalled" if block else "nothing relevant",
        "query": found.query[:200],
        "ms": round(found.ms, 1),
        "candidates": len(found.hits),
        "recalled": quoted,
        "best_rejected": next((dict(h.to_dict(), why=h.why()) for h in _left_out(found.hits, chosen)), None),
    }
    return block, last, quoted


def _left_out(hits: Sequence[auto.Hit], chosen: Sequence[auto.Hit]) -> list[auto.Hit]:
    """The units not quoted, the best first as ``/context`` tells it: of a judged message, the
    judged ones by probability, then the others in the search's order."""
    left = [h for h in hits if h not in chosen]
    return sorted(left, key=lambda h: -h.verdict if h.verdict is not None else 1.0)
