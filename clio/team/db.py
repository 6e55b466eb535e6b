"""The connection to the shared PostgreSQL store: time boxes, faults, and the schema clio migrates.

psycopg (``pip install '.[team]'`` in clio's checkout) is imported here only, and only when a shared store is
configured. The connection is opened in a background thread as soon as the store is made, so a
slow or unreachable server never delays the prompt: a read waits at most ``wait`` seconds for it,
and every statement runs under ``statement_timeout``. A failure marks the store *down*; the next
try is after :data:`RETRY_AFTER` seconds (the callers work from the local copy meanwhile).

Schema (``clio_schema`` holds its version; :data:`MIGRATIONS` brings any older one up to date,
each step in one transaction under an advisory lock, so two clios starting at once migrate once):

- ``clio_entries`` (project, id) -> the entry as JSON, its type, its word set (dedup candidates,
  GIN), a ``tsvector`` of its text (full-text ranking, GIN), author, confirmed_by, origin, seq;
  ``emb vector(256)`` too where the server has pgvector.
- ``clio_notes`` (project, key) -> value, times, provenance, author.
- ``clio_applied`` (project, op id): every queued write applied once, never twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar
from urllib.parse import urlsplit

from clio import threads

T = TypeVar("T")

CONNECT_TIMEOUT = 3  # seconds (libpq's minimum is 2)
READ_WAIT = 1.5  # seconds a read waits for the connection before using the local copy
READ_MS = 1500  # statement_timeout of a read
WRITE_MS = 10000  # statement_timeout of a write transaction
RETRY_AFTER = 20.0  # seconds after a failure before the server is tried again
VECTOR_DIM = 256

MIGRATIONS: list[list[str]] = [
    [  # 1
        """CREATE TABLE IF NOT EXISTS clio_entries (
            project text NOT NULL, id text NOT NULL, type text NOT NULL, body jsonb NOT NULL,
            words text[] NOT NULL, nwords int NOT NULL, tsv tsvector NOT NULL,
            author text NOT NULL, confirmed_by text[] NOT NULL DEFAULT '{}', origin text NOT NULL,
            last_confirmed double precision NOT NULL, pinned boolean NOT NULL DEFAULT false,
            seq bigserial, PRIMARY KEY (project, id))""",
        "CREATE INDEX IF NOT EXISTS clio_entries_tsv ON clio_entries USING gin (tsv)",
        "CREATE INDEX IF NOT EXISTS clio_entries_words ON clio_entries USING gin (words)",
        "CREATE INDEX IF NOT EXISTS clio_entries_recent ON clio_entries (project, last_confirmed DESC)",
        """CREATE TABLE IF NOT EXISTS clio_notes (
            project text NOT NULL, key text NOT NULL, value text NOT NULL,
            created double precision NOT NULL, updated double precision NOT NULL,
            provenance jsonb, author text NOT NULL, PRIMARY KEY (project, key))""",
        """CREATE TABLE IF NOT EXISTS clio_applied (
            project text NOT NULL, op text NOT NULL, at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (project, op))""",
    ],
    [  # 2: pinned entries join every ranking; found without reading the table
        "CREATE INDEX IF NOT EXISTS clio_entries_pinned ON clio_entries (project) WHERE pinned",
    ],
]
VERSION = len(MIGRATIONS)
_LOCK_KEY = 0x636C696F  # "clio": the advisory lock of migrations


class Unreachable(RuntimeError):
    """The shared store cannot be used now (the message says why, in words for the user)."""


def describe(url: str) -> str:
    """host:port/database of a URL, never its user or password (for messages)."""
    try:
        u = urlsplit(url)
        return f"{u.hostname or 'localhost'}:{u.port or 5432}{u.path or '/'}"
    except ValueError:
        return "the configured server"


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    for marker in ("Connection refused", "timeout expired", "canceling statement due to statement timeout",
                   "does not exist", "password authentication failed", "could not translate host name"):
        if marker in text:
            return marker.lower()
    return text[:120] or type(exc).__name__


class Db:
    """One connection (used under a lock), opened in the background; ``down`` while it fails."""

    def __init__(self, url: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.url, self.where, self.clock = url, describe(url), clock
        self.has_vector = False
        self.down: str | None = None  # why the last try failed (None: up, or not tried yet)
        self._conn: Any = None
        self._lock = threading.RLock()
        self._retry_at = 0.0
        self._thread: threading.Thread | None = None
        self.on_connect: Callable[[], None] | None = None  # after each new connection (queue delivery)

    def connect_in_background(self) -> None:
        """Start connecting (and delivering, ``on_connect``) without holding anyone up."""
        self._thread = threads.start(self._connect_quietly, "clio-team-db")

    def _connect_quietly(self) -> None:
        try:
            self._connection()
        except Unreachable:
            pass

    def _connection(self) -> Any:
        with self._lock:
            if self._conn is not None and not self._conn.closed:
                return self._conn
            if self.down is not None and self.clock() < self._retry_at:
                raise Unreachable(self.down)
            import psycopg

            try:
                conn = psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT, application_name="clio")
            except psycopg.Error as exc:
                self._failed(exc)
            try:
                self._migrate(conn)
            except (psycopg.Error, Unreachable) as exc:
                conn.close()
                self._failed(exc)
            self._conn, self.down = conn, None
            if self.on_connect is not None:
                self.on_connect()
            return conn

    def _failed(self, exc: BaseException) -> NoReturn:
        self.down = _reason(exc)
        self._retry_at = self.clock() + RETRY_AFTER
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001 - a broken connection may fail to close
                pass
        self._conn = None
        raise Unreachable(self.down) from None

    def _migrate(self, conn: Any) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            conn.execute("CREATE TABLE IF NOT EXISTS clio_schema (version int NOT NULL)")
            row = conn.execute("SELECT max(version) FROM clio_schema").fetchone()
            have = row[0] or 0
            if have > VERSION:
                raise Unreachable(
                    f"the shared store was made by a newer clio (schema {have}, this one knows {VERSION})"
                )
            for number in range(have + 1, VERSION + 1):
                for sql in MIGRATIONS[number - 1]:
                    conn.execute(sql)
                conn.execute("INSERT INTO clio_schema VALUES (%s)", (number,))
            self.has_vector = self._vector(conn)

    @staticmethod
    def _vector(conn: Any) -> bool:
        """pgvector where the server has it: the ``emb`` column and its index (else clio scores)."""
        if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone() is None:
            return False
        with conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(f"ALTER TABLE clio_entries ADD COLUMN IF NOT EXISTS emb vector({VECTOR_DIM})")
            conn.execute(
                "CREATE INDEX IF NOT EXISTS clio_entries_emb ON clio_entries USING hnsw (emb vector_cosine_ops)"
            )
        return True

    def ready(self, wait: float = READ_WAIT) -> bool:
        """Whether the server answers now, waiting at most ``wait`` seconds for the first connection."""
        if self._thread is not None and self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(wait)
            if self._thread.is_alive():
                if self.down is None:
                    self.down = f"no answer within {wait:g} s"
                return False
        try:
            self._connection()
        except Unreachable:
            return False
        return True

    def run(self, work: Callable[[Any], T], *, timeout_ms: int = READ_MS, wait: float = READ_WAIT) -> T:
        """``work(connection)`` in one transaction under ``timeout_ms``; Unreachable on any failure
        of the server (the transaction is rolled back: nothing half-written)."""
        if not self.ready(wait):
            raise Unreachable(self.down or "not connected")
        import psycopg

        with self._lock:
            for attempt in (1, 2, 3):
                fresh = self._conn is None
                conn = self._connection()
                try:
                    with conn.transaction():
                        conn.execute(f"SET LOCAL statement_timeout = {int(timeout_ms)}")
                        return work(conn)
                except psycopg.errors.TransactionRollback:
                    if attempt < 3:  # a deadlock or serialization failure: the work is run again
                        continue
                    raise
                except psycopg.Error as exc:
                    if attempt == 1 and not fresh and conn.broken:
                        self._conn = None  # the server restarted since: one new connection
                        continue
                    if conn.closed or conn.broken or isinstance(exc, psycopg.OperationalError):
                        self._failed(exc)
                    raise
            raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
