"""End to end, issue 32: the REPL tells a user once, in a project with history, that a stronger
sentence encoder can be installed; a one-shot run never does (its output is for scripts).

Through a real pseudo-terminal, the installed clio and the fake server; the project's history is
sessions put on disk in clio's layout."""

from __future__ import annotations

import json
import time
from pathlib import Path

from clio.app.encoder_tip import MARK, MIN_SESSIONS
from clio.recall.encoder_readiness import socket_path
from testkit.clio_run import run_clio, write_archive
from testkit.encoder_helper import stop_helper
from testkit.fakeserver import FakeServer
from tests.e2e.test_repl_pty import Spawn, project, spawn  # noqa: F401  (fixtures)

TIP = "clio encoder install mpnet"


def stop_started(home: Path) -> None:
    """Stop the helper a REPL's warm-up started, once it is up (it may still be loading)."""
    lock = Path(str(socket_path(home)) + ".lock")
    deadline = time.monotonic() + 20
    while lock.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    stop_helper(home)


def history(proj: Path, n: int) -> None:
    home = proj.parent / "home"
    home.mkdir(exist_ok=True)
    (home / "config.yaml").write_text("recall_encoder_idle_minutes: 1\n")  # a helper the REPL left starting goes soon
    t0 = time.time() - 86_400 * (n + 1)
    for k in range(n):
        msgs = [
            {"role": "user", "content": f"look at the retry logic of worker {k}", "meta": {"seq": 0, "ts": t0 + k * 86_400}},
            {"role": "assistant", "content": "Done.", "meta": {"seq": 1, "ts": t0 + k * 86_400 + 30}},
        ]
        write_archive(proj / ".clio" / "sessions", f"20250101-{k:06d}-{k:04x}", msgs, t0 + k * 86_400)


def test_the_repl_offers_the_stronger_encoder_once(fake_server: FakeServer, project: Path, spawn: Spawn) -> None:  # noqa: F811
    home = project.parent / "home"
    history(project, MIN_SESSIONS)
    on = {"CLIO_RECALL_ENCODER": ""}  # the automatic recall's encoder as a user has it (tests switch it off)
    try:
        term = spawn(env=on)
        term.expect(TIP)
        term.prompt()
        term.child.sendeof()
        assert term.wait_exit() == 0
        assert json.loads((home / MARK).read_text())["offered"] == "mpnet"

        again = spawn(env=on)
        again.prompt()
        again.type("/help")
        again.expect(r"/exit")
        again.prompt()
        again.child.sendeof()
        assert again.wait_exit() == 0
        assert TIP not in again.text
    finally:
        stop_started(home)


def test_no_tip_without_history_nor_in_a_one_shot_run(fake_server: FakeServer, project: Path, spawn: Spawn) -> None:  # noqa: F811
    home = project.parent / "home"
    history(project, MIN_SESSIONS - 2)  # with the REPL's own session, one short of the count
    on = {"CLIO_RECALL_ENCODER": ""}
    try:
        term = spawn(env=on)
        term.prompt()
        term.child.sendeof()
        assert term.wait_exit() == 0
        assert TIP not in term.text and not (home / MARK).exists()

        history(project, MIN_SESSIONS + 2)  # history enough now; a one-shot run says nothing of it
        r = run_clio(["--model", "fake-model", "-p", "hello"], server=fake_server, project=project, home=home,
                     env_extra={"CLIO_RECALL_ENCODER": None})  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert TIP not in r.stdout + r.stderr and not (home / MARK).exists()
    finally:
        stop_started(home)
