"""The encoder's vectors of a project's archived messages, kept beside the recall index in
``.clio/recall-vectors.sqlite``: one row per distinct indexed text (keyed by its sha256, so a
rebuilt index, a renamed session or a repeated message costs nothing), its chunks' int8 vectors
in one blob. Written and read only by the encoder helper (:mod:`clio.recall.encoder_service`);
derived data, deleted and made again when damaged or from another model.

:func:`fill_from_index` embeds, newest first, the indexed messages that have no vector yet (the
helper runs it in the background once a turn that searched has ended, so the next search finds
them ready).
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from clio.recall.encoder import chunks, pack, unpack
from clio.recall.encoder_models import MINILM, EncoderModel

if TYPE_CHECKING:
    import numpy as np

    from clio.recall.encoder import Encoder

CACHE_NAME = MINILM.cache_name  # another model's: EncoderModel.cache_name
INDEX_NAME = "recall.sqlite"
FILL_BATCH = 8  # texts embedded between two looks at whether a search is waiting (~50 ms)
SPOT_CHUNKS = 2  # chunks embedded on the spot between two looks at a search's deadline (~25 ms with MiniLM, ~80 with mpnet)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vecs(key BLOB PRIMARY KEY, v BLOB NOT NULL);
"""


def filled(clio_dir: Path, model: EncoderModel = MINILM) -> bool:
    """Whether every text a project's index holds has ``model``'s vectors in the cache beside it
    (tests and benches wait for the helper's fill with this)."""
    try:
        with sqlite3.connect(clio_dir / INDEX_NAME) as idx, sqlite3.connect(clio_dir / model.cache_name) as vec:
            bodies = len({b for (b,) in idx.execute("SELECT body FROM msgs")})
            return bodies > 0 and int(vec.execute("SELECT count(*) FROM vecs").fetchone()[0]) >= bodies
    except sqlite3.Error:
        return False


def key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]


def allowed(cache: Path, model: EncoderModel) -> bool:
    """Only a project's own ``.clio/`` cache of ``model``'s vectors (``recall-vectors.sqlite``,
    ``recall-vectors-mpnet.sqlite``) is ever opened or written by that model's helper."""
    return cache.name == model.cache_name and cache.parent.name == ".clio" and cache.parent.is_dir()


class VectorCache:
    """One project's cache of one model's vectors (a cache of another model's is made again)."""

    def __init__(self, path: Path, model: EncoderModel = MINILM) -> None:
        self.path = path
        self.model_id = model.model_id
        self.dim = model.dim
        self.conn = self._open()

    def _open(self) -> sqlite3.Connection:
        for attempt in (0, 1):
            conn = sqlite3.connect(str(self.path), timeout=10.0, isolation_level=None, check_same_thread=False)
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.executescript(_SCHEMA)
                row = conn.execute("SELECT value FROM meta WHERE key = 'model'").fetchone()
                if row is None:
                    conn.execute("INSERT OR REPLACE INTO meta VALUES ('model', ?)", (self.model_id,))
                elif row[0] != self.model_id:
                    raise sqlite3.DatabaseError("vectors of another model")
                return conn
            except sqlite3.DatabaseError:
                conn.close()
                if attempt:
                    raise
                for suffix in ("", "-wal", "-shm", "-journal"):  # derived data: start over
                    with contextlib.suppress(FileNotFoundError):
                        Path(str(self.path) + suffix).unlink()
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.conn.close()

    def get(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        out = {}
        for start in range(0, len(keys), 500):
            part = list(keys[start : start + 500])
            marks = ",".join("?" * len(part))
            for k, v in self.conn.execute(f"SELECT key, v FROM vecs WHERE key IN ({marks})", part):
                out[bytes(k)] = unpack(bytes(v), self.dim)
        return out

    def vectors(self, encoder: Encoder, texts: Sequence[str], deadline: float | None = None) -> list[np.ndarray | None]:
        """Each text's chunk vectors (rows), from the cache or embedded now and stored. With a
        ``deadline`` (``time.monotonic()``), the texts the cache lacks are embedded in their order,
        a few chunks at a time (:data:`SPOT_CHUNKS`), each group only if it would end by then (as
        long as the group before took): a text not reached is None. Without one, every text is
        embedded."""
        keys = [key(t) for t in texts]
        have = self.get(keys)
        missing = [i for i, k in enumerate(keys) if k not in have and k not in keys[:i]]  # each distinct text once
        groups: list[list[int]] = [[]]
        size = 0  # chunks in the last group
        for i in missing:  # in order, in groups of about SPOT_CHUNKS chunks
            if deadline is not None and size >= SPOT_CHUNKS:
                groups.append([])
                size = 0
            groups[-1].append(i)
            size += len(chunks(texts[i]) or [""])
        took = 0.0  # the last group's time: the next one is started only if it would end in time
        for group in groups:
            started = time.monotonic()
            if not group or (deadline is not None and started + took >= deadline):
                break
            self._embed([texts[j] for j in group], [keys[j] for j in group], encoder, have)
            took = time.monotonic() - started
        return [have.get(k) for k in keys]

    def _embed(self, texts: Sequence[str], keys: Sequence[bytes], encoder: Encoder, into: dict[bytes, np.ndarray]) -> None:
        pieces = [chunks(t) or [""] for t in texts]
        flat = encoder.embed([c for p in pieces for c in p])
        rows, at = [], 0
        for k, p in zip(keys, pieces, strict=True):
            vecs = flat[at : at + len(p)]
            at += len(p)
            blob = pack(vecs)
            into[k] = unpack(blob, self.dim)
            rows.append((k, blob))
        self.conn.executemany("INSERT OR REPLACE INTO vecs(key, v) VALUES (?, ?)", rows)

    def fill_from_index(self, index: Path, encoder: Encoder, limit: int, stop: Callable[[], bool]) -> int:
        """Embed up to ``limit`` indexed messages that have no vector yet; ``stop()`` is asked
        between batches (a search waiting goes first). Returns how many were embedded.

        Incremental: the cache remembers, per index, the span of row ids it has gone through
        (``lo``..``hi``); a pass reads the rows above ``hi`` (added since), then carries on
        below ``lo``, newest first (an archive older than the cache), so a run costs the helper
        what was added, not a read of the whole index. A rebuilt index (its ids start over) is
        read again, each text already embedded costing a look-up only."""
        try:
            src = sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=10.0)
        except sqlite3.Error:
            return 0
        mark = f"span:{index}"
        done = 0
        try:
            top = int(src.execute("SELECT coalesce(max(id), 0) FROM msgs").fetchone()[0])
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (mark,)).fetchone()
            lo, hi = (int(x) for x in str(row[0]).split()) if row else (top + 1, top)
            if top < hi:  # rebuilt: the ids start over
                lo, hi = top + 1, top
            pages = (
                ("SELECT id, body FROM msgs WHERE id > ? ORDER BY id LIMIT 256", "hi"),  # added since
                ("SELECT id, body FROM msgs WHERE id < ? ORDER BY id DESC LIMIT 256", "lo"),  # older
            )
            for sql, side in pages:
                while done < limit and not stop():
                    rows = src.execute(sql, (hi if side == "hi" else lo,)).fetchall()
                    if not rows:
                        break
                    done += self._fill_page([str(b) for _, b in rows], encoder, stop)
                    if stop():
                        break
                    if side == "hi":
                        hi = int(rows[-1][0])
                        lo = min(lo, int(rows[0][0]))
                    else:
                        lo = int(rows[-1][0])
                    self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (mark, f"{lo} {hi}"))
        except sqlite3.Error:
            pass
        finally:
            src.close()
        return done

    def _fill_page(self, bodies: list[str], encoder: Encoder, stop: Callable[[], bool]) -> int:
        texts = {key(b): b for b in bodies}
        have = self.get(list(texts))
        # by length: a batch's chunks are padded to its longest, so texts of a length together
        # (a page's mix, in its order, padded 2.4x the tokens embedded and took twice as long)
        todo = sorted(((t, k) for k, t in texts.items() if k not in have), key=lambda p: len(p[0]))
        done = 0
        for start in range(0, len(todo), FILL_BATCH):
            if stop():
                break
            part = todo[start : start + FILL_BATCH]
            self._embed([t for t, _ in part], [k for _, k in part], encoder, {})
            done += len(part)
        return done
