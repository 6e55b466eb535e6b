"""Offline sentence embeddings: the meaning side of recall.

The model is a static token table distilled from all-MiniLM-L6-v2 (Apache-2.0) by
``scripts/distill_static.py`` (model2vec's method: MiniLM run on every vocabulary token
alone, mean-pooled, PCA-reduced, int8 rows with a float16 scale each). It ships inside
clio as ``clio/data/static_minilm.npz`` with the WordPiece ``tokenizer.json`` it needs;
nothing is downloaded or run through a network model at run time. A text's embedding is
the weighted mean of its tokens' rows (rare tokens weigh more: log of the vocabulary
rank, a Zipf proxy as in model2vec), L2-normalised. Both files are checked against the
sha256 constants below at load; a file that differs is refused with one line.

Contract (stable: other modules code against it)
------------------------------------------------
``get_embedder() -> Embedder | None``
    Loads the table on first call (thread-safe), then returns the same object. ``None``
    when it cannot load: numpy/tokenizers missing, a hash mismatch, or ``CLIO_SEMANTIC=0``
    in the environment. Never retried within a process. Never call it on the start-up
    path or before the first prompt: call it where a search actually needs vectors.
``unavailable_reason() -> str | None``
    One line saying why :func:`get_embedder` returned ``None``.
``Embedder.embed(texts: list[str]) -> numpy.ndarray``
    float32, shape ``(len(texts), Embedder.dim)``; every row L2-normalised, so a dot
    product IS the cosine. Deterministic; an empty text (or one with no known token)
    gives a zero row. ``Embedder.name`` names the model and its table's hash (store it
    with saved vectors: a different name means they must be recomputed).
``cosine(a, b)``, ``rrf(rankings, k, weights)``: small pure helpers.

Only the standard library is imported here at module level; numpy and tokenizers load
inside :func:`load_embedder`.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clio.recall.encoder_models import MINILM

if TYPE_CHECKING:
    import numpy as np

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
TABLE_FILE = DATA_DIR / "static_minilm.npz"
TOKENIZER_FILE = DATA_DIR / "tokenizer.json"
TABLE_SHA256 = "88e671c5afe4d44cee4a5882956b71df93782e32917a9c65ec0e49762f8e77fd"
TOKENIZER_SHA256 = MINILM.tokenizer_sha256  # the table's tokenizer is MiniLM's
MAX_TOKENS = 512  # a static table has no window: this only bounds the work per text
FIRST_WORD_ID = 1996  # BERT uncased: ids below are [PAD]/[unused]/specials/single characters
ENV_SWITCH = "CLIO_SEMANTIC"  # "0"/"off"/"false"/"no": stay lexical


class EmbedderUnavailable(RuntimeError):
    """The model cannot be used; ``str(exc)`` is one line for the user."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _verified(path: Path, expected: str, what: str) -> Path:
    if not path.is_file():
        raise EmbedderUnavailable(f"semantic recall off: {what} not found at {path}")
    got = sha256_file(path)
    if got != expected:
        raise EmbedderUnavailable(
            f"semantic recall off: {what} {path} fails its sha256 check ({got[:12]}… != {expected[:12]}…)"
        )
    return path


def token_weights(vocab_size: int, weighting: str = "zipf") -> np.ndarray:
    """One weight per token id: 0 for specials/[unused]; "mean": 1; "zipf": log of the rank."""
    import numpy as np

    ids = np.arange(vocab_size, dtype=np.float32)
    if weighting == "mean":
        w = np.ones(vocab_size, dtype=np.float32)
    elif weighting == "zipf":
        # BERT's word ids run roughly from frequent to rare: log(rank) down-weights "the", "is"...
        w = np.log(2.0 + np.maximum(ids - FIRST_WORD_ID, 0.0)).astype(np.float32)
    else:
        raise ValueError(f"unknown weighting {weighting!r}")
    w[:999] = 0.0  # [PAD], [unusedN], [UNK], [CLS], [SEP], [MASK]
    return w


class Embedder:
    """Static embedding: tokenize, weighted mean of table rows, L2-normalise."""

    def __init__(self, table: np.ndarray, tokenizer: Any, name: str, weighting: str = "zipf") -> None:
        self._table = table  # float32 (vocab, dim)
        self._tok = tokenizer
        self._weights = token_weights(table.shape[0], weighting)
        self.name = name
        self.dim = int(table.shape[1])

    def embed(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encs = self._tok.encode_batch(texts, add_special_tokens=False)
        lengths = np.fromiter((len(e.ids) for e in encs), dtype=np.int64, count=len(encs))
        ids = np.fromiter((i for e in encs for i in e.ids), dtype=np.int64, count=int(lengths.sum()))
        if not len(ids):
            return out
        # weighted token counts per text over the batch's distinct tokens, times their rows:
        # one small matrix product instead of gathering a row per token
        seg = np.repeat(np.arange(len(texts)), lengths)
        uniq, inv = np.unique(ids, return_inverse=True)
        counts = np.bincount(
            seg * len(uniq) + inv, weights=self._weights[ids], minlength=len(texts) * len(uniq)
        ).reshape(len(texts), len(uniq))
        out = counts.astype(np.float32) @ self._table[uniq]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.where(norms > 0, out / np.maximum(norms, 1e-12), 0.0).astype(np.float32)


def load_embedder(
    table_path: Path | None = None,
    tokenizer_path: Path | None = None,
    *,
    table_sha256: str | None = None,
    tokenizer_sha256: str | None = None,
    weighting: str = "zipf",
    dims: int | None = None,
) -> Embedder:
    """Load and check the table now (no caching); raises :class:`EmbedderUnavailable`.

    ``dims`` keeps the first principal components only (benches: the table is PCA-ordered)."""
    table_path = Path(table_path or TABLE_FILE)
    tokenizer_path = Path(tokenizer_path or TOKENIZER_FILE)
    table_sha256 = table_sha256 or TABLE_SHA256
    _verified(table_path, table_sha256, "the embedding table")
    _verified(tokenizer_path, tokenizer_sha256 or TOKENIZER_SHA256, "the embedding tokenizer")
    try:
        import numpy as np
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbedderUnavailable(f"semantic recall off: {exc}") from exc
    try:
        with np.load(table_path) as data:
            table = data["q"].astype(np.float32) * data["scale"].astype(np.float32)[:, None]
        if dims is not None:
            table = np.ascontiguousarray(table[:, :dims])
        tok = Tokenizer.from_file(str(tokenizer_path))
        tok.no_padding()
        tok.enable_truncation(max_length=MAX_TOKENS)
    except Exception as exc:  # a broken install must not break clio: report it and stay lexical
        raise EmbedderUnavailable(f"semantic recall off: the embedding table failed to load ({exc})") from exc
    name = f"static-minilm-{table.shape[1]}d-{weighting}-{table_sha256[:12]}"
    return Embedder(table, tok, name, weighting)


_state_lock = threading.Lock()
_embedder: Embedder | None = None
_reason: str | None = None
_tried = False


def semantic_enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "false", "no")


def get_embedder() -> Embedder | None:
    """The process-wide embedder, loaded on first use; None (see :func:`unavailable_reason`)."""
    global _embedder, _reason, _tried
    if _tried:
        return _embedder
    with _state_lock:
        if not _tried:
            if not semantic_enabled():
                _reason = f"semantic recall off: {ENV_SWITCH}={os.environ.get(ENV_SWITCH)}"
            else:
                try:
                    _embedder = load_embedder()
                except EmbedderUnavailable as exc:
                    _reason = str(exc)
            _tried = True
    return _embedder


def unavailable_reason() -> str | None:
    """Why :func:`get_embedder` returned None, in one line; None if it has not failed."""
    return _reason


def reset_embedder() -> None:
    """Forget the cached embedder and failure (tests)."""
    global _embedder, _reason, _tried
    with _state_lock:
        _embedder, _reason, _tried = None, None, False


def cosine(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Cosine similarity of two equal-length vectors; 0.0 when either is zero."""
    if len(a) != len(b):
        raise ValueError(f"cosine of vectors of lengths {len(a)} and {len(b)}")
    dot = sum(float(x) * float(y) for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(float(x) * float(x) for x in a))
    nb = math.sqrt(sum(float(y) * float(y) for y in b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return dot / (na * nb)


def rrf(rankings: list[list[str]], k: int = 60, weights: list[float] | None = None) -> dict[str, float]:
    """Reciprocal rank fusion of best-first id lists: id -> sum of weight / (k + rank)."""
    scores: dict[str, float] = {}
    for n, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[n]
        seen: set[str] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores
