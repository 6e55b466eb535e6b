"""Experiment and reading (stop 88): a model of the user's endpoint as the automatic recall's judge
(``recall_judge_model``, :mod:`clio.recall.model_judge`), read on probe sets with readers standing
in for that model (docs/memory.md, "A model of your endpoint as the judge").

``export`` writes, for each message of the sets whose units the judge reads, the request
:func:`clio.recall.model_judge.messages` builds (its system message once, in ``SYSTEM.txt``; each
item's user message), shuffled and split into ``--parts`` files for readers, and a key kept apart.
``score`` reads the readers' replies (``replies*.json``: id -> the one reply line) with
:func:`clio.recall.model_judge.read` and counts, per set, what the block quotes as the product
does (same words / reworded / unrelated given a block; a message with no units to judge, or whose
reply does not read, keeps the shipped decision), beside the shipped decision replayed on the same
candidates (the product's own choice over the scores stored with them: its figures equal the product's readings) and the facts
among the units sent::

    python model_judge_reading.py export --dir CANDIDATES_DIR --out DIR --parts 4 [--units 8 | --pool] twentyninth thirtieth
    python model_judge_reading.py score --dir CANDIDATES_DIR --out DIR [--units 8 | --pool] twentyninth thirtieth

``CANDIDATES_DIR`` holds ``NAME.pkl`` from ``judge_experiment.py candidates`` (the candidates as the
product scores them, the helper's judge on). Readers see ``SYSTEM.txt`` and their part only.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import judge_experiment as J  # noqa: E402

from clio.recall import auto, model_judge  # noqa: E402
from clio.recall.verdict import hit_text  # noqa: E402


def stored(directory: Path, name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pickle.loads((directory / f"{name}.pkl").read_bytes())
    return rows


def sent(r: dict[str, Any], top: int, pool: bool) -> tuple[list[Any], list[int], list[str]]:
    """(the units a request reads from, the indexes sent, their texts): the message's admissible
    units, up to ``top`` (as shipped), or with ``pool`` the memory tool's first units, every one
    (stop 89's second rule; the candidates dumped with ``judge_experiment.py candidates --pool``)."""
    query = r["probe"]["text"]
    if pool:
        units = r.get("pool") or []
        return units, list(range(len(units))), [hit_text(h, query) for h in units]
    picked, texts = model_judge.units(r["hits"], query, top) if r["hits"] else ([], [])
    return r["hits"], picked, texts


def export(directory: Path, out: Path, sets: list[str], parts: int, seed: int, top: int, pool: bool = False) -> None:
    out.mkdir(parents=True, exist_ok=True)
    items, key = [], {}
    for name in sets:
        for row, r in enumerate(stored(directory, name)):
            _, picked, texts = sent(r, top, pool)
            if not picked:
                continue
            mid = f"r{len(items) + 1:03d}"
            items.append({"id": mid, "user": model_judge.messages(r["probe"]["text"], texts)[1]["content"]})
            key[mid] = {"set": name, "row": row, "picked": picked}
    random.Random(seed).shuffle(items)
    for c in range(parts):
        (out / f"part{c + 1}.json").write_text(json.dumps(items[c::parts], indent=1))
    (out / "SYSTEM.txt").write_text(model_judge.INSTRUCTIONS)
    (out / "key.json").write_text(json.dumps(key))
    print(f"{len(items)} requests in {parts} parts: {out}")


def score(directory: Path, out: Path, sets: list[str], top: int = model_judge.UNITS, pool: bool = False) -> None:
    key = json.loads((out / "key.json").read_text())
    replies: dict[str, str] = {}
    for f in sorted(out.glob("replies*.json")):
        replies.update(json.loads(f.read_text()))
    by_row = {(v["set"], v["row"]): (mid, v["picked"]) for mid, v in key.items()}
    arms = ("shipped", "judge model", "facts among the units sent")
    unread: list[str] = []
    total = {a: [0, 0, 0] for a in arms}
    for name in sets:
        counts = {a: {"same": 0, "reworded": 0, "unrelated": 0} for a in arms}
        for row, r in enumerate(stored(directory, name)):
            kind = r["probe"]["kind"]
            # the product's own scores are in the stored hits (the helper's judge on): its choice
            shipped = auto.choose(r["hits"])
            got = {arm: shipped for arm in arms}
            if (name, row) in by_row:
                mid, picked = by_row[(name, row)]
                units = sent(r, top, pool)[0]
                picks = model_judge.read(replies[mid], len(picked)) if mid in replies else None
                if picks is None:
                    unread.append(mid)
                else:
                    got["judge model"] = [units[picked[i]] for i in picks]
                got["facts among the units sent"] = [units[i] for i in picked]
            if kind == "unrelated":
                got["facts among the units sent"] = []
            for arm in arms:
                if arm == "facts among the units sent":
                    # unit by unit: the block of twenty units is cut to the block's room, which
                    # left facts out that the units held (stop 93)
                    counts[arm][kind] += any(J.counted(r, [u]) for u in got[arm])
                else:
                    counts[arm][kind] += J.counted(r, got[arm])
        for arm in arms:
            c = counts[arm]
            print(f"{name} {arm}: {c['same']} / {c['reworded']} / {c['unrelated']}")
            total[arm] = [t + c[k] for t, k in zip(total[arm], ("same", "reworded", "unrelated"), strict=True)]
    for arm in arms:
        print(f"all {arm}: " + " / ".join(map(str, total[arm])))
    print(f"requests {len(key)}, replies {len(replies)}, not read (the shipped decision kept): {len(unread)} {unread[:10]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("export", "score"))
    ap.add_argument("sets", nargs="+")
    ap.add_argument("--dir", type=Path, required=True, help="the stored candidates (judge_experiment.py candidates)")
    ap.add_argument("--out", type=Path, required=True, help="the requests, the key and the readers' replies")
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--seed", type=int, default=8829)
    ap.add_argument("--units", type=int, default=model_judge.UNITS, help="the units a request sends (the admissible ones by cosine)")
    ap.add_argument("--pool", action="store_true", help="the memory tool's first units instead (stop 89's second rule)")
    args = ap.parse_args()
    if args.step == "export":
        export(args.dir, args.out, args.sets, args.parts, args.seed, args.units, args.pool)
    else:
        score(args.dir, args.out, args.sets, args.units, args.pool)


if __name__ == "__main__":
    main()
