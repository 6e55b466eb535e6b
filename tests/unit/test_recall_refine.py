"""The stages after fusion (clio/recall/refine.py): pure, then through the index over real archives."""

from __future__ import annotations

import sqlite3

import pytest

from clio.recall import refine
from clio.recall.index import RecallIndex
from clio.recall.refine import Candidate
from clio.store.sessions import SessionStore
from tests.unit.conftest import add_session

pytestmark = pytest.mark.usefixtures("lexical_only")  # bm25 alone: exact rankings


def cand(i: int, session: str, body: str, score: float) -> Candidate:
    return Candidate(i, session, "user", i, 0.0, body, score)


def no_neighbours(cands: list[Candidate]) -> dict[int, tuple[Candidate | None, Candidate | None]]:
    return {}


# -- pure ---------------------------------------------------------------------------------------


def test_what_states_a_time_and_what_asks() -> None:
    for text in (
        "I went there yesterday",
        "we shipped it last week",
        "on 12 May 2023",
        "the 5th of June",
        "at 14:30",
        "two years ago",
        "Friday",
    ):
        assert refine.states_time(text), text
    for text in ("I went to the park", "the tests pass", "version 3 of the API", "5 dogs"):
        assert not refine.states_time(text), text
    assert refine.asks("Which port should the server use?")
    assert refine.asks("Which port? I forgot, sorry.")
    assert not refine.asks("Use 8123." + " filler" * 40 + " Fine? No. " + "more words " * 20)


def test_the_session_about_the_query_wins_over_a_stray_match() -> None:
    cands = [
        cand(1, "stray", "deploy script", 1.00),
        cand(2, "about", "the deploy pipeline", 0.95),
        cand(3, "about", "deploy to staging", 0.60),
        cand(4, "about", "deploy keys rotated", 0.50),
    ]
    ranked = refine.refine("deploy pipeline", cands, no_neighbours)
    assert [c.id for c in ranked][:2] == [2, 1]
    assert [c.id for c in ranked][2:] == [3, 4]  # their order within a session is kept


def test_the_reply_to_a_question_joins_and_outranks_weaker_hits() -> None:
    question = cand(1, "s", "Which basketball team do you support?", 1.0)
    reply = cand(2, "s", "The Wolves, no doubt.", 0.0)
    weaker = [cand(10 + n, f"o{n}", "basketball practice", 0.5) for n in range(5)]
    links: dict[int, tuple[Candidate | None, Candidate | None]] = {1: (None, reply)}
    ranked = refine.refine("favourite basketball team", [question, *weaker], lambda cands: links)
    assert [c.id for c in ranked][:2] == [1, 2]  # the reply was not a candidate at all


def test_a_statement_lends_less_than_a_question() -> None:
    said = cand(1, "s", "The Wolves play tonight.", 1.0)
    after = cand(2, "s", "Nice.", 0.0)
    before = cand(3, "s", "Hi!", 0.0)
    out = refine.expand([said], lambda cands: {1: (before, after)})
    got = {c.id: c.score for c in out}
    assert got[2] == pytest.approx(refine.NEIGHBOUR_WEIGHT) and got[3] == pytest.approx(
        refine.NEIGHBOUR_WEIGHT
    )


def test_a_when_question_prefers_a_candidate_that_states_a_time() -> None:
    plain = cand(1, "s", "We moved the CI to the new runners.", 1.0)
    dated = cand(2, "t", "Moved the CI runners last Tuesday.", 0.8)
    assert [c.id for c in refine.refine("When did we move the CI?", [plain, dated], no_neighbours)] == [2, 1]
    plain.score, dated.score = 1.0, 0.8
    assert [c.id for c in refine.refine("Why did we move the CI?", [plain, dated], no_neighbours)] == [1, 2]


def test_unscored_rows_are_left_as_they_are() -> None:
    rows = [cand(n, f"s{n}", "Which one? yesterday", 0.0) for n in range(3)]
    out = refine.refine(
        "when which", rows, lambda cands: {c.id: (None, cand(99, "s", "x", 0.0)) for c in cands}
    )
    assert [c.id for c in out] == [0, 1, 2] and all(c.score == 0 for c in out)


def test_neighbours_are_read_in_session_order_and_filtered() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE TABLE msgs(id INTEGER PRIMARY KEY, session_id TEXT, seq INT, role TEXT, ts REAL, body TEXT)"
    )
    rows = [(1, "a", 0), (2, "b", 0), (3, "a", 1), (4, "b", 1), (5, "a", 2)]  # interleaved sessions
    conn.executemany("INSERT INTO msgs VALUES (?, ?, ?, 'user', 0, 'x')", rows)
    read = refine.neighbours_in(conn, lambda sid, seq: True)
    got = read([cand(3, "a", "x", 1.0), cand(1, "a", "x", 1.0), cand(4, "b", "x", 1.0)])
    assert {i: tuple(n.id if n else None for n in pair) for i, pair in got.items()} == {
        3: (1, 5),
        1: (None, 3),
        4: (2, None),
    }
    hidden = refine.neighbours_in(conn, lambda sid, seq: seq != 2)  # e.g. already in the request
    assert hidden([cand(3, "a", "x", 1.0)])[3][1] is None


# -- through the index ----------------------------------------------------------------------------


def test_the_reply_to_a_question_is_recalled_though_it_shares_no_word(store: SessionStore) -> None:
    for n in range(8):
        add_session(store, [f"my favourite basketball team had practice {n} today", "ok"])
    sid = add_session(store, ["Which basketball team is your favourite?", "The Wolves, no doubt."])
    index = RecallIndex(None, store)
    fused = index.search("favourite basketball team", max_sessions=20, max_results=3, refine=False)
    assert (sid, 1) not in {(h["session_id"], h["seq"]) for h in fused}  # bm25 alone misses it
    hits = index.search("favourite basketball team", max_sessions=20, max_results=3)
    assert (sid, 1) in {(h["session_id"], h["seq"]) for h in hits}
    assert any("Wolves" in h["excerpt"] for h in hits)


def test_a_when_question_brings_the_dated_message_first(store: SessionStore) -> None:
    plain = add_session(store, ["We moved the CI to the new runners.", "ok"])
    dated = add_session(store, ["Right, the CI runners: the move to the cluster happened on 3 March.", "ok"])
    index = RecallIndex(None, store)
    assert index.search("move the CI runners", max_results=1, refine=False)[0]["session_id"] == plain
    assert index.search("When did we move the CI runners?", max_results=1)[0]["session_id"] == dated
    assert index.search("Why did we move the CI runners?", max_results=1)[0]["session_id"] == plain


def test_excluded_session_stays_out_of_the_expansion(store: SessionStore) -> None:
    mine = add_session(store, ["Which basketball team is your favourite?", "The Wolves, no doubt."])
    other = add_session(store, ["Which basketball team is your favourite?", "The Hawks."])
    index = RecallIndex(None, store)
    hits = index.search("favourite basketball team", exclude_session=mine)
    assert {h["session_id"] for h in hits} == {other}
    assert (other, 1) in {(h["session_id"], h["seq"]) for h in hits}
