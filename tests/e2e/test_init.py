"""``/init`` through the installed clio (issue 27): a model turn with clio/prompts/init.md that looks at
the repository and writes AGENTS.md through the file tool, so the write is shown as a diff and
approved (pty) or refused without anyone to approve it (one-shot, exit 4) like any write."""

from __future__ import annotations

from pathlib import Path

from testkit.clio_run import run_clio, user_texts
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import call
from tests.e2e.test_repl_pty import Spawn, spawn  # noqa: F401  (fixture)

AGENTS = "# AGENTS.md\n\nRun the tests with `make test`.\n"


def script_init(server: FakeServer) -> None:
    server.script(
        Reply(tool_calls=[call("file_operations", operation="read_file", path="Makefile")]),
        Reply(tool_calls=[call("file_operations", operation="create_file", path="AGENTS.md", content=AGENTS)]),
        Reply(text="Wrote AGENTS.md."),
    )


def test_init_in_the_repl_shows_the_diff_and_asks(spawn: Spawn, fake_server: FakeServer, project: Path) -> None:  # noqa: F811
    (project / "Makefile").write_text("test:\n\tpytest\n", encoding="utf-8")
    script_init(fake_server)
    term = spawn()
    term.prompt()
    term.type("/init")
    term.expect(r"\+Run the tests with `make test`\.")
    term.expect(r"create AGENTS\.md \(3 lines\)\s+Allow\? \[y\]es / \[n\]o")
    term.type("y")
    term.expect(r"Wrote AGENTS\.md\.")
    term.prompt()
    assert (project / "AGENTS.md").read_text(encoding="utf-8") == AGENTS
    first = user_texts(fake_server.chat_requests[0])[-1]
    assert first.startswith("/init: write an AGENTS.md for this repository") and "Makefile" in first
    term.type("/undo")
    term.expect(r"AGENTS\.md: deleted")
    term.prompt()
    term.child.sendeof()
    assert term.wait_exit() == 0


def test_init_one_shot_updates_an_existing_file_and_refuses_without_approval(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    (project / "Makefile").write_text("test:\n\tpytest\n", encoding="utf-8")
    (home / "config.yaml").write_text("consolidate: false\n", encoding="utf-8")  # no read-back between runs
    script_init(fake_server)
    r = run_clio(["-p", "/init"], server=fake_server, project=project, home=home)
    assert r.returncode == 4 and "refused for lack of approval: write: create AGENTS.md" in r.stderr
    assert not (project / "AGENTS.md").exists()

    (project / "AGENTS.md").write_text("# old\n", encoding="utf-8")
    fake_server.script(
        Reply(tool_calls=[call("file_operations", operation="write_file", path="AGENTS.md", content=AGENTS)]),
        Reply(text="Updated AGENTS.md."),
    )
    y = run_clio(["--yes", "-p", "/init"], server=fake_server, project=project, home=home)
    assert y.returncode == 0, y.stderr
    assert "-# old" in y.stderr and "+Run the tests with `make test`." in y.stderr  # the diff, after the fact
    assert (project / "AGENTS.md").read_text(encoding="utf-8") == AGENTS
    assert "clio: usage: " in y.stderr and ", 2 requests; " in y.stderr  # the turn's cost, as for -p TEXT
    assert "has an AGENTS.md already" in user_texts(fake_server.chat_requests[-1])[-1]
