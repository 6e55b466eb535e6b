"""The cosine at which a sentence encoder clio does not ship says a unit bears on a message,
chosen as the shipped encoders' were: on the dev sets A and E (``benches/recall_dev``), the
lowest cosine at which their 24 unrelated messages get no more blocks than :data:`FALSE_BUDGET`
(MiniLM: 0.42, all-mpnet-base-v2: 0.44; docs/memory.md).

The data (``clio/data/encoder-calibration.json.gz``, written by
``benches/recall_dev/calibration_data.py``) holds every message of the two sets with the candidate
units the product's search found for it, and for each unit what the decision reads besides the
cosine (whether the words alone quote it, whether it only repeats the message, its words' score,
whether it is the fact's unit). Calibrating a model embeds the messages and the units' chunks
(:func:`clio.recall.encoder.chunks`, as the helper does), ~1,900 texts once, and sweeps the
threshold: :func:`choose` is pure. Used for a model served by the user's endpoint
(:mod:`clio.recall.encoder_endpoint`), whose cosines no one measured.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "encoder-calibration.json.gz"
DEV_SETS = ("set_a", "set_e")
# The unrelated messages of A and E given a block at most: the count of both shipped encoders at
# the thresholds chosen for them (MiniLM 0.42, mpnet 0.44: 1 of 24 since a unit that cannot hold
# the kind of answer asked is not quoted by meaning, clio.recall.answer_kind; 2 before, the same
# thresholds: MiniLM calibrates to 0.42 and mpnet to 0.43 either way)
FALSE_BUDGET = 1
SWEEP = tuple(x / 100 for x in range(10, 100))
BATCH = 64


@dataclass(frozen=True)
class Figures:
    same: int
    reworded: int
    false_blocks: int


def load(path: Path = DATA_FILE) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    return data


def figures(data: dict[str, Any], cosines: Sequence[Sequence[float]], t: float) -> Figures:
    """The decision at threshold ``t`` over the data's messages, ``cosines[i][j]`` the best cosine
    of message i with its candidate j: a unit that could hold the kind of answer asked
    (:mod:`clio.recall.answer_kind`) is quoted when the words quote it (its cosine at least
    :data:`clio.recall.relevance.WORDS_FLOOR_SHARE` of ``t``), or (not an order of new work) its
    cosine reaches ``t``; a fact counts when its unit is among those the block
    quotes (:data:`clio.recall.auto.MAX_HITS`, the best first)."""
    from clio.recall.auto import MAX_HITS  # not at import: a run reads the kept threshold only
    from clio.recall.relevance import quoted_at

    got = {"same": 0, "reworded": 0, "unrelated": 0}
    for probe, cos in zip(data["probes"], cosines, strict=True):
        kept = [
            (u["score"] + c, u["fact"])
            for u, c in zip(probe["units"], cos, strict=True)
            if not u["skip"] and u.get("typed", True) and quoted_at(u["words"], probe["task"], c, t)
        ]
        kept.sort(key=lambda x: -x[0])
        kind = probe["kind"]
        got[kind] += bool(kept) if kind == "unrelated" else any(fact for _, fact in kept[:MAX_HITS])
    return Figures(got["same"], got["reworded"], got["unrelated"])


def choose(data: dict[str, Any], cosines: Sequence[Sequence[float]]) -> float:
    """The lowest threshold of :data:`SWEEP` at which the unrelated messages get at most
    :data:`FALSE_BUDGET` blocks."""
    for t in SWEEP:
        if figures(data, cosines, t).false_blocks <= FALSE_BUDGET:
            return t
    return SWEEP[-1]


def best_cosines(data: dict[str, Any], embed: Callable[[list[str]], np.ndarray]) -> list[list[float]]:
    """Each message's best cosine with each candidate unit (any chunk of any of its texts), with
    ``embed`` (normalised rows), every text embedded once, in batches of :data:`BATCH`."""
    import numpy as np

    from clio.recall.encoder import chunks

    pieces = [chunks(t) for t in data["texts"]]
    wanted = sorted({c for cs in pieces for c in cs} | {p["text"] for p in data["probes"]}, key=len)
    vec: dict[str, np.ndarray] = {}
    for i in range(0, len(wanted), BATCH):
        batch = wanted[i : i + BATCH]
        vec.update(zip(batch, embed(batch), strict=True))
    out = []
    for probe in data["probes"]:
        q = vec[probe["text"]]
        row = []
        for unit in probe["units"]:
            cs = [c for ti in unit["parts"] for c in pieces[ti]]
            row.append(float(max((float(np.dot(vec[c], q)) for c in cs), default=0.0)))
        out.append(row)
    return out


def calibrate(embed: Callable[[list[str]], np.ndarray], path: Path = DATA_FILE) -> tuple[float, Figures]:
    """The threshold for the encoder ``embed`` and the dev figures at it."""
    data = load(path)
    cos = best_cosines(data, embed)
    t = choose(data, cos)
    return t, figures(data, cos, t)


# -- the thresholds chosen, per user ----------------------------------------------------------------
STORE_NAME = "encoder-calibration.json"  # in $CLIO_HOME: model id -> its threshold and figures


def stored(home: Path, model_id: str) -> tuple[float, int] | None:
    """The threshold and width kept for ``model_id`` in ``home``, or None (not calibrated, or the
    file unreadable: it is calibrated again)."""
    try:
        entry = json.loads((home / STORE_NAME).read_text(encoding="utf-8")).get(model_id)
        return float(entry["cosine_ask"]), int(entry["dim"])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def store(home: Path, model_id: str, cosine_ask: float, dim: int, dev: Figures) -> None:
    """Keep ``model_id``'s threshold (merged into what the file holds)."""
    import time

    from clio.store.atomic import atomic_write_json

    path = home / STORE_NAME
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        kept = kept if isinstance(kept, dict) else {}
    except (OSError, ValueError):
        kept = {}
    kept[model_id] = {
        "cosine_ask": cosine_ask, "dim": dim, "calibrated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "dev": {"same": dev.same, "reworded": dev.reworded, "false_blocks": dev.false_blocks, "of": "12/12/24"},
    }  # fmt: skip
    atomic_write_json(path, kept)
