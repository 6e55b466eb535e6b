"""Experiment (not the product), stop 65: the judge's logit as one feature among the decision's
own, in one logistic score, fitted on some probe sets' stored candidates and read on others
(docs/memory.md, "The judge as one feature").

``judge_experiment.py decide`` gave the judge the last word over the units the decision chose
(and one it turned down). Here every admissible unit (:attr:`clio.recall.auto.Hit.admissible`)
gets a probability from a logistic regression on nine features: the judge's logit, the words'
score, the cosine (and whether there was none), the idf-weighted share of the message's words
the unit holds, the rarest of them, the share matched, whether today's decision quotes it, and
whether the encoder's scan alone found it. Only the ``--top`` admissible units by cosine are
judged (a cost of a few units a message, not eight); the others are not quoted. The units at
``t`` or more are quoted, best first, at most :data:`clio.recall.auto.MAX_HITS`, and the
block's facts and false blocks are counted as ``judge_experiment.py decide`` counts them.

    python judge_combine.py JUDGE-int8.onnx --dir CANDIDATES_DIR \\
        --fit second third fourth fifth sixth --report seventh eighth [--top 3] [--context] [--pairs] [--past] [--asked]

Stop 79 added two more arms: ``--context``, five features of how a unit stands among the
message's other candidates (:func:`context`), and ``--pairs``, the products of every two of the
nine features (docs/memory.md, "A unit among the message's other candidates"); ``--past``,
whether the message points at what was said or done before ("A message that points at the past");
``--asked``, how much the message says that the unit lacks, the tenth feature the product reads since stop 79
("The judged score refitted on every read set"). Stop 80's ``--elsewhere`` (measured, not shipped):
the share of the message's words the unit lacks though the archive holds them elsewhere
(:func:`held_elsewhere`, from the set's archive: docs/memory.md, "What the message names that the
unit lacks, held elsewhere"); stop 81 read it again on top of the cap, and with ``--held-df 3``,
a word counted only where at least three archived messages hold it ("Held elsewhere, again, on
top of the cap"; neither shipped). Since stop 81 :func:`replay` also quotes, as
:func:`clio.recall.auto.choose` does, the units that share no word with the message and that its
cosine quotes (stop 67's ``Hit.unworded``): replays before it left them out, and read the ten sets'
own messages 57 / 29 / 8 where the product reads 57 / 31 / 8.

``CANDIDATES_DIR`` holds ``NAME.pkl`` from ``judge_experiment.py candidates`` (the probe sets'
and, as ``own.pkl``, the ten sets' own probes: ``own-dev`` and ``own-reported`` read its two
halves). Thresholds are read on the fitted sets and the reported ones alike; choose on the
first, state the second.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import pickle
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))

import bench_auto_recall as B  # noqa: E402
import judge_experiment as J  # noqa: E402
import numpy as np  # noqa: E402

from clio.recall import auto, relevance, verdict  # noqa: E402
from clio.recall.terms import excerpt_stem, fts_words  # noqa: E402

THRESHOLDS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
Rows = list[tuple[dict[str, Any], list[auto.Hit], list[float]]]
Model = Callable[[np.ndarray], np.ndarray]


def load(directory: Path, names: Sequence[str], judge: J.Judge, top: int) -> dict[str, Rows]:
    """Per set, each probe's admissible units and the judge's logits for the ``top`` of them by
    cosine (-inf for the others: never quoted)."""
    out: dict[str, Rows] = {}
    for name in names:
        rows: Rows = []
        stem, _, side = name.partition("-")  # own-dev, own-reported: the ten sets' own probes, by half
        for r in pickle.loads((directory / f"{stem}.pkl").read_bytes()):
            if side and (f"set_{r['set']}" in B.DEV_SETS) != (side == "dev"):
                continue
            # candidates dumped with the judge on carry the product's verdict: read as dumped without it
            r["hits"] = [replace(h, judge=None, verdict=None) for h in r["hits"]]
            text = r["probe"]["text"]
            hits = [h for h in J.searched(r) if h.admissible]
            chosen = sorted(range(len(hits)), key=lambda i: -(hits[i].features.cosine or -1.0))[:top]
            if any(h.general for h in hits):
                chosen = []  # as clio.recall.verdict.to_judge: a question about a library, its words alone
            logits = [-np.inf] * len(hits)
            for i, s in zip(chosen, judge.score(text, [J.hit_text(hits[i], text) for i in chosen]), strict=True):
                logits[i] = s
            rows.append((r, hits, logits))
        out[name] = rows
    return out


def context(hits: Sequence[auto.Hit], logits: Sequence[float], i: int) -> list[float]:
    """Stop 79 (``--context``): how unit ``i`` stands among the message's other candidates: its
    cosine, logit and words' score less the best of the others' (admissible units; judged ones
    for the logit: 0 when it is the only one judged), whether it is judged alone, and log(1 + the
    number of admissible units)."""

    def cos(h: auto.Hit) -> float:
        return h.features.cosine if h.features.cosine is not None else 0.0

    others = [j for j in range(len(hits)) if j != i]
    judged = [logits[j] for j in others if np.isfinite(logits[j])]
    h = hits[i]
    return [
        cos(h) - max((cos(hits[j]) for j in others), default=0.0),
        logits[i] - max(judged) if judged else 0.0,
        float(not judged),
        h.score - max((hits[j].score for j in others), default=0.0),
        float(np.log1p(len(hits))),
    ]


# stop 79 (``--past``): a message that points at what was said or done before
PAST = re.compile(
    r"\b(?:last time|again|did we|we did|did i|we set|we settled|we decided|we agreed|we picked|we chose|we went with|"
    r"we used|remind me|what was|where was|how did we|why did we|before|earlier|previously|we had|we landed|ended up)\b",
    re.I,
)
@functools.cache
def archive_frequencies(letter: str, written: Callable[[str], str] | None = None) -> tuple[dict[str, int], int]:
    """How many of set ``letter``'s messages hold each word (stemmed as :mod:`clio.recall.relevance`
    stems), and how many messages it has: the index's document frequencies, near enough (the index
    counts by its porter stems, in each message's text and its calls' readable arguments).
    ``written``: each text read through it first (stop 85: short forms written out)."""
    data = json.loads((HERE / f"set_{letter}.json").read_text(encoding="utf-8"))
    counts: collections.Counter[str] = collections.Counter()
    n = 0
    for session in data["sessions"]:
        for m in session["messages"]:
            calls = " ".join(json.dumps(c.get("arguments")) for c in m.get("tool_calls") or ())
            text = f"{m.get('content') or ''} {calls}"
            counts.update({excerpt_stem(w) for w in fts_words(written(text) if written else text)})
            n += 1
    return dict(counts), n


HELD_DF = [1]  # --held-df: in how many archived messages a lacked word must be to count as held elsewhere


def held_elsewhere(letter: str, text: str, hit: auto.Hit) -> float:
    """Stop 80 (``--elsewhere``, measured, not shipped): of the message's own words, idf-weighted
    as :func:`clio.recall.relevance.features` weighs them, the share that the unit lacks though
    other messages of set ``letter``'s archive hold them (:func:`archive_frequencies`), at least
    ``HELD_DF`` of them (stop 81's second form: 3)."""
    dfs, total = archive_frequencies(letter)
    known = {w: relevance.idf(dfs.get(w, 0), total) for w in relevance.own_words(text)}
    have = {excerpt_stem(w) for w in fts_words(hit.text)}
    whole = sum(known.values())
    held = sum(v for w, v in known.items() if w not in have and dfs.get(w, 0) >= HELD_DF[0])
    return held / whole if whole else 0.0


PAIRED = (0, 1, 2, 4, 5, 6, 7, 8)  # the first nine features but "no cosine", whose products --pairs adds
NINE, PRODUCT = list(range(9)), list(range(10))  # the features before stop 79, and the product's since
ELSEWHERE = [*PRODUCT, 44]  # stop 80's --elsewhere: held elsewhere is column 44


def row_features(hits: Sequence[auto.Hit], logits: Sequence[float], i: int, text: str = "", letter: str = "") -> list[float]:
    """Unit ``i``'s features as the product reads them (:func:`clio.recall.verdict.features`: the
    nine of stop 66, then what the message says that the unit lacks, stop 79's ``--asked``), its
    five of context, the 28 products of two of the first nine (all but "no cosine", always 0 here:
    ``--pairs``), whether the message ``text`` points at the past (``--past``) and what it names
    that the unit lacks and set ``letter``'s archive holds (``--elsewhere``); the columns choose."""
    # candidates stored before stop 80 do not know whether their message asks: read from its text
    own = verdict.features(replace(hits[i], asks=relevance.asks_in_any_sentence(text)), logits[i])
    varied = [own[c] for c in PAIRED]
    pairs = [a * b for k, a in enumerate(varied) for b in varied[k + 1 :]]
    lacked = held_elsewhere(letter, text, hits[i]) if letter else 0.0
    return own + context(hits, logits, i) + pairs + [float(bool(PAST.search(text))), lacked]


def is_fact(r: dict[str, Any], h: auto.Hit) -> bool:
    p = r["probe"]
    return p["kind"] != "unrelated" and r["sid"] is not None and B.holds_fact(h, r["sid"], p["needles"])


def fit(
    rows: Rows, columns: list[int], l2: float = 1.0, steps: int = 3000, lr: float = 0.1
) -> tuple[Model, np.ndarray, tuple[np.ndarray, np.ndarray, float]]:
    """Logistic regression on standardized features, by gradient descent, over the judged units
    (a unit is labelled 1 when it is its probe's fact unit, as ``decide`` counts facts); also
    (mean, scale, bias), which with the weights are what the product holds."""
    xs, ys = [], []
    for r, hits, logits in rows:
        for i, (h, s) in enumerate(zip(hits, logits, strict=True)):
            if np.isfinite(s):
                xs.append(row_features(hits, logits, i, r["probe"]["text"], r["set"]))
                ys.append(float(is_fact(r, h)))
    x, y = np.array(xs)[:, columns], np.array(ys)
    mu, sd = x.mean(0), x.std(0) + 1e-9
    z = (x - mu) / sd
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        w -= lr * (z.T @ (p - y) / len(y) + l2 * w / len(y))
        b -= lr * float((p - y).mean())
    return (lambda m: 1 / (1 + np.exp(-(((m[:, columns] - mu) / sd) @ w + b)))), w, (mu, sd, b)


def held(mu: np.ndarray, sd: np.ndarray, w: np.ndarray, b: float) -> str:
    """A fit's mean, scale, weights and bias as :class:`clio.recall.encoder_models.Verdict` holds
    them, to paste there."""
    return (f"  mean={tuple(round(float(x), 4) for x in mu)},\n  scale={tuple(round(float(x), 4) for x in sd)},\n"
            f"  weights={tuple(round(float(x), 4) for x in w)},\n  bias={round(float(b), 4)},")  # fmt: skip


def shipped_verdict() -> tuple[Model, float]:
    """MiniLM's verdict as the product holds it (:func:`clio.recall.verdict.scored` over
    :func:`row_features`' rows), and its bar."""
    from clio.recall.encoder_models import MINILM

    v = MINILM.verdict
    assert v is not None

    def shipped(m: np.ndarray) -> np.ndarray:
        return np.array([verdict.scored(row.tolist(), v) for row in m[:, PRODUCT]])

    return shipped, v.bar


def replay(rows: Rows, model: Model | None, t: float, words_free: bool = False) -> tuple[int, int, int]:
    """(same-words facts quoted, reworded facts quoted, unrelated messages given a block); no
    model: the decision without the judge. ``words_free`` (stop 66, measured, not shipped): the
    units the decision without the judge quotes that share none of the message's words are quoted
    too."""
    tally = {"same": 0, "reworded": 0, "unrelated": 0}
    for r, hits, logits in rows:
        if model is None:
            kept = auto.choose(J.searched(r))
        elif any(np.isfinite(s) for s in logits):
            judged = [i for i, s in enumerate(logits) if np.isfinite(s)]
            probs: Any = model(np.array([row_features(hits, logits, i, r["probe"]["text"], r["set"]) for i in judged])) if judged else []
            kept = [hits[i] for i, q in sorted(zip(judged, probs, strict=True), key=lambda x: -x[1]) if q >= t]
            if words_free:  # what the decision without the judge quotes sharing no word stays
                kept += [h for h in auto.choose(J.searched(r)) if h.features.weighted <= 0.0 and h not in kept]
            # then, as clio.recall.auto.choose, the units that share no word and that the cosine
            # quotes (stop 67, Hit.unworded); replays before stop 81 left them out
            kept += sorted((h for h in hits if h.unworded and h not in kept), key=lambda h: -h.rank)
            kept = kept[: auto.MAX_HITS]
        else:
            kept = auto.choose(J.searched(r))  # nothing judged: the decision without the judge, as the product
        tally[r["probe"]["kind"]] += J.counted(r, kept)
    return tally["same"], tally["reworded"], tally["unrelated"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("judge", type=Path)
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--fit", nargs="+", required=True)
    ap.add_argument("--report", nargs="+", required=True)
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--base", type=Path, help="the judge is on this encoder (its transformers folder: judge_experiment.py), read with its tokenizer")
    ap.add_argument("--words-free", action="store_true", help="a unit the decision without the judge quotes that shares no word of the message is quoted whatever the judge says (stop 66)")
    ap.add_argument("--context", action="store_true", help="also the arms with five features of how a unit stands among the message's other candidates (stop 79)")
    ap.add_argument("--pairs", action="store_true", help="also the arm with the products of every two of the nine features (stop 79)")
    ap.add_argument("--asked", action="store_true", help="also the arm with how much the message says that the unit lacks (unsaid), the product's tenth feature since stop 79")
    ap.add_argument("--elsewhere", action="store_true", help="also the arm with what the message names that the unit lacks and the archive holds elsewhere (stop 80, measured, not shipped)")
    ap.add_argument("--held-df", type=int, default=1, help="--elsewhere: a lacked word counts as held elsewhere where at least this many archived messages hold it (stop 81 read 3)")
    ap.add_argument("--past", action="store_true", help="also the arms with whether the message points at the past ('did we', 'last time', 'again': stop 79)")
    ap.add_argument("--weights", action="store_true", help="print the fitted mean, scale, weights and bias as the product holds them")
    ap.add_argument("--shipped", action="store_true", help="also the replay with MiniLM's verdict as the product holds it (clio.recall.encoder_models)")
    ap.add_argument("--judge-chars", type=int, help="a unit cut to this many characters for the judge, not clio.recall.verdict.JUDGE_CHARS (stop 84)")
    ap.add_argument("--unpadded", action="store_true", help="each pair read at its own length, not padded to 128 tokens as the tokenizer file says (stop 84)")
    args = ap.parse_args()
    HELD_DF[0] = args.held_df
    if args.judge_chars:
        verdict.JUDGE_CHARS = args.judge_chars  # read by verdict.judge_text at each call
    judge = J.Judge(args.judge, args.base)
    if args.unpadded:
        judge.tokenizer.no_padding()
    sets = load(args.dir, [*args.fit, *args.report], judge, args.top)
    fitted = [row for name in args.fit for row in sets[name]]
    names: tuple[str, ...] = ("judge", "words", "cosine", "no cosine", "weighted", "rarest", "matched", "chosen today", "by meaning",
             "unsaid", "cosine lead", "judge lead", "judged alone", "score lead", "candidates")  # fmt: skip
    names += (*(f"{names[a]}*{names[b]}" for k, a in enumerate(PAIRED) for b in PAIRED[k + 1 :]), "past", "held elsewhere")
    arms = [("judge + features", NINE), ("features only", NINE[1:])]
    if args.context:
        arms += [("judge + features + context", [*NINE, *range(10, 15)]), ("features + context", [*NINE[1:], 10, 12, 13, 14])]
    if args.asked:
        arms += [("judge + features + unsaid", PRODUCT)]
    if args.elsewhere:
        arms += [("judge + features + unsaid + held elsewhere", ELSEWHERE)]
    if args.past:
        arms += [("judge + features + past", [*NINE, 43]), ("features + past", [*NINE[1:], 43])]
    if args.pairs:
        arms += [("judge + features, pairwise", [*NINE, *range(15, 43)])]
    if args.shipped:  # the product's weights, as they are (clio.recall.verdict.scored)
        shipped, bar = shipped_verdict()
        for group in (args.fit, *([n] for n in args.report), args.report):
            rows = [row for name in group for row in sets[name]]
            print(f"  the shipped verdict (bar {bar}) on {'+'.join(group)}: {replay(rows, shipped, bar)}")
    for label, columns in arms:
        model, w, (mu, sd, b) = fit(fitted, columns)
        print(f"{label}: weights (standardized) " + ", ".join(f"{names[c]} {v:+.2f}" for c, v in zip(columns, w, strict=True)))
        if args.weights and columns in (NINE, PRODUCT, ELSEWHERE):  # as clio.recall.encoder_models.Verdict holds them
            print(held(mu, sd, w, b))
        for group in (args.fit, *([n] for n in args.report), args.report):
            rows = [row for name in group for row in sets[name]]
            n = [sum(r["probe"]["kind"] == k for r, _, _ in rows) for k in ("same", "reworded", "unrelated")]
            print(f"  {'+'.join(group)} (of {n[0]}/{n[1]}/{n[2]}): without the judge {replay(rows, None, 0)}; "
                  + "  ".join(f"t={t} {replay(rows, model, t, args.words_free)}" for t in THRESHOLDS))  # fmt: skip


if __name__ == "__main__":
    main()
