"""Issue 11: every sink that writes what the user or the model typed redacts it first (stored tool
results, todos, session names, notes, the REPL history), and works unchanged with redaction off.
Also: a damaged session.json is rebuilt from the archive, so the session stays listable and resumable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clio.memory.notes import NoteStore
from clio.safety.redact import Redactor
from clio.store.atomic import add_damaged_hook, remove_damaged_hook
from clio.store.session_names import NAME_CHARS, clean_name
from clio.store.sessions import SessionStore
from clio.tools.context import Services, ToolContext
from clio.tools.results import maybe_store, read_stored
from clio.tools.todos import SPEC as todo_operations
from clio.tools.todos import load_todos
from clio.ui.history import RedactingFileHistory
from testkit.secrets_corpus import LOOKALIKES, SECRETS

GH = next(s.secret for s in SECRETS if s.label == "github_token")
AWS = next(s.secret for s in SECRETS if s.label == "aws_access_key")


def _all_files(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


def _redact(level: str) -> Any:
    red = Redactor(level)
    return lambda text: red.redact(text)[0]


# ---------------------------------------------------------------- stored tool results


def test_stored_result_is_redacted_and_pages_match(tmp_path: Path) -> None:
    red = Redactor()
    services = Services(redactor=red)
    ctx = ToolContext(root=tmp_path, session_dir=tmp_path / "s", services=services, result_chars=400)
    text = "".join(f"line {i}: token {GH} ok\n" for i in range(60))
    preview = maybe_store(ctx, "terminal_operations", text)
    (stored,) = (tmp_path / "s" / "results").glob("*.txt")
    body = stored.read_text(encoding="utf-8")
    assert GH not in body and GH not in preview
    assert body == text.replace(GH, "[REDACTED:github_token]")
    page = read_stored(ctx, stored.stem, 0).split("\n", 1)[1]
    assert body.startswith(page) and GH not in page  # offsets count in the stored text


def test_stored_result_without_a_redactor_or_off_is_verbatim(tmp_path: Path) -> None:
    text = f"{AWS}\n" * 200
    for services in (Services(), Services(redactor=Redactor("off"))):
        ctx = ToolContext(root=tmp_path, session_dir=None, services=services, result_chars=400)
        maybe_store(ctx, "t", text)
        assert list(ctx.stored_results.values()) == [text]


# ---------------------------------------------------------------- todos


@pytest.mark.parametrize("level", ["standard", "off"])
def test_todos_are_redacted_before_they_are_written(tmp_path: Path, level: str) -> None:
    ctx = ToolContext(root=tmp_path, session_dir=tmp_path / "s", services=Services(redactor=Redactor(level)))
    out = todo_operations(ctx, {"operation": "write", "items": [f"rotate {GH}", "plain task"]})
    todo_operations(ctx, {"operation": "add", "content": f"check {AWS} in CI"})
    todo_operations(ctx, {"operation": "update", "id": 2, "content": f"plain task, key {AWS}"})
    data = (tmp_path / "s" / "todos.json").read_text(encoding="utf-8")
    contents = [d["content"] for d in load_todos(ctx)]
    if level == "off":
        assert GH in data and AWS in data and contents[0] == f"rotate {GH}"
        return
    assert GH not in data and AWS not in data and GH not in out
    assert contents == [
        "rotate [REDACTED:github_token]",
        "plain task, key [REDACTED:aws_access_key]",
        "check [REDACTED:aws_access_key] in CI",
    ]


def test_incognito_todos_are_redacted_too(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path, services=Services(redactor=Redactor()))
    todo_operations(ctx, {"operation": "add", "content": f"use {GH}"})
    assert ctx.services.todos_mem == [
        {"id": 1, "content": "use [REDACTED:github_token]", "status": "pending"}
    ]


# ---------------------------------------------------------------- session names


def test_session_names_are_redacted_when_set_and_read(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, redact=_redact("standard"))
    s = store.create("m")
    s.append({"role": "user", "content": f"deploy with {AWS} please, then report back to the team"})
    assert AWS not in s.info.name and "[REDACTED:aws_access_key]" in s.info.name
    s.rename(f"key {GH}")
    s.close()
    assert GH not in _all_files(tmp_path).decode()
    assert store.list()[0].name == "key [REDACTED:github_token]"
    # a name written before redaction existed is redacted when read
    meta = tmp_path / s.id / "session.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "name": f"old {GH}"}), encoding="utf-8")
    assert store.info(s.id).name == "old [REDACTED:github_token]"
    assert SessionStore(tmp_path).info(s.id).name == f"old {GH}"  # no redact given: as stored


def test_clean_name_never_cuts_a_placeholder() -> None:
    name = "x" * (NAME_CHARS - 10) + f" {GH}"
    out = clean_name(name, _redact("standard"))
    assert len(out) <= NAME_CHARS and "[REDACTED" not in out and GH[:8] not in out
    assert clean_name(name, None) == name[:NAME_CHARS]


# ---------------------------------------------------------------- damaged session.json


def _session(tmp_path: Path, n: int = 3) -> tuple[SessionStore, str]:
    store = SessionStore(tmp_path)
    s = store.create("gpt-x")
    for i in range(n):
        s.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} about parsers"})
    s.close()
    return store, s.id


def test_damaged_session_json_is_rebuilt_from_the_archive(tmp_path: Path) -> None:
    store, sid = _session(tmp_path, 5)
    meta = tmp_path / sid / "session.json"
    before = json.loads(meta.read_text())
    meta.write_bytes(b"\x00\xff garbage")
    seen: list[tuple[Path, Path]] = []

    def hook(path: Path, moved: Path) -> None:
        seen.append((path, moved))

    add_damaged_hook(hook)
    try:
        (info,) = store.list()
    finally:
        remove_damaged_hook(hook)
    assert len(seen) == 1 and seen[0][0] == meta and seen[0][1].read_bytes() == b"\x00\xff garbage"
    assert info.id == sid and info.message_count == 5
    assert info.name == "message 0 about parsers"  # made again from the first user message
    assert abs(info.created - before["created"]) < 2 and info.updated >= info.created
    assert store.rebuilt == [sid]
    assert json.loads(meta.read_text())["message_count"] == 5  # written back: the next run is quiet
    s = store.open(sid)
    assert [m["content"] for m in s.messages][-1] == "message 4 about parsers"
    s.close()
    assert store.find(sid[:10]).id == sid


def test_name_and_model_are_recovered_from_a_torn_session_json(tmp_path: Path) -> None:
    store, sid = _session(tmp_path)
    s = store.open(sid)
    s.rename("my refactor")
    s.close()
    meta = tmp_path / sid / "session.json"
    meta.write_bytes(meta.read_bytes()[:-40])  # a torn write
    info = store.info(sid)
    assert (info.name, info.model, info.message_count) == ("my refactor", "gpt-x", 3)
    assert len(list((tmp_path / sid).glob("session.damaged-*.json"))) == 1


def test_wrong_field_types_count_as_damage_and_a_lost_file_is_rebuilt(tmp_path: Path) -> None:
    store, sid = _session(tmp_path)
    meta = tmp_path / sid / "session.json"
    meta.write_text('{"id": "x", "created": "yesterday"}', encoding="utf-8")
    assert store.info(sid).message_count == 3
    meta.unlink()
    assert [i.id for i in store.list()] == [sid]  # no session.json at all: still listed
    with pytest.raises(Exception, match="no session"):
        store.find("nothing-like-it")


# ---------------------------------------------------------------- notes


@pytest.mark.parametrize("persistent", [True, False])
def test_notes_keys_and_values_are_redacted_in_the_store(tmp_path: Path, persistent: bool) -> None:
    notes = NoteStore(tmp_path / "memory" if persistent else None, redact=_redact("standard"))
    note, created = notes.store("deploy", f"use {AWS} for staging")
    assert created and note.value == "use [REDACTED:aws_access_key] for staging"
    note, _ = notes.store(f"key-{GH}", "where it is")
    assert note.key == "key-REDACTED-github_token"
    retrieved = notes.retrieve(f"key-{GH}")  # looked up the same way
    assert retrieved is not None and retrieved.value == "where it is"
    assert {n.key for n in notes.list()} == {"deploy", "key-REDACTED-github_token"}
    if persistent:
        blob = _all_files(tmp_path).decode() + " ".join(p.name for p in tmp_path.rglob("*"))
        assert AWS not in blob and GH not in blob
    assert notes.delete(f"key-{GH}")


def test_notes_without_redaction_keep_what_they_get(tmp_path: Path) -> None:
    for redact in (None, _redact("off")):
        notes = NoteStore(tmp_path / "m", redact=redact)
        assert notes.store("k", f"use {AWS}")[0].value == f"use {AWS}"


# ---------------------------------------------------------------- REPL history


def test_history_file_gets_redacted_entries(tmp_path: Path) -> None:
    path = tmp_path / "history"
    hist = RedactingFileHistory(path, _redact("standard"))
    hist.append_string(f"export GITHUB_TOKEN={GH}")
    hist.append_string(f"first line\nAWS={AWS}\nlast")
    hist.append_string("nothing secret here")
    raw = path.read_text(encoding="utf-8")
    assert GH not in raw and AWS not in raw
    loaded = list(RedactingFileHistory(path).load_history_strings())
    assert loaded == [
        "nothing secret here",
        "first line\nAWS=[REDACTED:aws_access_key]\nlast",
        "export GITHUB_TOKEN=[REDACTED:github_token]",
    ]
    plain = RedactingFileHistory(tmp_path / "h2", _redact("off"))
    plain.append_string(GH)
    assert GH in (tmp_path / "h2").read_text(encoding="utf-8")


# ---------------------------------------------------------------- the corpus through every sink


def test_corpus_through_the_notes_sink_catches_every_secret_and_spares_lookalikes(tmp_path: Path) -> None:
    notes = NoteStore(tmp_path, redact=_redact("standard"))
    kept: dict[str, str] = {}
    for i, s in enumerate(SECRETS):
        kept[f"s{i}"] = notes.store(f"s{i}", s.text)[0].value
    for i, look in enumerate(LOOKALIKES):
        kept[f"l{i}"] = notes.store(f"l{i}", look.text)[0].value
    on_disk = {n.key: n.value for n in NoteStore(tmp_path).list()}
    assert on_disk == kept
    leaked = [s.label for i, s in enumerate(SECRETS) if s.clio and s.secret in on_disk[f"s{i}"]]
    assert leaked == []
    damaged = [lk.name for i, lk in enumerate(LOOKALIKES) if on_disk[f"l{i}"] != lk.text]
    assert damaged == []


# ---------------------------------------------------------------- preferences (any writer)


def test_preferences_are_redacted_in_the_store_whoever_writes(tmp_path: Path) -> None:
    from clio.memory.prefs_store import PrefStore

    store = PrefStore(tmp_path / "preferences.json", redact=_redact("standard"))
    added = store.add(f"deploy with token {GH} please", 8)
    store.update(added.pref.id, text=f"use key {AWS} for the bucket")
    on_disk = (tmp_path / "preferences.json").read_text(encoding="utf-8")
    assert GH not in on_disk and AWS not in on_disk and "[REDACTED:aws_access_key]" in on_disk
