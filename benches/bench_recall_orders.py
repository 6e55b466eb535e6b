"""Automatic recall on orders of new work: how many orders that need something settled in an
earlier session get a block quoting it, and how many that need nothing get a block at all.

The data are ``recall_dev/orders.json`` (stop 61): for seven of the labelled sets (B, C, D, F, H, I,
J), 16 orders each written by a helper that read only the set's sessions: 8 that need a convention,
a pin, a value or a contact settled there ("drop events.raw to 24 partitions" against the session
that chose 48 and why), 8 that need nothing ("add table tests for the validator rules"), each list
split into a tune half and a report half. Each order runs the product's per-message path over its
set's archive, as ``bench_auto_recall.py`` runs the sets' probes (``--encoder``: with the helper's
cosines). Figures in docs/memory.md ("Orders pull no block").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_auto_recall as B  # noqa: E402

ORDERS = B.SETS / "orders.json"


def figures(
    items: list[dict[str, Any]], encoder: bool, show: bool, times: list[float] | None = None
) -> dict[tuple[str, str], list[int]]:
    """(half, kind) -> [blocks that count, orders]: for 'needs' a block quoting the settled thing
    (a needle, in a unit of its session), for 'new' any block. ``times``: each order's step, in ms,
    appended (an order read as one is not searched: ``auto_turn.plan``, as ``B.step`` mirrors)."""
    out: dict[tuple[str, str], list[int]] = {}
    for name in sorted({o["set"] for o in items}):
        with tempfile.TemporaryDirectory() as tmp:
            index, ids, clio_dir = B.indexed(B.load_set(name), Path(tmp))
            client = B.embedded_helper(Path(tmp) / "home", clio_dir) if encoder else None
            if client is not None:
                client.timeout_s = 5.0  # the figures, not the latency
            try:
                for o in (o for o in items if o["set"] == name):
                    started = time.perf_counter()
                    _, chosen, block = B.step(index, o["text"], client)
                    if times is not None:
                        times.append((time.perf_counter() - started) * 1000)
                    if o["kind"] == "new":
                        counts = bool(block)
                    else:
                        counts = B.quotes_fact(block, chosen, ids[o["session"]], o["needles"])
                    row = out.setdefault((o["half"], o["kind"]), [0, 0])
                    row[0] += counts
                    row[1] += 1
                    if show and (counts if o["kind"] == "new" else not counts):
                        why = chosen[0].why() if chosen else "no block"
                        print(f"  {name} {o['half']} {o['kind']}: {o['text'][:90]!r} ({why})")
            finally:
                if client is not None:
                    B.stop_helper(client)
                index.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encoder", action="store_true", help="the decision with the encoder helper's cosines")
    ap.add_argument("--models-from", type=Path, metavar="CLIO_HOME", help="with --encoder: the models installed there")
    ap.add_argument("--misses", action="store_true", help="list the needs not quoted and the new orders given a block")
    args = ap.parse_args()
    B.MODELS_FROM[0] = args.models_from
    items = json.loads(ORDERS.read_text(encoding="utf-8"))["orders"]
    times: list[float] = []
    out = figures(items, args.encoder, args.misses, times)
    for half in ("tune", "report"):
        needs, new = out.get((half, "needs"), [0, 0]), out.get((half, "new"), [0, 0])
        print(f"{half}: orders that need a settled thing quoted {needs[0]}/{needs[1]}; orders that need nothing given a block {new[0]}/{new[1]}")
    cut = statistics.quantiles(times, n=20)
    load = os.getloadavg()[0]
    print(f"per order: p50 {statistics.median(times):.1f} ms, p95 {cut[18]:.1f} ms over {len(times)} (load {load:.2f})")


if __name__ == "__main__":
    main()
