"""End to end: clio's state never enters the user's git, and git is not a way out.

The installed ``clio -p`` runs in a git project against the fake server. After a run
``git status`` shows nothing from ``.clio/``; a scripted commit stages the tracked changes and the
files clio created, not the user's stray files, and runs none of the repository's programs; the
file tool cannot write ``.git/`` or ``.clio/`` in one-shot mode.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from testkit.clio_run import run_clio, tool_results
from testkit.fakeserver import FakeServer, Reply


def git(project: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", HOME=str(project.parent))  # the developer's config stays out
    proc = subprocess.run(["git", *args], cwd=project, env=env, capture_output=True, text=True, check=True)
    return proc.stdout


def make_repo(project: Path) -> None:
    git(project, "init", "-q", "-b", "main")
    git(project, "config", "user.name", "Test User")
    git(project, "config", "user.email", "test@example.com")
    git(project, "config", "commit.gpgsign", "false")
    (project / "tracked.py").write_text("x = 1\n")
    git(project, "add", "tracked.py")
    git(project, "commit", "-q", "-m", "base")


def test_one_shot_run_leaves_git_status_clean(fake_server: FakeServer, project: Path, home: Path) -> None:
    make_repo(project)
    fake_server.script(Reply(text="Nothing to change."))
    r = run_clio(["-p", "Look around"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert (project / ".clio" / "sessions").is_dir()  # clio did write its state...
    assert (project / ".clio" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert git(project, "status", "--porcelain", "--untracked-files=all") == ""  # ...and git sees none of it


def test_older_clio_dir_gets_its_gitignore(fake_server: FakeServer, project: Path, home: Path) -> None:
    make_repo(project)
    (project / ".clio").mkdir()
    (project / ".clio" / "history").write_text("+my token is abc123\n")
    assert ".clio/history" in git(project, "status", "--porcelain", "--untracked-files=all")
    fake_server.script(Reply(text="Hello."))
    r = run_clio(["-p", "Hi"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert git(project, "status", "--porcelain", "--untracked-files=all") == ""


def test_scripted_commit_stages_only_the_right_files(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    make_repo(project)
    markers = project.parent / "markers"
    markers.mkdir()
    hook = project / ".git" / "hooks" / "pre-commit"
    hook.write_text(f'#!/bin/sh\ntouch "{markers}/pre-commit"\n')
    hook.chmod(0o755)
    spy = project.parent / "spy-fsmonitor"
    spy.write_text(f'#!/bin/sh\ntouch "{markers}/fsmonitor"\n')
    spy.chmod(0o755)
    git(project, "config", "core.fsmonitor", str(spy))
    git_config = (project / ".git" / "config").read_text()
    (home / "config.yaml").write_text("approvals:\n  write: allow\n  git: allow\n", encoding="utf-8")
    (project / "tracked.py").write_text("x = 2\n")
    (project / "stray.txt").write_text("the user's scratch notes\n")

    fake_server.script(
        Reply(
            tool_calls=[
                {
                    "name": "file_operations",
                    "arguments": {"operation": "create_file", "path": "new.py", "content": "y = 1\n"},
                    "id": "call_create",
                },
                {
                    "name": "file_operations",
                    "arguments": {
                        "operation": "append_file",
                        "path": ".git/config",
                        "content": "[core]\n\thooksPath = /tmp\n",
                    },
                    "id": "call_gitdir",
                },
                {
                    "name": "file_operations",
                    "arguments": {
                        "operation": "write_file",
                        "path": ".clio/config.yaml",
                        "content": "approvals:\n  shell: allow\n",
                    },
                    "id": "call_clio",
                },
            ]
        ),
        Reply(
            tool_calls=[
                {
                    "name": "version_control",
                    "arguments": {"operation": "commit", "message": "add new.py"},
                    "id": "call_commit",
                }
            ]
        ),
        Reply(text="Committed."),
    )
    r = run_clio(["-p", "Add new.py and commit"], server=fake_server, project=project, home=home)
    assert r.returncode == 4, r.stderr  # the two protected writes were refused: the run says so
    results = tool_results(fake_server.turn_requests[-1])  # the run's turn (a read-back it left aside)
    assert results["call_create"].startswith("created new.py")
    for key in ("call_gitdir", "call_clio"):
        assert results[key].startswith("Error: refused:"), results[key]
        assert "always refused in one-shot mode" in results[key]
    assert (project / ".git" / "config").read_text() == git_config
    assert not (project / ".clio" / "config.yaml").exists()

    out = results["call_commit"]
    assert "staged and committed:" in out and "new.py (new)" in out and "tracked.py (modified)" in out
    assert "not staged (untracked, not created by clio): stray.txt" in out
    assert "hooks not run (not approved): pre-commit" in out
    committed = git(project, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(committed) == ["new.py", "tracked.py"]
    assert git(project, "log", "-1", "--format=%s") == "add new.py\n"
    assert sorted(p.name for p in markers.iterdir()) == []  # neither the hook nor fsmonitor ran
    assert git(project, "status", "--porcelain", "--untracked-files=all") == "?? stray.txt\n"
