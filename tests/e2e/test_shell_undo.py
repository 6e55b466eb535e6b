"""Undo for shell commands (issue 27) through the installed clio: what a command created, changed or
deleted under the project is put back by /undo (tracked files from git's objects, others from the
copy taken before the command), in the next run too; what was not copied is named, not guessed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from testkit.clio_run import run_clio
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import call


def git(project: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=project, check=True, capture_output=True
    )


def shell(server: FakeServer, command: str) -> None:
    server.script(Reply(tool_calls=[call("terminal_operations", operation="execute", command=command)]), Reply(text="Ran it."))


def test_undo_puts_back_what_a_shell_command_changed(fake_server: FakeServer, project: Path, home: Path) -> None:
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    (project / "notes.md").write_text("# notes\n", encoding="utf-8")
    (project / ".gitignore").write_text(".env\n", encoding="utf-8")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "start")
    (project / "notes.md").write_text("# notes\nnot committed yet\n", encoding="utf-8")  # dirty, tracked
    (project / "todo.txt").write_text("untracked but precious\n", encoding="utf-8")
    (project / ".env").write_text("MODE=dev\n", encoding="utf-8")  # ignored
    (project / "src").mkdir()
    shell(
        fake_server,
        "sed -i 's/a - b/a + b/' calc.py && rm todo.txt && echo new > src/made.txt && echo more >> notes.md"
        " && echo MODE=prod > .env && touch .gitignore",
    )
    r = run_clio(["--yes", "-p", "fix it the quick way"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert "a + b" in (project / "calc.py").read_text() and not (project / "todo.txt").exists()

    d = run_clio(["--resume", "-p", "/diff"], server=fake_server, project=project, home=home)
    assert "-    return a - b\n+    return a + b" in d.stdout and "+++ b/src/made.txt" in d.stdout
    assert ".gitignore" not in d.stdout  # touched, content unchanged: nothing to undo

    u = run_clio(["--resume", "-p", "/undo"], server=fake_server, project=project, home=home)
    assert u.returncode == 0, u.stderr
    for line in ("calc.py: restored", "todo.txt: restored", "src/made.txt: deleted", "notes.md: restored", ".env: restored"):
        assert line in u.stdout, u.stdout
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert (project / "notes.md").read_text() == "# notes\nnot committed yet\n"
    assert (project / "todo.txt").read_text() == "untracked but precious\n"
    assert (project / ".env").read_text() == "MODE=dev\n" and not (project / "src" / "made.txt").exists()


def test_a_large_untracked_file_is_named_not_guessed(fake_server: FakeServer, project: Path, home: Path) -> None:
    big = project / "data.bin"
    big.write_bytes(b"0" * 1_500_000)
    shell(fake_server, "echo changed > data.bin && echo hi > small.txt")
    r = run_clio(["--yes", "-p", "overwrite the data"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    u = run_clio(["--resume", "-p", "/undo"], server=fake_server, project=project, home=home)
    assert "small.txt: deleted" in u.stdout
    assert "data.bin: skipped: a shell command changed it and clio had no copy from before" in u.stdout
    assert big.read_text() == "changed\n"  # left as the command left it
