"""The resume view (clio.ui.resume_view): the last exchanges, compactly, from plain messages."""

from __future__ import annotations

import json
from typing import Any

from clio.messages import make
from clio.ui.resume_view import render


def tool_turn(user: str, path: str, answer: str) -> list[dict[str, Any]]:
    call = {
        "id": "c1",
        "type": "function",
        "function": {
            "name": "file_operations",
            "arguments": json.dumps({"operation": "read_file", "path": path}),
        },
    }
    return [
        make("user", user),
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "file contents"},
        make("assistant", answer),
    ]


def test_the_last_three_exchanges_with_their_calls_and_answers() -> None:
    msgs = [make("user", "zeroth request"), make("assistant", "old answer")]
    msgs += [make("user", "first request"), make("assistant", "answer one")]
    msgs += tool_turn("second request", "src/app.py", "line A\nline B\nline C\nline D")
    msgs += [make("user", "third request " + "word " * 60), make("assistant", "answer three")]
    lines = [text for text, _ in render(msgs)]
    assert lines[0] == "where you were (2 earlier messages not shown; /session export has them all):"
    assert "› first request" in lines and "  answer one" in lines
    assert "› zeroth request" not in lines
    assert "  (1 tool call: file_operations read_file src/app.py)" in lines
    i = lines.index("› second request")
    assert lines[i + 2 : i + 6] == ["  line A", "  line B", "  line C", "  …"]
    third = next(ln for ln in lines if ln.startswith("› third request"))
    assert third.endswith("…") and len(third) <= 2 + 160 and not third.endswith(" …")


def test_nothing_for_an_empty_session_and_a_turn_without_an_answer() -> None:
    assert render([]) == []
    lines = [text for text, _ in render([make("user", "interrupted one")])]
    assert lines == ["where you were:", "› interrupted one", "  (no answer)"]


def test_an_attached_file_is_named_not_shown() -> None:
    sent = 'fix @a.py please\n\n<file path="a.py">\nFILEBODY\n</file>'
    lines = [text for text, _ in render([make("user", sent, meta={"attached": ["a.py"]}), make("assistant", "done")])]
    assert "› fix @a.py please (attached: a.py)" in lines
    assert not any("FILEBODY" in line for line in lines)


def test_a_session_is_named_from_the_typed_words_only(tmp_path: Any) -> None:
    from clio.store.sessions import SessionStore

    session = SessionStore(tmp_path / "sessions").create("m")
    session.append(make("user", 'fix @a.py please\n\n<file path="a.py">\nFILEBODY\n</file>', meta={"attached": ["a.py"]}))
    assert session.info.name == "fix @a.py please"


def test_clios_notes_are_shown_as_clios_and_the_users_words_as_the_users() -> None:
    """Issue 35 item 4: an /undo's or plan mode's note is a dim clio: line, not the user's text."""
    from clio.messages import with_notes

    meta: dict[str, Any] = {}
    notes = ["[clio: the user ran /undo; these file changes of yours were reverted: a.py (restored).]",
             "[clio: the user turned plan mode off: you may now make changes.]"]
    text = with_notes("now rename it", notes, meta)
    shown = render([make("user", text, meta=meta), make("assistant", "renamed")])
    assert ("› now rename it", "bold") in shown
    assert ("  clio: the user ran /undo; these file changes of yours were reverted: a.py (restored).", "dim") in shown
    assert ("  clio: the user turned plan mode off: you may now make changes.", "dim") in shown
    assert not any(t.startswith("›") and "clio" in t for t, _ in shown)


def test_an_answer_cut_off_by_the_user_is_marked() -> None:
    shown = render([make("user", "tell me"), make("assistant", "half of it", meta={"interrupted": True})])
    assert [t for t, _ in shown][-2:] == ["  half of it", "  ⏹ interrupted (cut off by the user)"]
    empty = render([make("user", "tell me"), make("assistant", "", meta={"interrupted": True})])
    assert [t for t, _ in empty][-1] == "  ⏹ interrupted (cut off by the user)"
    whole = render([make("user", "tell me"), make("assistant", "all of it")])
    assert not any("interrupted" in t for t, _ in whole)


def test_long_lines_wrap_at_spaces_never_inside_a_word() -> None:
    answer = "I am editing the configuration loader so that it reads the override file first and then " * 2
    user = "please look at the editing code in the loader and make the override behaviour consistent"
    shown = [t for t, _ in render([make("user", user), make("assistant", answer)], width=40)]
    assert all(len(t) <= 40 for t in shown), shown
    words = set((user + " " + answer).split())
    for t in shown[1:]:
        for w in t.split():
            assert w.strip("…") in words or w in ("›",), (w, shown)
    first = shown.index("› please look at the editing code in the")
    assert shown[first + 1] == "  loader and make the override behaviour"  # continuation under the text
