"""SkillStore: state kept with the catalogue, user behaviours, flags, signals and their history,
last turns, incognito, and two processes giving feedback at once without losing any."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from clio.memory import skills as S
from clio.memory.skills import Skill, SkillError
from clio.memory.skills_store import SkillStore

CAT = [Skill("alpha", "do alpha", ["no alpha"]), Skill("beta", "do beta")]


def store(path: Path | None) -> SkillStore:
    return SkillStore(path, [Skill(s.id, s.text, list(s.contradicts)) for s in CAT], clock=lambda: 5.0)


def test_signals_update_posteriors_and_history(tmp_path: Path) -> None:
    st = store(tmp_path / "skills.json")
    st.record("bad", ["alpha", "beta"], session="s1", turn=2, note="too long")
    st.record("approve", ["alpha"], session="s1", turn=3)
    again = store(tmp_path / "skills.json")  # another process reading the file
    a, b = again.get("alpha"), again.get("beta")
    assert (a.a, a.b, a.n) == (1.25, 2.0, 2) and (b.a, b.b, b.n) == (1.0, 2.0, 1)
    hist = again.signals()
    assert [(s.kind, s.session, s.turn, s.note) for s in hist] == [
        ("bad", "s1", 2, "too long"),
        ("approve", "s1", 3, ""),
    ]
    assert S.replay(again.all(), hist) == {s.id: (s.a, s.b, s.n) for s in again.all()}


def test_user_behaviours_flags_and_last_turn(tmp_path: Path) -> None:
    st = store(tmp_path / "skills.json")
    sk = st.add("Use type hints everywhere")
    assert sk.source == "user" and st.get(sk.id).text == "Use type hints everywhere"
    with pytest.raises(SkillError, match="already"):
        st.add("use type hints everywhere")
    assert st.set_flags("alpha", pinned=True).pinned
    banned = st.set_flags("alpha", banned=True)
    assert banned.banned and not banned.pinned
    with pytest.raises(SkillError, match="no behaviour"):
        st.set_flags("zzz", banned=True)
    st.remember_turn("s1", 4, ["beta"], ["alpha", "beta"])
    assert store(tmp_path / "skills.json").last_turn("s1") == (4, ["beta"])
    assert st.chosen("s1") == ["alpha", "beta"]
    assert st.last_turn("other") is None and st.chosen("other") is None


def test_catalogue_text_wins_and_unknown_entries_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "skills.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "skills": [
                    {"id": "alpha", "text": "old text", "source": "catalogue", "a": 3, "b": 1, "n": 2},
                    {"id": "retired", "text": "gone from the catalogue", "source": "catalogue"},
                    {"weird": True},
                ],
            }
        )
    )
    st = store(path)
    a = st.get("alpha")
    assert a.text == "do alpha" and a.a == 3 and a.contradicts == ["no alpha"]
    st.record("good", ["alpha"])
    raw = json.loads(path.read_text())["skills"]
    assert {"weird": True} in raw and any(r.get("id") == "retired" for r in raw)


def test_incognito_writes_nothing(tmp_path: Path) -> None:
    st = store(None)
    st.record("good", ["beta"])
    assert st.get("beta").a == 2.0
    assert list(tmp_path.iterdir()) == []


def test_notes_go_through_the_redactor(tmp_path: Path) -> None:
    st = SkillStore(tmp_path / "s.json", list(CAT), redact=lambda t: t.replace("sk-secret", "[REDACTED]"))
    st.record("bad", ["alpha"], note="it printed sk-secret")
    assert "sk-secret" not in (tmp_path / "s.json").read_text()


def _give(path: str, kind: str, n: int) -> None:
    st = store(Path(path))
    for i in range(n):
        st.record(kind, ["alpha"], session=kind, turn=i)


def test_two_processes_giving_feedback_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "skills.json")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_give, args=(path, k, 12)) for k in ("good", "bad")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    st = store(Path(path))
    a = st.get("alpha")
    assert (a.a, a.b, a.n) == (13.0, 13.0, 24)  # under the evidence cap: exact
    assert len(st.signals()) == 24
