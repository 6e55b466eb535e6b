"""Behaviours ("skills") learned from feedback: Beta posteriors and Thompson sampling. Pure.

A behaviour is a short instruction about how to work ("run the tests after an edit"). Each has a
Beta(a, b) posterior of "the user rewards this", starting at Beta(1, 1). A signal about a turn
updates every behaviour that was active in it: a reward adds its weight to ``a``, a penalty to
``b``. Explicit signals (/good, /bad) weigh 1; implicit ones less (``SIGNAL_WEIGHTS``). Evidence is
capped (``MAX_EVIDENCE``) so the posterior can follow a change of taste.

Selection (session start and after every trim): one draw from each posterior (Thompson
sampling); pinned behaviours first, then the others by draw, skipping draws below
``DRAW_THRESHOLD`` (a behaviour is only tried while it may be more helpful than not), banned ones
and those a stated preference contradicts, while they fit the token budget.

Contradictions: a stated preference or taboo always wins. A behaviour is left out when a
preference's text contains one of its ``contradicts`` phrases (marked by hand in the catalogue,
clio/prompts/skills.md), or when a taboo or aversion shares at least ``TABOO_OVERLAP`` content words
(stemmed) with the behaviour's text (this also covers behaviours the user added).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from clio.memory.ids import find_by_id
from clio.memory.similarity import stem, tokenize

POSITIVE = frozenset({"good", "approve"})
SIGNAL_WEIGHTS: dict[str, float] = {
    "good": 1.0,
    "bad": 1.0,
    "approve": 0.25,
    "deny": 0.25,
    "undo": 0.5,
    "correction": 0.5,
}
KINDS = tuple(SIGNAL_WEIGHTS)
DRAW_THRESHOLD = 0.5
MAX_ACTIVE = 5
MAX_EVIDENCE = 30.0  # pseudo-counts kept per behaviour (benches/bench_skills.py)
TABOO_OVERLAP = 2
MAX_TEXT = 300
ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
HEADER = "Ways of working this user chose or rewarded (what the user says wins):"
# Behaviours drawn with no evidence yet: offered to learn from, never presented as rewarded.
TRY_HEADER = "Ways of working to try (no feedback on them yet; what the user says wins):"
EXPLICIT = frozenset({"good", "bad"})  # one of these per turn: a later one replaces the earlier
STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "after",
        "before",
        "each",
        "every",
        "your",
        "you",
        "it",
        "is",
        "be",
        "do",
        "not",
        "no",
        "any",
        "this",
        "that",
        "when",
        "then",
        "than",
        "as",
        "at",
        "by",
        "from",
    ]
)
# A correction at the start of the next message, read conservatively.
CORRECTION_RE = re.compile(
    r"^\s*(no\s*[,.!]|nope\b|that'?s (wrong|not (right|what))|that is (wrong|not (right|what))"
    r"|i said\b|i told you\b|don'?t\b|do not\b|stop\b)",
    re.IGNORECASE,
)


class SkillError(ValueError):
    """A bad behaviour argument (unknown id, empty text, unknown signal...)."""


@dataclass
class Skill:
    id: str
    text: str
    contradicts: list[str] = field(default_factory=list)
    source: str = "catalogue"  # or "user"
    a: float = 1.0
    b: float = 1.0
    n: int = 0  # signals received
    pinned: bool = False
    banned: bool = False
    opt_in: bool = False  # from the catalogue: drawn only once the user pins it (acts on its own)

    @property
    def mean(self) -> float:
        return self.a / (self.a + self.b)

    @property
    def rewarded(self) -> bool:
        """The user chose it (pinned) or its feedback so far leans positive."""
        return self.pinned or (self.n > 0 and self.mean > 0.5)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Any) -> Skill:
        if not isinstance(d, dict):
            raise SkillError("not an object")
        try:
            sk = cls(
                id=str(d["id"]),
                text=check_text(d["text"]),
                contradicts=[str(c) for c in d.get("contradicts") or []],
                source=str(d.get("source") or "user"),
                a=float(d.get("a", 1.0)),
                b=float(d.get("b", 1.0)),
                n=int(d.get("n", 0)),
                pinned=bool(d.get("pinned")),
                banned=bool(d.get("banned")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SkillError(f"unreadable behaviour: {exc}") from None
        if sk.a <= 0 or sk.b <= 0:
            raise SkillError("posterior parameters must be positive")
        return sk


@dataclass(frozen=True)
class Signal:
    """One judgement of one turn: kind, weight, the behaviours active in that turn."""

    kind: str
    weight: float
    skills: tuple[str, ...]
    session: str = ""
    turn: int = 0
    note: str = ""
    at: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["skills"] = list(self.skills)
        return d

    @classmethod
    def from_dict(cls, d: Any) -> Signal:
        if not isinstance(d, dict):
            raise SkillError("not an object")
        try:
            return cls(
                kind=check_kind(d["kind"]),
                weight=float(d["weight"]),
                skills=tuple(str(s) for s in d.get("skills") or []),
                session=str(d.get("session") or ""),
                turn=int(d.get("turn") or 0),
                note=str(d.get("note") or ""),
                at=float(d.get("at") or 0.0),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SkillError(f"unreadable signal: {exc}") from None


def check_text(text: Any) -> str:
    t = " ".join(str(text or "").split())
    if not t:
        raise SkillError("a behaviour needs some text")
    if len(t) > MAX_TEXT:
        raise SkillError(f"a behaviour is at most {MAX_TEXT} characters (this one has {len(t)})")
    return t


def check_kind(kind: Any) -> str:
    if kind not in SIGNAL_WEIGHTS:
        raise SkillError(f"unknown signal '{kind}' (one of: {', '.join(KINDS)})")
    return str(kind)


def signal_weight(kind: str, weight: float | None = None) -> float:
    w = SIGNAL_WEIGHTS[check_kind(kind)] if weight is None else float(weight)
    if not 0 < w <= 1:
        raise SkillError(f"a signal's weight is in (0, 1], got {w}")
    return w


def parse_catalogue(text: str) -> list[Skill]:
    """Behaviours of a catalogue: ``[id] text`` lines, each optionally followed by indented
    ``contradicts: phrase, phrase`` and ``opt-in: why`` lines (an opt-in behaviour is drawn only
    once the user pins it). Other lines (headings, prose) are ignored."""
    out: list[Skill] = []
    for line in text.splitlines():
        m = re.match(r"^\[([^\]]+)\]\s+(.+)$", line)
        if m:
            sid = m.group(1).strip()
            if not ID_RE.match(sid):
                raise SkillError(f"bad behaviour id '{sid}' in the catalogue")
            if any(s.id == sid for s in out):
                raise SkillError(f"behaviour id '{sid}' twice in the catalogue")
            out.append(Skill(sid, check_text(m.group(2))))
            continue
        m = re.match(r"^\s+contradicts:\s*(.+)$", line)
        if m and out:
            out[-1].contradicts = [p.strip().lower() for p in m.group(1).split(",") if p.strip()]
        if re.match(r"^\s+opt-in:", line) and out:
            out[-1].opt_in = True
    return out


def unupdate(skill: Skill, kind: str, weight: float) -> None:
    """Take back one signal (a judgement replaced by another about the same turn)."""
    if check_kind(kind) in POSITIVE:
        skill.a = max(0.05, skill.a - weight)
    else:
        skill.b = max(0.05, skill.b - weight)
    skill.n = max(0, skill.n - 1)


def update(skill: Skill, kind: str, weight: float, cap: float | None = None) -> None:
    """One signal of ``kind`` and ``weight`` about a turn ``skill`` was active in.

    Past ``cap`` (default ``MAX_EVIDENCE``) pseudo-counts, a and b shrink together (the mean is
    kept): old evidence fades, so a user whose taste changes is followed within a few sessions."""
    if check_kind(kind) in POSITIVE:
        skill.a += weight
    else:
        skill.b += weight
    skill.n += 1
    limit = MAX_EVIDENCE if cap is None else cap
    total = skill.a + skill.b
    if total > limit:
        skill.a, skill.b = skill.a * limit / total, skill.b * limit / total


def replay(skills: Iterable[Skill], signals: Iterable[Signal]) -> dict[str, tuple[float, float, int]]:
    """The posteriors (a, b, n) the recorded signals give from the prior Beta(1, 1)."""
    fresh = {s.id: Skill(s.id, s.text) for s in skills}
    for sig in signals:
        for sid in sig.skills:
            if sid in fresh:
                update(fresh[sid], sig.kind, sig.weight)
    return {k: (s.a, s.b, s.n) for k, s in fresh.items()}


def _content(text: str) -> set[str]:
    return {stem(w) for w in tokenize(text) if w not in STOP and len(w) > 2}


def _contains_phrase(haystack: str, phrase: str) -> bool:
    words = [stem(w) for w in tokenize(phrase)]
    hay = [stem(w) for w in tokenize(haystack)]
    n = len(words)
    return n > 0 and any(hay[i : i + n] == words for i in range(len(hay) - n + 1))


def contradiction(skill: Skill, prefs: Sequence[tuple[str, str]]) -> str | None:
    """The preference text (of ``(type, text)`` pairs) that rules ``skill`` out, or None."""
    mine = _content(skill.text)
    for ptype, text in prefs:
        if any(_contains_phrase(text, p) for p in skill.contradicts):
            return text
        if ptype in ("taboo", "aversion") and len(mine & _content(text)) >= TABOO_OVERLAP:
            return text
    return None


def draw(skills: Iterable[Skill], rng: random.Random) -> dict[str, float]:
    """One Thompson draw per behaviour (in the given order, so a seeded rng repeats itself)."""
    return {s.id: rng.betavariate(s.a, s.b) for s in skills}


def line(skill: Skill) -> str:
    return f"- {skill.text}"


def select(
    skills: Sequence[Skill],
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    rng: random.Random,
    prefs: Sequence[tuple[str, str]] = (),
    max_active: int = MAX_ACTIVE,
) -> list[Skill]:
    """The behaviours for the prompt: pinned first, then by Thompson draw (above the threshold),
    never banned or contradicted, while the rendered block fits ``budget_tokens``."""
    draws = draw(skills, rng)
    allowed = [
        s for s in skills if not s.banned and (s.pinned or not s.opt_in) and contradiction(s, prefs) is None
    ]
    pinned = [s for s in allowed if s.pinned]
    rest = sorted(
        (s for s in allowed if not s.pinned and draws[s.id] >= DRAW_THRESHOLD), key=lambda s: -draws[s.id]
    )
    chosen: list[Skill] = []
    for s in pinned + rest:
        if len(chosen) >= max_active:
            break
        if count_fits([*chosen, s], budget_tokens, count_tokens):
            chosen.append(s)
    return chosen


def count_fits(skills: Sequence[Skill], budget_tokens: int, count_tokens: Callable[[str], int]) -> bool:
    return count_tokens(render(skills)) <= budget_tokens


def render(skills: Sequence[Skill], rewarded: Iterable[str] | None = None) -> str:
    """The prompt block: what the user chose or rewarded under one heading, behaviours drawn
    without evidence under a neutral one (they are being tried, not known to please).
    ``rewarded``: the ids to head as rewarded (as when they were drawn: the block stays the same
    between trims), else each behaviour's state now."""
    good = set(rewarded) if rewarded is not None else {s.id for s in skills if s.rewarded}
    out: list[str] = []
    for header, group in ((HEADER, [s for s in skills if s.id in good]), (TRY_HEADER, [s for s in skills if s.id not in good])):
        if group:
            out += [header, *(line(s) for s in group)]
    return "\n".join(out)


def is_correction(text: str) -> bool:
    """Whether a user message opens by correcting the agent ("no, ...", "that's wrong", "I said",
    "don't ..."); conservative: only the start of the message counts."""
    return bool(CORRECTION_RE.match(text or ""))


def find(skills: Sequence[Skill], sid: str) -> Skill:
    return find_by_id(
        skills,
        sid,
        lambda s: s.id,
        noun="behaviour",
        nouns="behaviours",
        hint="/skills lists them",
        error=SkillError,
    )


def new_user_id(text: str, taken: set[str]) -> str:
    """A readable id for a behaviour the user adds: its first content words."""
    words = [w for w in tokenize(text) if w not in STOP][:3] or ["skill"]
    base = "u-" + "-".join(words)[:30].strip("-")
    sid, i = base, 2
    while sid in taken:
        sid, i = f"{base}-{i}", i + 1
    return sid
