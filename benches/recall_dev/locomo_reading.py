"""Experiment (not the product), stop 89: does a strong reader, ordering the memory tool's first
units, reach LoCoMo's R@10 target where the search's order does not? (docs/memory.md, "A model
of your endpoint orders the memory tool's results".)

``export`` runs the memory tool's search as shipped with the helper (``recall_locomo.py``'s
``clio-hyb+enc``: hybrid, the helper's nearest fused in, the refine stages, the packaged judge
re-ranking the first units) on a seeded sample of each dev half's questions, asks for
:data:`clio.recall.model_order.ORDER_UNITS` units, and writes the judge model's exact request for
each (:func:`clio.recall.model_order.order_messages`) in parts, for readers standing in for the
model (each reply: one ``ORDER:`` line). ``score`` reads the replies with the product's reader
(:func:`clio.recall.model_order.read_order`) and prints R@5 / R@10 (a unit of n messages counts
as n of the k shown) as shipped and as ordered, per half and per category::

    python benches/recall_dev/locomo_reading.py export DIR [--per-half 100] [--parts 5] [--seed 89]
    python benches/recall_dev/locomo_reading.py score DIR   # DIR/replies_K.json: {"id": "ORDER: ..."}

The data is read where it lies (``../shared/data/locomo``); what is written goes to DIR, outside
the repository.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))
import recall_locomo as L  # noqa: E402

from clio.recall import model_order  # noqa: E402
from clio.recall.index import RecallIndex  # noqa: E402


def export(out: Path, per_half: int, parts: int, seed: int, data_path: Path) -> None:
    data = L.load(data_path)
    L.JUDGE[0] = True
    items: list[dict[str, Any]] = []
    for half in (0, 1):
        convs = data[half::2]
        pool = []
        for ci, rec in enumerate(convs):
            src = L.LocomoSessions(rec["conversation"], L.DOCS["text+caption"])
            known = set(src.dia.values())
            pool += [(ci, qi) for qi, qa in enumerate(rec.get("qa", [])) if L.usable(qa, known)]
        picked = sorted(random.Random(seed + half).sample(pool, min(per_half, len(pool))))
        for ci in sorted({c for c, _ in picked}):
            rec = convs[ci]
            src = L.LocomoSessions(rec["conversation"], L.DOCS["text+caption"])
            index = RecallIndex(None, src, embedder=L.embedder(), sync_budget_s=None)
            index.refresh()
            index.sync_vectors()
            nearest = L.Nearest(index)
            weight, weak = L.meaning_weight(), L.weak_words_weight()
            for c, qi in picked:
                if c != ci:
                    continue
                qa = rec["qa"][qi]
                q = str(qa["question"])
                hits = index.search(
                    q, max_sessions=1000, max_results=model_order.ORDER_UNITS, mode="hybrid", refine=True,
                    nearby=functools.partial(nearest, q), fuse_nearby=True, meaning_weight=weight, weak_words_weight=weak,
                    whole_units=L.WHOLE_UNITS[0], texts=True,
                )  # fmt: skip
                hits = L.rerank(q, hits)
                units = [[src.dia.get((h["session_id"], s), "?") for s in h.get("seqs", [h["seq"]])] for h in hits]
                items.append({
                    "id": f"h{half}c{ci}q{qi}", "half": half, "category": int(qa.get("category", 0)),
                    "evidence": list(qa["evidence"]), "units": units,
                    "messages": model_order.order_messages(q, [model_order.hit_passage(h) for h in hits]),
                })  # fmt: skip
            index.close()
    out.mkdir(parents=True, exist_ok=True)
    (out / "key.json").write_text(json.dumps([{k: v for k, v in it.items() if k != "messages"} for it in items]))
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)  # each part holds both halves
    for k in range(parts):
        mine = [items[i] for i in order[k::parts]]
        (out / f"part_{k + 1}.json").write_text(json.dumps([{"id": it["id"], "messages": it["messages"]} for it in mine], indent=1))
    print(f"{len(items)} questions, {parts} parts, in {out}")


def recall_at(units: list[list[str]], evidence: set[str], k: int) -> float:
    return len(evidence & L.shown(units, k)) / len(evidence)


def score(out: Path) -> None:
    key = {it["id"]: it for it in json.loads((out / "key.json").read_text())}
    replies: dict[str, str] = {}
    for f in sorted(out.glob("replies_*.json")):
        replies.update(json.loads(f.read_text()))
    rows: dict[tuple[int, str], list[tuple[float, ...]]] = {}
    unread = 0
    for qid, it in key.items():
        units, ev = it["units"], set(it["evidence"])
        picks = model_order.read_order(replies.get(qid, ""), len(units))
        if picks is None:
            unread += 1
            picks = []
        ordered = model_order.ordered(units, picks)
        # the ceiling: the units holding evidence first, the fewest messages first
        best = sorted(units, key=lambda u: (not (set(u) & ev), len(u) if set(u) & ev else 0))
        row = (
            recall_at(units, ev, 5), recall_at(units, ev, 10), recall_at(ordered, ev, 5), recall_at(ordered, ev, 10),
            recall_at(best, ev, 10),
        )
        for name in ("all", L.CATEGORIES.get(it["category"], "?")):
            rows.setdefault((it["half"], name), []).append(row)
    print(f"{len(key)} questions, {len(replies)} replies, {unread} not read as an ORDER line (the search's order stands)")
    print(f"{'half':>4} {'questions':22} {'n':>4}  shipped R@5 / R@10   ordered R@5 / R@10   ceiling R@10")
    for (half, name), got in sorted(rows.items()):
        m = [statistics.fmean(x[i] for x in got) for i in range(5)]
        print(f"{half:>4} {name:22} {len(got):4d}  {m[0]:.3f} / {m[1]:.3f}       {m[2]:.3f} / {m[3]:.3f}       {m[4]:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("export", "score"))
    ap.add_argument("out", type=Path)
    ap.add_argument("--per-half", type=int, default=100)
    ap.add_argument("--parts", type=int, default=5)
    ap.add_argument("--seed", type=int, default=89)
    ap.add_argument("--data", type=Path, default=L.DEFAULT_DATA)
    args = ap.parse_args()
    if args.step == "export":
        export(args.out, args.per_half, args.parts, args.seed, args.data.resolve())
    else:
        score(args.out)


if __name__ == "__main__":
    main()
