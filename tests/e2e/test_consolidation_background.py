"""Issue 33 item 3: consolidation is never in the user's way, end to end through the INSTALLED clio
and the fake server with a slow model: clio's consolidation requests (recognised by
``testkit.scripted.is_consolidation``) are held unanswered until the test releases them; every
other reply comes at once. Nothing here is timed (benches/bench_background.py measures): a run or
an exit that waited for the read-back could not finish while its request is held.

- a one-shot run with a decision answers and exits while its read-back is held, and so does the
  run right after it; the decision is in memory once the read-back is answered;
- every request a run sends is in its usage line and its ``--output json`` usage; the child's, in
  the session's own usage, and a run that starts a child says so in both (and one that does not,
  not);
- Ctrl-D in the REPL exits while the read-back is held, with one line saying what is going on,
  and the child saves the decision afterwards;
- a child that was killed leaves its session marked: a later run's child picks it up;
- lone questions in a row start no child (each session is noted as checked), a decision still
  does, and a lone question's session resumed with a second question is read back whole.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest

from clio.app.background import USAGE_CLAUSE
from testkit.clio_run import (
    SAVING_LINE,
    USAGE_LINE,
    background_children,
    run_clio,
    session_dirs,
    session_meta,
    sessions_dir,
    system_text,
    user_texts,
    wait_background,
)
from testkit.fakeserver import Fail, FakeServer, Reply
from testkit.scripted import ScriptedModel, consolidation_requests, is_consolidation, turn_requests
from tests.e2e.test_repl_pty import Spawn, spawn  # noqa: F401  (fixture)

HELD = 120.0  # the longest a consolidation request is held (a test releases it long before)
DECISION = "We will use pgbouncer in transaction mode for the billing database."
RULE = "Billing database connections go through pgbouncer in transaction mode"
TASK = "what is two plus two?"


class SlowConsolidation:
    """The scripted model, with consolidation requests held until :attr:`release` is set."""

    def __init__(self) -> None:
        self.model = ScriptedModel()
        self.model.on(DECISION, Reply(text="Noted: pgbouncer in transaction mode."))
        self.model.on(TASK, Reply(text="Four."))
        self.model.consolidation = Reply(
            text=json.dumps({"entries": [{"type": "rule", "rule": RULE, "confidence": 0.9}], "pairs": []})
        )
        self.release = threading.Event()
        self.answered = 0  # consolidation requests answered so far

    def __call__(self, body: dict[str, Any]) -> Reply | Fail:
        if is_consolidation(body):
            self.release.wait(HELD)
            self.answered += 1
        return self.model(body)


@pytest.fixture
def slow() -> SlowConsolidation:
    return SlowConsolidation()


@pytest.fixture
def server(slow: SlowConsolidation) -> Iterator[FakeServer]:
    s = FakeServer(slow).start()
    try:
        yield s
    finally:
        slow.release.set()
        s.stop()


def one_shot(server: FakeServer, project: Path, home: Path, text: str, *extra: str) -> CompletedProcess[str]:
    """``clio -p TEXT``, returning as soon as clio exits (its read-back child left running)."""
    r = run_clio(["-p", text, *extra], server=server, project=project, home=home, background=True)
    assert r.returncode == 0, r.stderr
    return r


def sent_by_child(server: FakeServer) -> None:
    """Wait for a child's consolidation request to reach the server (it is then held)."""
    deadline = time.monotonic() + 30
    while not consolidation_requests(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert consolidation_requests(server), "the child never sent its request"


def rules(project: Path) -> set[str]:
    path = project / ".clio" / "ltm.json"
    if not path.exists():
        return set()
    return {e["rule"] for e in json.loads(path.read_text(encoding="utf-8"))["entries"] if e["type"] == "rule"}


def test_a_slow_read_back_delays_no_answer_and_is_saved_afterwards(
    slow: SlowConsolidation, server: FakeServer, project: Path, home: Path
) -> None:
    one_shot(server, project, home, TASK)  # nothing to save
    err = one_shot(server, project, home, DECISION).stderr  # exits with its read-back not answered
    assert "clio: saving what this session established in the background" in err
    sent_by_child(server)
    assert "Four." in one_shot(server, project, home, TASK).stdout  # answered meanwhile
    assert slow.answered == 0  # both runs answered while the read-back was held
    assert DECISION not in rules(project)  # not ready yet: it reaches a later run when it is

    slow.release.set()
    wait_background(project, timeout=60)
    assert 1 <= len(consolidation_requests(server)) <= 2  # two if the next run's turn stopped the first
    assert {DECISION, RULE} <= rules(project)
    one_shot(server, project, home, TASK)
    assert RULE in system_text(turn_requests(server, TASK)[-1])
    wait_background(project)


def test_every_request_of_a_run_is_in_its_usage(
    slow: SlowConsolidation, server: FakeServer, project: Path, home: Path
) -> None:
    """The run's own requests in its usage line and JSON usage; the child's in the session's."""
    err = one_shot(server, project, home, DECISION).stderr
    line = next(ln for ln in err.splitlines() if ln.startswith(USAGE_LINE))
    assert re.search(r"\b1 request\b", line), line
    assert len(server.chat_requests) == 1  # the read-back is not sent before the run exits
    out = one_shot(server, project, home, TASK, "--output", "json").stdout
    result = json.loads(out)
    turns = [b for b in server.chat_requests if not is_consolidation(b)]
    assert result["usage"]["requests"] == 1 and len(turns) == 2
    slow.release.set()
    wait_background(project, timeout=60)
    sent = len(server.chat_requests)
    recorded = sum(json.loads((d / "session.json").read_text())["usage"].get("requests", 0) for d in session_dirs(project))
    assert sent == recorded >= 3  # two turns and at least one read-back, each counted once


def test_a_run_that_leaves_a_read_back_says_so_with_its_usage(
    slow: SlowConsolidation, project: Path, home: Path, server: FakeServer  # server first torn down: released
) -> None:
    """The child's requests come after the run's usage line and JSON usage: a run that starts one
    says so in both (the line gets a clause, the JSON ``background``); a run that starts none, not."""
    first = one_shot(server, project, home, TASK, "--output", "json")  # a lone question, a new project
    line = next(ln for ln in first.stderr.splitlines() if ln.startswith(USAGE_LINE))
    assert "background" not in line and "/cost" not in line, line
    assert "background" not in json.loads(first.stdout)
    assert "clio: saving what this session established in the background" not in first.stderr
    assert background_children(project) == []  # and indeed none was started

    second = one_shot(server, project, home, DECISION, "--output", "json")
    line = next(ln for ln in second.stderr.splitlines() if ln.startswith(USAGE_LINE))
    assert re.search(r"\b1 request; ", line), line  # this run's own request only
    assert line.endswith(
        "; the memory read-back in the background is not counted here (its requests go to this session's /cost)"
    ), line
    result = json.loads(second.stdout)
    assert result["background"] == {"consolidation": True, "session_id": result["session_id"]}
    assert result["usage"]["requests"] == 1
    sent_by_child(server)  # the child it announced is there, sending its request
    slow.release.set()
    wait_background(project, timeout=60)
    spent = json.loads((project / ".clio" / "sessions" / result["session_id"] / "session.json").read_text())["usage"]
    assert spent["requests"] == 1 + len(consolidation_requests(server))  # where the JSON said they would go


def test_lone_questions_in_a_row_start_no_read_back(
    slow: SlowConsolidation, project: Path, home: Path, server: FakeServer  # server first torn down: released
) -> None:
    """A lone question is not worth a read-back: its session is noted as checked (``session.json``
    ``checked``), so the next run starts no child for it (each did, for the session before it).
    A decision still starts one; so does the question's session resumed with a second question,
    whose read-back quotes both."""
    question, follow_up = "which port does the staging database listen on again?", "and the production one?"
    first = json.loads(one_shot(server, project, home, question, "--output", "json").stdout)
    second = one_shot(server, project, home, TASK, "--output", "json")
    assert "background" not in json.loads(second.stdout)
    assert SAVING_LINE not in second.stderr
    line = next(ln for ln in second.stderr.splitlines() if ln.startswith(USAGE_LINE))
    assert USAGE_CLAUSE not in line, line
    assert background_children(project) == []  # none started (a child waits 1 s before it reads)
    for d in session_dirs(project):
        assert (session_meta(d)["consolidated"], session_meta(d)["checked"]) == (0, 2)

    third = json.loads(one_shot(server, project, home, DECISION, "--output", "json").stdout)
    assert third["background"] == {"consolidation": True, "session_id": third["session_id"]}
    sent_by_child(server)
    slow.release.set()
    wait_background(project, timeout=60)
    assert {DECISION, RULE} <= rules(project)
    assert len(consolidation_requests(server)) == 1  # the decision's only: nothing for the questions

    resumed = one_shot(server, project, home, follow_up, "--resume", first["session_id"], "--output", "json")
    assert json.loads(resumed.stdout)["background"]["session_id"] == first["session_id"]
    wait_background(project, timeout=60)
    quoted = json.dumps(consolidation_requests(server)[-1])
    assert question in quoted and follow_up in quoted  # the whole unconsolidated part
    assert session_meta(sessions_dir(project) / first["session_id"])["consolidated"] == 4


def test_a_killed_read_back_is_picked_up_by_a_later_run(
    slow: SlowConsolidation, server: FakeServer, project: Path, home: Path
) -> None:
    one_shot(server, project, home, DECISION)
    sent_by_child(server)
    for pid in background_children(project):  # killed mid-request: nothing stored, still marked
        os.kill(pid, signal.SIGKILL)
    wait_background(project)
    assert rules(project) == set()

    slow.release.set()
    one_shot(server, project, home, TASK)  # its child reads the earlier session back
    wait_background(project, timeout=60)
    assert len(consolidation_requests(server)) == 2
    assert {DECISION, RULE} <= rules(project)


def test_on_a_local_server_the_users_turn_stops_a_read_back_under_way(
    slow: SlowConsolidation, server: FakeServer, project: Path, home: Path
) -> None:
    """127.0.0.1 is a local endpoint (a single-slot server, perhaps): a turn that starts while a
    child's request is under way stops that child, and the session is read back after the turn."""
    one_shot(server, project, home, DECISION)
    sent_by_child(server)
    first = background_children(project)
    assert first
    one_shot(server, project, home, TASK)
    assert slow.answered == 0  # the turn was answered while the read-back was held
    assert not set(first) & set(background_children(project)), "the read-back under way was not stopped"
    assert rules(project) == set()  # stopped before it wrote anything

    slow.release.set()
    wait_background(project, timeout=60)  # the next run's child reads the session back
    assert len(consolidation_requests(server)) == 2
    assert {DECISION, RULE} <= rules(project)


def test_a_read_back_never_makes_a_session_the_most_recent(
    slow: SlowConsolidation, server: FakeServer, project: Path, home: Path
) -> None:
    """Session A (a decision) is read back after session B was used: writing A's marker leaves A
    as old as the user left it, so ``--resume`` alone still continues B."""
    one_shot(server, project, home, DECISION)  # A
    sent_by_child(server)
    one_shot(server, project, home, TASK)  # B: its turn stops A's read-back; its child reads A back
    deadline = time.monotonic() + 30
    while len(consolidation_requests(server)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(consolidation_requests(server)) == 2, "B's child never read A back"
    a_dir, b_dir = sorted(session_dirs(project), key=lambda d: session_meta(d)["created"])
    a_stamp = (a_dir / "session.json").stat().st_mtime_ns
    a_updated = session_meta(a_dir)["updated"]
    assert session_meta(a_dir)["consolidated"] == 0

    slow.release.set()
    wait_background(project, timeout=60)
    assert {DECISION, RULE} <= rules(project)
    assert session_meta(a_dir)["consolidated"] == 2  # A read back, its marker moved...
    assert (a_dir / "session.json").stat().st_mtime_ns == a_stamp  # ...and A no more recent than it was
    assert session_meta(a_dir)["updated"] == a_updated
    run_clio(["--resume", "-p", "and three plus three?"], server=server, project=project, home=home)
    assert user_texts(server.turn_requests[-1]) == [TASK, "and three plus three?"]  # B continued


def test_ctrl_d_exits_at_once_and_the_session_is_saved_after(
    slow: SlowConsolidation, spawn: Spawn, fake_server: FakeServer, project: Path, home: Path  # noqa: F811
) -> None:
    fake_server.responder = slow
    assert home == project.parent / "home"  # the pty driver's $CLIO_HOME
    term = spawn()
    term.prompt()
    term.type(DECISION)
    term.expect(r"Noted: pgbouncer")
    term.prompt()
    term.child.sendeof()
    term.expect(r"saving what this session established in the background")
    assert term.wait_exit(background=True) == 0  # exited with its read-back held
    assert slow.answered == 0
    sent_by_child(fake_server)
    slow.release.set()
    wait_background(project, timeout=60)
    assert len(consolidation_requests(fake_server)) == 1
    assert {DECISION, RULE} <= rules(project)
