"""The cross-session recall index: a derived SQLite FTS5 index over every session's archive.

The JSON archives stay the source of truth. ``.clio/recall.sqlite`` only mirrors them:
a ``sessions`` table remembers how much of each session was indexed, and every search
first brings the index up to date, touching only the sessions whose message count,
``updated`` time or name changed (a grown session gets only its new messages). A
missing, damaged or older-schema index file is deleted and rebuilt, never trusted and
never fatal. ``RecallIndex(None, sessions)`` keeps the index in memory (incognito).

Layout: ``msgs`` holds one row per indexed message (its clipped text in ``body``); the
contentless FTS5 table ``docs`` indexes what the ``docview`` view gives for each message:
its ``body`` and, at half weight, its ``ctx``: the end of the previous and the start of
the next message of the same session (an answer is often worded only in the message that
asked for it). Rows leave the index through FTS5's 'delete' command, fed from the same
view, so the text is stored once and ranking never reads it.

Ranking is FTS5's bm25 with the porter stemmer; queries are built from the user's words
by :mod:`clio.recall.query`, never passed through as syntax. The most common query words
are dropped when together they would make bm25 score too many rows (they weigh least); when
every word is that common, the newest rows holding all of them (else any) are returned
unscored: bm25 would read each word's whole posting list. No query reads much more than
``postings_budget`` postings.

Hybrid retrieval: when the embedding model loads (:mod:`clio.recall.embedder`, lazily, at
the first search), every message also gets a vector (:mod:`clio.recall.vectors`, table
``vecs`` in the same file) and a search fuses the bm25 ranking with the cosine ranking by
reciprocal rank fusion. Without the model the index stays lexical and says why, once.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from clio.messages import Message, meta
from clio.recall.hybrid import AUTO, SemanticSide, fuse_rows, run_beside
from clio.recall.lexical import LexicalSide
from clio.recall.query import (
    POSTINGS_BUDGET,
    RECALL_HEADER_RE,
    RRF_K,
    SYNC_BUDGET_S,
    VECTOR_WEIGHT,
    document_text,
    query_terms,
    shape_results,
)
from clio.recall.refine import refine_rows
from clio.recall.vectors import VectorIndex
from clio.store.atomic import FileLock

if TYPE_CHECKING:
    from clio.recall.embedder import Embedder

SCHEMA_VERSION = "5"
ECHO_SCHEMA = "4"  # the same tables, but recall results were indexed as new evidence (echoes)
CONTEXT_CHARS = 200  # how much of each neighbour goes into a message's context column
BATCH_MESSAGES = 5_000  # commit at least this often during a large (re)build

_SCHEMA = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sessions(
    session_id TEXT PRIMARY KEY, name TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL,
    message_count INTEGER NOT NULL, indexed_count INTEGER NOT NULL, indexed_at REAL NOT NULL);
CREATE TABLE msgs(
    id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT NULL,
    ts REAL NOT NULL, body TEXT NOT NULL);
CREATE INDEX msgs_session ON msgs(session_id, id);
CREATE VIEW docview AS SELECT m.id AS id, m.session_id AS session_id, m.body AS body,
    coalesce(substr((SELECT p.body FROM msgs p WHERE p.session_id = m.session_id AND p.id < m.id
                     ORDER BY p.id DESC LIMIT 1), -{CONTEXT_CHARS}), '')
    || char(10) ||
    coalesce(substr((SELECT n.body FROM msgs n WHERE n.session_id = m.session_id AND n.id > m.id
                     ORDER BY n.id LIMIT 1), 1, {CONTEXT_CHARS}), '') AS ctx
    FROM msgs m;
CREATE VIRTUAL TABLE docs USING fts5(
    body, ctx, content='', tokenize='porter unicode61');
INSERT INTO docs(docs, rank) VALUES ('rank', 'bm25(1.0, 0.5)');
INSERT INTO meta VALUES ('schema', '{SCHEMA_VERSION}');
"""


def _unindex(conn: sqlite3.Connection, where: str, arg: Any) -> None:
    """Take rows out of the FTS index, giving it the values it indexed (contentless table)."""
    conn.execute(
        f"INSERT INTO docs(docs, rowid, body, ctx) SELECT 'delete', id, body, ctx FROM docview WHERE {where}",
        (arg,),
    )


def _remove_session(conn: sqlite3.Connection, sid: str) -> None:
    """A session out of the index: its FTS rows, its messages (their vectors by trigger), its row."""
    _unindex(conn, "session_id = ?", sid)
    conn.execute("DELETE FROM msgs WHERE session_id = ?", (sid,))
    conn.execute("DELETE FROM sessions WHERE session_id = ?", (sid,))


def _drop_echoes(conn: sqlite3.Connection) -> None:
    """Repair an index of the echo schema in place: every session holding an indexed recall result
    is taken out (its FTS rows through the same view they were indexed from, its vectors by the
    trigger) and forgotten, so the next refresh indexes it again from its archive without the
    echoes; the other sessions and their vectors stay as they are."""
    rows = conn.execute("SELECT DISTINCT session_id, body FROM msgs WHERE role = 'tool'").fetchall()
    sessions = sorted({sid for sid, body in rows if RECALL_HEADER_RE.match(body)})
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sid in sessions:
            _remove_session(conn, sid)
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_VERSION,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


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


def _remove_db_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            Path(str(path) + suffix).unlink()


class RecallIndex(LexicalSide, SemanticSide):
    """Search every archived message of every session, ranked by bm25."""

    def __init__(
        self,
        db_path: Path | None,
        sessions: SessionSource,
        *,
        postings_budget: int = POSTINGS_BUDGET,
        embedder: Embedder | str | None = AUTO,
        sync_budget_s: float | None = SYNC_BUDGET_S,
    ) -> None:
        """``embedder``: an Embedder, None (lexical only) or AUTO (the shared one, loaded at the
        first search, never here). ``sync_budget_s``: time one search may spend embedding
        messages that have no vector yet (None: all of them)."""
        self.db_path = Path(db_path) if db_path is not None else None
        self.sessions = sessions
        self.postings_budget = postings_budget
        self._embedder = embedder
        self._vectors: VectorIndex | None = None
        self._note: str | None = None  # why search is lexical only, until taken
        self.sync_budget_s = sync_budget_s
        self.parallel = True  # bm25 and the cosine scan at once (benches compare with False)
        self.stats: Counter[str] = Counter()  # what the index did: for tests and benches
        self._lock = threading.RLock()
        self._seen: object = None  # fingerprint of the session files at the last refresh
        self._conn = self._open()

    # -- opening and rebuilding ----------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        target = ":memory:" if self.db_path is None else str(self.db_path)
        conn = sqlite3.connect(target, timeout=60.0, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 60000")
        if self.db_path is not None:
            conn.execute("PRAGMA journal_mode = WAL")
        return conn

    @staticmethod
    def _check(conn: sqlite3.Connection) -> bool:
        """True when the file holds the current schema, False when it is empty; raises if not ours."""
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        if not names:
            return False
        if not {"meta", "sessions", "msgs", "docview", "docs"} <= names:
            raise sqlite3.DatabaseError("unexpected tables")
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is not None and row[0] == ECHO_SCHEMA:
            _drop_echoes(conn)
            row = (SCHEMA_VERSION,)
        if row is None or row[0] != SCHEMA_VERSION:
            raise sqlite3.DatabaseError("schema version mismatch")
        conn.execute("SELECT count(*) FROM docs WHERE docs MATCH '\"x\"'").fetchone()
        conn.execute("SELECT count(*) FROM msgs").fetchone()
        return True

    def _ready(self, conn: sqlite3.Connection, create: bool) -> sqlite3.Connection:
        if create:
            conn.executescript(f"BEGIN; {_SCHEMA} COMMIT;")
        return conn

    def _open(self) -> sqlite3.Connection:
        if self.db_path is None:
            return self._ready(self._connect(), True)
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(self.db_path):  # one process at a time decides to create or rebuild
            found: sqlite3.Connection | None = None
            try:
                found = self._connect()
                return self._ready(found, not self._check(found))
            except sqlite3.DatabaseError:
                if found is not None:
                    found.close()
            # damaged or from another schema: it is derived data, so start over
            self.stats["rebuilds"] += 1
            _remove_db_files(self.db_path)
            return self._ready(self._connect(), True)

    def rebuild(self) -> None:
        """Drop the index and start from nothing (the next refresh indexes everything)."""
        with self._lock:
            self._seen = None
            self._conn.close()
            if self.db_path is not None:
                with FileLock(self.db_path):
                    _remove_db_files(self.db_path)
            self._conn = self._open()
            if self._vectors is not None:
                self._vectors.forget()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _guarded(self, fn: Any, *args: Any) -> Any:
        """Run ``fn``; if the file turns out damaged, rebuild once from the archives and retry."""
        try:
            return fn(*args)
        except sqlite3.DatabaseError:
            self.stats["rebuilds"] += 1
            self.rebuild()
            self._refresh()
            return fn(*args)

    # -- keeping up with the archives ------------------------------------------------------------
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
                        st = os.stat(os.path.join(e.path, "session.json"))
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
                    _remove_session(self._conn, sid)
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
                _remove_session(self._conn, info.id)
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
                _unindex(self._conn, "id = ?", first_id)
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

    # -- searching -------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        max_sessions: int = 5,
        max_results: int = 10,
        exclude_session: str | None = None,
        *,
        refresh: bool = True,
        mode: Literal["hybrid", "lexical", "semantic"] = "hybrid",
        skip: Mapping[str, Collection[int]] | None = None,
        with_text: bool = False,
        refine: bool = True,
    ) -> list[dict[str, Any]]:
        """The best-matching archived messages for ``query`` (plain words, any characters).

        Results come from at most ``max_sessions`` sessions (the best-ranked ones), best first:
        {session_id, session_name, date 'YYYY-MM-DD HH:MM', role, seq, excerpt, score}. The
        score is bm25's (lexical) or, when vectors take part, the fused RRF score, raised by
        the stages of :mod:`clio.recall.refine` (``refine=False``: the fused ranking alone).
        ``skip`` leaves out messages by session and sequence number: those a request already
        carries (the running session's window), so only what left it can come back (neighbour
        expansion included). ``with_text``: each result also carries the message's indexed text.
        """
        terms = query_terms(query)
        if not terms or max_sessions < 1 or max_results < 1:
            return []
        skipped = {(sid, int(seq)) for sid, seqs in (skip or {}).items() for seq in seqs}
        limit = max(max_results * 20, 200) + len(skipped)
        with self._lock:
            if refresh:
                self.refresh()
            scan = (
                None
                if mode == "lexical"
                else self._guarded(self._prepare_scan, query, exclude_session, limit)
            )
            lexical: list[tuple[Any, ...]] = []
            near: list[int] = []
            if mode == "semantic":
                near = scan() if scan is not None else []
            elif scan is not None and self.parallel:  # the cosine scan runs beside bm25
                near, lexical = run_beside(scan, lambda: self._lexical(terms, exclude_session, limit))
            else:
                lexical = self._lexical(terms, exclude_session, limit)
                near = scan() if scan is not None else []
            fused = fuse_rows(self._conn, lexical, near, RRF_K, VECTOR_WEIGHT) if near else lexical

            def keep(sid: str, seq: int) -> bool:
                return sid != exclude_session and (sid, int(seq)) not in skipped

            rows = refine_rows(self._conn, query, fused, keep, time.time()) if refine else [r[1:] for r in fused]
            if skipped:
                rows = [r for r in rows if (r[0], r[2]) not in skipped]
            names = dict(self._conn.execute("SELECT session_id, name FROM sessions").fetchall())
        return shape_results(rows, names, terms, max_sessions, max_results, with_text)

    def search_match(
        self,
        match: str,
        terms: list[str],
        max_sessions: int = 5,
        max_results: int = 10,
        exclude_session: str | None = None,
        *,
        refresh: bool = True,
    ) -> list[dict[str, Any]]:
        """Lexical search with a ready FTS5 expression (trusted callers only: benches)."""
        if max_sessions < 1 or max_results < 1 or not match:
            return []
        limit = max(max_results * 20, 200)
        with self._lock:
            if refresh:
                self.refresh()
            rows: list[tuple[Any, ...]] = self._guarded(self._query, match, exclude_session, limit)
            names = dict(self._conn.execute("SELECT session_id, name FROM sessions").fetchall())
        return shape_results([r[1:] for r in rows], names, terms, max_sessions, max_results)

    def counts(self) -> dict[str, int]:
        """Rows in the index: sessions and messages."""
        with self._lock:
            s = self._conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
            m = self._conn.execute("SELECT count(*) FROM msgs").fetchone()[0]
        return {"sessions": int(s), "messages": int(m)}
