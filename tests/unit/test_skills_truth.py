"""Feedback learning that tells the truth (issue 24, item 6): no behaviour is presented as rewarded
without evidence, none that changes the repository by itself is on by default, and feedback
judges what a turn showed (clio.memory.shown), once per turn (clio.memory.skills_store)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

import clio.tools.builtin  # noqa: F401  (the tools declare what their operations do: clio.actions)
from clio.memory import shown as S_
from clio.memory import skills as S
from clio.memory.skills_store import SkillStore
from clio.prompts import load_prompt
from clio.tools.registry import REGISTRY


def shown(active: list[str], messages: list[dict[str, Any]]) -> dict[str, bool | None]:
    return S_.shown(active, messages, REGISTRY.actions())


def judged(active: list[str], messages: list[dict[str, Any]]) -> list[str]:
    return S_.judged(active, messages, REGISTRY.actions())


CATALOGUE = S.parse_catalogue(load_prompt("skills.md"))


def count(text: str) -> int:
    return len(text) // 4


def test_with_no_feedback_nothing_is_headed_as_rewarded() -> None:
    for seed in range(30):
        chosen = S.select(CATALOGUE, 400, count, random.Random(seed))
        block = S.render(chosen)
        assert S.HEADER not in block, block
        if chosen:
            assert block.startswith(S.TRY_HEADER)


def test_what_the_user_pinned_or_rewarded_is_headed_apart_from_what_is_tried() -> None:
    skills = [S.Skill(s.id, s.text, s.contradicts, opt_in=s.opt_in) for s in CATALOGUE]
    by = {s.id: s for s in skills}
    by["plan-first"].pinned = True
    S.update(by["tests-after-edit"], "good", 1.0)
    S.update(by["short-answers"], "bad", 1.0)
    block = S.render([by["plan-first"], by["tests-after-edit"], by["short-answers"]])
    head, _, tried = block.partition(S.TRY_HEADER)
    assert head.startswith(S.HEADER) and "short plan" in head and "run the relevant tests" in head
    assert "Keep answers short" in tried


def test_committing_by_itself_is_never_drawn_unless_the_user_pins_it() -> None:
    (commit,) = [s for s in CATALOGUE if s.id == "commit-each-change"]
    assert commit.opt_in
    skills = [S.Skill(s.id, s.text, s.contradicts, opt_in=s.opt_in, a=50.0) for s in CATALOGUE]
    for seed in range(50):
        assert "commit-each-change" not in [s.id for s in S.select(skills, 2000, count, random.Random(seed), max_active=10)]
    for s in skills:
        s.pinned = s.id == "commit-each-change"
    assert "commit-each-change" in [s.id for s in S.select(skills, 2000, count, random.Random(0))]


def _call(cid: str, name: str, **args: Any) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _turn(*steps: tuple[str, dict[str, Any], str], text: str = "", final: str = "Done.") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, (name, args, result) in enumerate(steps):
        out.append({"role": "assistant", "content": text if i == 0 else "", "tool_calls": [_call(f"c{i}", name, **args)]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": result})
    out.append({"role": "assistant", "content": final})
    return out


ALL = ["tests-after-edit", "plan-first", "short-answers", "commit-each-change", "read-before-edit", "small-diffs", "explain-errors", "ask-before-deps", "u-my-own"]


def test_a_turn_that_answered_a_question_showed_no_editing_habit() -> None:
    did = shown(ALL, _turn(final="The function returns 2."))
    assert did["short-answers"] is True
    for sid in ("tests-after-edit", "plan-first", "commit-each-change", "read-before-edit", "small-diffs", "explain-errors"):
        assert did[sid] is False, sid
    assert did["ask-before-deps"] is None and did["u-my-own"] is None  # cannot be told: judged
    assert judged(ALL, _turn(final="2.")) == ["ask-before-deps", "short-answers", "u-my-own"]


def test_an_edit_then_tests_then_commit_shows_those_habits() -> None:
    turn = _turn(
        ("file_operations", {"operation": "read_file", "path": "a.py"}, "a.py (lines 1-3)"),
        ("file_operations", {"operation": "replace_string", "path": "a.py", "old_string": "1", "new_string": "2"}, "ok"),
        ("terminal_operations", {"operation": "execute", "command": "python -m pytest -q"}, "Error: exit code 1\n1 failed"),
        ("version_control", {"operation": "commit", "message": "fix"}, "[main abc1234] fix"),
        text="Plan: change the constant in a.py, then run the tests.",
        final="Fixed; one test still fails: test_b expects 3. " * 30,
    )
    did = shown(ALL, turn)
    assert did["tests-after-edit"] and did["plan-first"] and did["commit-each-change"]
    assert did["read-before-edit"] and did["small-diffs"]
    assert did["short-answers"] is False  # a long final answer
    assert did["explain-errors"] is False  # the failed tests were followed by a silent commit
    blind = shown(ALL, _turn(("file_operations", {"operation": "write_file", "path": "b.py", "content": "x"}, "ok")))
    assert blind["small-diffs"] is False and blind["tests-after-edit"] is False and blind["plan-first"] is False


def test_a_turn_is_judged_once(tmp_path: Path) -> None:
    store = SkillStore(tmp_path / "skills.json", CATALOGUE)
    store.record("bad", ["short-answers"], session="s1", turn=1)
    with pytest.raises(S.SkillError, match="already judged bad"):
        store.record("bad", ["short-answers"], session="s1", turn=1)
    store.record("good", ["short-answers"], session="s1", turn=1)  # replaces the /bad
    sk = store.get("short-answers")
    assert (sk.a, sk.b, sk.n) == (2.0, 1.0, 1)
    assert [(s.kind, s.turn) for s in store.signals()] == [("good", 1)]
    store.record("bad", ["short-answers"], session="s1", turn=2)  # another turn: its own judgement
    assert store.get("short-answers").n == 2
