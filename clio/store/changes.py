"""The sessions folder's change journal: which sessions clio wrote, so a reader need not look at
every one.

Every write of a session's ``session.json`` by clio (a new session, its meta after a turn, a
rebuilt one, a deletion) appends the session's id, one line, to ``<sessions>/.changes``
(:func:`note`, after the write). A reader that mirrors the sessions (the recall index) keeps
where it stopped reading (:class:`ChangeWatch`): then one ``stat`` of the folder and one of the
journal tell it nothing was written, or which few sessions to look at, instead of a ``stat`` of
every session's file (1,200 sessions: ~5 ms a search on a slow machine; docs/memory.md "The
freshness check reads a journal").

The journal is a hint, never the truth: a reader looks at every session anyway on its first
look, when the folder itself changed (a session added or removed by anything), when the journal
was replaced or cut, and at least every :data:`FULL_LOOK_S`, for whatever writes sessions without
noting it (a hand edit, an older clio). Its lines are untrusted like the folder: a name that is
not a plain entry of the folder is ignored. Pure I/O helpers, no imports from clio.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

JOURNAL = ".changes"  # a dot name: every listing of sessions skips it
ROTATE_BYTES = 1 << 16  # past this, the writer starts a fresh journal (readers then look at all)
FULL_LOOK_S = 60.0  # the longest a reader trusts the journal alone
READ_LIMIT = 1 << 20  # more unread journal than this: looking at every session is cheaper


def plain_name(name: str) -> bool:
    """Whether ``name`` could be an entry of the sessions folder that is a session: not empty,
    no ``/``, no leading dot (the journal, a session being deleted). The store asks it of every id
    it opens; the journal's reader of every line."""
    return bool(name) and not name.startswith(".") and "/" not in name


def note(root: Path, session_id: str) -> None:
    """Record that ``session_id``'s files in ``root`` changed; after the change, so a reader
    that reads the line finds the change. Best effort: a note that cannot be written (a full disk,
    another user's journal, something else in its place) leaves the change to the readers' next
    full look, at most :data:`FULL_LOOK_S` later (at once in a new process)."""
    line = f"{session_id}\n".encode()
    path = root / JOURNAL
    try:  # never a link, and never blocking on a fifo planted in its place
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    except OSError:
        return
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return
        os.write(fd, line)  # one short write in append mode: lines never interleave
        big = os.fstat(fd).st_size > ROTATE_BYTES
    except OSError:
        return
    finally:
        os.close(fd)
    if big:
        _rotate(path)


def _rotate(path: Path) -> None:
    """A fresh, empty journal in one rename: a reader sees another file (and the folder
    changed) and looks at every session once."""
    fresh = path.with_name(f"{JOURNAL}.{os.getpid()}.new")
    with contextlib.suppress(OSError):
        os.close(os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600))
        os.replace(fresh, path)


@dataclass
class _Mark:
    folder: int  # the sessions folder's mtime (ns): a session folder added, removed or renamed
    journal: int  # the journal's inode (0: none yet)
    offset: int  # how far it was read
    full_at: float  # monotonic time of the last full look


class ChangeWatch:
    """What changed in a sessions folder since the last look, as the journal tells it."""

    def __init__(self, full_look_s: float = FULL_LOOK_S) -> None:
        self.full_look_s = full_look_s
        self._mark: _Mark | None = None

    def forget(self) -> None:
        """Look at every session next time."""
        self._mark = None

    def begin_full(self, root: Path) -> object:
        """Taken just before a full look at ``root``: the state it starts from (the journal's end
        then, so anything noted during the look is read again next time); pass it to
        :meth:`full_done` once the look succeeded."""
        return self._now(root, time.monotonic())

    def full_done(self, started: object) -> None:
        self._mark = started if isinstance(started, _Mark) else None

    def changed(self, root: Path) -> set[str] | None:
        """The sessions the journal names since the last look (empty: nothing was written), or
        None when every session must be looked at (see the module docstring)."""
        mark = self._mark
        if mark is None or time.monotonic() - mark.full_at >= self.full_look_s:
            return None
        try:
            folder = os.stat(root).st_mtime_ns
        except OSError:
            return None
        if folder != mark.folder:
            return None
        try:
            st = os.stat(root / JOURNAL, follow_symlinks=False)
        except FileNotFoundError:
            return set() if mark.journal == 0 else None  # none written since the full look
        except OSError:
            return None
        if st.st_ino != mark.journal or st.st_size < mark.offset or not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size == mark.offset:
            return set()
        if st.st_size - mark.offset > READ_LIMIT:
            return None
        try:  # never a link, and never blocking on a fifo swapped in since the stat
            fd = os.open(root / JOURNAL, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            if os.fstat(fd).st_ino != mark.journal:  # replaced between the stat and the open
                return None
            data = os.pread(fd, st.st_size - mark.offset, mark.offset)
        except OSError:
            return None
        finally:
            os.close(fd)
        whole = data[: data.rfind(b"\n") + 1]  # a line still being written is read next time
        mark.offset += len(whole)
        names = set()
        for raw in whole.split(b"\n"):
            name = raw.decode("utf-8", "replace")
            if plain_name(name) and "\x00" not in name:
                names.add(name)  # anything else is no entry of the folder: ignored
        return names

    @staticmethod
    def _now(root: Path, at: float) -> _Mark | None:
        try:
            folder = os.stat(root).st_mtime_ns
        except OSError:
            return None
        try:
            st = os.stat(root / JOURNAL, follow_symlinks=False)
            journal, offset = (st.st_ino, st.st_size) if stat.S_ISREG(st.st_mode) else (-1, 0)
        except OSError:
            journal, offset = 0, 0
        return _Mark(folder, journal, offset, at)
