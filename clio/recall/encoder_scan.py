"""The encoder helper's nearest-message scan: candidates found by meaning, beside the words.

bm25 finds only messages that share a word with the user's; a fact asked for in other words
("where do rejected malformed messages go?" against "the dead-letter topic events.invalid.v2")
never becomes a candidate, and no relevance decision can quote what it is not shown. So the
helper, which has the query's vector anyway, also scans the vectors of the project's newest
indexed messages (:data:`SCAN_MESSAGES`) and tells clio the nearest ones (index row ids and
cosines); clio turns them into units beside bm25's and decides on all of them alike.

The matrix is built from the helper's vector cache (:mod:`clio.recall.encoder_cache`, filled
newest first): one float32 row per chunk, kept in memory per project and brought up to date
incrementally (rows added to the index since, and messages whose vectors the fill has written
since). A message without a vector yet is simply not scanned until it has one. Used only in the
helper process (numpy).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

from clio.recall.encoder_cache import VectorCache, key
from clio.recall.schema import marks

if TYPE_CHECKING:
    import numpy as np

SCAN_MESSAGES = 20_000  # the newest indexed messages scanned (~45 MB of float32 at ~1.5 chunks each)
MIN_COSINE = 0.25  # nearer than this is not worth a unit (the decision asks far more)
RECHECK_S = 2.0  # messages still without vectors are looked up again at most this often
_PAGE = 2_000


class NearScan:
    """One project's scan: index row ids and their chunk vectors, newest :data:`SCAN_MESSAGES`."""

    def __init__(self, index: Path, cap: int = SCAN_MESSAGES) -> None:
        self.index = index
        self.cap = cap
        self.hi = 0  # the highest index row id looked at
        self.removed = 0  # the index's count of messages ever removed when last looked at
        self.made = ""  # the index file's mark when last looked at (a rebuilt index has another)
        self.missing: dict[int, bytes] = {}  # rows looked at whose vectors were not written yet
        self.cache_mark = -1  # the cache's highest rowid when ``missing`` was last looked up
        self.checked = 0.0  # when (monotonic) ``missing`` was last looked up
        self.blocks: list[tuple[np.ndarray, np.ndarray]] = []  # (owner row ids, chunk rows)
        self.matrix: np.ndarray | None = None
        self.owners: np.ndarray | None = None

    def _reset(self) -> None:
        self.hi = self.removed = 0
        self.made = ""
        self.missing = {}
        self.cache_mark = -1
        self.checked = 0.0
        self.blocks = []
        self.matrix = self.owners = None

    def refresh(self, cache: VectorCache, fill_done: bool = False) -> None:
        """Bring the matrix up to date with the index and the cache (cheap when nothing changed).
        Messages still without vectors are looked up again at most every :data:`RECHECK_S`, or
        at once with ``fill_done`` (the fill has just written theirs)."""
        try:
            src = sqlite3.connect(f"file:{self.index}?mode=ro", uri=True, timeout=5.0)
        except sqlite3.Error:
            return
        try:
            top = int(src.execute("SELECT coalesce(max(id), 0) FROM msgs").fetchone()[0])
            made, removed = marks(src)  # not count(*): a walk of every row, 45 ms at 200k messages
            if self.hi and (top < self.hi or removed != self.removed or made != self.made):
                self._reset()  # rebuilt, or messages deleted: their ids may come back as others
            self.removed, self.made = removed, made
            if top > self.hi:
                low = max(self.hi, int(top) - self.cap)
                new: dict[int, bytes] = {}
                for start in range(low, int(top), _PAGE):
                    for rid, body in src.execute(
                        "SELECT id, body FROM msgs WHERE id > ? AND id <= ?", (start, min(start + _PAGE, int(top)))
                    ):
                        new[int(rid)] = key(str(body))
                self.hi = int(top)
                self._add(cache, new)
            now = time.monotonic()
            if self.missing and (fill_done or now - self.checked >= RECHECK_S):
                mark = int(cache.conn.execute("SELECT coalesce(max(rowid), 0) FROM vecs").fetchone()[0])
                if mark != self.cache_mark:  # the fill wrote vectors since: take those it wrote
                    self._add(cache, dict(self.missing))
                self.cache_mark, self.checked = mark, now
        except sqlite3.Error:
            return
        finally:
            src.close()

    def warm(self, cache: VectorCache) -> None:
        """Bring the matrix up to date and assemble it (the helper does this after a fill, so
        the next search pays neither the first read of the index nor the copy, and finds what
        the fill has just embedded: a search a moment earlier, which found those messages
        without vectors, must not hold them back for :data:`RECHECK_S`)."""
        self.refresh(cache, fill_done=True)
        self._view()

    def _add(self, cache: VectorCache, rows: dict[int, bytes]) -> None:
        import numpy as np

        have = cache.get(list(set(rows.values())))
        owners, vecs = [], []
        for rid, k in rows.items():
            v = have.get(k)
            if v is None or not len(v):
                self.missing[rid] = k
                continue
            self.missing.pop(rid, None)
            owners.append(np.full(len(v), rid, dtype=np.int64))
            vecs.append(v)
        if vecs:
            self.blocks.append((np.concatenate(owners), np.vstack(vecs).astype(np.float32)))
            self.matrix = None
        floor = self.hi - self.cap
        if len(self.missing) > self.cap:
            self.missing = {r: k for r, k in self.missing.items() if r > floor}

    def _view(self) -> tuple[np.ndarray, np.ndarray] | None:
        import numpy as np

        if self.matrix is None and self.blocks:
            owners = np.concatenate([b[0] for b in self.blocks])
            matrix = np.vstack([b[1] for b in self.blocks])
            keep = owners > self.hi - self.cap  # the newest messages only
            self.owners, self.matrix = owners[keep], matrix[keep]
            self.blocks = [(self.owners, self.matrix)]
        if self.matrix is None or self.owners is None or not len(self.owners):
            return None
        return self.owners, self.matrix

    def nearest(self, q: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` messages nearest to the query vector ``q`` (row id, best chunk's cosine), best
        first, none under :data:`MIN_COSINE`."""
        view = self._view()
        if view is None or k < 1:
            return []
        return nearest_rows(view[0], view[1], q, k)


def nearest_rows(owners: np.ndarray, matrix: np.ndarray, q: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Of chunk rows ``matrix`` (each owned by the message ``owners`` names), the ``k`` messages
    whose best chunk is nearest to ``q``: (message, cosine), best first, none under
    :data:`MIN_COSINE`. Pure."""
    import numpy as np

    sims = matrix @ q
    take = min(len(sims), k * 8)
    top = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(len(sims))
    out: dict[int, float] = {}
    for j in top[np.argsort(-sims[top])]:
        cos = float(sims[j])
        if cos < MIN_COSINE or len(out) >= k:
            break
        out.setdefault(int(owners[j]), round(cos, 4))
    return list(out.items())
