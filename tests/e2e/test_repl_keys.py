"""Single-key approvals in the REPL (issue 35 item 2), through a real pty: y/n/a/d answer without
Enter, Enter alone is the default (no), other keys are ignored, an Enter right after the key
answers nothing else."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from testkit.fakeserver import FakeServer, Reply
from tests.e2e.test_repl_pty import Spawn, project, spawn  # noqa: F401  (the pty fixtures)


def write(path: str) -> Reply:
    call: dict[str, Any] = {"name": "file_operations", "arguments": {"operation": "write_file", "path": path, "content": "x\n"}}
    return Reply(tool_calls=[call])


def test_one_key_answers_enter_alone_is_no(spawn: Spawn, fake_server: FakeServer, project: Path) -> None:  # noqa: F811
    fake_server.script(write("one.txt"), Reply(text="DONE-ONE"), write("two.txt"), Reply(text="DONE-TWO"))
    term = spawn()
    term.prompt()
    term.type("write one.txt")
    term.expect(r"Allow\? \[y\]es / \[n\]o / \[a\]lways write this session / \[d\]iff")
    term.child.send("q")  # not an answer: ignored
    time.sleep(0.3)
    assert not (project / "one.txt").exists()
    term.child.send("d")  # the diff, then the question again, without Enter
    term.expect(r"Allow\? \[y\]es")
    term.child.send("y")  # no Enter
    term.expect(r"✓ file_operations write_file one\.txt")
    term.expect(r"DONE-ONE")
    term.prompt()
    assert (project / "one.txt").exists()

    term.type("write two.txt")
    term.expect(r"Allow\? \[y\]es")
    term.child.send("\r")  # Enter alone: the default, no
    term.expect(r"✗ file_operations write_file two\.txt\s+.*declined")
    term.expect(r"DONE-TWO")
    term.prompt()
    assert not (project / "two.txt").exists()
    term.child.sendeof()
    assert term.wait_exit() == 0
