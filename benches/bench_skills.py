"""Learning behaviours from feedback (issue 15): synthetic users, noisy signals, Thompson sampling.

Run: .venv/bin/python benches/bench_skills.py [--users N]
Pure CPU: clio.memory.skills's selection and updates, the shipped catalogue, the prompt budget of
a 32k window. Each synthetic user likes 2-3 behaviours (a turn with one is judged good with
p = 0.8), dislikes 2-3 (p = 0.2), is indifferent to the rest (0.5); a turn is good with
probability 0.5 + the sum of (p - 0.5) over its active behaviours, clipped to [0.05, 0.95]. Per session 5 turns; per turn an explicit /good or /bad with
probability 0.25, an approval or denial (flipped with probability 0.15) with 0.4, a correction
after a bad turn with 0.2. Printed per policy (mean over users, [p10-p90] where given):

- regret over 100 sessions against the oracle (the liked behaviours that fit, nothing else);
  a session's value is the sum of (p - 0.5) over its active behaviours;
- sessions until the liked behaviours are all active in >= 90% of the next 10 sessions;
- taste change at session 100 (one liked behaviour becomes disliked and one disliked liked):
  sessions until the new liked set is active in >= 90% of 10 sessions again (within 100).
docs/memory.md records the figures.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

from clio.context.budget import Budget  # noqa: E402
from clio.memory import skills as S  # noqa: E402
from clio.memory.skills import Skill  # noqa: E402
from clio.prompts import load_prompt  # noqa: E402

TURNS = 5
WINDOW = 10
BUDGET = Budget.for_window(32_000).shares(4.0).skills_tokens()


def count(text: str) -> int:
    return len(text) // 4 + 1


Policy = Callable[[list[Skill], random.Random], list[Skill]]


def thompson(skills: list[Skill], rng: random.Random) -> list[Skill]:
    return S.select(skills, BUDGET, count, rng)


def uniform(skills: list[Skill], rng: random.Random) -> list[Skill]:
    """The baseline: the same budget, behaviours picked at random (no learning)."""
    order = rng.sample(skills, len(skills))
    chosen: list[Skill] = []
    for s in order:
        if rng.random() < 0.5 and len(chosen) < S.MAX_ACTIVE and count(S.render([*chosen, s])) <= BUDGET:
            chosen.append(s)
    return chosen


def taste(rng: random.Random, ids: list[str]) -> dict[str, float]:
    order = rng.sample(ids, len(ids))
    liked, disliked = rng.choice((2, 3)), rng.choice((2, 3))
    p = {i: 0.5 for i in ids}
    for i in order[:liked]:
        p[i] = 0.8
    for i in order[liked : liked + disliked]:
        p[i] = 0.2
    return p


def oracle_value(skills: list[Skill], p: dict[str, float]) -> float:
    best = sorted((s for s in skills if p[s.id] > 0.5), key=lambda s: -p[s.id])
    chosen: list[Skill] = []
    for s in best:
        if len(chosen) < S.MAX_ACTIVE and count(S.render([*chosen, s])) <= BUDGET:
            chosen.append(s)
    return sum(p[s.id] - 0.5 for s in chosen)


def session(skills: list[Skill], p: dict[str, float], policy: Policy, rng: random.Random, cap: float) -> list[str]:
    chosen = policy(skills, rng)
    ids = [s.id for s in chosen]
    good_p = min(0.95, max(0.05, 0.5 + sum(p[i] - 0.5 for i in ids)))
    for _ in range(TURNS):
        good = rng.random() < good_p
        signals: list[str] = []
        if rng.random() < 0.25:
            signals.append("good" if good else "bad")
        if rng.random() < 0.4:
            ok = good if rng.random() >= 0.15 else not good
            signals.append("approve" if ok else "deny")
        if not good and rng.random() < 0.2:
            signals.append("correction")
        for kind in signals:
            for s in chosen:
                S.update(s, kind, S.signal_weight(kind), cap=cap)
    return ids


def settled(history: list[list[str]], liked: set[str], start: int) -> int | None:
    """Sessions from ``start`` until the liked set is active in >= 90% of the next WINDOW."""
    hits = [liked <= set(h) for h in history]
    for i in range(start, len(hits) - WINDOW + 1):
        if sum(hits[i : i + WINDOW]) >= 0.9 * WINDOW:
            return i - start
    return None


def fits(ids: set[str], skills: list[Skill]) -> bool:
    chosen = [s for s in skills if s.id in ids]
    return len(chosen) <= S.MAX_ACTIVE and count(S.render(chosen)) <= BUDGET


def simulate(user: int, policy: Policy, cap: float) -> tuple[float, int | None, int | None]:
    rng = random.Random(user)
    skills = S.parse_catalogue(load_prompt("skills.md"))
    ids = [s.id for s in skills]
    p = taste(rng, ids)
    best = oracle_value(skills, p)
    regret = 0.0
    history: list[list[str]] = []
    for _ in range(100):
        got = session(skills, p, policy, rng, cap)
        regret += best - sum(p[i] - 0.5 for i in got)
        history.append(got)
    liked = {i for i in ids if p[i] > 0.5}
    first = settled(history, liked, 0) if fits(liked, skills) else None
    up = next(i for i in ids if p[i] > 0.5)
    down = next(i for i in ids if p[i] < 0.5)
    p[up], p[down] = 0.2, 0.8
    for _ in range(110):
        history.append(session(skills, p, policy, rng, cap))
    liked = {i for i in ids if p[i] > 0.5}
    follow = settled(history, liked, 100) if fits(liked, skills) else None
    return regret, first, follow


def spread(values: list[float]) -> str:
    if not values:
        return "n/a"
    q = statistics.quantiles(values, n=10, method="inclusive") if len(values) > 1 else [values[0]] * 9
    return f"{statistics.fmean(values):.1f} [{q[0]:.0f}-{q[-1]:.0f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=200)
    args = ap.parse_args()
    print(f"budget {BUDGET} tokens (32k window), {args.users} users, {TURNS} turns a session")
    print("policy                      | regret/100 sessions | sessions to 90% | follows change | never")
    rows = [
        ("thompson, evidence cap 30", thompson, S.MAX_EVIDENCE),
        ("thompson, evidence cap 15", thompson, 15.0),
        ("thompson, no cap", thompson, float("inf")),
        ("uniform random (baseline)", uniform, S.MAX_EVIDENCE),
    ]
    for name, policy, cap in rows:
        runs = [simulate(u, policy, cap) for u in range(args.users)]
        regret = [r[0] for r in runs]
        first = [float(r[1]) for r in runs if r[1] is not None]
        follow = [float(r[2]) for r in runs if r[2] is not None]
        never = sum(r[1] is None for r in runs), sum(r[2] is None for r in runs)
        print(
            f"{name:27} | {spread(regret):19} | {spread(first):15} | {spread(follow):14} | "
            f"{never[0]}/{never[1]}"
        )


if __name__ == "__main__":
    main()
