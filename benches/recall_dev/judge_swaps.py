"""Experiment (not the product), stop 79: near misses made by swapping a name. The judge reads a
question about a sibling of what a unit settled ("how many partitions does events.invalid.v2
have" for the unit that set events.raw's) nearly as it reads the question the unit answers:
docs/memory.md, "A name swapped".

``swaps`` takes the written items (``judge_data/part_N.json``) and, for each answer, makes one
question the answer does not answer: a name of the question that the answer's unit also holds
(a word with a digit, with a dot, colon, slash, underscore or hyphen inside, or a word of three
letters or more that is not an everyday English one, :mod:`clio.recall.common_words`, its
inflections folded) is replaced everywhere in the question, a number by another (+1 to +5), any
other name by one of the same form from another project's questions that the unit does not
hold. Each swap is a row ``[question, unit as the judge reads it, 0]``, as
``judge_experiment.py pairs`` writes them; ``--add`` appends them to a pairs file's rows::

    python judge_swaps.py swaps OUT.json judge_data/part_1.json ... [--add PAIRS.json] [--seed 79]
    python judge_swaps.py probe JUDGE-int8.onnx judge_data/part_3.json judge_data/part_27.json

``probe`` reads a judge on the swaps of held-out parts: how many answers it puts at 0 or more
before and after their name is swapped.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))
import judge_experiment as J  # noqa: E402

from clio.recall.common_words import is_common  # noqa: E402
from clio.recall.verdict import judge_text  # noqa: E402

WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:-]*[A-Za-z0-9]")
ENDINGS = ("ies", "es", "s", "ed", "ing", "ly", "er")


def everyday(word: str) -> bool:
    """An everyday English word, or one of its inflections ("partitions", "expired")."""
    w = word.lower()
    for end in ENDINGS:
        if w.endswith(end) and len(w) - len(end) >= 3:
            stem = w[: -len(end)]
            if is_common(stem) or is_common(stem + "e") or (end == "ies" and is_common(stem + "y")):
                return True
    return is_common(w)


def form(word: str) -> str | None:
    """A name's form ("number", "joined", "word"), or None for a word that names nothing."""
    if any(c.isdigit() for c in word):
        return "number"
    if any(c in "._:/-" for c in word):
        return "joined"
    if word.isalpha() and len(word) >= 3 and not everyday(word):
        return "word"
    return None


def swapped(question: str, unit: str, pool: dict[str, list[str]], rng: random.Random) -> str | None:
    """``question`` with one of its names that ``unit`` holds replaced everywhere, or None."""
    low = unit.lower()
    names = sorted({w for w in WORD.findall(question) if form(w) and w.lower() in low})
    if not names:
        return None
    name = rng.choice(names)
    kind = form(name)
    if kind == "number":
        new = re.sub(r"\d+", lambda m: str(int(m.group()) + rng.randint(1, 5)).zfill(len(m.group())), name)
    else:
        choices = [w for w in pool[kind or ""] if w.lower() not in low and w.lower() != name.lower()]
        if not choices:
            return None
        new = rng.choice(choices)
    return re.sub(rf"(?<![\w.:/-]){re.escape(name)}(?![\w:/-]|\.\w)", new, question, flags=re.I)


def made(files: list[Path], seed: int) -> list[tuple[dict[str, Any], str]]:
    """(item, its swapped question) for every answer with a name to swap, in the files' order."""
    rng = random.Random(seed)
    items = [it for f in files for it in json.loads(f.read_text())]
    named: dict[str, set[tuple[str, str]]] = {"joined": set(), "word": set()}  # (name, project) by form
    for it in items:
        for w in WORD.findall(it["question"]):
            kind = form(w)
            if kind in named:
                named[kind].add((w, it["project"]))
    everywhere = {kind: sorted(names) for kind, names in named.items()}
    out = []
    for it in items:
        if not it["answer"]:
            continue
        pool = {kind: [w for w, p in names if p != it["project"]] for kind, names in everywhere.items()}
        unit = " ".join(t for _, t in J._item_parts(it["answer"]))
        q = swapped(it["question"], unit, pool, rng)
        if q is not None and q != it["question"]:
            out.append((it, q))
    return out


def swaps(out: Path, files: list[Path], add: Path | None, seed: int) -> None:
    rows: list[list[Any]] = json.loads(add.read_text()) if add is not None else []
    new = [[q, judge_text(J._item_parts(it["answer"]), q), 0] for it, q in made(files, seed)]
    out.write_text(json.dumps(rows + new))
    print(f"{len(new)} swapped questions of {sum(bool(it['answer']) for f in files for it in json.loads(f.read_text()))} answers; {len(rows) + len(new)} rows")


def probe(onnx: Path, files: list[Path], seed: int) -> None:
    judge = J.Judge(onnx)
    for kind in ("same", "reworded"):
        before = after = above = n = 0
        drops = []
        for it, q2 in made(files, seed):
            if it["kind"] != kind:
                continue
            q, parts = it["question"], J._item_parts(it["answer"])
            a = judge.score(q, [judge_text(parts, q)])[0]
            b = judge.score(q2, [judge_text(parts, q2)])[0]
            worst = max(judge.score(q, [judge_text(J._item_parts(u), q) for u in it["near_misses"]]))
            n, before, after, above = n + 1, before + (a >= 0), after + (b >= 0), above + (b > worst)
            drops.append(a - b)
        print(f"{kind:9} {n} answers with a name to swap: at 0 or more {before} -> {after} swapped; "
              f"swapped over the best near miss {above}; logit drop median {statistics.median(drops):.2f}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("swaps", "probe"))
    ap.add_argument("out", type=Path, help="swaps: the rows' file; probe: the judge (int8 onnx)")
    ap.add_argument("parts", type=Path, nargs="+")
    ap.add_argument("--add", type=Path, help="swaps: a pairs file whose rows come first")
    ap.add_argument("--seed", type=int, default=79)
    args = ap.parse_args()
    if args.step == "swaps":
        swaps(args.out, args.parts, args.add, args.seed)
    else:
        probe(args.out, args.parts, args.seed)


if __name__ == "__main__":
    main()
