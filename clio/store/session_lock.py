"""A session's lock between clio processes: an ``flock`` on ``<session>/lock`` that names its
holder ("<pid>", or "<pid> brief" for a read-back that holds it for a moment). The kernel drops
a flock when its process dies, so a stale lock is simply taken over."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

BRIEF = "brief"  # in a lock file: held for a moment only (SessionStore.take)
BRIEF_WAIT = 5.0  # seconds an opener waits for such a lock


class SessionBusy(Exception):
    """The session is open in another live clio process."""


def _open(path: Path) -> int:
    return os.open(path / "lock", os.O_RDWR | os.O_CREAT, 0o644)


def _took(fd: int) -> bool:
    """Whether the lock on ``fd`` was taken now (never waits)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def try_lock(path: Path) -> int | None:
    """The lock of a session being created, or None at once when another process holds it."""
    fd = _open(path)
    if not _took(fd):
        os.close(fd)
        return None
    _write_holder(fd, False)
    return fd


def lock(path: Path, *, brief: bool = False) -> int:
    """The session's lock. ``brief``: held for a moment only (a background read-back writing
    its result, clio.app.background); whoever finds it held that way waits for it."""
    fd = _open(path)
    deadline = time.monotonic() + BRIEF_WAIT
    seen = None
    while not _took(fd):
        holder = os.pread(fd, 32, 0).decode().strip()
        # A holder is believed once read twice: taken this very moment, the file still
        # names the last one (or nothing), until the new holder writes itself (a
        # read-back's brief look as a script's next run resumes the session: that run
        # was refused, "pid ?" or its own old pid). A brief holder, or none written,
        # is waited for.
        if (not holder or holder != seen or holder.endswith(BRIEF)) and time.monotonic() < deadline:
            seen = holder
            time.sleep(0.05)
            continue
        os.close(fd)
        raise SessionBusy(
            f"session {path.name} is open in another clio process (pid {holder.split()[0] if holder else '?'}); "
            "close it there or start a new session with --new"
        )
    _write_holder(fd, brief)
    return fd


def _write_holder(fd: int, brief: bool) -> None:
    # the kernel drops a flock when its process dies, so a stale lock is simply taken over;
    # written before it is cut to length, so a reader never finds it empty while it is held
    mine = (f"{os.getpid()} {BRIEF}" if brief else str(os.getpid())).encode()
    os.pwrite(fd, mine, 0)
    os.ftruncate(fd, len(mine))


def unlock(fd: int) -> None:
    """Release a lock :func:`lock` took, and close its file."""
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
