"""A session's lock between processes (clio.store.sessions): a run that resumes a session while a
read-back takes it for a moment waits for it, even in the instant the lock is taken and its holder
not written yet (a script's ``clio -p ...; clio -c -p ...`` met that instant: "open in another
clio process (pid ?)"); a session held for good is refused in one sentence naming the holder."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

import pytest

from clio.store import session_lock
from clio.store import sessions as S
from clio.store.changes import JOURNAL
from clio.store.session_lock import SessionBusy
from clio.store.sessions import SessionStore


def held(lock: Path, holder: bytes) -> int:
    """The lock taken by another open file (as another process would hold it), ``holder`` in it."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    os.pwrite(fd, holder, 0)
    return fd


@pytest.fixture
def store(tmp_path: Path) -> tuple[SessionStore, str, Path]:
    store = SessionStore(tmp_path / "sessions")
    session = store.create("m")
    session.append({"role": "user", "content": "hello"})
    sid = session.id
    session.close()
    info = store.info(sid)
    assert info.path is not None
    return store, sid, info.path / "lock"


def release_after(fd: int, seconds: float) -> threading.Thread:
    t = threading.Thread(target=lambda: (time.sleep(seconds), os.close(fd)))
    t.start()
    return t


@pytest.mark.parametrize("holder", [b"", b"4242 brief"], ids=["being-taken", "brief"])
def test_a_lock_taken_for_a_moment_is_waited_for(store: tuple[SessionStore, str, Path], holder: bytes) -> None:
    sessions, sid, lock = store
    releaser = release_after(held(lock, holder), 0.3)
    started = time.monotonic()
    session = sessions.open(sid)  # waits, then has it
    waited = time.monotonic() - started
    releaser.join()
    assert waited >= 0.25
    assert lock.read_text() == str(os.getpid())
    session.close()


def test_a_lock_that_still_names_its_last_holder_is_read_again(store: tuple[SessionStore, str, Path]) -> None:
    """Taken this very moment by a read-back, the file still names the run before (here 4242)
    until the read-back writes itself over it: the opener reads it again, sees a brief holder,
    and waits for it (before: refused at once, "open in another clio process (pid 4242)")."""
    sessions, sid, lock = store
    fd = held(lock, b"4242")

    def read_back() -> None:
        time.sleep(0.02)
        os.pwrite(fd, b"4343 brief", 0)  # the new holder written, as _lock writes it
        time.sleep(0.3)
        os.close(fd)

    t = threading.Thread(target=read_back)
    t.start()
    session = sessions.open(sid)
    t.join()
    assert lock.read_text() == str(os.getpid())
    session.close()


def test_a_session_open_in_another_run_is_refused_naming_it(store: tuple[SessionStore, str, Path]) -> None:
    sessions, sid, lock = store
    fd = held(lock, b"4242")
    try:
        started = time.monotonic()
        with pytest.raises(SessionBusy, match=r"open in another clio process \(pid 4242\)"):
            sessions.open(sid)
        assert time.monotonic() - started < 1.0  # read twice, 50 ms apart: not waited for
    finally:
        os.close(fd)


def test_a_lock_that_stays_without_a_holder_is_refused_after_the_wait(
    store: tuple[SessionStore, str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions, sid, lock = store
    monkeypatch.setattr(session_lock, "BRIEF_WAIT", 0.3)
    fd = held(lock, b"")
    try:
        with pytest.raises(SessionBusy, match=r"pid \?"):
            sessions.open(sid)
    finally:
        os.close(fd)


def test_a_holder_written_over_a_longer_one_is_cut_to_its_length(store: tuple[SessionStore, str, Path]) -> None:
    """Whoever takes the lock writes its pid over the last holder's, then cuts the file to it (so
    a reader never finds it empty while it is held): nothing of the last holder is left."""
    sessions, sid, lock = store
    lock.write_text("123456789 brief")
    session = sessions.open(sid)
    assert lock.read_text() == str(os.getpid())
    session.close()
    fd = sessions.take(sid)
    assert lock.read_text() == f"{os.getpid()} brief"
    os.close(fd)


def test_sessions_started_in_the_same_second_never_share_a_folder(tmp_path: Path) -> None:
    """Ids are second-stamped with four hex digits: a second session that draws an id already on
    disk (created before it, or by a run racing it to its first write) takes a fresh one and keeps
    its messages apart, rather than being refused as busy or writing into the other's folder."""
    store = SessionStore(tmp_path / "sessions")
    first = store.create("m")
    first.append({"role": "user", "content": "first"})
    # the second drew the same id before the first reached disk (two runs racing)
    raced = store.create("m")
    raced.info.id = first.id
    raced.info.path = tmp_path / "sessions" / first.id
    raced.append({"role": "user", "content": "raced"})
    assert raced.id != first.id
    first.append({"role": "assistant", "content": "still mine"})
    first.close()
    raced.close()
    # and once the first is closed (its lock released), its session.json still keeps it apart
    late = store.create("m")
    late.info.id, late.info.path = first.id, tmp_path / "sessions" / first.id
    late.append({"role": "user", "content": "late"})
    late.close()
    assert late.id not in (first.id, raced.id)
    assert [m["content"] for m in store.open(first.id).messages] == ["first", "still mine"]
    assert [m["content"] for m in store.open(raced.id).messages] == ["raced"]


def test_a_session_created_in_a_taken_second_draws_a_free_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Created after the other reached disk, a session never draws its id (the CI failure: sixty
    sessions archived in one second, two drew the same four hex digits, the second found the
    first's folder locked)."""
    store = SessionStore(tmp_path / "sessions")
    first = store.create("m")
    first.append({"role": "user", "content": "first"})
    drawn = iter([first.id, first.id, "20261126-000000-beef"])
    monkeypatch.setattr(S, "new_session_id", lambda now=None: next(drawn))
    second = store.create("m")
    assert second.id == "20261126-000000-beef"


def test_a_folder_a_tool_made_before_the_first_message_stays_the_sessions_own(tmp_path: Path) -> None:
    """A `!command`'s before-images or a tool's results may reach the session's folder before its
    first message does: a folder without another session's session.json, held by no one, is this
    session's (the REPL otherwise split one session in two, its results left in a folder of
    their own)."""
    store = SessionStore(tmp_path / "sessions")
    session = store.create("m")
    assert session.dir is not None
    sid = session.id
    (session.dir / "results").mkdir(parents=True)
    session.append({"role": "user", "content": "first"})
    assert session.id == sid and (session.dir / "results").is_dir()
    assert [p.name for p in (tmp_path / "sessions").iterdir() if p.name != JOURNAL] == [sid]
    session.close()


def test_a_session_whose_session_json_is_lost_is_not_taken_for_a_new_ones_folder(tmp_path: Path) -> None:
    """A folder with an archive but no session.json is a session to rebuild (the store lists it),
    not a folder a tool made for the new session: the new one draws a fresh id."""
    store = SessionStore(tmp_path / "sessions")
    old = store.create("m")
    old.append({"role": "user", "content": "kept"})
    old.close()
    assert old.dir is not None
    (old.dir / "session.json").unlink()
    late = store.create("m")
    late.info.id, late.info.path = old.id, old.dir
    late.append({"role": "user", "content": "late"})
    late.close()
    assert late.id != old.id
    assert [m["content"] for m in store.open(old.id).messages] == ["kept"]
