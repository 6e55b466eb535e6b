"""The scored units the encoder helper hands a run (clio.recall.hits_wire): read back through JSON
to the same values the helper scored, and what does not read as written is refused (the run then
recalls in process)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from clio.recall import auto, hits_wire
from clio.recall.auto_turn import Searched
from clio.recall.relevance import Features


def hit(seq: int, **extra: Any) -> auto.Hit:
    return auto.Hit(
        session_id="20250101-000000-abcd", session_name="work", date="2025-01-01 10:00", role="user", seq=seq,
        text="why do logins drop?\nRedis evicts sessions (allkeys-lru).", features=Features(4, 3, 0.71, 0.42, 0.53),
        score=0.66, current=False, parts=((seq, "user", "why do logins drop?"), (seq + 1, "assistant", "Redis evicts sessions.")),
        **extra,
    )  # fmt: skip


def through_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def test_units_read_back_as_the_helper_scored_them() -> None:
    hits = [hit(0, judge=1.25, verdict=0.61, verdict_bar=0.4), hit(4, meaning=True, cosine_ask=math.inf, typed=False)]
    assert hits_wire.hits_in(through_json(hits_wire.hits_out(hits))) == hits
    found = Searched(query="why do logins drop", hits=hits, ms=12.5, results=[{"excerpt": "not sent"}])
    back = hits_wire.searched_in(through_json(hits_wire.searched_out(found)))
    assert (back.query, back.hits, back.ms, back.skipped, back.results) == (found.query, hits, 12.5, "", [])
    skipped = hits_wire.searched_in(through_json(hits_wire.searched_out(Searched(skipped="no words of its own"))))
    assert skipped.skipped == "no words of its own" and skipped.hits == []
    # the decision reads them as it reads its own
    assert auto.render(hits_wire.hits_in(through_json(hits_wire.hits_out(hits))), found.query, 3000) == auto.render(hits, found.query, 3000)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.pop("score"),
        lambda d: d.update(extra=1),
        lambda d: d.update(seq="3"),
        lambda d: d.update(text=None),
        lambda d: d["features"].pop("cosine"),
        lambda d: d.update(parts=[[0, "user"]]),
        lambda d: d.update(parts="no"),
        lambda d: d.update(features=[1, 2]),
    ],
)
def test_a_unit_that_does_not_read_is_refused(change: Any) -> None:
    raw = through_json(hits_wire.hits_out([hit(0)]))
    change(raw[0])
    with pytest.raises(ValueError):
        hits_wire.hits_in(raw)


def test_a_search_that_does_not_read_is_refused() -> None:
    good = through_json(hits_wire.searched_out(Searched(query="q", hits=[hit(0)], ms=1.0)))
    for bad in (None, [], dict(good, query=3), dict(good, ms="1"), dict(good, skipped=None), dict(good, hits={}),
                dict(good, hits=[good["hits"][0]] * (hits_wire.MAX_HITS + 1))):  # fmt: skip
        with pytest.raises(ValueError):
            hits_wire.searched_in(bad)
