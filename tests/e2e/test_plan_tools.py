"""Plan mode (``--plan``, ``/plan``) and per-tool allow-lists (``--allow-tools``, ``--deny-tools``)
through the installed clio (issue 27): enforced by clio, not only asked of the model."""

from __future__ import annotations

from pathlib import Path

from testkit.clio_run import run_clio, stderr_lines, system_text, tool_results
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import call
from tests.e2e.test_repl_pty import Spawn, spawn  # noqa: F401  (fixture)


def tool_names(body: dict[str, object]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]  # type: ignore[attr-defined, index]


def test_plan_mode_one_shot_reads_and_refuses_changes(fake_server: FakeServer, project: Path, home: Path) -> None:
    (project / "app.py").write_text("print('hi')\n", encoding="utf-8")
    (project / "build").mkdir()
    fake_server.script(
        Reply(tool_calls=[
            call("file_operations", operation="read_file", path="app.py"),
            call("terminal_operations", operation="execute", command="ls && git status 2>&1"),
            call("file_operations", operation="create_file", path="new.py", content="x = 1\n"),
            call("terminal_operations", operation="execute", command="rm -rf build"),
            call("terminal_operations", operation="execute", command="echo x > made.txt"),
        ]),
        Reply(text="Plan: 1. add new.py 2. remove build/"),
    )  # fmt: skip
    r = run_clio(["--plan", "--yes", "-p", "tidy the project"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "Plan: 1. add new.py 2. remove build/"
    assert (project / "build").is_dir() and not (project / "new.py").exists() and not (project / "made.txt").exists()
    first, second = fake_server.turn_requests  # the run's turn (a read-back it left aside)
    assert "## Plan mode (read-only)" in system_text(first)
    results = list(tool_results(second).values())
    assert "print('hi')" in results[0] and "app.py" in results[1]
    assert results[2].startswith("Error: plan mode is on (read-only): file_operations create_file")
    assert "`rm -rf build` was not run, `rm` is not on plan mode's list" in results[3]
    assert "redirects output into a file" in results[4]
    plain = run_clio(["-p", "hello"], server=fake_server, project=project, home=home)
    assert plain.returncode == 0 and "Plan mode" not in system_text(fake_server.chat_requests[-1])


def test_plan_toggle_in_the_repl(spawn: Spawn, fake_server: FakeServer, project: Path) -> None:  # noqa: F811
    fake_server.script(
        Reply(tool_calls=[call("file_operations", operation="create_file", path="a.txt", content="a\n")]),
        Reply(text="I would create a.txt."),
        Reply(tool_calls=[call("file_operations", operation="create_file", path="a.txt", content="a\n")]),
        Reply(text="Created a.txt."),
    )
    term = spawn("--yes")
    term.prompt()
    term.type("/plan")
    term.expect(r"Plan mode on: clio reads")
    term.expect(r"plan mode \(read-only\)")  # the toolbar says so
    term.type("make a.txt")
    term.expect(r"I would create a\.txt\.")
    term.prompt()
    assert not (project / "a.txt").exists()
    term.type("/plan")
    term.expect(r"Plan mode off")
    term.type("go ahead")
    term.expect(r"Created a\.txt\.")
    term.prompt()
    assert (project / "a.txt").read_text() == "a\n"
    bodies = fake_server.chat_requests
    assert "## Plan mode (read-only)" in system_text(bodies[0]) and "Plan mode" not in system_text(bodies[2])
    told = [m for m in bodies[2]["messages"] if m["role"] == "user"][-1]["content"]
    assert told.startswith("[clio: the user turned plan mode off") and told.endswith("go ahead")
    term.child.sendeof()
    assert term.wait_exit() == 0


def test_deny_tools_are_not_offered_and_refused(fake_server: FakeServer, project: Path, home: Path) -> None:
    fake_server.script(
        Reply(tool_calls=[call("terminal_operations", operation="execute", command="touch x")]),
        Reply(text="could not"),
    )
    r = run_clio(["--yes", "--deny-tools", "shell,git", "-p", "touch x"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    first, second = fake_server.turn_requests  # the run's turn (a read-back it left aside)
    names = tool_names(first)
    assert "terminal_operations" not in names and "version_control" not in names and "file_operations" in names
    (result,) = tool_results(second).values()
    assert "the tool terminal_operations is turned off for this run (--deny-tools)" in result
    assert not (project / "x").exists()


def test_allow_tools_run_without_asking_in_one_shot(fake_server: FakeServer, project: Path, home: Path) -> None:
    fake_server.script(
        Reply(tool_calls=[
            call("file_operations", operation="create_file", path="a.txt", content="a\n"),
            call("terminal_operations", operation="execute", command="touch b.txt"),
        ]),
        Reply(text="done"),
    )  # fmt: skip
    r = run_clio(["--allow-tools", "files", "-p", "make a and b"], server=fake_server, project=project, home=home)
    assert (project / "a.txt").exists() and not (project / "b.txt").exists()
    assert r.returncode == 4 and "refused for lack of approval: shell: touch b.txt" in r.stderr
    bad = run_clio(["--allow-tools", "shel", "-p", "hi"], server=fake_server, project=project, home=home)
    assert bad.returncode == 2
    assert stderr_lines(bad)[0].startswith("clio: --allow-tools: no tool named 'shel'; did you mean shell?")
