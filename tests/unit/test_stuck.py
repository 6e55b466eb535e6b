"""Stuck detection (clio.agent.stuck): the same call with the same result, within one turn."""

from __future__ import annotations

import json

from clio.agent.stuck import STOP_AFTER, RepeatGuard, call_key


def args(**kw: object) -> str:
    return json.dumps(kw)


def test_the_same_arguments_in_another_order_or_spacing_are_the_same_call() -> None:
    assert call_key("f", '{"a": 1, "b": 2}') == call_key("f", '{"b":2,"a":1}')
    assert call_key("f", args(a=1)) != call_key("g", args(a=1))
    assert call_key("f", args(a=1)) != call_key("f", args(a=2))
    assert call_key("f", "not json") == "f\x00not json"


def test_a_repeat_with_the_same_result_is_answered_with_an_error_naming_the_first_step() -> None:
    g = RepeatGuard()
    assert g.observe("file_operations", args(operation="read_file", path="a"), "alpha", 1) is None
    note = g.observe("file_operations", args(path="a", operation="read_file"), "alpha", 2, "read_file a")
    assert note is not None and note.startswith("[Repeated call: the same file_operations call")
    assert "step 1" in note and f"{STOP_AFTER - 1} more repeat(s)" in note
    assert note.endswith("]\nalpha")  # the first repeat keeps its result behind the note
    assert g.repeats == 1 and not g.stuck
    again = g.observe("file_operations", args(path="a", operation="read_file"), "alpha", 3, "read_file a")
    assert again is not None and again.startswith("Repeated call: file_operations") and "alpha" not in again


def test_a_changed_result_is_not_a_repeat() -> None:
    g = RepeatGuard()
    read = args(operation="read_file", path="a")
    assert g.observe("file_operations", read, "v1", 1) is None
    assert (
        g.observe("file_operations", args(operation="write_file", path="a", content="v2"), "Wrote a", 2)
        is None
    )
    assert g.observe("file_operations", read, "v2", 3) is None  # the file changed in between
    assert g.observe("file_operations", read, "v2", 4) is not None  # now it did not
    assert g.repeats == 1


def test_the_turn_is_stuck_after_stop_after_repeats_and_says_why() -> None:
    g = RepeatGuard()
    call = args(operation="write_file", path="calc.py", content="x = 1\n")
    assert (
        g.observe("file_operations", call, "Wrote calc.py", 1, "file_operations write_file calc.py") is None
    )
    notes = [
        g.observe("file_operations", call, "Wrote calc.py", i, "file_operations write_file calc.py")
        for i in range(2, 2 + STOP_AFTER)
    ]
    assert all(n is not None for n in notes)
    assert notes[-1] is not None and notes[-1].endswith("The turn stops here.")
    assert g.stuck
    assert g.reason().startswith(
        f"Stopped: the model repeated the same call (file_operations write_file calc.py) {STOP_AFTER} times"
    )
    assert g.reason().endswith("Send another message to continue, or rephrase the task.")
    assert "Send another message" not in g.reason(interactive=False)  # one-shot: nobody to send one
    assert g.reason(interactive=False).endswith("clio --resume")


def test_different_calls_each_repeated_once_add_up() -> None:
    g = RepeatGuard(stop_after=2)
    for path in ("a", "b"):
        g.observe("f", args(path=path), "same", 1)
        assert g.observe("f", args(path=path), "same", 2) is not None
    assert g.stuck
