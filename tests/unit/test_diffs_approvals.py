"""Diffs of file changes (clio.tools.diffs) and the approvals that show them (clio.app.approvals),
in-process: a scripted person answers, the shown diffs are recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from clio.app.approvals import Approvals
from clio.config import Settings
from clio.tools.context import ToolContext
from clio.tools.diffs import SHOWN_LINES, Change, clip, stat, unified


def test_unified_diff_of_an_edit_a_new_file_and_a_deletion() -> None:
    d = unified("calc.py", "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n")
    assert d.splitlines()[:3] == ["--- a/calc.py", "+++ b/calc.py", "@@ -1,2 +1,2 @@"]
    assert "-    return a - b" in d and "+    return a + b" in d and stat(d) == (1, 1)
    assert unified("n.txt", None, "x\n").splitlines()[:2] == ["--- /dev/null", "+++ b/n.txt"]
    assert unified("n.txt", "x\n", None).splitlines()[:2] == ["--- a/n.txt", "+++ /dev/null"]
    assert unified("t.txt", "a", "b").endswith("+b\n\\ No newline at end of file")


def test_binary_or_huge_files_get_a_note_not_a_diff() -> None:
    note = unified("img.png", "\x00\x01", "\x00\x02")
    assert note.startswith("(no line diff for img.png: binary") and "\n" not in note


def test_clip_keeps_the_first_lines_and_counts_the_rest() -> None:
    diff = "\n".join(f"+{i}" for i in range(SHOWN_LINES + 5))
    shown, left = clip(diff)
    assert len(shown.splitlines()) == SHOWN_LINES and left == 5
    assert clip("+a\n+b") == ("+a\n+b", 0)


@dataclass
class Person:
    answers: list[str]
    asked: list[str] = field(default_factory=list)

    def __call__(self, question: str) -> str | None:
        self.asked.append(question)
        return self.answers.pop(0) if self.answers else None


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(root=tmp_path)


def approvals(ctx: ToolContext, person: Person | None, shown: list[tuple[str, int]], **settings: object) -> Approvals:
    s = Settings(**settings)  # type: ignore[arg-type]
    return Approvals(s, person, lambda d, n: shown.append((d, n)), lambda: ctx)


def test_the_diff_is_shown_above_the_question_and_d_shows_it_whole(ctx: ToolContext) -> None:
    big = "\n".join(f"+line {i}" for i in range(SHOWN_LINES + 10))
    ctx.proposed = Change("big.txt", big)
    person, shown = Person(["d", "y"]), []
    assert approvals(ctx, person, shown)("write", "create big.txt")
    assert shown[0] == (clip(big)[0], 10) and shown[1] == (big, 0)  # clipped first, then whole
    assert len(person.asked) == 2 and "[a]lways write this session" in person.asked[0]
    assert ctx.proposed_shown


def test_always_allows_that_kind_for_the_session_only(ctx: ToolContext) -> None:
    person, shown = Person(["a"]), []
    ap = approvals(ctx, person, shown)
    assert ap("write", "create a.txt")
    assert ap("write", "create b.txt") and len(person.asked) == 1  # not asked again
    assert not ap("shell", "rm x") and len(person.asked) == 2  # another kind is asked (no answer: no)
    assert approvals(ctx, Person([]), [])("write", "create c.txt") is False  # a new session asks again


def test_anything_but_yes_is_no_and_destructive_never_offers_always(ctx: ToolContext) -> None:
    for answer in ("n", "", "maybe", None):
        person = Person([answer] if answer is not None else [])
        assert not approvals(ctx, person, [])("write", "create a.txt")
    person = Person(["a"])
    assert not approvals(ctx, person, [])("shell", "rm -rf build", destructive=True)
    assert person.asked[0].endswith("[y/N] ") and "[a]lways" not in person.asked[0]


def test_nobody_to_ask_refuses_and_notes_it_unless_yes(ctx: ToolContext) -> None:
    assert not approvals(ctx, None, [])("write", "create a.txt")
    assert ctx.refused == ["write: create a.txt"]
    assert approvals(ctx, None, [], yes=True)("write", "create b.txt")
    assert not approvals(ctx, None, [], yes=False)("shell", "rm -rf x", destructive=True)


# -- issue 27: [d]iff only with a diff; writes outside the project; absolute paths in headers ------


def test_diff_is_offered_only_when_there_is_one(ctx: ToolContext) -> None:
    person = Person(["n", "n"])
    ap = approvals(ctx, person, [])
    ap("shell", "pytest -q")
    assert person.asked[0].endswith("[y]es / [n]o / [a]lways shell this session ")
    ctx.proposed = Change("a.txt", "+x")
    ap("write", "create a.txt")
    assert person.asked[1].endswith("[a]lways write this session / [d]iff ")


def test_the_diff_header_of_an_absolute_path_is_that_path() -> None:
    d = unified("/tmp/out/x.txt", "a\n", "b\n")
    assert d.splitlines()[:2] == ["--- /tmp/out/x.txt", "+++ /tmp/out/x.txt"]
    assert unified("/tmp/new.txt", None, "x\n").splitlines()[:2] == ["--- /dev/null", "+++ /tmp/new.txt"]


def test_a_write_outside_the_project_is_its_own_question_that_always_never_covers(tmp_path: Path) -> None:
    import json

    import clio.tools.builtin  # noqa: F401  (registers the tools)
    from clio.tools.registry import REGISTRY

    root, elsewhere = tmp_path / "proj", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    ctx = ToolContext(root=root, interactive=True)
    person = Person(["a", "n", "y"])
    ctx.approve = approvals(ctx, person, [])

    def write(path: str) -> tuple[str, bool]:
        return REGISTRY.run(ctx, "file_operations", json.dumps({"operation": "write_file", "path": path, "content": "x\n"}))

    assert write("inside.txt")[1]  # answered [a]lways for writes
    out, ok = write(str(elsewhere / "out.txt"))
    assert not ok and "declined" in out and not (elsewhere / "out.txt").exists()
    assert len(person.asked) == 2  # asked although writes are 'always' allowed
    question = person.asked[1]
    assert question.startswith(f"⚠ write outside the project: create {elsewhere / 'out.txt'} (1 line)")
    assert question.endswith("Allow? [y/N] ")
    assert write("../elsewhere/again.txt")[1] and (elsewhere / "again.txt").exists()  # 'y': asked again
    assert len(person.asked) == 3
    assert write("inside2.txt")[1] and len(person.asked) == 3  # inside: still covered by 'always'
