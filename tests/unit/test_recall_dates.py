"""The time a query names (clio/recall/dates.py) and the refine stage that favours it."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from clio.messages import make
from clio.recall import refine
from clio.recall.dates import named_period
from clio.recall.index import RecallIndex
from clio.recall.refine import Candidate
from clio.store.sessions import SessionStore

pytestmark = pytest.mark.usefixtures("lexical_only")  # bm25 alone: exact rankings

NOW = datetime(2026, 11, 23, 15, 0).timestamp()  # a Monday


def day(y: int, m: int, d: int) -> float:
    return datetime(y, m, d).timestamp()


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("What did Audrey do in November 2023?", day(2023, 11, 1), day(2023, 12, 1)),
        ("the Nov. 2023 report", day(2023, 11, 1), day(2023, 12, 1)),
        ("What movie did she watch on 1 May, 2022?", day(2022, 5, 1), day(2022, 5, 2)),
        ("the 1st of May 2022", day(2022, 5, 1), day(2022, 5, 2)),
        ("How was John on April 10, 2022?", day(2022, 4, 10), day(2022, 4, 11)),
        ("what broke in the 2024-03-05 outage", day(2024, 3, 5), day(2024, 3, 6)),
        ("the 2023-11 invoices", day(2023, 11, 1), day(2023, 12, 1)),
        ("what did we ship in 2023", day(2023, 1, 1), day(2024, 1, 1)),
        ("what did we change yesterday", day(2026, 11, 22), day(2026, 11, 23)),
        ("the deploy last week", day(2026, 11, 16), day(2026, 11, 23)),
        ("what happened last month", day(2026, 10, 1), day(2026, 11, 1)),
        ("the fix from two days ago", day(2026, 11, 20), day(2026, 11, 23)),  # a day either side
        ("what did we do on Friday", day(2026, 11, 20), day(2026, 11, 21)),
        ("what did we do on Monday", day(2026, 11, 16), day(2026, 11, 17)),  # today is Monday
        ("what did we decide in March", day(2026, 3, 1), day(2026, 4, 1)),
        ("what happened last December", day(2025, 12, 1), day(2026, 1, 1)),  # not this one: to come
        ("the bug on 3 May", day(2026, 5, 3), day(2026, 5, 4)),
        ("the 12:30 May 3rd meeting", day(2026, 5, 3), day(2026, 5, 4)),  # not "30 May"
        ("the outage on Dec 24", day(2025, 12, 24), day(2025, 12, 25)),
        ("what we shipped in May", day(2026, 5, 1), day(2026, 6, 1)),
        ("the 2 may clash; the fix of 3 May", day(2026, 5, 3), day(2026, 5, 4)),
    ],
)
def test_the_period_a_query_names(text: str, start: float, end: float) -> None:
    assert named_period(text, NOW) == (start, end)


@pytest.mark.parametrize(
    "text",
    [
        "Which year did she adopt the dogs?",  # asks for a time, names none
        "bump the version to 2.0.2023",
        "the server listens on port 2024",
        "May I rename the module?",
        "it may be 3x faster",
        "these 2 may clash, and in may be worse",  # without a year, a lower-case "may" is the verb
        "the 31 February 2023 entry",  # no such day
        "what about 2023-13",  # no such month
    ],
)
def test_no_period_where_none_is_named(text: str) -> None:
    assert named_period(text, NOW) is None


def test_relative_times_need_a_now() -> None:
    assert named_period("what did we change yesterday", None) is None
    assert named_period("in May 2022", None) == (day(2022, 5, 1), day(2022, 6, 1))


def cand(i: int, ts: float, score: float) -> Candidate:
    return Candidate(i, f"s{i}", "user", 0, ts, "text", score)


def test_a_message_of_the_named_time_or_just_after_it_comes_first() -> None:
    before = cand(1, day(2023, 10, 15), 1.0)
    inside = cand(2, day(2023, 11, 10), 0.4)
    told_later = cand(3, day(2023, 12, 1) + refine.PERIOD_AFTER - 3600, 0.3)
    long_after = cand(4, day(2024, 2, 1), 0.9)
    ranked = refine.refine(
        "what happened in November 2023", [before, inside, told_later, long_after], lambda c: {}
    )
    assert [c.id for c in ranked] == [2, 3, 1, 4]
    for c, score in zip((before, inside, told_later, long_after), (1.0, 0.4, 0.3, 0.9), strict=True):
        c.score = score  # refine raised them in place
    ranked = refine.refine("what happened", [before, inside, told_later, long_after], lambda c: {})
    assert [c.id for c in ranked] == [1, 4, 2, 3]  # no time named: the fused order


# -- through the index ----------------------------------------------------------------------------


def dated_session(store: SessionStore, texts: list[str], ts: float) -> str:
    s = store.create("test-model")
    for i, text in enumerate(texts):
        s.append(make("user" if i % 2 == 0 else "assistant", text, meta={"ts": ts + i}))
    s.close()
    return s.id


def test_the_index_favours_the_messages_of_the_named_time(store: SessionStore) -> None:
    old = dated_session(
        store, ["The cache eviction policy is LRU with a 10 minute TTL.", "ok"], day(2023, 3, 2)
    )
    nov = dated_session(store, ["We changed the cache eviction to LFU.", "ok"], day(2023, 11, 14))
    index = RecallIndex(None, store)
    assert index.search("cache eviction policy", max_results=1)[0]["session_id"] == old
    assert index.search("cache eviction policy in November 2023", max_results=1)[0]["session_id"] == nov
    noon = datetime.now().replace(hour=12, minute=0, second=0, microsecond=0) - timedelta(days=1)
    recent = dated_session(store, ["Switched the cache eviction to FIFO for now.", "ok"], noon.timestamp())
    assert index.search("cache eviction policy", max_results=1)[0]["session_id"] == old
    assert (
        index.search("what did we do to the cache eviction yesterday?", max_results=1)[0]["session_id"]
        == recent
    )


def test_the_gate_never_hides_a_period() -> None:
    """named_period looks at its patterns only when the text holds a digit or a date word: over
    the dev sets' messages and hand-made near misses, the gated answer is the ungated one."""
    import json
    from pathlib import Path

    from clio.recall import dates

    texts = [
        "two weeks ago we moved the queue", "a month ago", "an hour ago", "last Friday's deploy",
        "on sunday the cron failed", "early Sept. the audit", "this week", "LAST YEAR's budget",
        "in may we shipped", "these may clash", "the report from yesterday", "what happened today?",
        "weekly sync notes", "monthly invoices", "mid-March", "Dec 3rd", "3rd of december",
        "ok, continue", "which port does the staging database listen on again?",
    ]
    root = Path(__file__).resolve().parents[2] / "benches" / "recall_dev"
    for path in sorted(root.glob("set_*.json")):
        data = json.loads(path.read_text())
        stack: list[object] = [data]
        while stack:  # every string in the set: messages, questions, tool results
            item = stack.pop()
            if isinstance(item, str):
                texts.append(item)
            elif isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
    assert len(texts) > 1000
    gated_out = 0
    for text in texts:
        ungated = dates._absolute(text) or dates._relative(text, NOW)
        assert named_period(text, NOW) == ungated, text
        gated_out += not dates.may_name_a_period(text)
    assert gated_out > len(texts) // 4  # the gate does spare most plain messages the patterns
