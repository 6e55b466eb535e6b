"""The pure behaviours tier: catalogue, posterior updates per signal, Thompson selection, budget,
contradictions with stated preferences, corrections, replay."""

from __future__ import annotations

import random

import pytest

from clio.memory import skills as S
from clio.memory.skills import Signal, Skill, SkillError
from clio.prompts import load_prompt


def count(text: str) -> int:
    return len(text) // 4 + 1


def test_shipped_catalogue_parses_with_contradictions() -> None:
    cat = S.parse_catalogue(load_prompt("skills.md"))
    ids = [s.id for s in cat]
    assert "tests-after-edit" in ids and len(ids) == len(set(ids)) >= 5
    tests = S.find(cat, "tests-after-edit")
    assert "don't run tests" in tests.contradicts and tests.a == tests.b == 1.0


def test_catalogue_rejects_bad_and_duplicate_ids() -> None:
    with pytest.raises(SkillError, match="bad behaviour id"):
        S.parse_catalogue("[Bad Id] text")
    with pytest.raises(SkillError, match="twice"):
        S.parse_catalogue("[x] one\n[x] two")


@pytest.mark.parametrize(
    ("kind", "a", "b"),
    [
        ("good", 2.0, 1.0),
        ("bad", 1.0, 2.0),
        ("approve", 1.25, 1.0),
        ("deny", 1.0, 1.25),
        ("undo", 1.0, 1.5),
        ("correction", 1.0, 1.5),
    ],
)
def test_each_signal_moves_the_posterior(kind: str, a: float, b: float) -> None:
    sk = Skill("x", "do x")
    S.update(sk, kind, S.signal_weight(kind))
    assert (sk.a, sk.b, sk.n) == (a, b, 1)


def test_implicit_signals_weigh_less_than_explicit() -> None:
    for kind in ("approve", "deny", "undo", "correction"):
        assert S.signal_weight(kind) < S.signal_weight("good") == S.signal_weight("bad")
    with pytest.raises(SkillError):
        S.signal_weight("meh")
    with pytest.raises(SkillError):
        S.signal_weight("good", 2.0)


def test_selection_fits_the_budget_and_skips_banned_and_low_draws() -> None:
    skills = [Skill(f"s{i}", f"behaviour number {i} " + "word " * 10) for i in range(8)]
    for s in skills:
        s.a = 50.0  # draws near 1: all wanted
    skills[0].banned = True
    for budget in (0, 20, 60, 120, 10_000):
        chosen = S.select(skills, budget, count, random.Random(1))
        assert count(S.render(chosen)) <= budget or not chosen
        assert skills[0] not in chosen
    assert len(S.select(skills, 10_000, count, random.Random(1))) == S.MAX_ACTIVE
    bad = Skill("bad", "a bad one", b=200.0)
    assert bad not in S.select([bad], 10_000, count, random.Random(1))


def test_pinned_comes_first_even_when_punished() -> None:
    pinned = Skill("p", "pinned one", b=100.0, pinned=True)
    other = Skill("o", "other one", a=100.0)
    chosen = S.select([other, pinned], 10_000, count, random.Random(3))
    assert chosen[0] is pinned and other in chosen


def test_same_rng_same_choice_and_draws_follow_posteriors() -> None:
    skills = [Skill(f"s{i}", f"text {i}") for i in range(6)]
    one = S.select(skills, 10_000, count, random.Random(7))
    two = S.select(skills, 10_000, count, random.Random(7))
    assert [s.id for s in one] == [s.id for s in two]
    good, bad = Skill("g", "good", a=30.0), Skill("b", "bad", b=30.0)
    rng = random.Random(0)
    picked = [s.id for _ in range(200) for s in S.select([good, bad], 10_000, count, rng)]
    assert picked.count("g") > 190 and picked.count("b") < 5


def test_stated_preference_wins_by_phrase_and_by_taboo_overlap() -> None:
    cat = S.parse_catalogue(load_prompt("skills.md"))
    for s in cat:
        s.a = 100.0
    prefs = [("preference", "Don't run tests unless I ask"), ("taboo", "committing each logical change")]
    chosen = {s.id for s in S.select(cat, 10_000, count, random.Random(0), prefs, max_active=20)}
    assert "tests-after-edit" not in chosen
    assert "commit-each-change" not in chosen  # the taboo shares 'logical', 'change' (stemmed)
    assert "plan-first" in chosen
    user = Skill("u", "use tabs for indentation", source="user")
    assert S.contradiction(user, [("aversion", "tabs for indentation are ugly")]) is not None
    assert S.contradiction(user, [("preference", "tabs for indentation")]) is None


@pytest.mark.parametrize(
    ("text", "yes"),
    [
        ("no, use the other file", True),
        ("No. That's not it", True),
        ("that's wrong", True),
        ("I said the second one", True),
        ("don't touch main.py", True),
        ("Do not commit", True),
        ("now add tests", False),
        ("nothing else, thanks", False),
        ("yes, and don't stop", False),
        ("notice the bug?", False),
        ("", False),
    ],
)
def test_correction_is_detected_conservatively(text: str, yes: bool) -> None:
    assert S.is_correction(text) is yes


def test_replay_gives_back_the_posteriors() -> None:
    skills = [Skill("a", "A"), Skill("b", "B")]
    sigs = [Signal("good", 1.0, ("a",)), Signal("bad", 1.0, ("a", "b")), Signal("deny", 0.25, ("b", "gone"))]
    for sig in sigs:
        for sid in sig.skills:
            if sid in ("a", "b"):
                S.update(S.find(skills, sid), sig.kind, sig.weight)
    assert S.replay(skills, sigs) == {s.id: (s.a, s.b, s.n) for s in skills}
    assert Signal.from_dict(sigs[2].to_dict()) == sigs[2]


def test_skill_round_trip_and_ids() -> None:
    sk = Skill("u-x", "x", source="user", a=2.0, pinned=True)
    assert Skill.from_dict(sk.to_dict()) == sk
    with pytest.raises(SkillError):
        Skill.from_dict({"id": "x", "text": "", "a": 1})
    assert S.new_user_id("Use tabs for indentation", {"u-use-tabs-indentation"}) == "u-use-tabs-indentation-2"
    with pytest.raises(SkillError, match="several"):
        S.find([Skill("ab", "1"), Skill("ac", "2")], "a")


def test_evidence_is_capped_so_taste_changes_can_be_followed() -> None:
    sk = Skill("x", "do x")
    for _ in range(100):
        S.update(sk, "good", 1.0)
    assert sk.a + sk.b == pytest.approx(S.MAX_EVIDENCE) and sk.mean > 0.95 and sk.n == 100
    for _ in range(25):
        S.update(sk, "bad", 1.0)
    assert sk.mean < 0.5  # uncapped it would still be 101 / 126 = 0.80
    free = Skill("y", "do y")
    for _ in range(100):
        S.update(free, "good", 1.0, cap=float("inf"))
    assert free.a == 101.0
