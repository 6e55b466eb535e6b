"""The ``vecs`` table of the recall index: its schema and keeping it filled (the vector side's
table on disk; :mod:`clio.recall.vectors` holds the cached matrix and the scan).

``vecs(id -> float16 blob)`` holds one unit vector per ``msgs`` row (same id); the model's name
and the storage format sit in ``meta`` under ``vec_model`` and a different value empties the
table. Rows leave with their message through a trigger, so every path that removes a message
(a deleted session, a reindexed one, a rebuild) drops its vector too, and a counter in ``meta``
(``vec_deletes``) tells the in-memory copy to reload. The table is made the first time vectors
are wanted, so a lexical-only index never carries it and an index without it (older, or
deleted) simply fills it again: it is derived data.

:meth:`VectorTable.sync` embeds the messages that have no vector yet, oldest first, a batch at
a time, committing each batch; with a time budget it stops between batches and the next call
goes on (search uses what is there).
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, Any

from clio.recall import ivf
from clio.recall.schema import immediate

if TYPE_CHECKING:
    from clio.recall.embedder import Embedder

EMBED_CHARS = 2_000  # text beyond this is past the model's token window anyway
SYNC_BATCH = 128  # messages embedded (and committed) together
STORE_FORMAT = "f16"  # on disk: half the bytes of float32, cosines equal to ~1e-3

_VEC_SCHEMA = """
CREATE TABLE IF NOT EXISTS vecs(id INTEGER PRIMARY KEY, v BLOB NOT NULL);
INSERT OR IGNORE INTO meta VALUES ('vec_deletes', '0');
INSERT OR IGNORE INTO meta VALUES ('vec_inserts', '0');
CREATE TRIGGER IF NOT EXISTS vecs_new AFTER INSERT ON vecs BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vec_inserts'; END;
CREATE TRIGGER IF NOT EXISTS msgs_vec_gone AFTER DELETE ON msgs BEGIN
    DELETE FROM vecs WHERE id = old.id; END;
CREATE TRIGGER IF NOT EXISTS vecs_gone AFTER DELETE ON vecs BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vec_deletes'; END;
"""


class VectorTable:
    """The ``vecs`` table of one recall index (a mixin of :class:`clio.recall.vectors.VectorIndex`:
    it uses its ``embedder``, ``_synced`` and ``forget``)."""

    embedder: Embedder
    _synced: tuple[Any, ...] | None

    def forget(self) -> None:
        raise NotImplementedError

    @property
    def model_key(self) -> str:
        """What ``meta.vec_model`` holds: vectors of another model or format are recomputed."""
        return f"{self.embedder.name}/{STORE_FORMAT}"

    def _counters(self, conn: sqlite3.Connection) -> tuple[int, int]:
        """(vectors inserted, vectors deleted) ever: kept by triggers, so no scan of the table."""
        got = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('vec_inserts', 'vec_deletes')"))
        return int(got.get("vec_inserts", 0)), int(got.get("vec_deletes", 0))

    def ensure(self, conn: sqlite3.Connection) -> None:
        """Create the tables (and triggers) if missing; empty them if another model filled them."""
        row = conn.execute("SELECT value FROM meta WHERE key = 'vec_model'").fetchone()
        names = {
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE name IN (?, ?, ?, ?)", ("vecs", *ivf.TABLES)
            )
        }
        if row is not None and row[0] == self.model_key and len(names) == 1 + len(ivf.TABLES):
            return
        with immediate(conn):
            for stmt in _statements(_VEC_SCHEMA + ivf.SCHEMA):
                conn.execute(stmt)
            row = conn.execute("SELECT value FROM meta WHERE key = 'vec_model'").fetchone()
            if row is None or row[0] != self.model_key:
                ivf.clear(conn)
                conn.execute("DELETE FROM vecs")
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('vec_model', ?)", (self.model_key,))
        self.forget()

    def pending(self, conn: sqlite3.Connection) -> int:
        """Messages still without a vector."""
        row = conn.execute(
            "SELECT count(*) FROM msgs m WHERE NOT EXISTS (SELECT 1 FROM vecs v WHERE v.id = m.id)"
        ).fetchone()
        return int(row[0])

    def sync(self, conn: sqlite3.Connection, budget_s: float | None = None) -> int:
        """Embed messages that have no vector yet; stop between batches past ``budget_s``.

        Returns how many vectors were written. The model runs outside any transaction; a
        vector is written only if its message still holds the text that was embedded.
        """
        import numpy as np

        self.ensure(conn)
        top = conn.execute("SELECT coalesce(max(id), -1) FROM msgs").fetchone()[0]
        deletes = self._counters(conn)[1]
        if self._synced == (top, deletes):
            return 0  # no message added or removed since everything had a vector
        after = -1
        if self._synced is not None and self._synced[1] == deletes:
            after = int(self._synced[0])  # only appended messages can lack a vector
        start = time.perf_counter()
        written = 0
        while True:
            rows = conn.execute(
                "SELECT d.id, substr(d.body, 1, ?), d.ctx FROM docview d WHERE d.id > ? AND NOT EXISTS "
                "(SELECT 1 FROM vecs v WHERE v.id = d.id) ORDER BY d.id LIMIT ?",
                (EMBED_CHARS, after, SYNC_BATCH),
            ).fetchall()
            if not rows:
                self._synced = (top, deletes)
                break
            after = int(rows[-1][0])
            # the message with the ends of its neighbours, as bm25's ctx column (on LoCoMo this
            # lifted the draft's MiniLM cosine-only R@10 from 0.327 to 0.491)
            vecs = self.embedder.embed([f"{r[1]}\n{r[2]}" for r in rows]).astype(np.float16)
            with immediate(conn):
                for (mid, text, _ctx), vec in zip(rows, vecs, strict=True):
                    cur = conn.execute(
                        "INSERT OR IGNORE INTO vecs(id, v) SELECT id, ? FROM msgs "
                        "WHERE id = ? AND substr(body, 1, ?) = ?",
                        (vec.tobytes(), mid, EMBED_CHARS, text),
                    )
                    written += max(cur.rowcount, 0)
            if budget_s is not None and time.perf_counter() - start >= budget_s:
                break
        return written


def _statements(script: str) -> list[str]:
    """Split ``_VEC_SCHEMA`` into statements (triggers hold inner semicolons)."""
    out: list[str] = []
    buf = ""
    for line in script.strip().splitlines():
        buf += line + "\n"
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    return out
