"""Experiment (not the product), stop 78: a judge of the packaged one's size (MiniLM-L6) taught by
the bigger mpnet judge (stop 76's, 900 steps) rather than by the labels alone: docs/memory.md,
"The small judge taught by the big one".

``teach`` scores pairs (``judge_experiment.py pairs``' rows: message, unit, is-the-answer) with the
teacher, exactly as its readings score (int8, one pair a call, one thread: a padded batch moves an
int8 logit by up to 0.5), and writes each row with the teacher's logit as a fourth field. Every
answer is kept and ``--no`` near misses are drawn with ``--seed`` (the same draw in every part), so
two processes can share the work (``--part 1/2`` and ``--part 2/2``); ``merge`` joins the parts.
``judge_experiment.py train --alpha A`` then trains on the taught rows against
``(1 - A) * label + A * sigmoid(teacher)``::

    python judge_distill.py teach OUT.1.json PAIRS.json --teacher T-int8.onnx --base MPNET --part 1/2
    python judge_distill.py merge OUT.json OUT.1.json OUT.2.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import judge_experiment as J  # noqa: E402


def drawn(rows: list[list], no: int, seed: int) -> list[list]:
    """Every answer, and ``no`` near misses drawn with ``seed``, in the pairs file's order."""
    misses = [k for k, r in enumerate(rows) if not r[2]]
    keep = set(random.Random(seed).sample(misses, min(no, len(misses))))
    return [r for k, r in enumerate(rows) if r[2] or k in keep]


def teach(out: Path, pairs_file: Path, teacher: Path, base: Path, part: str, no: int, seed: int) -> None:
    k, n = (int(x) for x in part.split("/"))
    rows = drawn(json.loads(pairs_file.read_text()), no, seed)[k - 1 :: n]
    judge = J.Judge(teacher, base)
    started = time.time()
    taught = []
    for i, (q, u, c) in enumerate(rows, 1):
        taught.append([q, u, c, judge.score(q, [u])[0]])
        if i % 500 == 0:
            print(f"{i}/{len(rows)} {time.time() - started:.0f} s", flush=True)
    out.write_text(json.dumps(taught))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("teach", "merge"))
    ap.add_argument("out", type=Path)
    ap.add_argument("inputs", type=Path, nargs="+")
    ap.add_argument("--teacher", type=Path, help="teach: the teacher judge's int8 ONNX file")
    ap.add_argument("--base", type=Path, help="teach: the teacher's encoder folder (its tokenizer)")
    ap.add_argument("--part", default="1/1", help="teach: this process's share, K/N")
    ap.add_argument("--no", type=int, default=10_000, help="teach: how many near misses are drawn")
    ap.add_argument("--seed", type=int, default=78)
    args = ap.parse_args()
    if args.step == "teach":
        teach(args.out, args.inputs[0], args.teacher, args.base, args.part, args.no, args.seed)
    else:
        args.out.write_text(json.dumps([r for f in args.inputs for r in json.loads(f.read_text())]))


if __name__ == "__main__":
    main()
