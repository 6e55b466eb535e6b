"""Message embeddings for the recall index, kept in the same SQLite file as the FTS5 index.

The ``vecs`` table (one float16 unit vector per ``msgs`` row) and its filling are
:mod:`clio.recall.vec_table`'s. Here: :meth:`VectorIndex.nearest` scores every vector against
the query by one matrix product over a cached float32 matrix (numpy has no fast float16
product) that only reloads what changed, over the rows of the best IVF lists
(:mod:`clio.recall.ivf`) once there are enough vectors.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from typing import TYPE_CHECKING, Any

from clio.recall import ivf
from clio.recall.vec_table import VectorTable

if TYPE_CHECKING:
    import numpy as np

    from clio.recall.embedder import Embedder

LOAD_CHUNK = 8_192  # vectors read from SQLite at a time
MIN_COSINE = 0.2  # weaker matches are not offered as semantic hits

_READ = (
    "SELECT {cols} FROM vecs v JOIN msgs m ON m.id = v.id LEFT JOIN ivf_lists l ON l.id = v.id "
    "WHERE v.id > ? ORDER BY v.id"
)


class VectorIndex(VectorTable):
    """The vector side of one recall index (the caller holds its lock and owns ``conn``)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._key: tuple[Any, ...] | None = (
            None  # (vec_deletes, count, max id, IVF generation) of the cached matrix
        )
        self._ids: Any = None  # np.ndarray[int64]: message ids, one per matrix row
        self._codes: Any = None  # np.ndarray[int32]: session code per row
        self._mat: Any = None  # np.ndarray[float32] (n, dim): the first n rows of _buf
        self._buf: Any = None
        self._labels: Any = None  # np.ndarray[int32]: IVF list per row (-1: not assigned yet)
        self._sessions: dict[str, int] = {}
        self._synced: tuple[Any, ...] | None = None  # (max msgs id, vec_deletes) when nothing was pending
        self._centroids: Any = None  # np.ndarray[float32] (nlist, dim) of IVF generation _ivf_gen
        self._ivf_gen = 0
        self._trained = 0  # vectors the lists were trained on
        self._layout: ivf.Layout | None = None
        self._presorted = 0  # after a fresh load: rows [0, this) are already sorted by list
        self.min_rows = ivf.MIN_ROWS  # fewer vectors: exact scan, no lists
        self.nprobe = ivf.NPROBE
        self.stats: Counter[str] = Counter()

    def forget(self) -> None:
        """Drop the cached matrix (the connection changed: rebuilt or reopened)."""
        self._key = self._ids = self._codes = self._mat = self._buf = self._synced = self._labels = None
        self._centroids = self._layout = None
        self._sessions = {}

    # -- searching -------------------------------------------------------------------------------------
    def _load(self, conn: sqlite3.Connection) -> None:
        """Bring the cached matrix up to date (only what changed), then its IVF lists."""
        import numpy as np

        self.ensure(conn)
        inserts, deletes = self._counters(conn)
        top = conn.execute("SELECT coalesce(max(id), -1) FROM vecs").fetchone()[0]
        key = (deletes, inserts - deletes, int(top), ivf.generation(conn))
        if key == self._key:
            return
        old = self._key
        fresh = old is None or old[0] != key[0] or old[3] != key[3] or self._mat is None
        since = -1 if fresh or old is None else int(old[2])
        if fresh:
            self._key = self._mat = self._buf = self._layout = None
            self._sessions = {}
            self._ids = np.zeros(0, dtype=np.int64)
            self._codes = np.zeros(0, dtype=np.int32)
            self._labels = np.zeros(0, dtype=np.int32)
        conn.execute("BEGIN")  # one snapshot for both reads
        try:
            place = self._placement(conn) if fresh else None
            self._read(conn, since, key[1], place)
        finally:
            conn.execute("COMMIT")
        self._key = key
        if not fresh and len(self._ids) != key[1]:  # filled out of order elsewhere: read it all again
            self._key = None
            self._load(conn)
            return
        self._update_lists(conn)

    def _placement(self, conn: sqlite3.Connection) -> Any:
        """Where each vector goes (in id order) so that the matrix is read already sorted by IVF
        list (rows without a list last): no relayout copy after a fresh load."""
        import numpy as np

        labels = np.fromiter(
            (r[0] for r in conn.execute(_READ.format(cols="coalesce(l.list, -1)"), (-1,))), dtype=np.int64
        )
        order = ivf.Layout.order(np.where(labels < 0, np.iinfo(np.int32).max, labels))
        place = np.empty_like(order)
        place[order] = np.arange(len(order))
        self._presorted = int((labels >= 0).sum())
        return place

    def _read(self, conn: sqlite3.Connection, since: int, expected: int, place: Any) -> None:
        """Append the vectors after id ``since`` to the cached arrays, a chunk at a time (no
        second copy of the matrix); ``place``: their rows in a fresh matrix (else appended)."""
        import numpy as np

        cur = conn.execute(_READ.format(cols="v.id, m.session_id, v.v, coalesce(l.list, -1)"), (since,))
        parts: list[tuple[Any, Any, Any]] = []
        done = 0
        while chunk := cur.fetchmany(LOAD_CHUNK):
            count = len(chunk)
            codes = (self._sessions.setdefault(r[1], len(self._sessions)) for r in chunk)
            parts.append(
                (
                    np.fromiter((r[0] for r in chunk), dtype=np.int64, count=count),
                    np.fromiter(codes, dtype=np.int32, count=count),
                    np.fromiter((r[3] for r in chunk), dtype=np.int32, count=count),
                )
            )
            rows = np.frombuffer(b"".join(r[2] for r in chunk), dtype=np.float16).reshape(
                count, self.embedder.dim
            )
            if place is None:
                self._append(rows, expected)
            else:
                if self._buf is None:
                    self._append(rows[:0], len(place))
                self._buf[place[done : done + count]] = rows
                done += count
        if place is not None and self._buf is not None:
            self._mat = self._buf[: len(place)]
        if parts:
            ids = np.concatenate([self._ids, *(p[0] for p in parts)])
            codes_all = np.concatenate([self._codes, *(p[1] for p in parts)])
            labels = np.concatenate([self._labels, *(p[2] for p in parts)])
            if place is not None:
                order = np.empty_like(place)
                order[place] = np.arange(len(place))
                ids, codes_all, labels = ids[order], codes_all[order], labels[order]
            self._ids, self._codes, self._labels = ids, codes_all, labels

    def _append(self, rows: np.ndarray, expected: int) -> None:
        """Add rows to the matrix, a view on a buffer with room to grow (``expected``: rows
        the matrix should reach), so a few new messages never copy the whole matrix."""
        import numpy as np

        n = 0 if self._mat is None else len(self._mat)
        need = n + len(rows)
        if self._buf is None or need > len(self._buf):
            size = max(need, expected) + max(need, expected) // 8 + 1024
            buf = np.empty((size, self.embedder.dim), dtype=np.float32)
            if n:
                buf[:n] = self._mat
            self._buf = buf
        self._buf[n:need] = rows
        self._mat = self._buf[:need]

    def _update_lists(self, conn: sqlite3.Connection) -> None:
        """Train the IVF lists (none yet, or the vectors doubled since), else assign new rows to
        them; lay the matrix out by list when the unsorted tail grew long."""
        import numpy as np

        n = 0 if self._mat is None else len(self._mat)
        if n < self.min_rows:
            self._layout = self._centroids = None
            return
        assert self._key is not None
        gen = self._key[3]
        if self._centroids is None or self._ivf_gen != gen:
            found = ivf.read(conn, self.embedder.dim)
            if found is not None and found[0] == gen:
                self._ivf_gen, self._trained, self._centroids = found
        if self._centroids is None or self._ivf_gen != gen or n > ivf.RETRAIN_GROWTH * self._trained:
            self.stats["ivf_trainings"] += 1
            self._centroids = ivf.kmeans(self._mat, ivf.list_count(n))
            self._labels = ivf.assign(self._mat, self._centroids)
            self._ivf_gen = ivf.save_training(conn, self._centroids, n, self._ids, self._labels)
            self._trained = n
            self._key = (*self._key[:3], self._ivf_gen)
            self._layout = None
            self._presorted = 0
        else:
            self._labels[self._labels >= len(self._centroids)] = -1  # a damaged row: assign it again
            new = np.flatnonzero(self._labels < 0)
            if len(new):
                self._labels[new] = ivf.assign(self._mat[new], self._centroids)
                ivf.save_labels(conn, gen, self._ids[new], self._labels[new])
        laid = self._presorted
        self._presorted = 0
        head = self._labels[:laid]
        if (
            self._layout is None
            and laid
            and bool((np.diff(head) >= 0).all() and head[-1] < len(self._centroids))
        ):
            self._layout = ivf.Layout(self._labels[:laid], len(self._centroids))  # read in list order
        if self._layout is None or n - self._layout.laid > max(ivf.MIN_ROWS // 4, n // 16):
            self.stats["relayouts"] += 1
            order = ivf.Layout.order(self._labels)
            self._ids, self._codes, self._labels = self._ids[order], self._codes[order], self._labels[order]
            buf = np.empty_like(self._buf)
            np.take(self._mat, order, axis=0, out=buf[:n], mode="clip")  # "raise" buffers a copy
            self._buf, self._mat = buf, buf[:n]
            self._layout = ivf.Layout(self._labels, len(self._centroids))

    def prepare(self, conn: sqlite3.Connection) -> tuple[Any, ...]:
        """Load what changed (uses the connection); returns the view :meth:`scan` reads, which
        needs no connection and stays whole if the index is rebuilt meanwhile."""
        self._load(conn)
        return self._view()

    def _view(self) -> tuple[Any, ...]:
        return (self._mat, self._ids, self._codes, self._layout, self._centroids, self._sessions, self.nprobe)

    def scan(
        self,
        query_vec: np.ndarray,
        k: int,
        exclude_session: str | None = None,
        min_cosine: float | None = None,
        view: tuple[Any, ...] | None = None,
    ) -> list[int]:
        """Message ids of the ``k`` cached vectors most similar to ``query_vec`` (at least
        ``min_cosine``, default :data:`MIN_COSINE`), best first: exact cosines, over the rows of
        the best IVF lists when the matrix has them, else over every row. ``view``: what
        :meth:`prepare` returned (default: the matrix as it is now)."""
        import numpy as np

        mat, ids, codes, layout, centroids, sessions, nprobe = view or self._view()
        floor = MIN_COSINE if min_cosine is None else min_cosine
        if mat is None or not len(mat) or k < 1:
            return []
        q = query_vec.astype(np.float32)
        if layout is None or centroids is None:
            scores = mat @ q
        else:
            segs = layout.segments(ivf.probe(centroids, q, nprobe), len(mat))
            rows = np.concatenate([np.arange(s, e) for s, e in segs])
            scores = np.concatenate([mat[s:e] @ q for s, e in segs])
            ids, codes = ids[rows], codes[rows]
            self.stats["rows_scanned"] += len(rows)
        if exclude_session is not None and exclude_session in sessions:
            scores = np.where(codes == sessions[exclude_session], -2.0, scores)
        k = min(k, len(scores))
        if not k:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [int(ids[i]) for i in top if scores[i] >= floor]

    def nearest(
        self,
        conn: sqlite3.Connection,
        query_vec: np.ndarray,
        k: int,
        exclude_session: str | None = None,
        min_cosine: float | None = None,
    ) -> list[int]:
        """:meth:`prepare` then :meth:`scan`."""
        return self.scan(query_vec, k, exclude_session, min_cosine, self.prepare(conn))

    def memory_bytes(self) -> int:
        if self._mat is None:
            return 0
        return int(self._buf.nbytes + self._ids.nbytes + self._codes.nbytes + self._labels.nbytes)
