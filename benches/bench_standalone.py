"""Entries that stand alone (issue 33 item 2): precision and recall of consolidation's user-words
layer (:func:`clio.memory.consolidate.established`, no model) on ``benches/standalone_corpus.json``.

Each case is one user message and the entries it should give, each as the terms it must carry to
read correctly with nothing around it. A stored entry is right when it carries every term of one
wanted entry; precision = right stored / stored, recall = wanted entries given / wanted.
``python benches/bench_standalone.py [--show]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from clio.memory.consolidate import established

CORPUS = Path(__file__).with_name("standalone_corpus.json")


def score(cases: list[dict[str, Any]], show: bool = False) -> dict[str, float]:
    stored = right = wanted = given = 0
    for case in cases:
        part = [{"role": "user", "content": case["text"]}, {"role": "assistant", "content": "OK."}]
        got = [statement.lower() for _kind, _key, statement in established(part)]
        want: list[list[str]] = case["want"]
        ok = [any(all(t in g for t in w) for w in want) for g in got]
        hit = [any(all(t in g for t in w) for g in got) for w in want]
        stored, right = stored + len(got), right + sum(ok)
        wanted, given = wanted + len(want), given + sum(hit)
        if show and (not all(ok) or not all(hit)):
            print(f"- {case['text']}\n    stored {got}\n    wanted {want}")
    return {
        "stored": stored, "right": right, "wanted": wanted, "given": given,
        "precision": right / stored if stored else 1.0, "recall": given / wanted if wanted else 1.0,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="print the cases not fully right")
    args = parser.parse_args()
    cases = json.loads(CORPUS.read_text(encoding="utf-8"))["cases"]
    r = score(cases, args.show)
    print(
        f"{len(cases)} messages: stored {r['stored']}, right {r['right']} (precision {r['precision']:.0%}); "
        f"wanted {r['wanted']}, given {r['given']} (recall {r['recall']:.0%})"
    )


if __name__ == "__main__":
    main()
