"""Issue 33 item 3: consolidation is never in the user's way, end to end through the INSTALLED clio
and the fake server with a slow model: only clio's consolidation requests take ``DELAY`` seconds
(recognised by ``testkit.scripted.is_consolidation``); every other reply comes at once.

- a one-shot run with a decision answers and exits at once, and so does the run right after it,
  while the read-back runs in a detached child; the decision is in memory once it is done;
- Ctrl-D in the REPL exits at once, with one line saying what is going on, and the child saves
  the decision afterwards;
- a child that was killed leaves its session marked: a later run's child picks it up.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.clio_run import background_children, run_clio, system_text, wait_background
from testkit.fakeserver import Fail, FakeServer, Reply
from testkit.scripted import ScriptedModel, consolidation_requests, is_consolidation, turn_requests
from tests.e2e.test_repl_pty import Spawn, spawn  # noqa: F401  (fixture)

DELAY = 8.0  # what a small local model takes to answer a consolidation request (docs/memory.md: 48 s)
FAST = 4.0  # a run that does not wait for it answers well within this
DECISION = "We will use pgbouncer in transaction mode for the billing database."
RULE = "Billing database connections go through pgbouncer in transaction mode"
TASK = "what is two plus two?"


class SlowConsolidation:
    """The scripted model, with consolidation requests answered after ``DELAY`` seconds."""

    def __init__(self) -> None:
        self.model = ScriptedModel()
        self.model.on(DECISION, Reply(text="Noted: pgbouncer in transaction mode."))
        self.model.on(TASK, Reply(text="Four."))
        self.model.consolidation = Reply(
            text=json.dumps({"entries": [{"type": "rule", "rule": RULE, "confidence": 0.9}], "pairs": []})
        )
        self.stop = threading.Event()

    def __call__(self, body: dict[str, Any]) -> Reply | Fail:
        if is_consolidation(body):
            self.stop.wait(DELAY)
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
        slow.stop.set()
        s.stop()


def timed(server: FakeServer, project: Path, home: Path, text: str) -> tuple[float, str]:
    start = time.monotonic()
    r = run_clio(["-p", text], server=server, project=project, home=home)
    took = time.monotonic() - start
    assert r.returncode == 0, r.stderr
    return took, r.stderr


def rules(project: Path) -> set[str]:
    path = project / ".clio" / "ltm.json"
    if not path.exists():
        return set()
    return {e["rule"] for e in json.loads(path.read_text(encoding="utf-8"))["entries"] if e["type"] == "rule"}


def test_a_slow_read_back_delays_no_answer_and_is_saved_afterwards(
    server: FakeServer, project: Path, home: Path
) -> None:
    baseline, _ = timed(server, project, home, TASK)  # nothing to save: nothing waits
    took, err = timed(server, project, home, DECISION)
    assert took < FAST, f"the run with a decision took {took:.1f}s"
    assert "clio: saving what this session established in the background" in err
    took, err = timed(server, project, home, TASK)  # the next run, while the read-back is going on
    assert took < FAST, f"the next run took {took:.1f}s (baseline {baseline:.1f}s): it waited for the read-back"
    assert DECISION not in rules(project)  # not ready yet: it reaches a later run when it is

    wait_background(project, timeout=4 * DELAY)
    assert 1 <= len(consolidation_requests(server)) <= 2  # two if the next run's turn stopped the first
    assert {DECISION, RULE} <= rules(project)
    timed(server, project, home, TASK)
    assert RULE in system_text(turn_requests(server, TASK)[-1])
    wait_background(project)


def test_a_killed_read_back_is_picked_up_by_a_later_run(
    server: FakeServer, project: Path, home: Path
) -> None:
    timed(server, project, home, DECISION)
    deadline = time.monotonic() + 10
    while not consolidation_requests(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in background_children(project):  # killed mid-request: nothing stored, still marked
        os.kill(pid, signal.SIGKILL)
    wait_background(project)
    assert rules(project) == set()

    timed(server, project, home, TASK)  # its child reads the earlier session back
    wait_background(project, timeout=4 * DELAY)
    assert len(consolidation_requests(server)) == 2
    assert {DECISION, RULE} <= rules(project)


def test_on_a_local_server_the_users_turn_stops_a_read_back_under_way(
    server: FakeServer, project: Path, home: Path
) -> None:
    """127.0.0.1 is a local endpoint (a single-slot server, perhaps): a turn that starts while a
    child's request is under way stops that child, and the session is read back after the turn."""
    timed(server, project, home, DECISION)
    deadline = time.monotonic() + 10
    while not consolidation_requests(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert consolidation_requests(server), "the child never sent its request"
    first = background_children(project)
    assert first
    took, _ = timed(server, project, home, TASK)
    assert took < FAST, f"the turn took {took:.1f}s"
    assert not set(first) & set(background_children(project)), "the read-back under way was not stopped"
    assert rules(project) == set()  # stopped before it wrote anything

    wait_background(project, timeout=4 * DELAY)  # the next run's child reads the session back
    assert len(consolidation_requests(server)) == 2
    assert {DECISION, RULE} <= rules(project)


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
    start = time.monotonic()
    term.child.sendeof()
    term.expect(r"saving what this session established in the background")
    assert term.wait_exit() == 0
    took = time.monotonic() - start
    assert took < FAST, f"Ctrl-D took {took:.1f}s to exit"
    wait_background(project, timeout=4 * DELAY)
    assert len(consolidation_requests(fake_server)) == 1
    assert {DECISION, RULE} <= rules(project)
    slow.stop.set()
