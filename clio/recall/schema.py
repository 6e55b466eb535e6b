"""The recall index's SQLite file: its schema, opening it, and its repair.

Layout: ``msgs`` holds one row per indexed message (its clipped text in ``body``); the
contentless FTS5 table ``docs`` indexes what the ``docview`` view gives for each message:
its ``body`` and, at half weight, its ``ctx``: the end of the previous and the start of
the next message of the same session (an answer is often worded only in the message that
asked for it). Rows leave the index through FTS5's 'delete' command, fed from the same
view, so the text is stored once and ranking never reads it. A ``sessions`` table remembers
how much of each session was indexed (:mod:`clio.recall.refresh`).

A missing, damaged or older-schema file is deleted and rebuilt from the archives, never
trusted and never fatal. ``db_path`` None keeps the index in memory (incognito).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clio.store.atomic import FileLock

SCHEMA_VERSION = "6"  # 6: tool calls indexed as words (5 held their JSON; 4 also held echoes)
CONTEXT_CHARS = 200  # how much of each neighbour goes into a message's context column

# what each session file was when the refresh read it (clio.recall.refresh); "IF NOT EXISTS": a
# refresh makes it in an index older than it, so that index is not rebuilt for it
FILES_TABLE = "CREATE TABLE IF NOT EXISTS files(session_id TEXT PRIMARY KEY, mark TEXT NOT NULL)"

_SCHEMA = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sessions(
    session_id TEXT PRIMARY KEY, name TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL,
    message_count INTEGER NOT NULL, indexed_count INTEGER NOT NULL, indexed_at REAL NOT NULL);
CREATE TABLE msgs(
    id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT NULL,
    ts REAL NOT NULL, body TEXT NOT NULL);
CREATE INDEX msgs_session ON msgs(session_id, id);
{FILES_TABLE};
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
INSERT INTO meta VALUES ('made', lower(hex(randomblob(8))));
"""


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction on the index file: committed when the block ends, rolled back if
    it raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def unindex(conn: sqlite3.Connection, where: str, arg: Any) -> None:
    """Take rows out of the FTS index, giving it the values it indexed (contentless table)."""
    conn.execute(
        f"INSERT INTO docs(docs, rowid, body, ctx) SELECT 'delete', id, body, ctx FROM docview WHERE {where}",
        (arg,),
    )


def remove_session(conn: sqlite3.Connection, sid: str) -> None:
    """A session out of the index: its FTS rows, its messages and digests (their vectors by
    trigger), its row, how far its digests reach and the mark of the file it was read from
    (inside a refresh, which makes the ``files`` table in an index older than it)."""
    unindex(conn, "session_id = ?", sid)
    removed = conn.execute("DELETE FROM msgs WHERE session_id = ?", (sid,)).rowcount
    conn.execute("DELETE FROM sessions WHERE session_id = ?", (sid,))
    conn.execute("DELETE FROM files WHERE session_id = ?", (sid,))
    conn.execute("DELETE FROM meta WHERE key = ?", (digests_key(sid),))
    note_removed(conn, removed)


def remove_row(conn: sqlite3.Connection, session_id: str, row_id: int) -> None:
    """One row out of the index (a digest the user dropped): its FTS entry, and those of its
    neighbours, whose context it was, written again without it; its vector goes by trigger."""
    before, after = conn.execute(
        "SELECT (SELECT max(id) FROM msgs WHERE session_id = ?1 AND id < ?2),"
        " (SELECT min(id) FROM msgs WHERE session_id = ?1 AND id > ?2)",
        (session_id, row_id),
    ).fetchone()
    near = [i for i in (before, after) if i is not None]
    for i in [*near, row_id]:
        unindex(conn, "id = ?", i)
    conn.execute("DELETE FROM msgs WHERE id = ?", (row_id,))
    for i in near:
        conn.execute("INSERT INTO docs(rowid, body, ctx) SELECT id, body, ctx FROM docview WHERE id = ?", (i,))
    note_removed(conn, 1)


def digests_key(sid: str) -> str:
    """The ``meta`` key of how far a session's indexed digests reach (clio.recall.refresh)."""
    return f"digests:{sid}"


def note_removed(conn: sqlite3.Connection, count: int) -> None:
    """Count ``count`` messages taken out of the index in ``meta`` (``removed``): a reader that
    keeps row ids (the encoder helper's scan) tells from it, without counting the rows, that ids
    it holds may have gone and come back as other messages."""
    if count > 0:
        conn.execute(
            "INSERT INTO meta VALUES ('removed', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + excluded.value",
            (count,),
        )


def marks(conn: sqlite3.Connection) -> tuple[str, int]:
    """Which index file this is (``made``: a random mark written when it was created, so a rebuilt
    index is told from the one before whatever its size) and how many messages were ever taken
    out of it (:func:`note_removed`)."""
    try:
        found = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('made', 'removed')").fetchall())
    except sqlite3.OperationalError:  # no meta table: an index that never removed anything
        return "", 0
    return str(found.get("made", "")), int(found.get("removed", 0))


def remove_db_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            Path(str(path) + suffix).unlink()


def _connect(db_path: Path | None) -> sqlite3.Connection:
    target = ":memory:" if db_path is None else str(db_path)
    conn = sqlite3.connect(target, timeout=60.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 60000")
    if db_path is not None:
        conn.execute("PRAGMA journal_mode = WAL")
    return conn


def _check(conn: sqlite3.Connection) -> bool:
    """True when the file holds the current schema, False when it is empty; raises if not ours."""
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    if not names:
        return False
    if not {"meta", "sessions", "msgs", "docview", "docs"} <= names:
        raise sqlite3.DatabaseError("unexpected tables")
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if row is None or row[0] != SCHEMA_VERSION:
        raise sqlite3.DatabaseError("schema version mismatch")
    conn.execute("SELECT count(*) FROM docs WHERE docs MATCH '\"x\"'").fetchone()
    conn.execute("SELECT max(id) FROM msgs").fetchone()  # not count(*): a walk of every row (45 ms at 200k)
    return True


def _ready(conn: sqlite3.Connection, create: bool) -> sqlite3.Connection:
    if create:
        conn.executescript(f"BEGIN; {_SCHEMA} COMMIT;")
    return conn


def open_index(db_path: Path | None, stats: Counter[str]) -> sqlite3.Connection:
    """A connection to the index file (made, checked, repaired or rebuilt: ``stats["rebuilds"]``
    counts the rebuilds), or to a new in-memory index when ``db_path`` is None."""
    if db_path is None:
        return _ready(_connect(None), True)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(db_path):  # one process at a time decides to create or rebuild
        found: sqlite3.Connection | None = None
        try:
            found = _connect(db_path)
            return _ready(found, not _check(found))
        except sqlite3.DatabaseError:
            if found is not None:
                found.close()
        # damaged or from another schema: it is derived data, so start over
        stats["rebuilds"] += 1
        remove_db_files(db_path)
        return _ready(_connect(db_path), True)
