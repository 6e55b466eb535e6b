"""The memory tool's search of past sessions: clio's ``recall_sessions`` and ``clio mcp``'s
``search_sessions`` alike. bm25 and the static table, and, when the user's encoder helper answers
in time, the messages it finds nearest by meaning fused in as a third list at its model's weights
(:mod:`clio.recall.encoder_models`: ``meaning_weight``, ``weak_words_weight`` when the words
barely match); then :func:`clio.recall.query.best_first`'s one ordering. The best
:data:`WHOLE_UNITS` units are whole, the later ones compact (``RecallIndex.search(whole_units=...)``).
When the helper's judge is loaded (the user's ``recall_judge``, as for the automatic recall), it
reads the first :data:`RERANKED` units with the query, and its order is fused with the search's
(:func:`reranked`): a unit the words and the meaning put fifth that answers the question comes up
(docs/memory.md, "The judge re-ranks the memory tool's first units")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from clio.recall.query import best_first

if TYPE_CHECKING:
    from clio.recall.encoder_client import EncoderClient
    from clio.recall.encoder_models import EncoderModel
    from clio.recall.encoder_pending import Pending

T = TypeVar("T")

NEAR = 30  # messages nearest by meaning the helper is asked for, fused into the ranking
# The best units are shown whole (the ask, the match, the answer), the later ones compact: the
# match, with the answer to a question, a report or a step (clio.recall.units.compose), one per
# exchange: more of the archive in a result of the same size (stop 55, docs/memory.md).
WHOLE_UNITS = 3
RERANKED = 6  # the first units the helper's judge reads again (at most clio.recall.judge.MAX_TEXTS)
RANK_WEIGHT = 1.0  # the search's order against the judge's (1.0) in their reciprocal-rank fusion
RERANK_K = 60  # that fusion's k (clio.recall.embedder.rrf, as the search's own clio.recall.index.RRF_K)
# how long the tool waits for the judge's reading (and the cosines the helper's protocol asks
# first), longer than a typed message's recall may: a tool call is a model's round trip already
JUDGE_WAIT_S = 2.0


def search_with_meaning(
    search: Callable[..., list[dict[str, Any]]],
    query: str,
    limit: int,
    encoder: EncoderClient | None,
    *,
    with_helper: Literal["hybrid", "lexical"] = "hybrid",
    reread: bool = True,
    **options: Any,
) -> list[dict[str, Any]]:
    """``best_first(search, query, limit, **options)`` in hybrid mode, with the helper's nearest
    messages fused in when ``encoder`` is given and its helper answers within the client's
    timeout (a helper not running is started, detached, for the next search, and this one is
    words only). A search that asked the helper leaves its fill due (``encoder.turn_ended()``).
    ``texts=True`` keeps each unit's messages' texts (``texts``) for a reader after this one (the
    judge model's order, :mod:`clio.recall.model_order`). ``with_helper="lexical"``: once the
    helper's nearest came, bm25 and that list alone, the static table not read (nor numpy
    imported): the judge model's units (:func:`clio.recall.model_judge.pool`), the same either way
    on the probe sets read (docs/memory.md), at a sixth of a one-shot run's cost.
    ``reread=False``: the helper's judge does not re-read the first units (the judge model's
    units, which that model reads whatever their order: stop 91)."""
    pending = encoder.begin(query, near=NEAR) if encoder is not None else None
    judged = reread and encoder is not None and encoder.verdict() is not None
    read = helper_reading(pending, query) if judged and pending is not None else None
    try:
        return ranked(
            search, query, limit, pending.near if pending is not None else None,
            encoder.model if encoder is not None else None, read, with_helper=with_helper, **options,
        )  # fmt: skip
    finally:
        if pending is not None:
            pending.close()


def ranked(
    search: Callable[..., list[dict[str, Any]]],
    query: str,
    limit: int,
    nearby: Callable[[], list[int]] | None,
    model: EncoderModel | None,
    read: Callable[[list[dict[str, Any]]], Sequence[float] | None] | None,
    *,
    with_helper: Literal["hybrid", "lexical"] = "hybrid",
    **options: Any,
) -> list[dict[str, Any]]:
    """:func:`search_with_meaning`'s search, wherever the helper's parts come from (over its
    socket, or in the helper itself: the judge model's units searched ahead,
    :mod:`clio.recall.encoder_recall`): ``nearby()`` the messages nearest by meaning (None: no
    helper), fused at ``model``'s weights; ``read(first)`` the judge's logits for the first
    :data:`RERANKED` units (None: no judge)."""
    fused: dict[str, Any] = {}
    mode = "hybrid"
    if nearby is not None and model is not None:  # the model's weights matter only with its list
        if with_helper != "hybrid":
            near = nearby()  # waited for here: the mode depends on it
            nearby = lambda: near  # noqa: E731
            mode = with_helper if near else "hybrid"
        fused = dict(
            nearby=nearby,
            fuse_nearby=True,
            meaning_weight=model.meaning_weight,
            weak_words_weight=model.weak_words_weight,
        )
    texts = bool(options.pop("texts", False))  # each unit's messages' texts kept (a reader after this one)
    if nearby is None or read is None:  # no judge to read them
        return best_first(search, query, limit, mode=mode, whole_units=WHOLE_UNITS, texts=texts, **fused, **options)
    wanted = max(limit, RERANKED)
    hits = best_first(search, query, wanted, mode=mode, whole_units=WHOLE_UNITS, texts=True, **fused, **options)
    hits = judged_order(hits, read)[:limit]
    if not options.get("with_text") and not texts:
        for hit in hits:
            hit.pop("texts", None)  # read for the judge only
    return hits


def judged_order(
    hits: list[dict[str, Any]], read: Callable[[list[dict[str, Any]]], Sequence[float] | None]
) -> list[dict[str, Any]]:
    """``hits`` with their first :data:`RERANKED` in the order :func:`reranked` gives them with the
    judge's logits for them, ``read(first)``; as they were when it gives none (the judge is not
    loaded yet, or gave no answer in time) or there is nothing to order."""
    head = hits[:RERANKED]
    logits = read(head) if len(head) > 1 else None
    return hits if logits is None else reranked(head, logits) + hits[RERANKED:]


def helper_reading(pending: Pending, query: str) -> Callable[[list[dict[str, Any]]], list[float] | None]:
    """The helper's judge as :func:`judged_order` reads it: the units' cosines asked first, as the
    helper's protocol has it, then the judge's logits on the same connection."""

    def read(head: list[dict[str, Any]]) -> list[float] | None:
        if pending.finish(query, [list(h["texts"]) for h in head], JUDGE_WAIT_S) is None:
            return None
        return pending.judge(query, judge_texts(head, query), JUDGE_WAIT_S)

    return read


def judge_texts(hits: Sequence[dict[str, Any]], query: str) -> list[str]:
    """Each hit (searched with ``texts``) as the judge reads a unit, and was trained on
    (:func:`clio.recall.verdict.judge_text`)."""
    from clio.recall.verdict import judge_text  # only a search the judge reads

    return [judge_text([(p["role"], t) for p, t in zip(h["parts"], h["texts"], strict=True)], query) for h in hits]


def reranked(hits: Sequence[T], logits: Sequence[float], rank_weight: float = RANK_WEIGHT, k: int = RERANK_K) -> list[T]:
    """Pure: ``hits`` (best first) in the order of the reciprocal-rank fusion of their own order,
    weighed ``rank_weight``, and the order of ``logits`` (one a hit, higher is better), weighed 1;
    ties keep the search's order."""
    from clio.recall.embedder import rrf  # only a search the judge reads

    by_logit = sorted(range(len(hits)), key=lambda i: (-logits[i], i))
    fused = rrf([[str(i) for i in range(len(hits))], [str(i) for i in by_logit]], k, [rank_weight, 1.0])
    return [hits[i] for i in sorted(range(len(hits)), key=lambda i: (-fused[str(i)], i))]
