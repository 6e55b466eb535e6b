"""The sessions folder's change journal (clio.store.changes) and the recall index reading it: a
refresh looks at the sessions clio wrote since, not at every one, and never misses a change
because of it (a folder added or removed, a journal replaced, a writer that does not note)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from clio.messages import make
from clio.recall.index import RecallIndex
from clio.store import changes
from clio.store.changes import JOURNAL, ChangeWatch, note
from clio.store.sessions import SessionStore
from tests.unit.conftest import add_session


def watched(root: Path) -> ChangeWatch:
    watch = ChangeWatch()
    watch.full_done(watch.begin_full(root))
    return watch


def test_the_journal_names_what_was_written_since_the_last_look(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    assert ChangeWatch().changed(root) is None  # never looked: look at everything
    note(root, "a")  # creates the journal: a new entry of the folder
    watch = watched(root)
    assert watch.changed(root) == set()  # nothing since
    note(root, "a")
    note(root, "b")
    note(root, "a")
    assert watch.changed(root) == {"a", "b"}
    assert watch.changed(root) == set()  # read once
    note(root, "b")
    assert watch.changed(root) == {"b"}


def test_a_line_being_written_is_read_next_time(tmp_path: Path) -> None:
    root = tmp_path
    note(root, "a")
    watch = watched(root)
    with open(root / JOURNAL, "ab") as f:
        f.write(b"b")
    assert watch.changed(root) == set()
    with open(root / JOURNAL, "ab") as f:
        f.write(b"c\n")
    assert watch.changed(root) == {"bc"}


def test_names_that_are_no_plain_entry_are_ignored(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    note(root, "x")
    watch = watched(root)
    with open(root / JOURNAL, "ab") as f:  # a journal in an untrusted checkout
        f.write(b"../../etc\n.hidden\n\xff\xfe\nok\x00no\nfine\n\n")
    assert watch.changed(root) == {"fine", "\ufffd\ufffd"}  # undecodable: a name no folder has


@pytest.mark.parametrize("change", ["folder added", "folder removed", "journal replaced", "journal cut", "time"])
def test_every_session_is_looked_at_again_when_the_journal_cannot_tell(tmp_path: Path, change: str) -> None:
    root = tmp_path
    (root / "old").mkdir()
    note(root, "old")
    note(root, "old")
    watch = watched(root)
    assert watch.changed(root) == set()
    time.sleep(0.02)  # past the folder's mtime granularity
    if change == "folder added":
        (root / "new").mkdir()
    elif change == "folder removed":
        (root / "old").rmdir()
    elif change == "journal replaced":
        changes._rotate(root / JOURNAL)
    elif change == "journal cut":
        os.truncate(root / JOURNAL, 2)
    else:
        watch.full_look_s = 0.0
    assert watch.changed(root) is None


def test_the_journal_starts_afresh_when_it_grows_past_its_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changes, "ROTATE_BYTES", 40)
    note(tmp_path, "s" * 10)
    watch = watched(tmp_path)
    for _ in range(3):
        note(tmp_path, "s" * 10)
    assert (tmp_path / JOURNAL).stat().st_size <= 40
    assert watch.changed(tmp_path) is None  # another file: a full look
    assert not list(tmp_path.glob(f"{JOURNAL}.*"))  # no temporary file left


def test_no_journal_yet_means_nothing_noted(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    watch = watched(tmp_path)
    assert watch.changed(tmp_path) == set()  # an older clio's sessions: the periodic full look covers them


def test_a_planted_fifo_or_link_neither_blocks_nor_is_followed(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    target = tmp_path / "elsewhere"
    target.write_text("keep\n")
    (root / JOURNAL).symlink_to(target)
    note(root, "a")
    assert target.read_text() == "keep\n"
    (root / JOURNAL).unlink()
    os.mkfifo(root / JOURNAL)
    done = threading.Event()

    def both() -> None:
        note(root, "a")
        watch = watched(root)
        assert watch.changed(root) is None  # not a journal: look at everything
        done.set()

    t = threading.Thread(target=both, daemon=True)
    t.start()
    t.join(10)
    assert done.is_set(), "a fifo in the journal's place blocked"


def test_every_write_of_a_session_is_noted(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    watch = watched(tmp_path / "sessions")
    s = store.create("m")
    s.append(make("user", "hello"))
    assert watch.changed(tmp_path / "sessions") is None  # a new folder: the folder itself changed
    watch = watched(tmp_path / "sessions")
    s.append(make("assistant", "hi"))
    s.info.name = "renamed"
    s.save_meta()
    assert watch.changed(tmp_path / "sessions") == {s.id}
    s.close()


APPEND = """
import sys
from pathlib import Path
from clio.messages import make
from clio.store.sessions import SessionStore
s = SessionStore(Path(sys.argv[1])).open(sys.argv[2])
s.append(make("user", sys.argv[3]))
s.close()
"""


def test_the_index_looks_only_at_the_sessions_written_since(store: SessionStore, tmp_path: Path) -> None:
    ids = [add_session(store, [f"topic {n} words", "ok"]) for n in range(12)]
    index = RecallIndex(tmp_path / "recall.sqlite", store)
    assert index.search("topic")
    assert index.stats["full_looks"] == 1
    looked: list[str] = []
    real_stat = os.stat

    def counting(path: object, *args: object, **kw: object) -> os.stat_result:
        looked.append(str(path))
        return real_stat(path, *args, **kw)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "stat", counting)
        assert index.search("topic") and index.stats["refreshes_skipped"] == 1
        assert not [p for p in looked if p.endswith("session.json")]  # nothing written: no session looked at
        writer = subprocess.run(  # another clio process writes: only the journal tells
            [sys.executable, "-c", APPEND, str(store.dir), ids[3], "the wallaby migration moved to friday"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert writer.returncode == 0, writer.stderr
        looked.clear()
        hits = index.search("wallaby")
    assert hits and {h["session_id"] for h in hits} == {ids[3]}
    assert {p for p in looked if p.endswith("session.json")} == {f"{store.dir}/{ids[3]}/session.json"}  # looked at, then read
    assert index.stats["full_looks"] == 1 and index.stats["journal_looks"] == 2


def test_what_the_journal_misses_is_found_by_the_next_full_look(store: SessionStore, tmp_path: Path) -> None:
    sid = add_session(store, ["first words", "ok"])
    index = RecallIndex(tmp_path / "recall.sqlite", store)
    assert index.search("first")
    other = add_session(store, ["quokka census notes", "ok"])  # a new folder: seen at once
    assert [h["session_id"] for h in index.search("quokka")] == [other]
    store.delete(other)  # noted, and the folder changed
    assert index.search("quokka") == []
    # a writer that does not note (a hand edit, an older clio): the session's file changes, the journal does not
    assert store.dir is not None
    meta = store.dir / sid / "session.json"
    data = json.loads(meta.read_text())
    data["name"] = "named by hand"
    meta.with_name("tmp.json").write_text(json.dumps(data))
    os.replace(meta.with_name("tmp.json"), meta)
    assert index.search("first")[0]["session_name"] != "named by hand"  # trusted the journal: not looked at yet
    index._watch.full_look_s = 0.0  # the period passed
    assert index.search("first")[0]["session_name"] == "named by hand"
    assert index.stats["full_looks"] >= 3


def test_a_noted_session_that_lost_its_file_is_rebuilt_not_dropped(store: SessionStore, tmp_path: Path) -> None:
    """Looked at again through the journal, a session folder without its session.json is read as
    the full look reads it (rebuilt from the archive), never taken for gone."""
    sid = add_session(store, ["the numbat feeder runs at dawn", "ok"])
    add_session(store, ["other work", "ok"])
    index = RecallIndex(tmp_path / "recall.sqlite", store)
    assert [h["session_id"] for h in index.search("numbat")] == [sid]
    assert store.dir is not None
    (store.dir / sid / "session.json").unlink()
    note(store.dir, sid)
    assert [h["session_id"] for h in index.search("numbat")] == [sid]
    assert index.stats["full_looks"] == 1 and (store.dir / sid / "session.json").exists()
