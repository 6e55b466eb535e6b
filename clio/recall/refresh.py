"""Keeping :class:`clio.recall.index.RecallIndex` in step with the session archives.

The JSON archives stay the source of truth; the index only mirrors them. Every search first
brings it up to date, touching only the sessions whose message count, ``updated`` time or name
changed (a grown session gets only its new messages); a cheap fingerprint of the session files
skips even that when nothing was written since the last refresh.
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
from clio.recall.query import document_text
from clio.recall.schema import remove_session, unindex

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

    def iter_messages(self, session_id: str) -> Iterator[Message]: ...


class RefreshSide:
    """Incremental indexing of the archives (a mixin: it uses the index's ``_conn``, ``_lock``,
    ``_guarded``, ``stats``, ``sessions`` and ``_seen``)."""

    _conn: sqlite3.Connection
    _lock: threading.RLock
    stats: Counter[str]
    sessions: SessionSource
    _seen: object  # fingerprint of the session files at the last refresh

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

    def _fingerprint(self) -> object:
        """A cheap summary of every ``<sessions dir>/<id>/session.json`` (rewritten, atomically,
        on every change of a session), or None when the source has no such folder."""
        root = getattr(self.sessions, "dir", None)
        if not isinstance(root, Path):
            return None
        marks = []
        try:
            with os.scandir(root) as entries:
                for e in entries:
                    with contextlib.suppress(OSError):
                        st = os.stat(f"{e.path}/session.json")  # not os.path.join: 1,000 sessions a message
                        marks.append((e.name, st.st_ino, st.st_mtime_ns, st.st_size))
        except OSError:
            return None
        return hash(tuple(sorted(marks)))

    def _refresh(self) -> dict[str, int]:
        seen = self._fingerprint()
        if seen is not None and seen == self._seen:
            self.stats["refreshes_skipped"] += 1
            return {}
        self.stats["refreshes"] += 1
        infos = list(self.sessions.list())
        state = self._state()
        live = {i.id for i in infos}
        gone = [sid for sid in state if sid not in live]
        todo = [
            i
            for i in infos
            if state.get(i.id, ("", -1.0, -1, -1))[:3] != (i.name, i.updated, i.message_count)
        ]
        done: Counter[str] = Counter()
        if not todo and not gone:
            self._seen = seen
            return {}
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            state = self._state()  # another process may have done part of the work meanwhile
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
                    continue
                pending += self._index_session(info, old, done)
                if pending >= BATCH_MESSAGES:
                    conn.execute("COMMIT")
                    conn.execute("BEGIN IMMEDIATE")
                    pending = 0
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
        self.stats.update(done)
        self._seen = seen
        return dict(done)

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
            row = conn.execute("SELECT max(id) FROM msgs WHERE session_id = ?", (info.id,)).fetchone()
            if row and row[0] is not None:
                first_id = int(row[0])  # its next-neighbour context changes
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
        if rows:
            if first_id is not None:
                unindex(self._conn, "id = ?", first_id)
            else:
                first_id = 0  # a new or fully reindexed session: all its rows are new
            conn.executemany("INSERT INTO msgs(session_id, seq, role, ts, body) VALUES (?, ?, ?, ?, ?)", rows)
            conn.execute(
                "INSERT INTO docs(rowid, body, ctx) SELECT id, body, ctx FROM docview "
                "WHERE session_id = ? AND id >= ?",
                (info.id, first_id),
            )
        done["messages_indexed"] += len(rows)
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
        return len(rows)
