"""Experiment (not the product), stop 85: two changes to the words the decision's features read,
measured on stored candidates before either was built (docs/memory.md, "The words' features:
two changes measured and not built").

``stems``: the features match a message's words with a unit's through the light stemmer
(:func:`clio.recall.terms.excerpt_stem`), which splits some families the index's porter stemmer
joins ("connection" / "connect", "retry" / "retries", "eviction" / "evicts"). For every stored
candidate, whether a word of the message that the unit lacks by the light stemmer is held by porter's
(FTS5's own, read back through ``fts5vocab``), counted separately for the fact's units of related
messages, the other units of related messages, and the units of unrelated ones: a change worth
building would join words much more often for the first than for the others.

``short-forms``: the judge reads texts with developers' short forms written out
(:mod:`clio.recall.abbreviations`); the features do not. Replays MiniLM's shipped verdict with the
features computed on written-out texts on both sides, against the same replay as stored.

    python feature_variants.py stems CANDIDATES_DIR
    python feature_variants.py short-forms JUDGE-int8.onnx CANDIDATES_DIR

``CANDIDATES_DIR`` holds ``judge_experiment.py candidates`` dumps (``NAME.pkl``).
"""

from __future__ import annotations

import argparse
import collections
import pickle
import sqlite3
import sys
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))

import judge_combine as C  # noqa: E402
import judge_experiment as J  # noqa: E402

from clio.recall import auto  # noqa: E402
from clio.recall import relevance as R  # noqa: E402
from clio.recall.abbreviations import written_out  # noqa: E402
from clio.recall.terms import excerpt_stem, fts_words  # noqa: E402

FITTED = ["second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh", "twelfth",
          "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth"]  # fmt: skip
REPORTED = ["eighteenth", "nineteenth", "twentieth", "twentyfirst", "twentysecond", "twentythird"]


def porter(words: Iterable[str]) -> dict[str, str]:
    """Each word -> its stem as FTS5's porter tokenizer (the index's) makes it."""
    distinct = sorted(set(words))
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(w, tokenize='porter unicode61')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    db.executemany("INSERT INTO t(rowid, w) VALUES (?, ?)", enumerate(distinct, 1))
    out = {distinct[rowid - 1]: term for term, rowid in db.execute("SELECT term, doc FROM v")}
    return {w: out.get(w, w) for w in distinct}


def rows(directory: Path) -> list[dict[str, Any]]:
    return [r for f in sorted(directory.glob("*.pkl")) for r in pickle.loads(f.read_bytes())]


def kind(r: dict[str, Any], h: auto.Hit) -> str:
    if r["probe"]["kind"] == "unrelated":
        return "unrelated messages' units"
    return "related messages' fact units" if C.is_fact(r, h) else "related messages' other units"


def stems(directory: Path) -> None:
    stored = rows(directory)
    vocab = porter(w for r in stored for t in (r["probe"]["text"], *(h.text for h in r["hits"])) for w in fts_words(t))
    seen: collections.Counter[str] = collections.Counter()
    joined: collections.Counter[str] = collections.Counter()
    for r in stored:
        text = r["probe"]["text"]
        spelled = R.spellings(text)
        own = R.own_words(text)
        for h in J.searched(r):
            words = fts_words(h.text)
            light, stemmed = {excerpt_stem(w) for w in words}, {vocab[w] for w in words}
            k = kind(r, h)
            seen[k] += 1
            joined[k] += any(s not in light and any(vocab[w] in stemmed for w in spelled.get(s, [s])) for s in own)
    for k in sorted(seen):
        print(f"{k}: {joined[k]} of {seen[k]} would hold one more of the message's words ({joined[k] / seen[k]:.1%})")


def short_forms(judge_file: Path, directory: Path) -> None:
    shipped, bar = C.shipped_verdict()

    def refeatured(r: dict[str, Any], out: bool) -> list[auto.Hit]:
        """The probe's stored candidates with their features computed again, written out or as typed."""
        query = written_out(r["probe"]["text"]) if out else r["probe"]["text"]
        words = R.own_words(query)
        dfs, total = C.archive_frequencies(r["set"], written_out if out else None)
        fresh = []
        for h in r["hits"]:
            f = R.features(words, written_out(h.text) if out else h.text, dfs, total, h.features.cosine)
            fresh.append(replace(h, features=f, score=R.score(f)))
        return fresh

    judge = J.Judge(judge_file)
    for label, names in (("second to seventeenth", FITTED), ("eighteenth to twenty-third", REPORTED), ("the ten sets' own", ["own"])):
        loaded = C.load(directory, names, judge, 3)
        stored = [row for n in names for row in loaded[n]]
        print(f"{label}, as stored: {C.replay(stored, shipped, bar)}")
        for out in (False, True):
            again = []
            for r, hits, logits in stored:
                fresh = refeatured(r, out)
                at = {id(h): i for i, h in enumerate(r["hits"])}
                again.append(({**r, "hits": fresh}, [fresh[at[id(h)]] for h in hits], logits))
            what = "written out on both sides" if out else "features computed again as typed"
            print(f"{label}, {what}: {C.replay(again, shipped, bar)}  (same-words facts, reworded facts, false blocks)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("stems", "short-forms"))
    ap.add_argument("inputs", type=Path, nargs="+")
    args = ap.parse_args()
    if args.step == "stems":
        stems(args.inputs[0])
    else:
        short_forms(args.inputs[0], args.inputs[1])


if __name__ == "__main__":
    main()
