"""The three trimming stages on synthetic windows: budgets, units, anchor, truncation, reactive levels."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clio.context import trim as T
from clio.context.stm import group_units, is_valid
from clio.context.tokens import TokenEstimator
from testkit.fakeserver_sse import validate_request

SYSTEM = [{"role": "system", "content": "You are clio, a coding agent. " * 20}]
TOOLS = [{"type": "function", "function": {"name": "file_operations", "parameters": {"type": "object"}}}]


def est() -> TokenEstimator:
    return TokenEstimator("local", chars_per_token=4.0)


def unit(i: int, size: int, n_calls: int = 1) -> list[dict[str, Any]]:
    ids = [f"c{i}_{j}" for j in range(n_calls)]
    calls = [
        {
            "id": c,
            "type": "function",
            "function": {"name": "file_operations", "arguments": json.dumps({"path": c})},
        }
        for c in ids
    ]
    return [{"role": "assistant", "content": None, "tool_calls": calls}] + [
        {"role": "tool", "tool_call_id": c, "content": f"<{c}>" + "r" * size + f"</{c}>"}
        for c in reversed(ids)
    ]


def session(n_units: int, size: int, *, anchor_first: bool = True) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = (
        [{"role": "user", "content": "THE TASK: refactor the parser"}] if anchor_first else []
    )
    for i in range(n_units):
        msgs += unit(i, size, 1 + i % 3)
        if i % 5 == 4:
            msgs.append({"role": "assistant", "content": f"progress note {i}"})
    return msgs


def tokens(window: list[dict[str, Any]], fixed: list[dict[str, Any]] = SYSTEM) -> int:
    return est().count_request(fixed + window, TOOLS)


def assert_whole_units(before: list[dict[str, Any]], res: T.TrimResult) -> None:
    """Every unit of ``before`` ends up entirely kept or entirely dropped; nothing invented or lost."""
    kept_ids = {id(m) for m in res.window}
    dropped_ids = {id(m) for m in res.dropped}
    assert not kept_ids & dropped_ids
    for u in group_units(before):
        where = {(id(m) in kept_ids, id(m) in dropped_ids) for m in u}
        assert len(where) == 1, "a unit was split"
    assert is_valid(res.window)


def test_budget_reserve_and_limit() -> None:
    assert T.Budget(8000).reserve == 2000 and T.Budget(8000).limit == 6000
    assert T.Budget(200_000).reserve == 4096 and T.Budget(200_000).limit == 195_904
    assert T.Budget(8000, reserve_output=1000).limit == 7000
    for bad in ({"context_window": 0}, {"context_window": 8000, "reserve_output": 9000}):
        with pytest.raises(ValueError, match="context_window|reserve_output"):
            T.Budget(**bad)
    with pytest.raises(ValueError, match="proactive_at"):
        T.Budget(8000, proactive_at=0.4, target=0.5)


def test_proactive_does_nothing_below_the_threshold() -> None:
    window = session(3, 100)
    res = T.proactive(window, est(), T.Budget(8000), SYSTEM, TOOLS)
    assert res.window is window and res.dropped == [] and not res.trimmed


def test_proactive_drops_oldest_whole_units_down_to_the_target() -> None:
    budget = T.Budget(8000)
    window = session(40, 600)
    assert tokens(window) > budget.proactive_at * budget.limit
    res = T.proactive(window, est(), budget, SYSTEM, TOOLS)
    assert_whole_units(window, res)
    after = tokens(res.window)
    assert after <= budget.target * budget.limit
    assert after > budget.target * budget.limit - 800  # near the target, not emptied
    assert res.window[0]["content"] == "THE TASK: refactor the parser"  # the anchor, though the oldest
    assert res.window[-1] is window[-1]  # the last unit stays
    kept = {id(m) for m in res.window}
    order = [m for m in window if id(m) not in kept]
    assert res.dropped == order  # dropped in original order: the oldest ones
    assert validate_request({"messages": SYSTEM + res.window}) is None


def test_the_anchor_is_the_latest_user_message() -> None:
    window = (
        session(30, 600) + [{"role": "user", "content": "NEW TASK"}] + session(10, 600, anchor_first=False)
    )
    res = T.proactive(window, est(), T.Budget(8000), SYSTEM, TOOLS)
    contents = [m.get("content") for m in res.window]
    assert "NEW TASK" in contents and "THE TASK: refactor the parser" not in contents


def test_validate_truncates_the_largest_results_keeping_head_and_tail() -> None:
    budget = T.Budget(8000)
    window = [{"role": "user", "content": "look at the log"}, *unit(0, 60_000)]
    original = window[-1]["content"]
    res = T.validate(window, est(), budget, SYSTEM, TOOLS)
    assert res.truncated == 1 and res.dropped == []
    assert tokens(res.window) <= budget.limit
    cut = res.window[-1]
    assert cut["content"].startswith("<c0_0>rrr") and cut["content"].endswith("rrr</c0_0>")
    assert "characters cut to fit the context window" in cut["content"]
    assert cut["meta"]["truncated"] is True
    assert window[-1]["content"] == original and "meta" not in window[-1]  # the original is untouched
    assert is_valid(res.window)


def test_validate_drops_before_it_truncates_and_repairs() -> None:
    budget = T.Budget(8000)
    orphan = {"role": "tool", "tool_call_id": "lost", "content": "stray"}
    window = [orphan, *session(60, 400)]
    res = T.validate(window, est(), budget, SYSTEM, TOOLS)
    assert orphan not in res.window and orphan not in res.dropped
    assert res.truncated == 0 and res.dropped
    assert tokens(res.window) <= budget.limit
    assert validate_request({"messages": SYSTEM + res.window}) is None


def test_reactive_levels_shrink_and_the_minimum_is_anchor_plus_last_unit() -> None:
    budget = T.Budget(32_000)
    window = session(80, 900)
    sizes = []
    for level in (1, 2, 3):
        res = T.reactive(level, window, est(), budget, SYSTEM, TOOLS)
        if level < 3:
            assert_whole_units(window, res)
        assert tokens(res.window) <= T.REACTIVE_TARGETS[level] * budget.limit
        assert res.window[0]["content"] == "THE TASK: refactor the parser"
        assert validate_request({"messages": SYSTEM + res.window}) is None
        sizes.append(tokens(res.window))
        if level == 3:
            last_unit = group_units(window)[-1]
            assert res.window == [window[0], *last_unit]
    assert sizes[0] > sizes[1] > sizes[2]
    with pytest.raises(ValueError, match="level"):
        T.reactive(4, window, est(), budget, SYSTEM, TOOLS)


def test_reactive_minimum_truncates_the_last_unit_when_it_alone_is_too_big() -> None:
    budget = T.Budget(8000)
    window = [{"role": "user", "content": "task"}, *unit(0, 200), *unit(1, 40_000, n_calls=2)]
    res = T.reactive(3, window, est(), budget, SYSTEM, TOOLS)
    assert res.truncated == 2
    assert tokens(res.window) <= 0.25 * budget.limit
    assert [m["role"] for m in res.window] == ["user", "assistant", "tool", "tool"]


def test_recovery_text_and_message() -> None:
    text = T.compose_recovery("make quiet win", todos="[ ] add flag", git_activity="abc123 Add flag")
    assert "Current task: make quiet win" in text and "[ ] add flag" in text and "abc123" in text
    msg = T.recovery_message(text)
    assert msg["role"] == "system" and msg["meta"]["kind"] == "recovery" and msg["content"] == text


def test_truncate_text_keeps_head_and_tail() -> None:
    text = "HEAD" + "m" * 10_000 + "TAIL"
    out = T.truncate_text(text, 1000)
    assert out.startswith("HEAD") and out.endswith("TAIL") and len(out) <= 1000
    assert T.truncate_text("short", 1000) == "short"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4000), st.integers(1, 3), st.booleans()), min_size=1, max_size=40),
    st.sampled_from([4000, 8000, 16_000]),
)
def test_validate_always_fits_whole_units_and_a_valid_request(
    shape: list[tuple[int, int, bool]], window_size: int
) -> None:
    window: list[dict[str, Any]] = []
    for i, (size, calls, with_user) in enumerate(shape):
        if with_user:
            window.append({"role": "user", "content": f"request {i} " + "u" * (size // 4)})
        window += unit(i, size, calls)
    budget = T.Budget(window_size)
    res = T.validate(window, est(), budget, SYSTEM, TOOLS)
    assert tokens(res.window) <= budget.limit
    assert validate_request({"messages": SYSTEM + res.window}) is None
    users = [m for m in window if m["role"] == "user"]
    if users:
        assert any((m.get("content") or "").startswith(users[-1]["content"][:12]) for m in res.window)
