# ruff: noqa: F811  (the pty fixtures are imported from test_repl_pty)
"""A session's name and its resume recap come from the words the user typed, never from the
content of a file the message attached with @path (issue 27: ``--sessions`` and the recap showed
the file's first words)."""

from __future__ import annotations

from pathlib import Path

from testkit.clio_run import run_clio
from testkit.fakeserver import FakeServer, Reply
from tests.e2e.test_repl_pty import Spawn, project, spawn  # noqa: F401  (fixtures)

CONTENT = "FILEBODY first words of the attached file\n" * 3


def test_name_and_recap_leave_the_attached_file_out(spawn: Spawn, fake_server: FakeServer, project: Path) -> None:
    (project / "notes.txt").write_text(CONTENT, encoding="utf-8")
    fake_server.script(Reply(text="READ-IT"))
    term = spawn()
    term.prompt()
    term.type("@notes.txt")  # nothing typed but the mention: the name is the mention
    term.expect(r"READ-IT")
    term.prompt()
    assert "FILEBODY" in fake_server.chat_requests[-1]["messages"][-1]["content"]  # it was attached
    term.child.sendeof()
    assert term.wait_exit() == 0

    listing = run_clio(["--sessions"], server=fake_server, project=project, home=project.parent / "home")
    assert listing.returncode == 0, listing.stderr
    assert "@notes.txt" in listing.stdout and "FILEBODY" not in listing.stdout

    term = spawn("--resume")
    term.expect(r"› @notes\.txt \(attached: notes\.txt\)\s+READ-IT")
    term.prompt()
    assert "FILEBODY" not in term.text
    term.child.sendeof()
    assert term.wait_exit() == 0
