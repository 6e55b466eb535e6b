"""The judge, in the encoder helper only: a cross-encoder that reads a message and an archived unit
together and gives one logit, how likely the unit holds what the message asks
(:mod:`clio.recall.verdict` joins it with the decision's features).

It is all-MiniLM-L6-v2's six layers with a one-logit head, fine-tuned here on 8,040 written items
(questions asked the same way or reworded, questions nobody answered, orders and remarks, each
with its answer and its near misses: ``benches/recall_dev/judge_data``) by
``benches/recall_dev/judge_experiment.py train`` and exported to int8 ONNX (23 MB; 17.9 MB gzipped
in ``clio/data``, checked by its sha256 once unpacked), without the NaN guards torch writes after
each attention's softmax (``judge_experiment.py strip``: the mask hides keys, never a whole row,
so no guard ever fires; the logits are the same to the bit, the call 11-14% shorter: docs/memory.md,
"The judge's NaN guards, and where a typed message's time goes"). It reads clio's tokenizer file
(the same vocabulary), the message and the unit as one pair of at most :data:`MAX_TOKENS`, each
with developers' short forms written out (:mod:`clio.recall.abbreviations`: "prod" reads
"production", stop 84), padded to that length as the file says: the decision's weights were
fitted on those logits (each pair at its own length, refitted, takes a sixth off the judged
step's median and nothing off its p95, and moved the decision: stops 69, 83 and 84, not taken;
docs/memory.md, "Each pair at its own length, refitted"). Its int8 products are exact on every x86
CPU (:data:`PRECISE_INT8`), so it gives the logits the decision was fitted on wherever it runs.

Unless the user's config says ``recall_judge: false`` (docs/memory.md, "The judge in the
decision"): loaded in a thread as the helper starts (``--judge``, from a run with it on) or on the
first request that asks for it (~0.3 s); until then, or if it cannot load, the helper tells clio it
has no judge and the decision goes without it.
"""

from __future__ import annotations

import gzip
import hashlib
import statistics
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from clio import threads as clio_threads
from clio.recall.abbreviations import written_out
from clio.recall.embedder import DATA_DIR, TOKENIZER_FILE, EmbedderUnavailable

JUDGE_FILE = DATA_DIR / "judge-minilm-l6.onnx.gz"
JUDGE_SHA256 = "92a7758e7c841699eadfcd9bf41e45d2910b478945f323423628141a9538d575"  # of the unpacked ONNX file
MAX_TOKENS = 128  # as trained; the tokenizer file also pads each pair to this length
# pairs read at once, each on one thread of one session: three units in 18-22 ms here, against
# 25-26 ms one after the other on a session of two threads (docs/memory.md, "The judge's cost, and
# the rewordings no judge could quote")
THREADS = 2
MAX_TEXTS = 8  # a request to the helper judges at most this many units
MAX_CHARS = 4000  # of a unit the helper is sent (the tokenizer reads fewer)
PRECISE_INT8 = "session.x64quantprecision"  # onnxruntime's key: exact int8 products without VNNI
TIMES_KEPT = 64  # the helper's latest reads whose median ``clio encoder`` tells


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
        one, checked by its sha256. ``threads``: the pairs read at once, each on one thread of the
        one session (a run of the session is safe from several threads)."""
        try:
            import numpy as np
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailable(f"judge off: {exc.name or exc} is not installed") from exc
        raw = model if model is not None else packaged()
        self.np = np
        options = ort.SessionOptions()
        # one thread a call: a pair is too small to share among threads that sleep between its
        # operators (no spinning: they would take the cores the run needs next)
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        # the same logits on every x86 CPU: without VNNI (AVX2, AVX-512 without it) onnxruntime's
        # uint8 x int8 products saturate in 16 bits, and this judge read a near miss 0.59 of a logit
        # higher there than on the CPU the decision was fitted on (docs/memory.md, "The judge reads
        # alike on every CPU"); this asks for exact uint8 x uint8 products on those CPUs (14-27% slower
        # there), and changes nothing on others
        options.add_session_config_entry(PRECISE_INT8, "1")
        self.session = ort.InferenceSession(raw, options, providers=["CPUExecutionProvider"])
        self.pool = (
            ThreadPoolExecutor(threads, thread_name_prefix="clio-judge", initializer=clio_threads.block_interrupts)
            if threads > 1
            else None
        )
        self.tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS, strategy="longest_first")

    def score(self, query: str, texts: list[str]) -> list[float]:
        """One logit per text: how likely it holds what ``query`` asks (over 0: more likely than not)."""
        if not texts:
            return []
        np = self.np

        # one pair a call, never padded beside another: the int8 graph quantizes its activations per
        # call, so a unit judged beside a longer one would read differently (0.4 of a logit, measured)
        def one(enc: Any) -> float:
            feeds: dict[str, Any] = {
                name: np.array([getattr(enc, attr)], dtype=np.int64)
                for name, attr in (("input_ids", "ids"), ("attention_mask", "attention_mask"), ("token_type_ids", "type_ids"))
            }
            return round(float(self.session.run(None, feeds)[0].reshape(-1)[0]), 4)

        # developers' short forms written out on both sides ("prod" and "production" agree)
        query = written_out(query)
        pairs = self.tokenizer.encode_batch([(query, written_out(t)) for t in texts])
        if self.pool is None or len(pairs) == 1:
            return [one(enc) for enc in pairs]
        return list(self.pool.map(one, pairs))


class HostedJudge:
    """The helper's judge: loaded in a thread as the helper starts with ``--judge`` or on the first
    request that asks for it (:meth:`want`), once; until then, or if it cannot load, there is none
    and the decision goes without it."""

    def __init__(self) -> None:
        self.judge: Judge | None = None
        self.ready = threading.Event()  # set once loaded, or once it could not be
        self.asked = False
        self.reads = 0  # messages judged since the helper started
        self.times: deque[float] = deque(maxlen=TIMES_KEPT)  # each read's seconds, the latest
        self._count = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self.judge is not None

    def want(self) -> None:
        if not self.asked:
            self.asked = True
            clio_threads.start(self._load, "clio-encoder-judge")

    def _load(self) -> None:
        try:
            self.judge = Judge()  # ~0.3 s
        except Exception:  # the decision goes without it; the helper's ping tells
            self.judge = None
        finally:
            self.ready.set()

    def scores(self, query: str, texts: Any, wait: float = 0.0) -> list[float] | None:
        """The logits for ``texts`` with ``query`` (None without a judge; ``wait``: how long to
        wait for it to load). No texts: [] (clio found none worth reading)."""
        if not self.ready.wait(wait) or self.judge is None:
            return None
        if not isinstance(texts, list) or len(texts) > MAX_TEXTS:
            raise ValueError(f"judge: a list of at most {MAX_TEXTS} texts")
        start = time.perf_counter()
        logits = [float(x) for x in self.judge.score(query, [str(t)[:MAX_CHARS] for t in texts])]
        if logits:
            with self._count:
                self.reads += 1
                self.times.append(time.perf_counter() - start)
        return logits

    def median_ms(self) -> float | None:
        """The median time of the latest reads (each a message's units, read at once), in ms; None
        before any: what the judge costs a searched message on this machine."""
        with self._count:
            times = list(self.times)
        return round(statistics.median(times) * 1000, 1) if times else None
