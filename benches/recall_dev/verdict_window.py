"""Experiment (not the product), stop 87: which read probe sets MiniLM's verdict is best fitted on.

The verdict's ten weights (:class:`clio.recall.encoder_models.Verdict`) were fitted in stop 79 on
the sixteen sets read then (second to seventeenth). The sets were written over some twenty stops,
the later briefs asking that most rewordings share no word with their session; stop 86 found the
fit's size mattered (seven sets against sixteen), and this script asks whether it is the size or
which sets (since stop 87 the product's weights are this script's fit on every read set). For each window of
consecutive sets it fits the product's arm (``judge_combine.fit`` over :data:`judge_combine.PRODUCT`),
takes its bar by stop 65's rule (the highest of :data:`judge_combine.THRESHOLDS` at which the
fitted sets keep all but one of the facts the decision without the judge quotes on them), and
reads the report sets at that bar (and at every bar, to compare at equal false blocks).

    python verdict_window.py JUDGE-int8.onnx --dir CANDIDATES_DIR --windows second:seventeenth eleventh:seventeenth \\
        --report eighteenth nineteenth ... [--weights]

A window is ``FIRST:LAST`` in :data:`ORDER` (both kept). Candidates as for ``judge_combine.py``
(``own-dev`` and ``own-reported`` report the ten sets' own messages, by half). ``--leave-out
S ...`` reads each of those sets by the window's fit without it (its own bar each time),
``--also`` fits every window with more sets (the own messages), ``--no-word`` adds an eleventh
feature, whether the unit shares no word with the message (docs/memory.md, "The verdict fitted on
the later sets": measured after stop 87's rule, not shipped).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import judge_combine as C  # noqa: E402
import numpy as np  # noqa: E402

from clio.recall import auto  # noqa: E402

ORDER = (
    *("second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh", "twelfth"),
    *("thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth", "nineteenth", "twentieth"),
    *("twentyfirst", "twentysecond", "twentythird", "twentyfourth", "twentyfifth", "twentysixth", "twentyseventh"),
    *("twentyeighth", "twentyninth", "thirtieth", "thirtyfirst", "thirtysecond", "thirtythird", "thirtyfourth"),
)


def window(spec: str) -> list[str]:
    """The sets ``FIRST:LAST`` names, in :data:`ORDER`."""
    first, _, last = spec.partition(":")
    a, b = ORDER.index(first), ORDER.index(last or first)
    if b < a:
        raise SystemExit(f"window {spec}: {last} comes before {first}")
    return list(ORDER[a : b + 1])


def bar(rows: C.Rows, model: C.Model) -> float:
    """Stop 65's rule: the highest bar at which the fitted rows keep all but one of the facts the
    decision without the judge quotes on them (the lowest bar when none does)."""
    same, reworded, _ = C.replay(rows, None, 0)
    kept = [t for t in C.THRESHOLDS if sum(C.replay(rows, model, t)[:2]) >= same + reworded - 1]
    return max(kept) if kept else C.THRESHOLDS[0]


NO_WORD = 45  # the column "shares no word" takes, after judge_combine.row_features' 45


def with_no_word(hits: Sequence[auto.Hit], logits: Sequence[float], i: int, text: str = "", letter: str = "") -> list[float]:
    """``judge_combine.row_features`` (what the message names that the archive holds elsewhere not
    read: 0) and then whether the unit shares no word with the message (its weighted share 0):
    ``--no-word``, measured in stop 87, not shipped."""
    row = FEATURES(hits, logits, i, text, "")
    return [*row, float(row[4] <= 0.0)]


FEATURES = C.row_features


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("judge", type=Path)
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--windows", nargs="+", required=True)
    ap.add_argument("--report", nargs="+", required=True)
    ap.add_argument("--also", nargs="+", default=[], help="sets fitted with every window (own-dev own-reported: the ten sets' own messages)")
    ap.add_argument("--leave-out", nargs="+", default=[], help="each of these sets read by the window's fit without it (and --report by the whole window's)")
    ap.add_argument("--no-word", action="store_true", help="an eleventh feature: whether the unit shares no word with the message (stop 87)")
    ap.add_argument("--weights", action="store_true", help="print each fit as clio.recall.encoder_models.Verdict holds it")
    args = ap.parse_args()
    columns = C.PRODUCT
    if args.no_word:
        C.row_features = with_no_word  # read by judge_combine.fit and replay at each call
        columns = [*C.PRODUCT, NO_WORD]
    windows = {spec: window(spec) for spec in args.windows}
    names_all = {n for w in windows.values() for n in w} | set(args.report) | set(args.also) | set(args.leave_out)
    needed = sorted(names_all, key=lambda n: (n not in ORDER, ORDER.index(n) if n in ORDER else n))
    sets = C.load(args.dir, needed, C.J.Judge(args.judge, None), 3)
    report = [row for name in args.report for row in sets[name]]
    print(f"report {'+'.join(args.report)}: without the judge {C.replay(report, None, 0)}")

    def fitted_on(names: list[str]) -> tuple[C.Rows, C.Model, float, tuple[np.ndarray, np.ndarray, np.ndarray, float]]:
        rows = [row for name in [*names, *args.also] for row in sets[name]]
        model, w, (mu, sd, b) = C.fit(rows, columns)
        return rows, model, bar(rows, model), (w, mu, sd, b)

    for spec, names in windows.items():
        total = [0, 0, 0]
        for left in args.leave_out:
            _, model, t, _ = fitted_on([n for n in names if n != left])
            read = C.replay(sets[left], model, t)
            total = [a + b for a, b in zip(total, read, strict=True)]
            print(f"  {spec} without {left} (bar {t}): {left} {read}")
        if args.leave_out:
            print(f"  {spec}, each left out: {tuple(total)}")
        fitted, model, t, (w, mu, sd, b) = fitted_on(names)
        every = "  ".join(f"t={x} {C.replay(report, model, x)}" for x in C.THRESHOLDS)
        print(f"{spec} ({len(names)} sets, bar {t}): fitted {C.replay(fitted, model, t)}, report {C.replay(report, model, t)};  {every}")
        if args.weights:
            print(f"{C.held(mu, sd, w, b)}\n  bar={t},")


if __name__ == "__main__":
    main()
