"""Consolidation in the REPL, through a real pseudo-terminal (issue 14): when the user leaves, the
session is read back into long-term memory in one request, by a detached child after the REPL has
exited (clio.app.background), and the next session carries what was learned; ``/memory consolidate`` does it on demand and ``/memory list learned`` shows the result.
The pty driver is tests/e2e/test_repl_pty.py's; the model is the fake server's ScriptedModel.
"""

from __future__ import annotations

import json
from pathlib import Path

from testkit.clio_run import system_text, wait_background
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import ScriptedModel, consolidation_requests, turn_requests
from tests.e2e.test_repl_pty import Spawn, project, spawn  # noqa: F401  (fixtures)

DECISION = "We will use pgbouncer in transaction mode for the billing database."
RULE = "Billing database connections go through pgbouncer in transaction mode"
TASK = "Write the connection pool settings for the worker."


def scripted(server: FakeServer) -> ScriptedModel:
    model = ScriptedModel()
    model.on(DECISION, Reply(text="Noted: pgbouncer in transaction mode."))
    model.on(TASK, Reply(text="Pool settings written."))
    model.consolidation = Reply(
        text=json.dumps({"entries": [{"type": "rule", "rule": RULE, "confidence": 0.9}], "pairs": []})
    )
    server.responder = model
    return model


def rules(root: Path) -> list[str]:
    entries = json.loads((root / ".clio" / "ltm.json").read_text(encoding="utf-8"))["entries"]
    return sorted(e["rule"] for e in entries if e["type"] == "rule" and e["provenance"]["by"] == "consolidation")


def test_leaving_the_repl_consolidates_and_the_next_session_starts_with_it(
    spawn: Spawn, fake_server: FakeServer, project: Path  # noqa: F811
) -> None:
    scripted(fake_server)
    term = spawn()
    term.prompt()
    term.type(DECISION)
    term.expect(r"Noted: pgbouncer")
    term.prompt()
    assert consolidation_requests(fake_server) == []  # not while the session goes on
    term.child.sendeof()
    term.expect(r"saving what this session established in the background")
    assert term.wait_exit() == 0
    wait_background(project)
    assert len(consolidation_requests(fake_server)) == 1
    log = (project / ".clio" / "consolidation.log").read_text(encoding="utf-8")
    assert "learned 2 new" in log
    assert rules(project) == sorted([DECISION, RULE])

    term = spawn()
    term.prompt()
    term.type(TASK)
    term.expect(r"Pool settings written\.")
    term.prompt()
    assert RULE in system_text(turn_requests(fake_server, TASK)[0])
    assert len(consolidation_requests(fake_server)) == 1  # already read at exit: not again
    term.child.sendeof()
    assert term.wait_exit() == 0  # one question and its answer: nothing asked at exit either
    wait_background(project)
    assert len(consolidation_requests(fake_server)) == 1


def test_memory_consolidate_and_list_learned(
    spawn: Spawn, fake_server: FakeServer, project: Path  # noqa: F811
) -> None:
    scripted(fake_server)
    term = spawn()
    term.prompt()
    term.type("/memory list learned")
    term.expect(r"No|no ")  # nothing learned yet
    term.prompt()
    term.type(DECISION)
    term.expect(r"Noted: pgbouncer")
    term.prompt()
    term.type("/memory consolidate")
    term.expect(r"learned 2 new \(r-[0-9a-f]{6}, r-[0-9a-f]{6}\)")
    term.expect(r"\+ r-[0-9a-f]{6}: We will use pgbouncer in transaction mode")
    term.expect(r"\+ r-[0-9a-f]{6}: Billing database connections go through pgbouncer")
    term.prompt()
    term.type("/memory list learned")
    term.expect(r"Billing database connections")
    term.expect(r"learned at session end")
    term.prompt()
    term.type("/memory consolidate")
    term.expect(r"nothing consolidated from session \S+: no new messages since the last consolidation")
    term.prompt()
    term.child.sendeof()
    assert term.wait_exit() == 0
    wait_background(project)
    assert len(consolidation_requests(fake_server)) == 1
    assert rules(project) == sorted([DECISION, RULE])
