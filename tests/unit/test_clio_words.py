"""Issue 33 item 1: text clio sends in the user's role on its own is never read as the user's words.
One reading of what the user said (clio.messages.typed_words) serves every reader; each kind of
clio text is marked where it is made and left out by it: a built-in command's prompt (/init,
/compact's request), clio's notes put before the user's words (/undo, plan mode off), clio's
notes block and the automatic recall block, and files attached with @path."""

from __future__ import annotations

from typing import Any

import pytest

from clio.context.notes import notes_message
from clio.memory import consolidate as cons
from clio.messages import KIND_RECALL, make, prompt_meta, typed_words, with_notes
from clio.prompts import load_prompt

SAID = "We will use pgbouncer in transaction mode for the billing database."
INIT = load_prompt("init.md").format(task="write an AGENTS.md", operation="create_file")


def answered(*user: dict[str, Any]) -> list[dict[str, Any]]:
    return [*user, make("assistant", "Done.")]


def test_the_reading_finds_what_the_user_said() -> None:
    assert [item[2] for item in cons.established(answered(make("user", SAID)))] == [SAID]


@pytest.mark.parametrize("command", ["init", "compact"])
def test_a_built_in_commands_prompt_reads_as_the_command_typed(command: str) -> None:
    msg = make("user", f"{INIT}\n{SAID}", meta=prompt_meta(command))
    assert typed_words(msg) == "/" + command
    assert cons.established(answered(msg)) == []
    assert cons.stated([msg]) == 0
    line = cons.transcript(answered(msg), 10_000)
    assert f"[user] /{command}" in line and "contributor must follow" not in line and SAID not in line


def test_the_init_prompt_states_nothing_the_user_said() -> None:
    msg = make("user", INIT, meta=prompt_meta("init"))
    assert cons.established(answered(msg)) == []


@pytest.mark.parametrize(
    "note",
    [
        f"[clio: the user ran /undo; these file changes of yours were reverted: a.py (restored). {SAID}]",
        f"[clio: the user turned plan mode off: you may now make changes. {SAID}]",
    ],
    ids=["undo", "plan-off"],
)
def test_clio_notes_before_the_users_words_are_not_theirs(note: str) -> None:
    meta: dict[str, Any] = {}
    text = with_notes("Then rename the module.", [note], meta)
    msg = make("user", text, meta=meta)
    assert text.startswith(note) and typed_words(msg) == "Then rename the module."
    assert cons.established(answered(msg)) == []
    line = cons.transcript(answered(msg), 10_000)
    assert "[user] Then rename the module." in line and f"[user] {note}" not in line
    msg["content"] = "[clio: redacted on the way]\n\n" + SAID  # notes changed (redaction): still cut off
    assert typed_words(msg) == SAID


def test_no_notes_leave_the_text_and_meta_alone() -> None:
    meta: dict[str, Any] = {}
    assert with_notes(SAID, [], meta) == SAID and meta == {}


def test_the_recall_block_and_clios_notes_block_are_not_the_users() -> None:
    recalled = make("system", f"<recalled_context>\nthe user: {SAID}\n</recalled_context>", meta={"kind": KIND_RECALL})
    block = notes_message([make("system", SAID)])
    assert block is not None and block["role"] == "user"
    for msg in (recalled, block, {**recalled, "role": "user"}):
        assert typed_words(msg) == ""
        assert cons.established([make("user", "hi"), msg, make("assistant", "ok")]) == []


def test_an_attached_files_content_is_not_the_users() -> None:
    msg = make("user", f'look at this\n\n<file path="notes.md">\n{SAID}\n</file>', meta={"attached": ["notes.md"]})
    assert typed_words(msg) == "look at this"
    assert cons.established(answered(msg)) == []
    line = cons.transcript(answered(msg), 10_000)
    assert "(attached: notes.md)" in line and SAID not in line


def test_other_roles_are_never_the_users_words() -> None:
    assert typed_words(make("assistant", SAID)) == "" and typed_words(make("tool", SAID)) == ""
