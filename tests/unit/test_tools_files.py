"""file_operations through the registry entry point, on real temp dirs."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

import clio.tools.builtin  # noqa: F401  (registers the tools)
from clio.tools.context import ToolContext
from clio.tools.registry import REGISTRY
from clio.tools.results import MAX_PAGE, maybe_store, read_stored


class Approver:
    """Records every approval request; answers with ``answer``."""

    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str, bool]] = []

    def __call__(self, kind: str, summary: str, *, destructive: bool = False) -> bool:
        self.calls.append((kind, summary, destructive))
        return self.answer


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "proj"
    r.mkdir()
    (r / "a.txt").write_text("one\ntwo\nthree\n")
    return r


def run(ctx: ToolContext, **args: Any) -> tuple[str, bool]:
    return REGISTRY.run(ctx, "file_operations", json.dumps(args))


def ok(ctx: ToolContext, **args: Any) -> str:
    out, good = run(ctx, **args)
    assert good, out
    return out


def err(ctx: ToolContext, **args: Any) -> str:
    out, good = run(ctx, **args)
    assert not good, out
    assert out.startswith("Error: ")
    return out


# -- reading ----------------------------------------------------------------------------------


def test_read_file_whole_and_range(root: Path) -> None:
    ctx = ToolContext(root=root)
    assert ok(ctx, operation="read_file", path="a.txt") == "a.txt (lines 1-3 of 3)\none\ntwo\nthree\n"
    assert (
        ok(ctx, operation="read_file", path="a.txt", start_line=2, end_line=2)
        == "a.txt (lines 2-2 of 3)\ntwo\n"
    )
    assert "past the end" in err(ctx, operation="read_file", path="a.txt", start_line=9)
    assert "does not exist" in err(ctx, operation="read_file", path="nope.txt")
    assert "is a directory" in err(ctx, operation="read_file", path=".")


def test_read_file_caps_long_files(root: Path) -> None:
    (root / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 5001)))
    out = ok(ToolContext(root=root), operation="read_file", path="big.txt")
    first = out.splitlines()[0]
    assert first.startswith("big.txt (lines 1-") and first.endswith(" of 5000)")
    last_shown = int(first.split("-")[1].split(" ")[0])
    assert last_shown < 5000
    assert f"read on with start_line={last_shown + 1}" in out
    assert f"line {last_shown}\n" in out and f"line {last_shown + 1}\n" not in out


def test_read_binary_file_is_refused(root: Path) -> None:
    (root / "b.bin").write_bytes(b"\x00\x01\x02" * 10)
    assert "binary" in err(ToolContext(root=root), operation="read_file", path="b.bin")


def test_string_line_numbers_are_accepted(root: Path) -> None:
    out = ok(ToolContext(root=root), operation="read_file", path="a.txt", start_line="3")
    assert out == "a.txt (lines 3-3 of 3)\nthree\n"
    assert "must be a int" in err(ToolContext(root=root), operation="read_file", path="a.txt", start_line="x")


# -- writing ----------------------------------------------------------------------------------


def test_write_create_append(root: Path) -> None:
    ap = Approver()
    ctx = ToolContext(root=root, approve=ap)
    ok(ctx, operation="write_file", path="deep/dir/new.py", content="x = 1\n")
    assert (root / "deep/dir/new.py").read_text() == "x = 1\n"
    assert "already exists" in err(ctx, operation="create_file", path="deep/dir/new.py", content="y")
    ok(ctx, operation="create_file", path="c.txt", content="c\n")
    assert (root / "c.txt").read_text() == "c\n"
    ok(ctx, operation="append_file", path="c.txt", content="d\n")
    (root / "noeol.txt").write_text("no newline")
    ok(ctx, operation="append_file", path="noeol.txt", content="next")
    assert (root / "c.txt").read_text() == "c\nd\n"
    assert (root / "noeol.txt").read_text() == "no newline\nnext"
    assert [c[0] for c in ap.calls] == ["write"] * 4
    assert "deep/dir/new.py" in ap.calls[0][1]


def test_write_keeps_file_mode(root: Path) -> None:
    script = root / "run.sh"
    script.write_text("echo a\n")
    script.chmod(0o755)
    ctx = ToolContext(root=root)
    ok(ctx, operation="write_file", path="run.sh", content="echo b\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    ok(ctx, operation="replace_string", path="run.sh", old_string="echo b", new_string="echo c")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert script.read_text() == "echo c\n"
    old_mask = os.umask(0o022)
    try:
        ok(ctx, operation="write_file", path="fresh.txt", content="x")
    finally:
        os.umask(old_mask)
    assert stat.S_IMODE((root / "fresh.txt").stat().st_mode) == 0o644  # not the temp file's 0600


def test_write_through_symlink_inside_root_edits_target(root: Path) -> None:
    (root / "link.txt").symlink_to(root / "a.txt")
    ctx = ToolContext(root=root, sandbox=True)
    ok(ctx, operation="replace_string", path="link.txt", old_string="two", new_string="2")
    assert (root / "a.txt").read_text() == "one\n2\nthree\n"
    assert (root / "link.txt").is_symlink()


def test_declined_writes_change_nothing(root: Path) -> None:
    ap = Approver(answer=False)
    ctx = ToolContext(root=root, approve=ap)
    before = (root / "a.txt").read_text()
    calls: list[dict[str, Any]] = [
        {"operation": "write_file", "path": "a.txt", "content": "new"},
        {"operation": "write_file", "path": "b.txt", "content": "new"},
        {"operation": "append_file", "path": "a.txt", "content": "x"},
        {"operation": "replace_string", "path": "a.txt", "old_string": "two", "new_string": "2"},
        {"operation": "insert_at_line", "path": "a.txt", "line": 1, "content": "zero"},
        {"operation": "delete_file", "path": "a.txt"},
        {"operation": "rename_file", "path": "a.txt", "new_path": "z.txt"},
        {"operation": "create_directory", "path": "newdir"},
    ]
    for args in calls:
        out = err(ctx, **args)
        assert "the user declined" in out
    assert len(ap.calls) == len(calls)
    assert (root / "a.txt").read_text() == before
    assert sorted(p.name for p in root.iterdir()) == ["a.txt"]


# -- editing ----------------------------------------------------------------------------------


def test_replace_string_exactly_once(root: Path) -> None:
    ctx = ToolContext(root=root)
    (root / "f.py").write_text("x = 1\ny = 1\nx = 1\n")
    out = err(ctx, operation="replace_string", path="f.py", old_string="x = 1", new_string="x = 2")
    assert "matches 2 times" in out and "surrounding lines" in out
    out = err(ctx, operation="replace_string", path="f.py", old_string="z = 1", new_string="z = 2")
    assert "0 matches" in out
    assert (root / "f.py").read_text() == "x = 1\ny = 1\nx = 1\n"
    out = ok(
        ctx, operation="replace_string", path="f.py", old_string="y = 1\nx = 1", new_string="y = 1\nx = 3"
    )
    assert "lines 2-3" in out
    assert (root / "f.py").read_text() == "x = 1\ny = 1\nx = 3\n"
    assert "non-empty" in err(ctx, operation="replace_string", path="f.py", old_string="", new_string="a")
    assert "'old_string' is required" in err(ctx, operation="replace_string", path="f.py", new_string="a")


def test_replace_string_hints_at_whitespace(root: Path) -> None:
    (root / "g.py").write_text("def f():\n    return 1\n")
    out = err(ToolContext(root=root), operation="replace_string", path="g.py", old_string="  return 1 \n\n")
    assert "without its leading/trailing whitespace" in out


def test_replace_string_keeps_crlf(root: Path) -> None:
    (root / "w.txt").write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")
    ctx = ToolContext(root=root)
    ok(
        ctx,
        operation="replace_string",
        path="w.txt",
        old_string="alpha\nbeta",
        new_string="alpha\nBETA\nextra",
    )
    assert (root / "w.txt").read_bytes() == b"alpha\r\nBETA\r\nextra\r\ngamma\r\n"


def test_multi_replace_is_all_or_nothing(root: Path) -> None:
    ctx = ToolContext(root=root)
    reps = [{"old_string": "one", "new_string": "1"}, {"old_string": "missing", "new_string": "x"}]
    out = err(ctx, operation="multi_replace_string", path="a.txt", replacements=reps)
    assert "replacement #2" in out and "nothing was changed" in out
    assert (root / "a.txt").read_text() == "one\ntwo\nthree\n"
    reps = [{"old_string": "one", "new_string": "1"}, {"old_string": "three", "new_string": "3"}]
    ok(ctx, operation="multi_replace_string", path="a.txt", replacements=reps)
    assert (root / "a.txt").read_text() == "1\ntwo\n3\n"
    # a later replacement sees the earlier ones' result
    reps = [{"old_string": "1", "new_string": "two"}, {"old_string": "two", "new_string": "2"}]
    assert "matches 2 times" in err(ctx, operation="multi_replace_string", path="a.txt", replacements=reps)
    assert "is empty" in err(ctx, operation="multi_replace_string", path="a.txt", replacements=[])


def test_insert_at_line(root: Path) -> None:
    ctx = ToolContext(root=root)
    ok(ctx, operation="insert_at_line", path="a.txt", line=1, content="zero")
    ok(ctx, operation="insert_at_line", path="a.txt", line=3, content="one and a half\n")
    ok(ctx, operation="insert_at_line", path="a.txt", line=6, content="four")
    assert (root / "a.txt").read_text() == "zero\none\none and a half\ntwo\nthree\nfour\n"
    assert "between 1 and 7" in err(ctx, operation="insert_at_line", path="a.txt", line=9, content="x")


# -- files and directories --------------------------------------------------------------------


def test_delete_rename_mkdir(root: Path) -> None:
    ctx = ToolContext(root=root)
    ok(ctx, operation="create_directory", path="d/e")
    assert (root / "d/e").is_dir()
    assert "already exists" in ok(ctx, operation="create_directory", path="d/e")
    ok(ctx, operation="rename_file", path="a.txt", new_path="d/e/b.txt")
    assert not (root / "a.txt").exists() and (root / "d/e/b.txt").read_text() == "one\ntwo\nthree\n"
    (root / "x.txt").write_text("x")
    assert "already exists" in err(ctx, operation="rename_file", path="x.txt", new_path="d/e/b.txt")
    assert "non-empty directory" in err(ctx, operation="delete_file", path="d")
    ok(ctx, operation="delete_file", path="d/e/b.txt")
    ok(ctx, operation="delete_file", path="d/e")
    assert not (root / "d/e").exists()
    assert "does not exist" in err(ctx, operation="delete_file", path="d/e")
    assert "project root" in err(ctx, operation="delete_file", path=".")


def test_delete_symlink_removes_link_not_target(root: Path) -> None:
    (root / "link").symlink_to(root / "a.txt")
    ok(ToolContext(root=root, sandbox=True), operation="delete_file", path="link")
    assert not (root / "link").is_symlink()
    assert (root / "a.txt").read_text() == "one\ntwo\nthree\n"


def test_list_dir_exists_and_info(root: Path) -> None:
    ctx = ToolContext(root=root)
    (root / "sub").mkdir()
    (root / ".git").mkdir()
    out = ok(ctx, operation="list_dir", path=".")
    lines = out.splitlines()
    assert lines[0] == "./ (2 entries)"
    assert lines[1] == "sub/"
    assert lines[2].startswith("a.txt")
    assert ".git" not in out
    assert ok(ctx, operation="file_exists", path="a.txt").startswith("yes: a.txt is a file (14 bytes)")
    assert ok(ctx, operation="file_exists", path="sub").startswith("yes: sub is a directory")
    assert ok(ctx, operation="file_exists", path="zzz").startswith("no:")
    info = ok(ctx, operation="get_file_info", path="a.txt")
    assert "kind: text file" in info and "size: 14 bytes" in info and "lines: 3" in info
    assert "modified: " in info
    assert "kind: directory" in ok(ctx, operation="get_file_info", path="sub")


def test_file_search(root: Path) -> None:
    ctx = ToolContext(root=root)
    for rel in ["pkg/mod.py", "pkg/sub/deep.py", "top.py", "node_modules/x.py", ".venv/lib.py", "notes.md"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("pass\n")
    out = ok(ctx, operation="file_search", pattern="**/*.py")
    assert out.splitlines() == ["3 files match '**/*.py'", "pkg/mod.py", "pkg/sub/deep.py", "top.py"]
    assert ok(ctx, operation="file_search", pattern="*.py").splitlines()[0] == "3 files match '*.py'"
    assert ok(ctx, operation="file_search", pattern="pkg/*.py").splitlines()[1:] == ["pkg/mod.py"]
    assert ok(ctx, operation="file_search", pattern="*.{md,txt}").splitlines()[1:] == ["a.txt", "notes.md"]
    assert "no files match" in ok(ctx, operation="file_search", pattern="*.rs")


def test_file_search_is_capped(root: Path) -> None:
    for i in range(250):
        (root / f"f{i:03}.log").write_text("")
    out = ok(ToolContext(root=root), operation="file_search", pattern="*.log")
    lines = out.splitlines()
    assert lines[0] == "250 files match '*.log'"
    assert lines[-1] == "[... 50 more; narrow the pattern]"
    assert len(lines) == 202


def test_grep_search(root: Path) -> None:
    ctx = ToolContext(root=root)
    (root / "src").mkdir()
    (root / "src/m.py").write_text("import os\ndef main():\n    os.exit(0)\n")
    (root / "src/n.txt").write_text("os here too\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__/m.py").write_text("os\n")
    out = ok(ctx, operation="grep_search", pattern=r"\bos\b", include="*.py")
    assert out.splitlines() == ["src/m.py:1: import os", "src/m.py:3: os.exit(0)"]
    out = ok(ctx, operation="grep_search", pattern="os", path="src/n.txt")
    assert out == "src/n.txt:1: os here too"
    assert "no matches" in ok(ctx, operation="grep_search", pattern="nothing_like_this")
    assert "invalid regular expression" in err(ctx, operation="grep_search", pattern="(")


def test_grep_search_caps_results(root: Path) -> None:
    (root / "many.txt").write_text("hit\n" * 120)
    ctx = ToolContext(root=root)
    lines = ok(ctx, operation="grep_search", pattern="hit").splitlines()
    assert len(lines) == 51 and lines[-1].startswith("[stopped at 50 matches")
    lines = ok(ctx, operation="grep_search", pattern="hit", max_results=5).splitlines()
    assert len(lines) == 6 and lines[4] == "many.txt:5: hit"


def test_unknown_operation_and_bad_json(root: Path) -> None:
    ctx = ToolContext(root=root)
    assert "unknown operation 'frobnicate'" in err(ctx, operation="frobnicate")
    out, good = REGISTRY.run(ctx, "file_operations", "{not json")
    assert not good and "not valid JSON" in out
    assert "'path' is required" in err(ctx, operation="read_file")


# -- large results ----------------------------------------------------------------------------


def _big() -> str:
    return "".join(f"row {i:05d} " + "x" * 40 + "\n" for i in range(1000))


def test_maybe_store_in_session_dir_and_paging(root: Path, tmp_path: Path) -> None:
    ctx = ToolContext(root=root, session_dir=tmp_path / "sess")
    text = _big()
    assert maybe_store(ctx, "terminal_operations", "short") == "short"
    preview = maybe_store(ctx, "terminal_operations", text)
    assert len(preview) < 6000
    assert preview.startswith("row 00000 ")
    assert "row 00999 " in preview
    handle = preview.split("handle '")[1].split("'")[0]
    assert (tmp_path / "sess/results" / f"{handle}.txt").read_text() == text
    # page through the whole result via the tool and reassemble it
    pieces, offset = [], 0
    while offset < len(text):
        page = ok(ctx, operation="read_tool_result", handle=handle, offset=offset, length=5000)
        header, body = page.split("\n", 1)
        assert header.startswith(f"[{handle}: chars {offset}-")
        pieces.append(body)
        offset += len(body)
    assert "".join(pieces) == text
    assert "past the end" in err(ctx, operation="read_tool_result", handle=handle, offset=len(text))


def test_maybe_store_in_memory_without_session(root: Path) -> None:
    ctx = ToolContext(root=root)
    text = _big()
    preview = maybe_store(ctx, "grep", text, limit=1000)
    handle = preview.split("handle '")[1].split("'")[0]
    assert ctx.stored_results[handle] == text
    page = read_stored(ctx, handle, 10, 10**6)
    assert page.split("\n", 1)[1] == text[10 : 10 + MAX_PAGE]


def test_read_tool_result_rejects_bad_handles(root: Path, tmp_path: Path) -> None:
    ctx = ToolContext(root=root, session_dir=tmp_path / "sess")
    (tmp_path / "secret.txt").write_text("nope")
    assert "not a valid result handle" in err(ctx, operation="read_tool_result", handle="../../secret")
    assert "no stored result" in err(ctx, operation="read_tool_result", handle="terminal_operations-0000abcd")


# -- protected paths: .git/ and .clio/ ----------------------------------------------------------

_WRITES: list[dict[str, Any]] = [
    {"operation": "write_file", "path": ".git/config", "content": "[core]\n\tfsmonitor = evil\n"},
    {"operation": "create_file", "path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"},
    {"operation": "append_file", "path": ".git/config", "content": "[core]\n\tfsmonitor = evil\n"},
    {"operation": "replace_string", "path": ".git/config", "old_string": "bare", "new_string": "x"},
    {
        "operation": "multi_replace_string",
        "path": ".git/config",
        "replacements": [{"old_string": "bare", "new_string": "x"}],
    },
    {"operation": "insert_at_line", "path": ".git/config", "line": 1, "content": "[x]"},
    {"operation": "delete_file", "path": ".git/HEAD"},
    {"operation": "rename_file", "path": "a.txt", "new_path": ".git/hooks/post-checkout"},
    {"operation": "rename_file", "path": ".git/HEAD", "new_path": "HEAD.txt"},
    {"operation": "create_directory", "path": ".git/hooks/more"},
    {"operation": "write_file", "path": "sub/.GIT/config", "content": "x"},  # case-insensitive file systems
    {"operation": "write_file", "path": ".clio/config.yaml", "content": "base_url: http://evil\n"},
    {"operation": "write_file", "path": ".clio/instructions.md", "content": "obey the repo\n"},
    {"operation": "append_file", "path": ".clio/ltm.json", "content": "{}"},
    {"operation": "write_file", "path": "gitlink/config", "content": "x"},  # symlink to .git
    {"operation": "write_file", "path": "cfg", "content": "x"},  # symlink to .git/config
]


@pytest.fixture
def gitroot(root: Path) -> Path:
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".clio").mkdir()
    (root / ".clio" / "ltm.json").write_text("{}")
    (root / "gitlink").symlink_to(root / ".git")
    (root / "cfg").symlink_to(root / ".git" / "config")
    return root


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text() if p.is_file() else "<dir>"
        for p in sorted(root.rglob("*"))
        if not p.is_symlink()
    }


@pytest.mark.parametrize("args", _WRITES, ids=lambda a: f"{a['operation']}:{a['path']}")
@pytest.mark.parametrize("yes", [False, True])
def test_protected_writes_are_refused_in_one_shot_even_with_yes(
    gitroot: Path, args: dict[str, Any], yes: bool
) -> None:
    ap = Approver(True)
    ctx = ToolContext(root=gitroot, approve=ap, interactive=False, yes=yes)
    before = _snapshot(gitroot)
    out = err(ctx, **args)
    assert "refused" in out and "always refused in one-shot mode" in out
    assert ".git/" in out or ".clio/" in out
    assert ap.calls == []  # nobody was even asked
    assert _snapshot(gitroot) == before


@pytest.mark.parametrize(
    "args", _WRITES[:3] + _WRITES[11:13] + _WRITES[14:], ids=lambda a: f"{a['operation']}:{a['path']}"
)
def test_protected_writes_need_the_users_explicit_approval(gitroot: Path, args: dict[str, Any]) -> None:
    ap = Approver(False)
    ctx = ToolContext(root=gitroot, approve=ap, interactive=True, yes=True)
    before = _snapshot(gitroot)
    out = err(ctx, **args)
    assert "the user declined" in out and "protected path" in out
    assert _snapshot(gitroot) == before
    # one question, destructive (so --yes and an 'allow' policy do not answer it), naming the reason
    assert len(ap.calls) == 1
    kind, summary, destructive = ap.calls[0]
    assert kind == "write" and destructive
    assert ("inside .git/" in summary) or ("inside .clio/" in summary)


def test_approved_protected_write_happens_once_asked(gitroot: Path) -> None:
    ap = Approver(True)
    ctx = ToolContext(root=gitroot, approve=ap, interactive=True)
    ok(ctx, operation="write_file", path=".clio/instructions.md", content="use tabs\n")
    assert (gitroot / ".clio" / "instructions.md").read_text() == "use tabs\n"
    assert ap.calls == [
        (
            "write",
            "create .clio/instructions.md (1 line) (it is inside .clio/, clio's own folder "
            "(settings, instructions, memory, sessions): a change there would alter how clio runs next time)",
            True,
        )
    ]


def test_gitdir_pointer_file_is_protected(root: Path, tmp_path: Path) -> None:
    real = tmp_path / "elsewhere" / "worktrees" / "w"
    real.mkdir(parents=True)
    (real / "commondir").write_text("../..\n")
    (root / ".git").write_text(f"gitdir: {real}\n")
    ctx = ToolContext(root=root, interactive=False)
    for path in (str(real / "config"), str(tmp_path / "elsewhere" / "config")):
        assert "inside .git/" in err(ctx, operation="write_file", path=path, content="x")
    ok(ctx, operation="write_file", path=str(tmp_path / "fine.txt"), content="x")


def test_ordinary_writes_are_unaffected_and_created_files_recorded(gitroot: Path) -> None:
    ap = Approver(True)
    ctx = ToolContext(root=gitroot, approve=ap, interactive=False)
    ok(ctx, operation="create_file", path="src/new.py", content="x\n")
    ok(ctx, operation="write_file", path="a.txt", content="overwritten\n")  # existed: not "created"
    ok(ctx, operation="append_file", path="log.txt", content="l\n")
    ok(ctx, operation="write_file", path="tmp.txt", content="t\n")
    ok(ctx, operation="delete_file", path="tmp.txt")
    ok(ctx, operation="rename_file", path="log.txt", new_path="notes.txt")
    assert ctx.created_files == {
        str((gitroot / "src" / "new.py").resolve()),
        str((gitroot / "notes.txt").resolve()),
    }
    assert all(not d for _, _, d in ap.calls)
    assert not (gitroot / ".clio" / ".gitignore").exists()  # the file tool writes no clio state


# -- large files (issue 27): searched and read as a stream, what was skipped said ---------------


def _big_log(path: Path, lines: int, needle_at: int) -> None:
    """A text file of ``lines`` lines of 80 bytes; line ``needle_at`` holds NEEDLE."""
    row = "x" * 79 + "\n"
    with path.open("w") as f:
        for i in range(1, lines + 1):
            f.write(f"NEEDLE {i:<72}\n" if i == needle_at else row)


def test_grep_search_finds_text_in_a_large_file(root: Path) -> None:
    _big_log(root / "big.log", 40_000, 39_990)  # 3.2 MB: was skipped ("in 0 files")
    ctx = ToolContext(root=root)
    out = ok(ctx, operation="grep_search", pattern="NEEDLE", path="big.log")
    assert out.splitlines() == ["big.log:39990: NEEDLE 39990"]
    out = ok(ctx, operation="grep_search", pattern="NEEDLE")
    assert "big.log:39990: NEEDLE 39990" in out
    assert ok(ctx, operation="grep_search", pattern="nowhere") == "no matches for /nowhere/ in 2 files under ."


def test_grep_search_says_what_it_skipped(root: Path) -> None:
    (root / "blob.bin").write_bytes(b"\x00\x01hit")
    (root / "link.txt").symlink_to(root / "a.txt")
    ctx = ToolContext(root=root)
    out = ok(ctx, operation="grep_search", pattern="nowhere")
    assert out == (
        "no matches for /nowhere/ in 1 file under . (skipped: 1 binary file; 1 symlink (not followed))"
    )
    out = ok(ctx, operation="grep_search", pattern="two")
    assert out.splitlines() == ["a.txt:2: two", "[skipped: 1 binary file; 1 symlink (not followed)]"]


def test_read_file_reads_a_line_range_of_a_file_too_large_to_load(root: Path) -> None:
    from clio.tools.file_read import MAX_TEXT_BYTES

    lines = MAX_TEXT_BYTES // 80 + 10_000  # past the size read_file refused
    _big_log(root / "huge.log", lines, lines - 5)
    ctx = ToolContext(root=root)
    out = ok(ctx, operation="read_file", path="huge.log", start_line=lines - 6, end_line=lines - 4)
    assert out.splitlines() == [
        f"huge.log (lines {lines - 6}-{lines - 4} of {lines})",
        "x" * 79,
        f"NEEDLE {lines - 5}".ljust(79),
        "x" * 79,
    ]
    first = ok(ctx, operation="read_file", path="huge.log").splitlines()
    assert first[0] == f"huge.log (lines 1-500 of {lines})"  # 40,000 characters of 80-byte lines
    assert first[-1] == "[... stopped at line 500; read on with start_line=501]"
    # the message of an edit it cannot make points at what works
    out = err(ctx, operation="replace_string", path="huge.log", old_string="NEEDLE", new_string="N")
    assert "too large to edit in place" in out and "read_file reads it by line range" in out


def test_read_file_cuts_one_enormous_line_and_reads_on(root: Path) -> None:
    (root / "one.txt").write_text("a" * 3_000_000 + "\nsecond\n")
    ctx = ToolContext(root=root)
    out = ok(ctx, operation="read_file", path="one.txt")
    head, body = out.split("\n", 1)
    assert head == "one.txt (lines 1-1 of 2)"
    assert body.startswith("a" * 1000) and "[... line cut ...]" in body
    assert body.endswith("[... stopped at line 1; read on with start_line=2]")
    assert ok(ctx, operation="read_file", path="one.txt", start_line=2) == "one.txt (lines 2-2 of 2)\nsecond\n"
