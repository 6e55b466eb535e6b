"""Scored units as the encoder helper hands them to a run (:mod:`clio.recall.encoder_recall`): a
message's :class:`clio.recall.auto_turn.Searched` and the judge model's units
(:func:`clio.recall.model_judge.pool`), searched ahead in the helper, sent as JSON and read back
here to the same :class:`clio.recall.auto.Hit` values, so the run asks the judge model and decides
over them as it would over its own. Pure: data in, data out.

What does not read as this module writes it raises :class:`ValueError` (the run then recalls in
process, as for any answer of the helper it cannot use)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from clio.recall import auto
from clio.recall.auto_turn import Searched
from clio.recall.relevance import Features

MAX_HITS = 64  # units one answer may hold (a message's 8 and the judge model's 20, with room)
HIT_FIELDS = frozenset(f.name for f in dataclasses.fields(auto.Hit))
FEATURE_FIELDS = frozenset(f.name for f in dataclasses.fields(Features))


def hits_out(hits: Sequence[auto.Hit]) -> list[dict[str, Any]]:
    return [dataclasses.asdict(h) for h in hits]


def hits_in(raw: Any) -> list[auto.Hit]:
    """The hits :func:`hits_out` wrote, once through JSON (tuples come back as lists)."""
    if not isinstance(raw, list) or len(raw) > MAX_HITS:
        raise ValueError("hits: not a list of units")
    return [_hit(h) for h in raw]


def _hit(raw: Any) -> auto.Hit:
    if not isinstance(raw, Mapping) or set(raw) != HIT_FIELDS:
        raise ValueError("hits: a unit without the fields of one")
    features = raw["features"]
    if not isinstance(features, Mapping) or set(features) != FEATURE_FIELDS:
        raise ValueError("hits: a unit's features without the fields of them")
    parts = raw["parts"]
    if not isinstance(parts, list) or not all(isinstance(p, list) and len(p) == 3 for p in parts):
        raise ValueError("hits: a unit's parts are not (seq, role, text)")
    try:
        hit = auto.Hit(
            **dict(raw, features=Features(**features), parts=tuple((int(s), str(r), str(t)) for s, r, t in parts))
        )
    except TypeError as exc:
        raise ValueError(f"hits: {exc}") from exc
    for name, kind in (("session_id", str), ("text", str), ("seq", int), ("score", float)):
        if not isinstance(getattr(hit, name), kind if kind is not float else (int, float)):
            raise ValueError(f"hits: a unit's {name} is not a {kind.__name__}")
    return hit


def searched_out(found: Searched) -> dict[str, Any]:
    """What the run's decision reads of a search (not the search's raw results)."""
    return {"query": found.query, "skipped": found.skipped, "ms": found.ms, "hits": hits_out(found.hits)}


def searched_in(raw: Any) -> Searched:
    if not isinstance(raw, Mapping):
        raise ValueError("searched: not a search")
    query, skipped, ms = raw.get("query"), raw.get("skipped"), raw.get("ms")
    if not isinstance(query, str) or not isinstance(skipped, str) or not isinstance(ms, (int, float)):
        raise ValueError("searched: not a search")
    return Searched(query=query, hits=hits_in(raw.get("hits")), skipped=skipped, ms=float(ms))
