"""The judge, in the encoder helper only: a cross-encoder that reads a message and an archived unit
together and gives one logit, how likely the unit holds what the message asks
(:mod:`clio.recall.verdict` joins it with the decision's features).

It is all-MiniLM-L6-v2's six layers with a one-logit head, fine-tuned here on 8,040 written items
(questions asked the same way or reworded, questions nobody answered, orders and remarks, each
with its answer and its near misses: ``benches/recall_dev/judge_data``) by
``benches/recall_dev/judge_experiment.py train`` and exported to int8 ONNX (23 MB; 17.9 MB gzipped
in ``clio/data``, checked by its sha256 once unpacked). It reads clio's tokenizer file (the same
vocabulary), the message and the unit as one pair of at most :data:`MAX_TOKENS`.

Unless the user's config says ``recall_judge: false`` (docs/memory.md, "The judge in the
decision"): loaded in a thread on the first request that asks for it (~0.3 s); until then, or if
it cannot load, the helper tells clio it has no judge and the decision goes without it.
"""

from __future__ import annotations

import gzip
import hashlib
from typing import Any

from clio.recall.embedder import DATA_DIR, TOKENIZER_FILE, EmbedderUnavailable

JUDGE_FILE = DATA_DIR / "judge-minilm-l6.onnx.gz"
JUDGE_SHA256 = "daf26225f780cdd753d3c321aaa71036b3943c47387264d070feebb2e9fb18ab"  # of the unpacked ONNX file
MAX_TOKENS = 128  # as trained: the message and the unit's excerpt (480 characters) fit
THREADS = 2  # three units in one call: 9 ms p50 on two threads, 15 on one (docs/memory.md)
MAX_TEXTS = 8  # a request to the helper judges at most this many units


def packaged() -> bytes:
    """The packaged judge's ONNX file, unpacked and checked by its sha256."""
    try:
        raw = gzip.decompress(JUDGE_FILE.read_bytes())
    except (OSError, EOFError) as exc:
        raise EmbedderUnavailable(f"judge off: {JUDGE_FILE} cannot be read ({exc})") from exc
    if hashlib.sha256(raw).hexdigest() != JUDGE_SHA256:
        raise EmbedderUnavailable(f"judge off: {JUDGE_FILE} fails its sha256 check")
    return raw


class Judge:
    def __init__(self, threads: int = THREADS, model: bytes | None = None) -> None:
        """``model``: another judge's ONNX file (the benches' trained ones); else the packaged
        one, checked by its sha256."""
        try:
            import numpy as np
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailable(f"judge off: {exc.name or exc} is not installed") from exc
        raw = model if model is not None else packaged()
        self.np = np
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # no spinning once a call is done: the threads would take the cores the run needs next
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(raw, options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS, strategy="longest_first")

    def score(self, query: str, texts: list[str]) -> list[float]:
        """One logit per text: how likely it holds what ``query`` asks (over 0: more likely than not)."""
        if not texts:
            return []
        np = self.np
        out = []
        # one pair a call, never padded beside another: the int8 graph quantizes its activations per
        # call, so a unit judged beside a longer one would read differently (0.4 of a logit, measured)
        for enc in self.tokenizer.encode_batch([(query, t) for t in texts]):
            feeds: dict[str, Any] = {
                name: np.array([getattr(enc, attr)], dtype=np.int64)
                for name, attr in (("input_ids", "ids"), ("attention_mask", "attention_mask"), ("token_type_ids", "type_ids"))
            }
            out.append(round(float(self.session.run(None, feeds)[0].reshape(-1)[0]), 4))
        return out
