"""The reader of orders of new work (:func:`clio.recall.relevance.is_task`), on its own: of the
messages labelled orders, how many it reads as orders; of the questions, problem reports and
acknowledgements, how many it misreads as orders (each then pulls no automatic recall block, so a
misread question can cost a fact). Pure: no server, no index.

The data are ``recall_dev/order_reader.json``: three lists written by helpers blind to clio's code
(stop 60's varied forms and natural week, stop 61's messages that all end in a question mark), per
half where a list has them. Figures in docs/memory.md ("Orders read by their form", "Orders pull
no block").

    python benches/bench_order_reader.py [--misses]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clio.recall.relevance import is_task  # noqa: E402

DATA = Path(__file__).resolve().parent / "recall_dev" / "order_reader.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--misses", action="store_true", help="list the orders not read and the messages misread")
    args = ap.parse_args()
    lists = json.loads(DATA.read_text(encoding="utf-8"))["lists"]
    for name, items in lists.items():
        for half in ("tune", "report"):
            part = [m for m in items if m["half"] == half]
            if not part:
                continue
            counts = []
            for label, what in (("order", "orders read"), ("ask", "questions and reports read as orders"), ("other", "acknowledgements read as orders")):
                group = [m for m in part if m["label"] == label]
                if group:
                    counts.append(f"{what} {sum(is_task(m['text']) for m in group)}/{len(group)}")
            print(f"{name} {half}: {', '.join(counts)}")
            if args.misses:
                for m in part:
                    if is_task(m["text"]) != (m["label"] == "order"):
                        print(f"  {m['label']}: {m['text'][:110]!r}")


if __name__ == "__main__":
    main()
