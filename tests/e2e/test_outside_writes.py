# ruff: noqa: F811  (the pty fixtures are imported from test_repl_pty)
"""Issue 27, through the installed clio: a forced recursive rm is destructive like git clean -fdx;
without --sandbox, a write outside the project is its own question (naming the path as outside the
project) that [a]lways never covers, with a diff header that names the absolute path; a shell
command's question offers no [d]iff."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from testkit.clio_run import run_clio, stderr_lines, tool_results
from testkit.fakeserver import FakeServer, Reply
from tests.e2e.test_repl_pty import Spawn, project, spawn  # noqa: F401  (fixtures)


def write(path: str, content: str, call_id: str = "w") -> dict[str, Any]:
    args = {"operation": "write_file", "path": path, "content": content}
    return {"id": call_id, "name": "file_operations", "arguments": args}


def test_rm_rf_of_untracked_files_is_refused_like_git_clean(fake_server: FakeServer, project: Path) -> None:  # noqa: F811
    home = project.parent / "home"
    (project / "build").mkdir()
    (project / "build" / "only-copy.txt").write_text("not in git\n", encoding="utf-8")
    (home / "config.yaml").write_text("approvals: allow\n", encoding="utf-8")
    rm = {"id": "rm", "name": "terminal_operations", "arguments": {"operation": "execute", "command": "rm -rf build"}}
    fake_server.script(Reply(tool_calls=[rm]), Reply(text="Could not."))
    r = run_clio(["-p", "clean up"], server=fake_server, project=project, home=home)
    assert r.returncode == 4, r.stderr
    assert (project / "build" / "only-copy.txt").exists()
    assert "rm -rf deletes whole folders" in tool_results(fake_server.chat_requests[-1])["rm"]


def test_a_write_outside_the_project_needs_yes_in_one_shot(
    fake_server: FakeServer, project: Path, tmp_path: Path  # noqa: F811
) -> None:
    home = project.parent / "home"
    target = tmp_path / "elsewhere.txt"
    (home / "config.yaml").write_text("approvals:\n  write: allow\n", encoding="utf-8")
    fake_server.script(Reply(tool_calls=[write(str(target), "x\n")]), Reply(text="Could not."))
    r = run_clio(["-p", "write it"], server=fake_server, project=project, home=home)
    assert r.returncode == 4, r.stderr  # `write: allow` is for the project's files
    assert not target.exists()
    assert any("outside" in line and str(target) in line for line in stderr_lines(r)), r.stderr
    fake_server.script(Reply(tool_calls=[write(str(target), "x\n")]), Reply(text="Done."))
    r = run_clio(["-p", "write it", "--yes"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert target.read_text(encoding="utf-8") == "x\n"
    assert f"+++ {target}" in r.stderr and f"b/{target}" not in r.stderr and f"b/{str(target)[1:]}" not in r.stderr


def test_in_the_repl_an_outside_write_asks_every_time(
    spawn: Spawn, fake_server: FakeServer, project: Path, request: pytest.FixtureRequest  # noqa: F811
) -> None:
    # a short path: the question's line must fit the terminal's 120 columns to be matched whole
    # (a parallel run's tmp_path is longer by its worker's folder)
    outside = Path(tempfile.mkdtemp(prefix="out-")) / "outside.txt"
    request.addfinalizer(lambda: shutil.rmtree(outside.parent, ignore_errors=True))
    shell = {"id": "sh", "name": "terminal_operations", "arguments": {"operation": "execute", "command": "true"}}
    fake_server.script(
        Reply(tool_calls=[write("in.txt", "inside\n", "w1")]),
        Reply(tool_calls=[write(str(outside), "outside\n", "w2")]),
        Reply(tool_calls=[shell]),
        Reply(text="ALL-DONE"),
    )
    term = spawn()
    term.prompt()
    term.type("write both")
    term.expect(r"Allow\? \[y\]es / \[n\]o / \[a\]lways write this session / \[d\]iff")
    term.type("a")
    term.expect(rf"\+\+\+ {outside}")  # the diff's header names the absolute path (was b//tmp/...)
    term.expect(rf"⚠ write outside the project: create {outside} \(1 line")
    term.expect(r"Allow\? \[y/N\]")
    term.type("n")
    term.expect(r"Allow\? \[y\]es / \[n\]o / \[a\]lways shell this session\s")  # no [d]iff: none to show
    term.type("y")
    term.expect(r"ALL-DONE")
    term.prompt()
    assert (project / "in.txt").exists() and not outside.exists()
    assert "[d]iff" not in term.text.split("[a]lways shell this session", 1)[1].split("ALL-DONE", 1)[0]
    term.child.sendeof()
    assert term.wait_exit() == 0
