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
