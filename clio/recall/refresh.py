"""Keeping :class:`clio.recall.index.RecallIndex` in step with the session archives.

The JSON archives stay the source of truth; the index only mirrors them. Every search first
brings it up to date, touching only the sessions whose message count, ``updated`` time or name
changed (a grown session gets only its new messages). Which those are is told by each session's
``session.json`` (rewritten, atomically, on every change): the index keeps what the file was
(inode, mtime, size) when it read it (table ``files``), so a refresh reads only the sessions
whose file is another now, in the next process too; within one process, a fingerprint of all
the files skips even that when nothing was written since the last refresh. Between two looks at
every file, the sessions folder's change journal (:mod:`clio.store.changes`) names the few
sessions clio wrote, so a refresh looks at those alone.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from clio.messages import Message, meta
from clio.recall.query import DIGEST_FILES_ROLE, DIGEST_ROLE, digest_seq, document_text
from clio.recall.schema import FILES_TABLE, digests_key, immediate, remove_row, remove_session, unindex
from clio.store.changes import ChangeWatch

BATCH_MESSAGES = 5_000  # commit at least this often during a large (re)build


class SessionInfoLike(Protocol):
    id: str
    name: str
    created: float
    updated: float
    message_count: int


class SessionSource(Protocol):
    """What the index needs from :class:`clio.store.sessions.SessionStore`."""

    def list(self) -> Iterable[SessionInfoLike]: ...

    def info(self, session_id: str) -> SessionInfoLike: ...  # raises a LookupError when it is gone

    def iter_messages(self, session_id: str) -> Iterator[Message]: ...


def _file_mark(folder: str) -> tuple[int, int, int] | None:
    """What the session folder's ``session.json`` is now (inode, mtime, size), None without one."""
    try:
        st = os.stat(f"{folder}/session.json")  # not os.path.join: 1,000 sessions a message
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


class RefreshSide:
    """Incremental indexing of the archives (a mixin: it uses the index's ``_conn``, ``_lock``,
    ``_guarded``, ``stats``, ``sessions`` and ``_seen``)."""

    _conn: sqlite3.Connection
    _lock: threading.RLock
    stats: Counter[str]
    sessions: SessionSource
    _seen: object  # fingerprint of the session files at the last refresh
    _watch: ChangeWatch  # the sessions folder's change journal, as far as this index read it
    _looked: tuple[dict[str, tuple[int, int, int]], list[str]] | None  # the files at the last look
    _hashed: tuple[object, int] | None  # the last look and its fingerprint

    def _guarded(self, fn: Any, *args: Any) -> Any:
        raise NotImplementedError

    def refresh(self) -> dict[str, int]:
        """Bring the index up to date with the session store; returns what changed."""
        with self._lock:
            result: dict[str, int] = self._guarded(self._refresh)
            return result

    def _state(self) -> dict[str, tuple[str, float, int, int]]:
        rows = self._conn.execute(
            "SELECT session_id, name, updated, message_count, indexed_count FROM sessions"
        )
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def _marks(self) -> tuple[dict[str, tuple[int, int, int]], list[str]] | None:
        """What each session folder's ``session.json`` is now (inode, mtime, size: it is rewritten,
        atomically, on every change of the session), and the folders without one (an archive whose
        first turn has not ended, or whose ``session.json`` was lost); None when the source has no
        such folder (tests' in-memory sources). Between two full looks only the sessions the change
        journal names are looked at again (:class:`~clio.store.changes.ChangeWatch`)."""
        root = getattr(self.sessions, "dir", None)
        if not isinstance(root, Path):
            return None
        looked = self._looked
        named = self._watch.changed(root) if looked is not None else None
        if looked is not None and named is not None:
            self.stats["journal_looks"] += 1
            if named:
                looked = self._look_again(root, looked, named)
                self._looked = looked
            return looked
        started = self._watch.begin_full(root)
        self.stats["full_looks"] += 1
        found: dict[str, tuple[int, int, int]] = {}
        bare: list[str] = []
        try:
            with os.scandir(root) as entries:
                for e in entries:
                    if e.name.startswith("."):
                        continue  # a session being deleted, or the change journal
                    mark = _file_mark(e.path)
                    if mark is not None:
                        found[e.name] = mark
                    elif e.is_dir():
                        bare.append(e.name)
        except OSError:
            self._looked = None
            return None
        self._looked = found, sorted(bare)
        self._watch.full_done(started)
        return self._looked

    @staticmethod
    def _look_again(
        root: Path, looked: tuple[dict[str, tuple[int, int, int]], list[str]], names: set[str]
    ) -> tuple[dict[str, tuple[int, int, int]], list[str]]:
        """The last look with the sessions in ``names`` looked at again (as the full look would)."""
        found, bare = dict(looked[0]), set(looked[1])
        for name in names:
            found.pop(name, None)
            bare.discard(name)
            mark = _file_mark(f"{root}/{name}")
            if mark is not None:
                found[name] = mark
            elif os.path.isdir(f"{root}/{name}"):
                bare.add(name)
        return found, sorted(bare)

    def _infos(
        self, now: tuple[dict[str, tuple[int, int, int]], list[str]] | None, state: dict[str, Any]
    ) -> tuple[list[Any], set[str], dict[str, str]]:
        """The infos of the sessions that may have changed since they were indexed, every live
        session's id, and the marks to store. With marks, a session whose ``session.json`` is the
        one it was indexed from is not read at all (a project's thousand sessions cost a thousand
        stats a run, not a thousand reads and name clean-ups); without, every session is listed."""
        if now is None:
            infos = list(self.sessions.list())
            return infos, {i.id for i in infos}, {}
        found, bare = now
        stored = self._stored_marks()
        infos, live, fresh = [], set(found), {}
        for sid, mark in sorted(found.items()):
            text = " ".join(map(str, mark))
            if sid in state and stored.get(sid) == text:
                continue  # unchanged since it was indexed
            try:
                infos.append(self.sessions.info(sid))
                fresh[sid] = text
            except LookupError:
                live.discard(sid)
        for sid in bare:
            try:
                infos.append(self.sessions.info(sid))
                live.add(sid)
            except LookupError:
                continue
        return infos, live, fresh

    def _fingerprint(self, now: tuple[dict[str, tuple[int, int, int]], list[str]] | None) -> object:
        """A hash of the files' marks; the last one again when the look is the same object (the
        journal named nothing)."""
        if now is None:
            return None
        last = self._hashed
        if last is not None and last[0] is now:
            return last[1]
        seen = hash(tuple(sorted(now[0].items())) + tuple(now[1]))
        self._hashed = (now, seen)
        return seen

    def _stored_marks(self) -> dict[str, str]:
        try:
            return dict(self._conn.execute("SELECT session_id, mark FROM files").fetchall())
        except sqlite3.OperationalError:  # an index made before the marks: every session is read once
            return {}

    def _refresh(self) -> dict[str, int]:
        now = self._marks()
        seen = self._fingerprint(now)
        if seen is not None and seen == self._seen:
            self.stats["refreshes_skipped"] += 1
            return {}
        self.stats["refreshes"] += 1
        state = self._state()
        infos, live, fresh = self._infos(now, state)
        self.stats["sessions_read"] += len(infos)
        gone = [sid for sid in state if sid not in live]
        todo = [
            i
            for i in infos
            if state.get(i.id, ("", -1.0, -1, -1))[:3] != (i.name, i.updated, i.message_count) or self._digests_due(i)
        ]
        done: Counter[str] = Counter()
        if not todo and not gone and not fresh:
            self._seen = seen
            return {}
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            state = self._state()  # another process may have done part of the work meanwhile
            conn.execute(FILES_TABLE)
            for sid in gone:
                if sid in state:
                    remove_session(self._conn, sid)
                    done["sessions_removed"] += 1
            pending = 0
            # oldest first, so that row ids follow time (the common-words path returns the newest)
            for info in sorted(todo, key=lambda i: (i.updated, i.id)):
                old = state.get(info.id)
                if old is not None and old[1:3] == (info.updated, info.message_count):
                    if old[0] != info.name:
                        conn.execute(
                            "UPDATE sessions SET name = ? WHERE session_id = ?", (info.name, info.id)
                        )
                    pending += self._index_digests(info, done)  # a read-back wrote one since
                    continue
                pending += self._index_session(info, old, done)
                if pending >= BATCH_MESSAGES:
                    conn.execute("COMMIT")
                    conn.execute("BEGIN IMMEDIATE")
                    pending = 0
            if fresh:  # what each session file was when read: the next run reads only changed ones
                conn.executemany("INSERT OR REPLACE INTO files VALUES (?, ?)", fresh.items())
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
        self.stats.update(done)
        self._seen = seen
        return dict(done)

    def drop_digest(self, session_id: str, through: int) -> bool:
        """Take the session's digest that covers its first ``through`` messages out of the index
        (``/session digests drop``: the user removed it from ``session.json`` first, so neither a
        refresh nor a rebuild brings it back). False when the index holds no such digest (a
        damaged index is rebuilt from the archives, which no longer hold it)."""
        with self._lock:
            return bool(self._guarded(self._drop_digest, session_id, through))

    def _drop_digest(self, session_id: str, through: int) -> bool:
        with immediate(self._conn):  # a digest's seq is negative: never a message's (digest_seq)
            row = self._conn.execute(
                "SELECT id FROM msgs WHERE session_id = ? AND seq = ?", (session_id, digest_seq(through))
            ).fetchone()
            if row is not None:
                remove_row(self._conn, session_id, row[0])
        return row is not None

    def _index_session(
        self, info: SessionInfoLike, old: tuple[str, float, int, int] | None, done: Counter[str]
    ) -> int:
        """(Re)index one session; only the new tail when it merely grew. Returns messages written."""
        conn = self._conn
        skip = 0
        first_id: int | None = None  # the first msgs row whose FTS entry is (re)written
        if old is not None and info.message_count > old[2] and info.updated >= old[1]:
            skip = old[3]  # append-only archive: index what came after the last indexed message
            done["sessions_appended"] += 1
            first_id = self._last_id(info.id)  # its next-neighbour context changes
        else:
            if old is not None:
                remove_session(self._conn, info.id)
            done["sessions_indexed"] += 1
        count = 0
        rows: list[tuple[str, int, str, float, str]] = []
        for count, msg in enumerate(self.sessions.iter_messages(info.id), start=1):
            if count <= skip:
                continue
            body = document_text(msg)
            if body is None:
                continue
            m = meta(msg)
            seq, ts = m.get("seq"), m.get("ts")
            rows.append(
                (
                    info.id,
                    int(seq) if isinstance(seq, (int, float)) else count - 1,
                    str(msg.get("role")),
                    float(ts) if isinstance(ts, (int, float)) else info.updated,
                    body,
                )
            )
        digests = self._digest_rows(info)  # those not indexed yet, after its messages: one pass
        if rows or digests:
            self._append(info.id, rows + digests, first_id)  # None: a new or fully reindexed session
        done["messages_indexed"] += len(rows)
        self._note_digests(info, len(digests), done)
        conn.execute(
            "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                info.id,
                info.name,
                info.created,
                info.updated,
                info.message_count,
                max(count, skip),
                time.time(),
            ),
        )
        return len(rows) + len(digests)

    def _last_id(self, session_id: str) -> int | None:
        """The row id of the session's last indexed row (None when it has none)."""
        row = self._conn.execute("SELECT max(id) FROM msgs WHERE session_id = ?", (session_id,)).fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def _append(self, session_id: str, rows: list[tuple[str, int, str, float, str]], after_id: int | None) -> None:
        """``rows`` written after the session's indexed rows, into the FTS index too; the row
        ``after_id`` (its last before them, None when they are its first) is indexed again, since
        its next-neighbour context is now the first of them."""
        if after_id is not None:
            unindex(self._conn, "id = ?", after_id)
        self._conn.executemany("INSERT INTO msgs(session_id, seq, role, ts, body) VALUES (?, ?, ?, ?, ?)", rows)
        self._conn.execute(
            "INSERT INTO docs(rowid, body, ctx) SELECT id, body, ctx FROM docview WHERE session_id = ? AND id >= ?",
            (session_id, after_id or 0),
        )

    def _indexed_through(self, session_id: str) -> int:
        """How far the session's indexed digests reach: the ``through`` of its newest (``meta``,
        :func:`digests_key`: one lookup, not a walk of a long session's rows); 0 for none."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (digests_key(session_id),)).fetchone()
        return int(row[0]) if row else 0

    def _digests_due(self, info: SessionInfoLike) -> bool:
        """Whether the session has a digest newer than those the index holds (only a session with
        some is asked)."""
        digests = getattr(info, "digests", ())
        return bool(digests) and max(d.through for d in digests) > self._indexed_through(info.id)

    def _digest_rows(self, info: SessionInfoLike) -> list[tuple[str, int, str, float, str]]:
        """The session's digests newer than those indexed, as rows of their own (role
        :data:`DIGEST_ROLE`, or :data:`DIGEST_FILES_ROLE` for a tainted one; ``seq`` minus the
        message count it covers: never a message's, and the same for a digest whatever older ones
        ``session.json`` still keeps), oldest first."""
        digests = list(getattr(info, "digests", ()))
        held = self._indexed_through(info.id) if digests else 0
        new = sorted((d for d in digests if d.through > held), key=lambda d: d.through)
        return [
            (info.id, digest_seq(d.through), DIGEST_FILES_ROLE if d.tainted else DIGEST_ROLE, d.at or info.updated, d.text)
            for d in new
        ]

    def _note_digests(self, info: SessionInfoLike, added: int, done: Counter[str]) -> None:
        """How far the session's indexed digests now reach (``meta``), once ``added`` were written."""
        if added:
            through = max(d.through for d in getattr(info, "digests", ()))
            self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (digests_key(info.id), str(through)))
            done["digests_indexed"] += added

    def _index_digests(self, info: SessionInfoLike, done: Counter[str]) -> int:
        """A session whose messages are indexed as they are: its digests newer than those indexed,
        after its rows. Returns rows written."""
        rows = self._digest_rows(info)
        if rows:
            self._append(info.id, rows, self._last_id(info.id))
            self._note_digests(info, len(rows), done)
        return len(rows)
