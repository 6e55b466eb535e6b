"""Hybrid recall's glue: the vector side of :class:`clio.recall.index.RecallIndex`
(a mixin that loads the model lazily and says once why recall is lexical), the fusion of bm25
rows with cosine neighbours by reciprocal rank fusion, and running the cosine scan on a worker
thread beside bm25 (numpy's product and SQLite's search both release the GIL)."""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from clio.recall.embedder import rrf
from clio.threads import block_interrupts

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from clio.recall.embedder import Embedder
    from clio.recall.vectors import VectorIndex

T = TypeVar("T")

AUTO = "auto"  # RecallIndex's embedder argument: the shared model, loaded at the first search


def fuse_rows(
    conn: sqlite3.Connection,
    lexical: list[tuple[Any, ...]],
    near: Sequence[int],
    k: int,
    weight: float = 1.0,
    more: Sequence[tuple[Sequence[int], float]] = (),
) -> list[tuple[Any, ...]]:
    """bm25 rows (id, session_id, role, seq, ts, body, rank) and nearest message ids (and ``more``
    lists of them, each with its weight) -> rows of the same shape in reciprocal-rank-fusion
    order, the negated fused score as their rank."""
    by_id = {r[0]: tuple(r[1:6]) for r in lexical}
    lists = [list(near)] + [list(ids) for ids, _ in more]
    by_id.update(rows_by_id(conn, [i for ids in lists for i in ids if i not in by_id]))
    fused = rrf(
        [[str(r[0]) for r in lexical]] + [[str(i) for i in ids] for ids in lists],
        k,
        [1.0, weight] + [w for _, w in more],
    )
    order = sorted(fused.items(), key=lambda kv: -kv[1])
    return [(int(i), *by_id[int(i)], -score) for i, score in order if int(i) in by_id]


def rows_by_id(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    """Indexed messages by row id -> (session_id, role, seq, ts, body); ids not found are absent."""
    wanted = list(dict.fromkeys(ids))
    out: dict[int, tuple[Any, ...]] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for r in conn.execute(f"SELECT id, session_id, role, seq, ts, body FROM msgs WHERE id IN ({marks})", chunk):
            out[r[0]] = tuple(r[1:])
    return out


class SemanticSide:
    """The vector half of :class:`clio.recall.index.RecallIndex` (a mixin: it uses the
    index's ``_conn``, ``_lock``, ``_guarded`` and ``stats``)."""

    _embedder: Embedder | str | None
    _vectors: VectorIndex | None
    _note: str | None
    _conn: sqlite3.Connection
    _lock: threading.RLock
    stats: Counter[str]
    sync_budget_s: float | None

    def _guarded(self, fn: Any, *args: Any) -> Any:
        raise NotImplementedError

    def vector_index(self) -> VectorIndex | None:
        """The vector side, made at the first call (this loads the model); None when lexical."""
        if self._vectors is None and self._embedder is not None:
            embedder: Embedder | str | None = self._embedder
            if embedder == AUTO:
                from clio.recall.embedder import get_embedder, semantic_enabled, unavailable_reason

                embedder = get_embedder()
                if embedder is None and semantic_enabled():  # switched off by the user: nothing to say
                    self._note = unavailable_reason() or "semantic recall off"
            self._embedder = embedder
            if embedder is not None and not isinstance(embedder, str):
                # imported here: with ivf and vec_table, ~4 ms that a lexical run never needs
                from clio.recall.vectors import VectorIndex

                self._vectors = VectorIndex(embedder)
        return self._vectors

    def take_semantic_note(self) -> str | None:
        """Why recall is lexical only, once (None after that, or while semantic works)."""
        note, self._note = self._note, None
        return note

    def sync_vectors(self, budget_s: float | None = None) -> int:
        """Embed the messages that have no vector yet (0 when lexical); returns how many."""
        with self._lock:
            vectors = self.vector_index()
            if vectors is None:
                return 0
            written: int = self._guarded(vectors.sync, self._conn, budget_s)
            self.stats["vectors_written"] += written
            return written

    def _prepare_scan(self, query: str, exclude: str | None, limit: int) -> Callable[[], list[int]] | None:
        """Embed what is pending and the query, bring the matrix up to date (all the work that
        needs the connection); returns the scan itself, which needs none (None when lexical)."""
        vectors = self.vector_index()
        if vectors is None:
            return None
        self.stats["vectors_written"] += vectors.sync(self._conn, self.sync_budget_s)
        qvec = vectors.embedder.embed([query])[0]
        view = vectors.prepare(self._conn)
        return functools.partial(vectors.scan, qvec, limit, exclude, None, view)


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def run_beside(job: Callable[[], list[int]], work: Callable[[], T]) -> tuple[list[int], T]:
    """Run ``job`` on a worker thread while ``work`` runs here (numpy's product and SQLite's
    search both release the GIL); returns both results."""
    global _pool
    with _pool_lock:
        if _pool is None:
            from concurrent.futures import ThreadPoolExecutor  # (4 ms of imports a lexical run never needs)

            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clio-recall-scan", initializer=block_interrupts)
    future = _pool.submit(job)
    try:
        mine = work()
    finally:
        theirs = future.result()
    return theirs, mine
