"""Experiment (not the product), stop 89: the memory tool's results on the probe sets' related
messages, ordered by a strong reader standing in for the judge model (docs/memory.md, "A model of
your endpoint orders the memory tool's results").

``export`` builds each set's archive and the user's encoder helper as ``bench_auto_recall.py
--encoder --tool`` does, runs ``recall_sessions``' search as the product runs it with the judge
model named (:func:`clio.recall.tool_search.search_with_meaning` for
:data:`clio.recall.model_order.ORDER_UNITS` units, the packaged judge re-ranking the first), and
writes the judge model's exact request for each related message in parts; ``score`` reads the
stand-ins' replies with the product's reader and counts the fact's unit in the first three, as
searched and as ordered::

    python benches/recall_dev/tool_order_reading.py export DIR PROBES.json ... [--parts 4] [--units 20]
    python benches/recall_dev/tool_order_reading.py score DIR   # DIR/replies_K.json: {"id": "ORDER: ..."}
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))
import bench_auto_recall as B  # noqa: E402

from clio.recall import model_order  # noqa: E402
from clio.recall.tool_search import search_with_meaning  # noqa: E402


def export(out: Path, probe_files: list[Path], parts: int, seed: int, units: int = model_order.ORDER_UNITS) -> None:
    items: list[dict[str, Any]] = []
    for probe_file in probe_files:
        probes = json.loads(probe_file.read_text(encoding="utf-8"))
        for name in sorted({f"set_{p['set']}" for p in probes}):
            data = B.load_set(name)
            data["probes"] = [p for p in probes if f"set_{p['set']}" == name and p["kind"] != "unrelated"]
            with tempfile.TemporaryDirectory() as tmp:
                index, ids, clio_dir = B.indexed(data, Path(tmp))
                client = B.embedded_helper(Path(tmp) / "home", clio_dir)
                client.timeout_s = 5.0  # the tool's figures, not its latency
                for k, p in enumerate(data["probes"]):
                    sid = ids[p["session"]]
                    hits = search_with_meaning(index.search, p["text"], units, client, max_sessions=10, with_text=True, texts=True)
                    facts = [h["session_id"] == sid and B.has(str(h.get("text", "")), p["needles"]) for h in hits]
                    items.append({
                        "id": f"{probe_file.stem}:{name}:{k}", "kind": p["kind"], "facts": facts,
                        "messages": model_order.order_messages(p["text"], [model_order.hit_passage(h) for h in hits]) if len(hits) > 1 else None,
                    })  # fmt: skip
                B.stop_helper(client)
                index.close()
    out.mkdir(parents=True, exist_ok=True)
    (out / "key.json").write_text(json.dumps([{k: v for k, v in it.items() if k != "messages"} for it in items]))
    asked = [it for it in items if it["messages"] is not None]
    random.Random(seed).shuffle(asked)
    for k in range(parts):
        (out / f"part_{k + 1}.json").write_text(json.dumps([{"id": it["id"], "messages": it["messages"]} for it in asked[k::parts]], indent=1))
    print(f"{len(items)} related messages, {len(asked)} requests, {parts} parts, in {out}")


def score(out: Path) -> None:
    key = json.loads((out / "key.json").read_text())
    replies: dict[str, str] = {}
    for f in sorted(out.glob("replies_*.json")):
        replies.update(json.loads(f.read_text()))
    counts: dict[str, list[int]] = {}
    unread = 0
    for it in key:
        facts = it["facts"]
        picks = model_order.read_order(replies.get(it["id"], ""), len(facts)) if len(facts) > 1 else []
        if picks is None:
            unread += 1
            picks = []
        row = counts.setdefault(it["kind"], [0, 0, 0, 0])
        row[0] += 1
        row[1] += any(facts[:3])
        row[2] += any(model_order.ordered(facts, picks)[:3])
        row[3] += any(facts)
    print(f"{len(key)} related messages, {len(replies)} replies, {unread} not read as an ORDER line (the search's order stands)")
    for kind, (n, searched, ordered, among) in sorted(counts.items()):
        print(f"{kind}: the fact in the top 3, as searched {searched}/{n}, as ordered {ordered}/{n}; among the units sent {among}/{n}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("export", "score"))
    ap.add_argument("out", type=Path)
    ap.add_argument("probes", type=Path, nargs="*")
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--seed", type=int, default=89)
    ap.add_argument("--units", type=int, default=model_order.ORDER_UNITS, help="export: the search's first units sent (at most 26 letters)")
    args = ap.parse_args()
    if args.step == "export":
        export(args.out, args.probes, args.parts, args.seed, args.units)
    else:
        score(args.out)


if __name__ == "__main__":
    main()
