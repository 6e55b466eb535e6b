"""terminal_operations, version_control, todo_operations and user_collaboration through the registry."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from types import FrameType
from typing import Any

import git
import pytest

import clio.tools.builtin  # noqa: F401  (registers the tools)
from clio.tools.context import ToolContext
from clio.tools.git_repo import recent_git_activity
from clio.tools.registry import REGISTRY
from clio.tools.terminal import HEAD_BYTES, TAIL_BYTES, run_command
from clio.tools.todos import format_todos, load_todos
from clio.tools.user import NO_USER


class Approver:
    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str, bool]] = []

    def __call__(self, kind: str, summary: str, *, destructive: bool = False) -> bool:
        self.calls.append((kind, summary, destructive))
        return self.answer


def call(ctx: ToolContext, tool_name: str, /, **args: Any) -> tuple[str, bool]:
    return REGISTRY.run(ctx, tool_name, json.dumps(args))


def ok(ctx: ToolContext, tool_name: str, /, **args: Any) -> str:
    out, good = call(ctx, tool_name, **args)
    assert good, out
    return out


def err(ctx: ToolContext, tool_name: str, /, **args: Any) -> str:
    out, good = call(ctx, tool_name, **args)
    assert not good, out
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def _wait_dead(pid: int, limit: float = 10.0) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


# -- terminal ---------------------------------------------------------------------------------


def test_execute_runs_in_root_and_reports_exit_code(tmp_path: Path) -> None:
    ap = Approver()
    ctx = ToolContext(root=tmp_path, approve=ap)
    out = ok(ctx, "terminal_operations", operation="execute", command="pwd; echo err >&2; exit 3")
    assert out == f"{tmp_path.resolve()}\nerr\nexit code: 3"
    assert ap.calls == [("shell", "pwd; echo err >&2; exit 3", False)]
    assert ok(ctx, "terminal_operations", operation="execute", command="true") == "(no output)\nexit code: 0"


def test_stdin_is_closed(tmp_path: Path) -> None:
    out = ok(
        ToolContext(root=tmp_path), "terminal_operations", operation="execute", command="cat; echo after"
    )
    assert out == "after\nexit code: 0"


def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path)
    cmd = "sleep 300 & echo $! > child.pid; echo started; sleep 300"
    out = ok(ctx, "terminal_operations", operation="execute", command=cmd, timeout=1)
    assert out.startswith("started\n")
    assert out.endswith("timed out after 1 s (the process group was killed)")
    child = int((tmp_path / "child.pid").read_text())
    assert _wait_dead(child), "the background child survived the timeout"


def test_keyboard_interrupt_kills_group_and_propagates(tmp_path: Path) -> None:
    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_command("sleep 300 & echo $! > child.pid; wait", tmp_path, 60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    for _ in range(100):  # the pid file is written almost at once; be tolerant of a slow machine
        if (tmp_path / "child.pid").read_text().strip():
            break
        time.sleep(0.05)
    assert _wait_dead(int((tmp_path / "child.pid").read_text()))


def test_output_is_capped_head_and_tail(tmp_path: Path) -> None:
    full = "".join(f"{i}\n" for i in range(1, 100001))
    out = ok(ToolContext(root=tmp_path), "terminal_operations", operation="execute", command="seq 1 100000")
    assert out.startswith("1\n2\n3\n")
    assert out.endswith("99999\n100000\nexit code: 0")
    cut = len(full) - HEAD_BYTES - TAIL_BYTES
    assert f"[... {cut:,} bytes of output cut ...]" in out
    assert len(out) < HEAD_BYTES + TAIL_BYTES + 200


def test_background_process_does_not_hang_execute(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path)
    out = ok(ctx, "terminal_operations", operation="execute", command="(sleep 30 &) ; echo quick", timeout=20)
    assert out == "quick\nexit code: 0"


def test_declined_and_destructive_commands(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    ap = Approver(answer=False)
    ctx = ToolContext(root=tmp_path, approve=ap)
    out = err(ctx, "terminal_operations", operation="execute", command=f"touch {marker}")
    assert "the user declined: running" in out
    assert not marker.exists()
    oneshot = ToolContext(root=tmp_path, approve=ap, interactive=False)
    out = err(oneshot, "terminal_operations", operation="execute", command="git push --force origin main")
    assert "destructive" in out and "--force" in out and "rerun clio with --yes" in out
    assert ap.calls[-1] == ("shell", "git push --force origin main", True)
    out = err(ctx, "terminal_operations", operation="execute", command="rm -rf /")
    assert "destructive" in out and "--yes" not in out
    # an approved destructive command runs (inside a scratch dir, so nothing real is lost)
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / "f").write_text("x")
    yes = Approver(answer=True)
    ok(
        ToolContext(root=tmp_path / "scratch", approve=yes),
        "terminal_operations",
        operation="execute",
        command="shred -u f",
    )
    assert yes.calls == [("shell", "shred -u f", True)]
    assert not (tmp_path / "scratch" / "f").exists()


def test_execute_argument_errors(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path)
    assert "'command' is required" in err(ctx, "terminal_operations", operation="execute")
    assert "must be a int" in err(
        ctx, "terminal_operations", operation="execute", command="true", timeout="soon"
    )


# -- git --------------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> git.Repo:
    r = git.Repo.init(tmp_path / "repo", initial_branch="main")
    with r.config_writer() as cw:
        cw.set_value("user", "name", "Test User")
        cw.set_value("user", "email", "test@example.com")
        cw.set_value("commit", "gpgsign", "false")
    return r


def _root(repo: git.Repo) -> Path:
    return Path(str(repo.working_tree_dir))


def test_not_a_repository(tmp_path: Path) -> None:
    out = err(ToolContext(root=tmp_path), "version_control", operation="status")
    assert "is not a git repository" in out
    assert recent_git_activity(tmp_path) == ""


def test_commit_status_diff_log(repo: git.Repo) -> None:
    root = _root(repo)
    ap = Approver()
    ctx = ToolContext(root=root, approve=ap)
    assert ok(ctx, "version_control", operation="log") == "no commits yet"
    (root / "a.py").write_text("x = 1\n")
    status = ok(ctx, "version_control", operation="status")
    assert status.splitlines()[0].startswith("## No commits yet on main")
    assert "?? a.py" in status
    # a.py was not made by clio: without paths it is listed, not staged
    out = err(ctx, "version_control", operation="commit", message="first commit")
    assert "not staged: a.py" in out and "name them in 'paths'" in out
    assert not repo.head.is_valid()
    out = ok(ctx, "version_control", operation="commit", message="first commit", paths=["a.py"])
    short = repo.head.commit.hexsha[: len(out.split("]")[0]) - 1]
    assert out.startswith(f"[{short}] first commit\n")
    assert "1 file changed" in out and "staged and committed: a.py (new)" in out
    assert ap.calls[-1][0] == "git"
    assert ok(ctx, "version_control", operation="status").splitlines() == ["## main", "(working tree clean)"]
    (root / "a.py").write_text("x = 2\n")
    (root / "new.txt").write_text("n\n")
    diff = ok(ctx, "version_control", operation="diff")
    assert "-x = 1\n+x = 2" in diff and "untracked (not in the diff): new.txt" in diff
    assert ok(ctx, "version_control", operation="diff", staged=True) == "no staged changes"
    out = ok(ctx, "version_control", operation="commit", message="second", paths=["a.py"])
    assert out.startswith("[") and "] second" in out
    assert "not staged (untracked, not created by clio): new.txt" in out
    assert repo.untracked_files == ["new.txt"]
    ok(ctx, "version_control", operation="commit", message="third", paths=["new.txt"])
    assert repo.untracked_files == []
    assert "nothing to commit" in err(ctx, "version_control", operation="commit", message="empty")
    log = ok(ctx, "version_control", operation="log", max_count=2).splitlines()
    assert len(log) == 2
    h, date, *rest = log[0].split(" ")
    assert repo.head.commit.hexsha.startswith(h)
    assert len(date) == 10 and " ".join(rest) == "Test User third"
    assert ok(ctx, "version_control", operation="log", path="a.py").splitlines()[0].endswith("second")


def test_commit_declined(repo: git.Repo) -> None:
    root = _root(repo)
    (root / "f").write_text("f")
    ap = Approver(False)
    out = err(
        ToolContext(root=root, approve=ap), "version_control", operation="commit", message="m", paths=["f"]
    )
    assert "declined" in out and ap.calls == [("git", "git commit (f): m", False)]
    assert not repo.head.is_valid()


def test_branch_stash_blame_tag(repo: git.Repo) -> None:
    root = _root(repo)
    ctx = ToolContext(root=root)
    (root / "a.txt").write_text("l1\nl2\nl3\n")
    ok(ctx, "version_control", operation="commit", message="base", paths=["a.txt"])
    assert "created branch feature" in ok(ctx, "version_control", operation="branch", name="feature")
    assert repo.active_branch.name == "main"
    branches = ok(ctx, "version_control", operation="branch")
    assert "feature" in branches and "* main" in branches
    ok(ctx, "version_control", operation="branch", name="feature", checkout=True)
    assert repo.active_branch.name == "feature"
    ok(ctx, "version_control", operation="branch", name="topic", checkout=True)
    assert repo.active_branch.name == "topic"
    assert "already exists" in err(ctx, "version_control", operation="branch", name="feature")

    (root / "a.txt").write_text("l1\nchanged\nl3\n")
    ok(ctx, "version_control", operation="stash", action="push", message="wip")
    assert (root / "a.txt").read_text() == "l1\nl2\nl3\n"
    assert "wip" in ok(ctx, "version_control", operation="stash", action="list")
    ok(ctx, "version_control", operation="stash", action="pop")
    assert (root / "a.txt").read_text() == "l1\nchanged\nl3\n"
    assert ok(ctx, "version_control", operation="stash") == "no stashes"

    blame = ok(ctx, "version_control", operation="blame", path="a.txt", start_line=2, end_line=3).splitlines()
    assert len(blame) == 2
    assert "Not Committed Yet" in blame[0] and blame[0].endswith("changed")
    assert "Test User" in blame[1] and blame[1].endswith("l3")

    assert ok(ctx, "version_control", operation="tag") == "no tags"
    ok(ctx, "version_control", operation="tag", name="v1.0", message="release")
    assert "v1.0" in ok(ctx, "version_control", operation="tag")
    assert "v1.0" in [t.name for t in repo.tags]
    assert "git tag failed" in err(ctx, "version_control", operation="tag", name="v1.0")


def test_git_errors_are_tool_errors(repo: git.Repo) -> None:
    ctx = ToolContext(root=_root(repo))
    (_root(repo) / "f").write_text("f")
    ok(ctx, "version_control", operation="commit", message="m", paths=["f"])
    assert "git blame failed" in err(ctx, "version_control", operation="blame", path="missing.txt")
    assert "unknown operation 'rebase'" in err(ctx, "version_control", operation="rebase")
    assert "unknown stash action" in err(ctx, "version_control", operation="stash", action="drop")


def test_recent_git_activity(repo: git.Repo) -> None:
    root = _root(repo)
    ctx = ToolContext(root=root)
    for i in range(7):
        (root / "f.txt").write_text(str(i))
        ok(ctx, "version_control", operation="commit", message=f"change {i}", paths=["f.txt"])
    (root / "dirty.txt").write_text("d")
    text = recent_git_activity(root, n=3)
    lines = text.splitlines()
    assert lines[0] == "Recent commits:"
    assert [ln.split(" ", 2)[2] for ln in lines[1:4]] == [
        "Test User change 6",
        "Test User change 5",
        "Test User change 4",
    ]
    assert "Working tree:" in lines and "?? dirty.txt" in lines


# -- todos and user ---------------------------------------------------------------------------


def test_todos_persist_per_session(tmp_path: Path) -> None:
    sess = tmp_path / "sess"
    sess.mkdir()
    ctx = ToolContext(root=tmp_path, session_dir=sess)
    assert ok(ctx, "todo_operations", operation="read") == "(no todos)"
    ok(ctx, "todo_operations", operation="write", items=["plan", "code"])
    ok(ctx, "todo_operations", operation="add", content="test")
    out = ok(ctx, "todo_operations", operation="update", id=2, status="in_progress")
    assert out == "[ ] 1. plan\n[~] 2. code\n[ ] 3. test\n(0/3 done)"
    ok(ctx, "todo_operations", operation="update", id=1, status="done", content="plan it")
    data = json.loads((sess / "todos.json").read_text())
    assert data[0] == {"id": 1, "content": "plan it", "status": "done"}
    fresh = ToolContext(root=tmp_path, session_dir=sess)
    assert load_todos(fresh) == data
    assert "no todo with id 9" in err(ctx, "todo_operations", operation="update", id=9, status="done")
    assert "status must be one of" in err(ctx, "todo_operations", operation="update", id=1, status="finished")
    other = ToolContext(root=tmp_path, session_dir=tmp_path / "other")
    assert load_todos(other) == []


def test_todos_in_memory_and_damaged_file(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path)
    ok(ctx, "todo_operations", operation="add", content="only in memory")
    assert ctx.services.todos_mem == [{"id": 1, "content": "only in memory", "status": "pending"}]
    assert list(tmp_path.iterdir()) == []
    sess = tmp_path / "s"
    sess.mkdir()
    (sess / "todos.json").write_text("{broken")
    assert (
        ok(ToolContext(root=tmp_path, session_dir=sess), "todo_operations", operation="read") == "(no todos)"
    )
    assert any(p.name.startswith("todos.damaged-") for p in sess.iterdir())
    assert format_todos([{"id": 1, "content": "a", "status": "done"}]) == "[x] 1. a\n(1/1 done)"


def test_request_input(tmp_path: Path) -> None:
    asked: list[str] = []

    def ask(question: str) -> str | None:
        asked.append(question)
        return "use postgres"

    out = ok(
        ToolContext(root=tmp_path, ask_user=ask),
        "user_collaboration",
        operation="request_input",
        question="Which DB?",
    )
    assert out == "The user answered: use postgres" and asked == ["Which DB?"]
    out = ok(
        ToolContext(root=tmp_path), "user_collaboration", operation="request_input", question="Which DB?"
    )
    assert out == NO_USER and "assumptions" in out


def test_schemas_stay_compact() -> None:
    mine = [
        "file_operations",
        "terminal_operations",
        "version_control",
        "todo_operations",
        "user_collaboration",
    ]
    size = len(json.dumps([s for s in REGISTRY.schemas() if s["function"]["name"] in mine]))
    assert size < 5500, size
