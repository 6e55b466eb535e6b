"""The memory tool's search of past sessions: clio's ``recall_sessions`` and ``clio mcp``'s
``search_sessions`` alike. bm25 and the static table, and, when the user's encoder helper answers
in time, the messages it finds nearest by meaning fused in as a third list at its model's weights
(:mod:`clio.recall.encoder_models`: ``meaning_weight``, ``weak_words_weight`` when the words
barely match); then :func:`clio.recall.query.best_first`'s one ordering. The best
:data:`WHOLE_UNITS` units are whole, the later ones compact (``RecallIndex.search(whole_units=...)``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from clio.recall.query import best_first

if TYPE_CHECKING:
    from clio.recall.encoder_client import EncoderClient

NEAR = 30  # messages nearest by meaning the helper is asked for, fused into the ranking
# The best units are shown whole (the ask, the match, the answer), the later ones compact: the
# match, with the answer to a question, a report or a step (clio.recall.units.compose), one per
# exchange: more of the archive in a result of the same size (stop 55, docs/memory.md).
WHOLE_UNITS = 3


def search_with_meaning(
    search: Callable[..., list[dict[str, Any]]],
    query: str,
    limit: int,
    encoder: EncoderClient | None,
    **options: Any,
) -> list[dict[str, Any]]:
    """``best_first(search, query, limit, **options)`` in hybrid mode, with the helper's nearest
    messages fused in when ``encoder`` is given and its helper answers within the client's
    timeout (a helper not running is started, detached, for the next search, and this one is
    words only). A search that asked the helper leaves its fill due (``encoder.turn_ended()``)."""
    pending = encoder.begin(query, near=NEAR) if encoder is not None else None
    fused: dict[str, Any] = {}
    if pending is not None and encoder is not None:  # the model's weights matter only with its list
        model = encoder.model
        fused = dict(
            nearby=pending.near,
            fuse_nearby=True,
            meaning_weight=model.meaning_weight,
            weak_words_weight=model.weak_words_weight,
        )
    try:
        return best_first(search, query, limit, mode="hybrid", whole_units=WHOLE_UNITS, **fused, **options)
    finally:
        if pending is not None:
            pending.close()
