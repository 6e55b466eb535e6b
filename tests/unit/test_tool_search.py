"""The memory tool's search (clio.recall.tool_search): the judge's re-rank of its first units, a
pure fusion of the search's order and the judge's, and the texts the judge reads beside the
excerpts the tool shows. The helper's side runs for real in tests/e2e/test_recall_judge.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from clio.recall import tool_search
from clio.recall.index import RecallIndex
from clio.recall.tool_search import RERANKED, reranked
from clio.store.sessions import SessionStore
from tests.unit.conftest import add_session

pytestmark = pytest.mark.usefixtures("lexical_only")  # bm25 alone (tests/unit/conftest.py)


def test_the_judges_order_agreeing_with_the_search_changes_nothing() -> None:
    assert reranked(["a", "b", "c", "d"], [3.0, 1.0, 0.5, -2.0]) == ["a", "b", "c", "d"]


def test_a_unit_the_search_put_fourth_that_the_judge_reads_best_comes_up() -> None:
    # fused (ranks from 1, k = 60): a 1/61 + 1/62, d 1/64 + 1/61, b 1/62 + 1/63, c 1/63 + 1/64
    assert reranked(["a", "b", "c", "d"], [0.0, -1.0, -2.0, 5.0]) == ["a", "d", "b", "c"]
    # the search's first, read worst by the judge, still stays ahead of the search's third
    assert reranked(["a", "b", "c"], [-9.0, 4.0, 3.0]) == ["b", "a", "c"]


def test_ties_keep_the_searchs_order_and_a_heavy_rank_keeps_it_all() -> None:
    assert reranked(["a", "b"], [0.0, 1.0]) == ["a", "b"]  # 1/61 + 1/62 either way
    assert reranked(["a", "b", "c", "d"], [0.0, -1.0, -2.0, 5.0], rank_weight=50.0) == ["a", "b", "c", "d"]
    assert reranked(["a", "b", "c", "d"], [0.0, -1.0, -2.0, 5.0], rank_weight=0.0) == ["d", "a", "b", "c"]
    assert reranked([], []) == []


def test_the_judge_reads_no_more_units_than_the_helper_takes() -> None:
    from clio.recall.judge import MAX_TEXTS

    assert 3 <= RERANKED <= MAX_TEXTS


def test_a_search_hands_the_judge_each_messages_text_beside_the_excerpts(store: SessionStore, tmp_path: Path) -> None:
    long_reply = "PgBouncer listens on 6432 in staging. " + "The pool is in transaction mode. " * 40
    sid = add_session(store, ["which port does pgbouncer listen on in staging?", long_reply])
    index = RecallIndex(tmp_path / "recall.sqlite", store)
    plain = index.search("pgbouncer staging port")
    both = index.search("pgbouncer staging port", texts=True)
    assert plain and both and both[0]["session_id"] == sid
    assert "texts" not in plain[0]
    assert both[0]["texts"] == ["which port does pgbouncer listen on in staging?", long_reply]
    # the excerpts are the same as without: what the tool shows does not change
    assert [p["excerpt"] for p in both[0]["parts"]] == [p["excerpt"] for p in plain[0]["parts"]]
    assert len(both[0]["parts"][1]["excerpt"]) < len(long_reply)


def test_without_a_helper_the_tool_searches_as_before(store: SessionStore, tmp_path: Path) -> None:
    add_session(store, ["which port does pgbouncer listen on in staging?", "6432, in transaction mode."])
    index = RecallIndex(tmp_path / "recall.sqlite", store)
    hits = tool_search.search_with_meaning(index.search, "pgbouncer staging port", 5, None)
    assert hits and "texts" not in hits[0] and "excerpt" in hits[0]


def test_the_judges_reading_orders_only_the_first_units_and_none_leaves_the_search_order() -> None:
    hits = [{"n": i} for i in range(RERANKED + 2)]
    read: list[int] = []

    def best_last(head: list[dict[str, int]]) -> list[float]:
        read.append(len(head))
        return [float(h["n"]) for h in head]  # the judge reads the search's last of them best

    got = [h["n"] for h in tool_search.judged_order(hits, best_last)]
    assert read == [RERANKED]  # the first units only, read once
    assert got[RERANKED:] == [RERANKED, RERANKED + 1] and sorted(got[:RERANKED]) == list(range(RERANKED))
    assert got[:RERANKED] != list(range(RERANKED))  # they were reordered
    assert tool_search.judged_order(hits, lambda head: None) == hits  # no reading: the search's order
    assert tool_search.judged_order(hits[:1], best_last) == hits[:1] and read == [RERANKED]  # one unit: not read


class _Pending:
    def __init__(self, near: list[int]) -> None:
        self.rows, self.closed = near, False

    def near(self) -> list[int]:
        rows, self.rows = self.rows, []  # told once, as the helper's client tells it
        return rows

    def close(self) -> None:
        self.closed = True


class _Helper:
    """The encoder client's surface search_with_meaning reads: its nearest, its weights, no judge."""

    class model:  # noqa: N801
        meaning_weight, weak_words_weight = 1.0, 2.0

    def __init__(self, near: list[int]) -> None:
        self.pending = _Pending(near)

    def begin(self, query: str, near: int) -> _Pending:
        return self.pending

    def verdict(self) -> None:
        return None


@pytest.mark.parametrize(("near", "with_helper", "mode"), [([7, 3], "lexical", "lexical"), ([], "lexical", "hybrid"), ([7, 3], "hybrid", "hybrid")])
def test_the_judge_models_units_skip_the_static_table_once_the_helpers_nearest_came(near: list[int], with_helper: str, mode: str) -> None:
    asked: list[dict[str, object]] = []

    def search(query: str, **options: object) -> list[dict[str, object]]:
        nearby = options["nearby"]
        asked.append(dict(options, near=nearby() if callable(nearby) else None))
        return []

    helper = _Helper(near)
    tool_search.search_with_meaning(search, "q", 5, helper, with_helper=with_helper)  # type: ignore[arg-type]
    (options,) = asked
    assert options["mode"] == mode and options["fuse_nearby"] is True
    assert options["near"] == near  # the helper's list is fused either way, asked once
    assert helper.pending.closed


class _JudgingPending(_Pending):
    """A helper's answer whose judge reads the units' order reversed, and counts its readings."""

    def __init__(self, near: list[int]) -> None:
        super().__init__(near)
        self.judged = 0

    def finish(self, query: str, texts: list[list[str]], wait: float) -> list[float]:
        return [0.5] * len(texts)

    def judge(self, query: str, texts: list[str], wait: float) -> list[float]:
        self.judged += 1
        return [float(i) for i in range(len(texts))]  # the search's last read best


class _JudgingHelper(_Helper):
    def __init__(self, near: list[int]) -> None:
        self.pending = _JudgingPending(near)

    def verdict(self) -> object:  # type: ignore[override]
        return object()  # a judge is loaded


@pytest.mark.parametrize("reread", [True, False])
def test_the_judge_models_units_keep_the_searchs_order_unread_by_the_judge(reread: bool) -> None:
    """The memory tool's search has the helper's judge re-read its first units; the judge model's
    units (``reread=False``, stop 91) are left in the search's order and the judge is not asked."""
    units = [
        {"session_id": "s", "parts": [{"role": "user", "seq": i}], "texts": [f"unit {i} about the port"], "score": 1.0 / (i + 1)}
        for i in range(RERANKED)
    ]

    def search(query: str, **options: object) -> list[dict[str, object]]:
        return [dict(u) for u in units]

    helper = _JudgingHelper([])
    got = tool_search.search_with_meaning(search, "which port", RERANKED, helper, with_helper="lexical", reread=reread, with_text=True)  # type: ignore[arg-type]
    order = [h["parts"][0]["seq"] for h in got]
    assert helper.pending.judged == (1 if reread else 0)
    if reread:
        assert order != list(range(RERANKED)) and sorted(order) == list(range(RERANKED))
    else:
        assert order == list(range(RERANKED))


def test_the_runs_units_for_the_judge_model_are_not_re_read_but_the_tools_are(store: SessionStore, tmp_path: Path) -> None:
    """clio.app.recall.LazyRecall: its ``pool`` (the automatic recall's judge model's units) does
    not ask the helper's judge; its ``search`` (the memory tool's) still does."""
    from clio.app.recall import LazyRecall
    from clio.tools.context import Services

    for i in range(RERANKED):
        add_session(store, [f"which port does pgbouncer listen on in env {i}?", f"pgbouncer listens on 64{i}2 there."])
    recall = LazyRecall(tmp_path / "recall.sqlite", store, Services(sessions=store))
    recall.encoder = _JudgingHelper([])  # type: ignore[assignment]
    pooled = recall.pool("pgbouncer port")
    assert len(pooled) == RERANKED and recall.encoder.pending.judged == 0  # type: ignore[attr-defined]
    recall.search("pgbouncer port", max_results=3)
    assert recall.encoder.pending.judged == 1  # type: ignore[attr-defined]


def test_the_judge_models_units_come_from_as_many_sessions_as_units(store: SessionStore, tmp_path: Path) -> None:
    """clio.app.recall.LazyRecall.pool: its first units are not cut to the best ten sessions
    (stop 92): a fact whose unit ranks among the first 20 from a twelfth session is read too."""
    from clio.app.recall import LazyRecall
    from clio.recall.model_judge import POOL_UNITS
    from clio.tools.context import Services

    for i in range(14):
        add_session(store, [f"which port does pgbouncer listen on in region {i}?", f"pgbouncer listens on 64{i:02d} in that region."])
    recall = LazyRecall(tmp_path / "recall.sqlite", store, Services(sessions=store))
    recall.encoder = None
    pooled = recall.pool("pgbouncer port region")
    assert len({h["session_id"] for h in pooled}) == 14 and len(pooled) <= POOL_UNITS
