"""/undo through the installed clio (issue 12 item 2): the file tool's changes of the last turn
are put back from clio's own snapshots, across processes, with the model told; a file changed
in between is asked about (pty) or left alone (one-shot without --yes)."""

from __future__ import annotations

from pathlib import Path

from testkit.clio_run import run_clio, stderr_lines
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import call
from tests.e2e.test_repl_pty import Spawn, spawn  # noqa: F401  (fixture)


def change_three_files(server: FakeServer) -> None:
    server.script(
        Reply(
            tool_calls=[
                call(
                    "file_operations",
                    operation="replace_string",
                    path="calc.py",
                    old_string="a - b",
                    new_string="a + b",
                ),
                call("file_operations", operation="create_file", path="notes.md", content="# notes\n"),
                call("file_operations", operation="delete_file", path="old.txt"),
            ]
        ),
        Reply(text="Done."),
    )


def setup_files(project: Path) -> None:
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    (project / "old.txt").write_text("old but precious\n", encoding="utf-8")


def test_undo_in_the_next_run_puts_the_turn_back_and_tells_the_model(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    setup_files(project)
    change_three_files(fake_server)
    r = run_clio(
        ["--yes", "-p", "fix add, start notes, drop old.txt"], server=fake_server, project=project, home=home
    )
    assert r.returncode == 0, r.stderr
    assert "return a + b" in (project / "calc.py").read_text() and not (project / "old.txt").exists()

    u = run_clio(["--resume", "-p", "/undo"], server=fake_server, project=project, home=home)
    assert u.returncode == 0, u.stderr
    assert (
        "calc.py: restored" in u.stdout
        and "notes.md: deleted" in u.stdout
        and "old.txt: restored" in u.stdout
    )
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert (project / "old.txt").read_text() == "old but precious\n" and not (project / "notes.md").exists()

    again = run_clio(["--resume", "-p", "/undo"], server=fake_server, project=project, home=home)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "The last turn's changes were already undone; no turn before it changed files."


def test_a_second_undo_says_the_last_turn_was_undone_already(fake_server: FakeServer, project: Path, home: Path) -> None:
    """Issue 35 item 4: a second /undo never reaches past the last turn unasked, and says why
    nothing happened; /undo 2 then puts back the turn before."""
    (project / "a.txt").write_text("A0\n", encoding="utf-8")
    (project / "b.txt").write_text("B0\n", encoding="utf-8")
    for name, new in (("a.txt", "A1"), ("b.txt", "B1")):
        fake_server.script(
            Reply(tool_calls=[call("file_operations", operation="write_file", path=name, content=new + "\n")]),
            Reply(text="Done."),
        )
        flags = ["--resume"] if name == "b.txt" else []
        r = run_clio([*flags, "--yes", "-p", f"change {name}"], server=fake_server, project=project, home=home)
        assert r.returncode == 0, r.stderr
    assert (project / "a.txt").read_text() == "A1\n" and (project / "b.txt").read_text() == "B1\n"

    first = run_clio(["--resume", "-p", "/undo"], server=fake_server, project=project, home=home)
    assert "b.txt: restored" in first.stdout and (project / "b.txt").read_text() == "B0\n"
    second = run_clio(["--resume", "-p", "/undo"], server=fake_server, project=project, home=home)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "The last turn's changes were already undone; /undo 2 for the turn before."
    assert (project / "a.txt").read_text() == "A1\n"  # the turn before is left alone
    two = run_clio(["--resume", "-p", "/undo 2"], server=fake_server, project=project, home=home)
    assert "a.txt: restored" in two.stdout and (project / "a.txt").read_text() == "A0\n"
    assert (project / "b.txt").read_text() == "B0\n"


def test_undo_tells_the_model_with_the_next_message_in_the_same_repl(
    spawn: Spawn,  # noqa: F811
    fake_server: FakeServer,
    project: Path,
) -> None:
    setup_files(project)
    change_three_files(fake_server)
    fake_server.script(Reply(text="Understood."))
    term = spawn("--yes")
    term.prompt()
    term.type("fix add, start notes, drop old.txt")
    term.expect(r"Done\.")
    term.prompt()
    (project / "calc.py").write_text("def add(a, b):\n    return a + b  # reviewed\n", encoding="utf-8")
    term.type("/undo")
    term.expect(r"calc\.py was changed after clio changed it; put back .* \[y/N\]")
    term.type("n")
    term.expect(r"old\.txt: restored\s+notes\.md: deleted\s+calc\.py: skipped: changed since clio's change")
    term.prompt()
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a + b  # reviewed\n"
    assert (project / "old.txt").exists() and not (project / "notes.md").exists()
    term.type("what now?")
    term.expect(r"Understood\.")
    term.prompt()
    told = fake_server.chat_requests[-1]["messages"][-1]
    assert told["role"] == "user" and told["content"].startswith("[clio: the user ran /undo;")
    assert "old.txt (restored)" in told["content"] and told["content"].endswith("what now?")
    term.child.sendeof()
    assert term.wait_exit() == 0


def test_undo_without_a_change_and_bad_arguments(fake_server: FakeServer, project: Path, home: Path) -> None:
    r = run_clio(["-p", "/undo"], server=fake_server, project=project, home=home)
    assert r.returncode == 0 and "Nothing to undo" in r.stdout
    bad = run_clio(["-p", "/undo two"], server=fake_server, project=project, home=home)
    assert bad.returncode == 1 and stderr_lines(bad) == [
        "clio: Usage: /undo [N] (N: how many turns back, 1 by default)"
    ]
