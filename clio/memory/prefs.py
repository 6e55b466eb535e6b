"""Preferences with decay: the user's stable likes, dislikes, habits and hard limits.

Pure: no disk, no clock (every function takes ``now``); :mod:`clio.memory.prefs_store`
keeps them in ``$CLIO_HOME/preferences.json``.

Each preference has a score 0-10. Its effective weight fades with time since it was
last seen: ``w = s * d(t) ** ((10 - s) / 10)``, ``d(t) = floor + (1 - floor) * 2 ** (-t / half_life)``
(t in days; half-life 30, floor 0.1), so strong scores fade slowly and 10 never fades.

Types are score bands, and the bands overlap: taboo [0, 1.5], aversion [1.5, 4],
habit [4, 7], style [6.5, 10], preference [7, 10]. The rule: a type named by the agent
wins when the score lies in its band; otherwise the first band containing the score in
the order taboo, aversion, habit, preference, style (so 1.5 is a taboo, 4 an aversion,
7 a habit, 8 a preference, and 'style' is only ever chosen by name).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from clio.memory.similarity import stem, tokenize

HALF_LIFE_DAYS = 30.0
FLOOR = 0.1
COOLDOWN_SECONDS = 12 * 3600.0  # apply/touch refreshes the clock at most this often
SMOOTH_OLD, SMOOTH_NEW = 0.4, 0.6
DUPLICATE_JACCARD = 0.85
DAY = 86400.0

BANDS: dict[str, tuple[float, float]] = {
    "taboo": (0.0, 1.5),
    "aversion": (1.5, 4.0),
    "habit": (4.0, 7.0),
    "style": (6.5, 10.0),
    "preference": (7.0, 10.0),
}
TYPES: tuple[str, ...] = tuple(BANDS)
DERIVE_ORDER = ("taboo", "aversion", "habit", "preference", "style")
LABELS = {"taboo": "Never", "aversion": "Avoid", "preference": "Prefer", "style": "Style", "habit": "Usually"}
HEADER = "User preferences from earlier sessions (guidance, not instructions; what the user says now wins):"


class PrefError(ValueError):
    """A bad preference argument (score out of range, unknown id, empty text...)."""


@dataclass
class Preference:
    id: str
    text: str
    score: float
    type: str
    scenarios: list[str] = field(default_factory=list)
    created: float = 0.0
    last_seen: float = 0.0
    last_applied: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Any) -> Preference:
        """Parse one stored entry; raises PrefError when it is not a preference."""
        if not isinstance(d, dict):
            raise PrefError("not an object")
        try:
            score = check_score(d["score"])
            ptype = d.get("type")
            last_applied = d.get("last_applied")
            return cls(
                id=str(d["id"]),
                text=check_text(d["text"]),
                score=score,
                type=ptype if ptype in BANDS and in_band(score, ptype) else band_for(score),
                scenarios=check_scenarios(d.get("scenarios")),
                created=float(d.get("created") or 0.0),
                last_seen=float(d.get("last_seen") or d.get("created") or 0.0),
                last_applied=float(last_applied) if last_applied is not None else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise PrefError(f"damaged preference entry: {exc}") from None


# -- validation ----------------------------------------------------------------------------------
def check_score(score: Any) -> float:
    if isinstance(score, bool) or not isinstance(score, (int, float, str)):
        raise PrefError("score must be a number from 0 to 10")
    try:
        value = float(score)
    except ValueError:
        raise PrefError(f"score must be a number from 0 to 10, not {score!r}") from None
    if not math.isfinite(value) or not 0.0 <= value <= 10.0:
        raise PrefError(f"score must be between 0 and 10, not {score}")
    return value


def check_text(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise PrefError("text must be a non-empty sentence")
    return " ".join(text.split())


def check_kind(kind: Any) -> str | None:
    if kind is None or kind == "":
        return None
    if kind not in BANDS:
        raise PrefError(f"type must be one of: {', '.join(TYPES)}")
    return str(kind)


def check_scenarios(scenarios: Any) -> list[str]:
    if scenarios is None:
        return []
    if isinstance(scenarios, str):
        scenarios = [s for s in re.split(r"[,\s]+", scenarios) if s]
    if not isinstance(scenarios, list) or not all(isinstance(s, str) for s in scenarios):
        raise PrefError("scenarios must be a list of words such as ['coding', 'review']")
    out: list[str] = []
    for s in scenarios:
        s = s.strip().lower()
        if s and s not in out:
            out.append(s)
    return out


# -- decay, bands, smoothing ---------------------------------------------------------------------
def decay(days: float, half_life: float = HALF_LIFE_DAYS, floor: float = FLOOR) -> float:
    """d(t): 1 when just seen, halving towards ``floor`` every ``half_life`` days."""
    t = max(0.0, days)
    return floor + (1.0 - floor) * math.exp(-math.log(2) * t / half_life)


def weight(score: float, days: float, half_life: float = HALF_LIFE_DAYS, floor: float = FLOOR) -> float:
    """Effective weight: s * d(t)^((10 - s) / 10)."""
    return score * decay(days, half_life, floor) ** ((10.0 - score) / 10.0)


def pref_weight(p: Preference, now: float, half_life: float = HALF_LIFE_DAYS, floor: float = FLOOR) -> float:
    return weight(p.score, (now - p.last_seen) / DAY, half_life, floor)


def in_band(score: float, kind: str) -> bool:
    lo, hi = BANDS[kind]
    return lo <= score <= hi


def band_for(score: float, kind: str | None = None) -> str:
    """The type of a score: ``kind`` if the score lies in its band, else the first band by DERIVE_ORDER."""
    if kind is not None and kind in BANDS and in_band(score, kind):
        return kind
    return next(k for k in DERIVE_ORDER if in_band(score, k))


def smooth(old: float, new: float) -> float:
    """Re-adding: the new score counts 60 %, the old one 40 %."""
    return old * SMOOTH_OLD + new * SMOOTH_NEW


def word_set(text: str) -> set[str]:
    return set(tokenize(text))


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def find_duplicate(
    prefs: Iterable[Preference], text: str, threshold: float = DUPLICATE_JACCARD
) -> Preference | None:
    """The existing preference saying (nearly) the same thing: word-set Jaccard >= threshold."""
    words = word_set(text)
    best: tuple[float, Preference] | None = None
    for p in prefs:
        sim = jaccard(words, word_set(p.text))
        if sim >= threshold and (best is None or sim > best[0]):
            best = (sim, p)
    return best[1] if best else None


def new_preference(
    pid: str, text: str, score: float, kind: str | None, scenarios: list[str], now: float
) -> Preference:
    return Preference(pid, text, score, band_for(score, kind), scenarios, now, now, None)


def readd(p: Preference, score: float, kind: str | None, scenarios: list[str], now: float) -> None:
    """Seen again: smooth the score, reset the clock, widen the scenarios."""
    p.score = round(smooth(p.score, score), 4)
    p.type = band_for(p.score, kind or p.type)
    p.last_seen = now
    if scenarios and p.scenarios:
        p.scenarios = [*p.scenarios, *(s for s in scenarios if s not in p.scenarios)]


def touch(p: Preference, now: float, cooldown: float = COOLDOWN_SECONDS) -> bool:
    """Applied: refresh the clock, at most once per ``cooldown`` seconds. True if it changed."""
    if p.last_applied is not None and now - p.last_applied < cooldown:
        return False
    p.last_seen = max(p.last_seen, now)
    p.last_applied = now
    return True


# -- choosing and showing ------------------------------------------------------------------------
def applies_to(p: Preference, scenario: str | None) -> bool:
    """Unscoped preferences apply everywhere; scoped ones only in their scenarios (or when unknown)."""
    return scenario is None or not p.scenarios or scenario.lower() in p.scenarios


def select_for_prompt(
    prefs: Iterable[Preference],
    now: float,
    scenario: str | None,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
) -> list[Preference]:
    """What goes into the system prompt: every taboo of the scenario (hard limits, whatever
    their weight or the budget), then the rest by weight while the rendered block fits."""
    eligible = [p for p in prefs if applies_to(p, scenario)]
    chosen = sorted((p for p in eligible if p.type == "taboo"), key=lambda p: (p.score, -p.last_seen, p.id))
    others = sorted((p for p in eligible if p.type != "taboo"), key=lambda p: (-pref_weight(p, now), p.id))
    for p in others:
        if count_tokens(render(chosen + [p])) <= budget_tokens:
            chosen.append(p)
    return chosen


def render(prefs: Iterable[Preference]) -> str:
    """A compact block, one line per type ('Never: ...; ...', 'Prefer: ...'); '' when empty."""
    groups: dict[str, list[str]] = {}
    for p in prefs:
        groups.setdefault(p.type, []).append(p.text.rstrip(" .;"))
    if not groups:
        return ""
    lines = [HEADER]
    for kind in ("taboo", "aversion", "preference", "style", "habit"):
        if kind in groups:
            lines.append(f"{LABELS[kind]}: " + "; ".join(groups[kind]))
    return "\n".join(lines)


def match_score(p: Preference, query: str) -> float:
    """Share of the query's words (lightly stemmed) found in the preference or its scenarios."""
    q = {stem(w) for w in tokenize(query)}
    if not q:
        return 0.0
    have = {stem(w) for w in tokenize(p.text)} | set(p.scenarios)
    return len(q & have) / len(q)


def recall(
    prefs: Iterable[Preference],
    now: float,
    query: str | None = None,
    scenario: str | None = None,
    kind: str | None = None,
    limit: int = 10,
) -> list[Preference]:
    """Preferences matching the filters, best first (query match, then weight)."""
    scored: list[tuple[float, float, str, Preference]] = []
    for p in prefs:
        if kind is not None and p.type != kind:
            continue
        if scenario is not None and not applies_to(p, scenario):
            continue
        m = match_score(p, query) if query else 1.0
        if query and m == 0.0:
            continue
        scored.append((-m, -pref_weight(p, now), p.id, p))
    scored.sort(key=lambda t: t[:3])
    return [t[3] for t in scored[: max(0, limit)]]


def describe(p: Preference, now: float) -> str:
    """One line for tools: 'p1a2b3 [preference 8.0, weight 7.6, coding] text'."""
    scope = f", {'/'.join(p.scenarios)}" if p.scenarios else ""
    return f"{p.id} [{p.type} {p.score:.1f}, weight {pref_weight(p, now):.1f}{scope}] {p.text}"
