"""Pure: the judge's reading of a unit joined with the decision's own features in one calibrated
score, and which units that score quotes (docs/memory.md, "The judge in the decision").

Unless the user's ``recall_judge`` is false, where the encoder helper runs a model
whose :class:`clio.recall.encoder_models.Verdict` is declared, the three admissible units with the best cosine (:func:`to_judge`) are read with the
message by a small cross-encoder in the helper (:mod:`clio.recall.judge`): one logit a unit, how
likely the unit answers the message. Alone it trades facts for false blocks; as one feature of a
logistic score beside the cosine, the words' score, the rarest word matched and whether only the
scan found the unit (:func:`features`), it took 10 of 23 and 7 of 22 false blocks of the two
probe sets nobody had read (as shipped), and no reworded fact (docs/memory.md, "The judge in the
decision"). A judged message quotes the units whose probability clears the
model's bar, best first, then the units that share no word with it and that its cosine quotes
(:attr:`clio.recall.auto.Hit.unworded`: the judge reads those worst); the other units not judged
are not quoted. A message the helper could not
judge (it failed, it was late, words only) keeps the decision of :attr:`clio.recall.auto.Hit.relevant`.

No I/O; :mod:`clio.recall.auto_turn` reads it, and :func:`clio.recall.auto.choose` the
probabilities it wrote.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from clio.recall.auto import Hit, shares
from clio.recall.terms import excerpt, fts_words

if TYPE_CHECKING:
    from clio.recall.encoder_models import Verdict

JUDGED = 3  # admissible units a message, by cosine, read by the judge (all eight took no more)
JUDGE_CHARS = 480  # a unit as the judge reads it: as the block quotes it (clio.recall.auto.EXCERPT_CHARS)
# the judge's logit as the score reads it, at most this far from 0: its 2,401 readings of the probe
# sets' units lay within -5.6 and +5.1, so a unit that would stay under the bar at +7 is not read
# (:func:`reachable`): the decision is the same, and a third of the messages read one unit fewer
LOGIT_CAP = 7.0
# the own words of a message that asks nothing (a report, an order: clio.recall.relevance.asks_in_any_sentence)
# that the tenth feature counts: "the docker image is 1.4 gigs ... switch to a multi-stage build, use
# a slim base" says a lot about the work at hand, none of it asked of the archive (docs/memory.md,
# "Long messages about the work at hand")
SAID_CAP = 6


def judge_text(parts: Sequence[tuple[str, str]], query: str) -> str:
    """A unit as the judge reads it (and was trained on): its messages (role, text) cut around the
    query's words as the block quotes them, within :data:`JUDGE_CHARS` together, a line each; a
    long reply's details are not looked for in its conclusion first, as the block's are."""
    words = fts_words(query)
    widths = shares([len(" ".join(t.split())) for _, t in parts], JUDGE_CHARS)
    # cut as the judge was trained on: a reply's conclusion first among its details (what the block
    # quotes since stop 100) cost the memory tool's order on the sets' own messages (docs/memory.md,
    # "The conclusion of a long reply")
    return "\n".join(excerpt(t, words, w - 2) for w, (_, t) in zip(widths, parts, strict=True))


def hit_text(hit: Hit, query: str) -> str:
    """A unit as the judge reads it (:func:`judge_text` over its messages): the helper's judge,
    the user's judge model (clio.recall.model_judge) and the benches' stored candidates alike."""
    return judge_text([(role, t) for _, role, t in hit.parts], query)


def to_judge(hits: Sequence[Hit], top: int = JUDGED) -> list[int]:
    """The indexes of the hits the judge reads: the admissible ones with the best cosine (one not
    scored in time counts as -1), in the search's order among equals. None for a question about how
    a library or a standard behaves (:attr:`clio.recall.auto.Hit.general`): only its words may
    quote a unit, as without the judge."""
    if any(h.general for h in hits):
        return []

    def cosine(i: int) -> float:
        c = hits[i].features.cosine
        return -1.0 if c is None else c

    return sorted((i for i, h in enumerate(hits) if h.admissible), key=lambda i: -cosine(i))[:top]


def features(hit: Hit, logit: float) -> list[float]:
    """The score's inputs, in :class:`clio.recall.encoder_models.Verdict`'s order: the judge's
    logit, the words' score, the cosine (0 without) and whether there was none, the idf-weighted
    share of the message's words the unit holds, the rarest of them, the share matched, whether
    the decision without the judge quotes it, whether the scan alone found it, and how much the
    message says that the unit does not hold: log(1 + its own words) x (1 - the share held), its
    words counted up to :data:`SAID_CAP` where it asks nothing (:attr:`clio.recall.auto.Hit.asks`).
    The last tells a remark about the work at hand ("run pytest") from a question reworded in
    other words than the session's: both reach a unit that shares none of their words by meaning,
    but only the longer one says enough to be answered that way; a short question whose words the
    unit holds is answered by them, and counts 0 (docs/memory.md, "The judged score refitted on
    every read set"). A long report or order says much and asks nothing: its length beyond a
    few words is not a question's (docs/memory.md, "Long messages about the work at hand")."""
    f = hit.features
    return [
        logit,
        hit.score,
        f.cosine if f.cosine is not None else 0.0,
        float(f.cosine is None),
        f.weighted,
        f.rarest,
        f.matched / max(f.asked, 1),
        float(hit.relevant),
        float(hit.meaning),
        math.log1p(f.asked if hit.asks else min(f.asked, SAID_CAP)) * (1.0 - f.weighted),
    ]


def probability(hit: Hit, logit: float, v: Verdict) -> float:
    """How likely the unit holds what the message asks: the logistic score of :func:`features`,
    the logit held within :data:`LOGIT_CAP`."""
    return scored(features(hit, logit), v)


def scored(row: Sequence[float], v: Verdict) -> float:
    """The logistic score of one row of :func:`features`, its logit (the first) held within
    :data:`LOGIT_CAP`: the benches' replays of stored candidates read it too."""
    held = [max(-LOGIT_CAP, min(LOGIT_CAP, row[0])), *row[1:]]
    z = v.bias + sum(  # a feature that never varied on the fitted units (scale 0) weighs nothing
        w * (x - m) / s for x, m, s, w in zip(held, v.mean, v.scale, v.weights, strict=True) if s
    )
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def reachable(hit: Hit, v: Verdict) -> bool:
    """Whether any reading of the judge could bring the unit to the bar (else it is not read)."""
    return probability(hit, LOGIT_CAP, v) >= v.bar


def judged(hits: Sequence[Hit], logits: dict[int, float | None], v: Verdict) -> list[Hit]:
    """The hits with the judge's ``logits`` (by index, those of :func:`to_judge`) read into their
    probability and the model's bar (:attr:`clio.recall.auto.Hit.verdict`); one the judge did not
    read (None: not :func:`reachable`) gets the most it could have had, under the bar."""
    return [
        h if i not in logits else replace(h, judge=logits[i], verdict=probability(h, _or_cap(logits[i]), v), verdict_bar=v.bar)
        for i, h in enumerate(hits)
    ]


def _or_cap(logit: float | None) -> float:
    return LOGIT_CAP if logit is None else logit
