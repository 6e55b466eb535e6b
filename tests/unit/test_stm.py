"""Message units and repair: the atoms of trimming and the guarantee that no request is malformed."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from clio.context.stm import INTERRUPTED, flatten, group_units, is_valid, latest_user_index, repair
from testkit.fakeserver_sse import validate_request


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def asst(text: str | None = None, *ids: str) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": text}
    if ids:
        msg["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": "terminal_operations", "arguments": "{}"}}
            for i in ids
        ]
    return msg


def result(cid: str, text: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": text}


def test_parallel_tool_calls_form_one_unit_whatever_the_order_of_results() -> None:
    msgs = [
        user("go"),
        asst(None, "a", "b", "c"),
        result("c"),
        result("a"),
        result("b"),
        asst("done"),
    ]
    units = group_units(msgs)
    assert [len(u) for u in units] == [1, 4, 1]
    assert units[1][0] is msgs[1]
    assert {m["tool_call_id"] for m in units[1][1:]} == {"a", "b", "c"}
    assert flatten(units) == msgs


def test_a_late_result_joins_its_call_and_orphans_stand_alone() -> None:
    a = asst(None, "a", "b")
    late = result("b")
    orphan = result("zzz")
    msgs = [user("go"), a, result("a"), user("wait"), late, orphan]
    units = group_units(msgs)
    assert units[1] == [a, msgs[2], late]
    assert units[-1] == [orphan]
    assert [m for u in units for m in u].index(late) == 3  # moved next to its call


def test_repair_leaves_a_valid_window_untouched_object_for_object() -> None:
    msgs = [user("go"), asst(None, "a", "b"), result("b"), result("a"), asst("done"), user("next")]
    out = repair(msgs)
    assert len(out) == len(msgs) and all(x is y for x, y in zip(out, msgs, strict=True))
    assert is_valid(out)


def test_repair_drops_orphans_and_answers_interrupted_calls() -> None:
    msgs = [result("gone"), user("go"), asst("reading", "a", "b"), result("a"), user("stop!")]
    out = repair(msgs)
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "tool", "user"]
    synthetic = out[3]
    assert synthetic["tool_call_id"] == "b" and synthetic["content"] == INTERRUPTED
    assert synthetic["name"] == "terminal_operations"
    assert synthetic["meta"]["kind"] == "synthetic_result"
    assert is_valid(out)
    assert validate_request({"messages": out}) is None
    assert validate_request({"messages": msgs}) is not None  # the endpoint would have rejected the original


def test_repair_keeps_the_first_of_duplicate_results() -> None:
    first, second = result("a", "first"), result("a", "second")
    out = repair([user("go"), asst(None, "a"), first, second])
    assert out[2:] == [first]


def test_latest_user_index() -> None:
    assert latest_user_index([]) is None
    assert latest_user_index([asst("hi")]) is None
    msgs = [user("one"), asst("x"), user("two"), asst(None, "a"), result("a")]
    assert latest_user_index(msgs) == 2


def test_is_valid_spots_each_defect() -> None:
    assert not is_valid([result("a")])
    assert not is_valid([asst(None, "a")])
    assert not is_valid([asst(None, "a"), user("x"), result("a")])
    assert is_valid([asst(None, "a"), result("a"), user("x")])


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Random, often broken, histories: calls, results in any order, orphans, missing results."""
    out: list[dict[str, Any]] = []
    ids: list[str] = []
    for i in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["user", "text", "call", "result", "orphan"]))
        if kind == "user":
            out.append(user(f"u{i}"))
        elif kind == "text":
            out.append(asst(f"t{i}"))
        elif kind == "call":
            new = [f"c{i}_{j}" for j in range(draw(st.integers(1, 3)))]
            ids += new
            out.append(asst(None, *new))
        elif kind == "result" and ids:
            out.append(result(draw(st.sampled_from(ids))))
        else:
            out.append(result(f"nowhere{i}"))
    return out


@settings(max_examples=300, deadline=None)
@given(histories())
def test_repair_always_yields_what_an_endpoint_accepts(msgs: list[dict[str, Any]]) -> None:
    out = repair(msgs)
    assert is_valid(out)
    assert validate_request({"messages": [user("start"), *out]}) is None
    again = repair(out)
    assert len(again) == len(out) and all(x is y for x, y in zip(again, out, strict=True))  # idempotent
    kept_calls = [m for m in msgs if m.get("role") != "tool"]
    assert [m for m in out if m.get("role") != "tool"] == kept_calls  # nothing but tool results is removed
