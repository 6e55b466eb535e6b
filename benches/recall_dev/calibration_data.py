"""Writes ``clio/data/encoder-calibration.json.gz``: what a sentence encoder served by the user's
endpoint is calibrated on (:mod:`clio.recall.encoder_calibration`), from the dev sets A and E.

Every message of the two sets is run through the product's own path (the words' search, the
shipped helper's candidates by meaning, :func:`bench_auto_recall.step`), and each candidate unit
is kept with what the decision needs besides a cosine: whether the words alone quote it, whether
it only repeats the message, its words' score, and whether it is the fact's unit (of the fact's
session, holding its labelled value). An encoder's threshold is then chosen on it as the shipped
ones were (docs/memory.md): the lowest cosine at which the two sets' unrelated messages get no
more blocks than :data:`clio.recall.encoder_calibration.FALSE_BUDGET`.

    python benches/recall_dev/calibration_data.py
"""

from __future__ import annotations

import gzip
import json
import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benches/

import bench_auto_recall as B  # noqa: E402

from clio.recall import auto as A  # noqa: E402
from clio.recall import relevance as R  # noqa: E402
from clio.recall.answer_kind import about_a_tool  # noqa: E402
from clio.recall.encoder_calibration import DATA_FILE, DEV_SETS  # noqa: E402


def gather() -> dict[str, object]:
    texts: dict[str, int] = {}
    probes: list[dict[str, object]] = []

    def ref(text: str) -> int:
        return texts.setdefault(text, len(texts))

    for name in DEV_SETS:
        data = B.load_set(name)
        with tempfile.TemporaryDirectory() as tmp:
            index, ids, clio_dir = B.indexed(data, Path(tmp))
            client = B.embedded_helper(Path(tmp) / "home", clio_dir)
            client.timeout_s = 5.0  # the candidates, not the latency
            try:
                for p in data["probes"]:
                    hits, _, _ = B.step(index, p["text"], client)
                    cands = []
                    for h in hits:
                        parts = [t for _, _, t in h.parts] or [h.text]
                        cands.append({"parts": [ref(t) for t in parts], **B.candidate(h, p, ids)})
                    # "task": the cosine does not decide for it (clio.recall.auto.cosine_bar: an order
                    # of new work, or a question about how a tool behaves)
                    bar = A.cosine_bar(R.is_task(p["text"]), about_a_tool(p["text"]), R.COSINE_ASK)
                    probes.append({"set": name, "text": p["text"], "kind": p["kind"], "task": math.isinf(bar), "units": cands})
            finally:
                B.stop_helper(client)
                index.close()
    return {"sets": list(DEV_SETS), "texts": list(texts), "probes": probes}


if __name__ == "__main__":
    out = gather()
    raw = json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode()
    DATA_FILE.write_bytes(gzip.compress(raw, mtime=0))
    print(f"{DATA_FILE}: {len(out['probes'])} messages, {len(out['texts'])} texts, {len(raw):,} bytes, {DATA_FILE.stat().st_size:,} gzipped")  # type: ignore[arg-type]
