"""testkit's sweep of encoder helpers a test left (``stop_helpers_under``, which tests/conftest.py
runs after every test with a ``tmp_path``): it finds them by their ``--home`` in /proc, stops
those under the folder it is given and no other process, and kills one that ignores SIGTERM.

The helpers here are stand-in processes whose command line is a helper's (``-m
clio.recall.encoder_service --home ...``), so nothing is loaded; the last test starts clio's real
helper, as a run does, and stops it while it is still loading, which ``stop_helper`` cannot do
(it asks a helper that is not yet listening for its pid)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clio.recall.encoder_models import MINILM
from clio.recall.encoder_readiness import installed, socket_path
from clio.recall.encoder_start import spawn
from testkit.encoder_helper import helpers_under, stop_helpers_under

SLEEP = "import time; time.sleep(120)"
DEAF = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('deaf', flush=True); time.sleep(120)"


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def stand_in(procs: list[subprocess.Popen[bytes]], home: Path, code: str = SLEEP, module: str = "clio.recall.encoder_service") -> subprocess.Popen[bytes]:
    # python -c CODE ARGS...: ARGS land in the command line as a helper's would
    args = [sys.executable, "-c", code, module, "--socket", str(home / "s.sock"), "--home", str(home)]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, start_new_session=True)
    procs.append(p)
    return p


def seen(root: Path, count: int) -> list[int]:
    """``helpers_under(root)`` once it finds ``count``: for a moment after exec, a process's command
    line in /proc is still empty (the kernel sets it up after the exec that lets Popen return)."""
    deadline = time.monotonic() + 10.0
    pids = helpers_under(root)
    while len(pids) < count and time.monotonic() < deadline:
        time.sleep(0.01)
        pids = helpers_under(root)
    return pids


def test_only_the_helpers_under_the_folder_are_stopped(tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    run, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    helper = stand_in(started, run / "a" / "home")
    deeper = stand_in(started, run / "b" / "home")
    other_home = stand_in(started, elsewhere / "home")
    not_a_helper = stand_in(started, run / "c" / "home", module="some.other_service")
    assert sorted(seen(run, 2)) == sorted([helper.pid, deeper.pid])
    assert seen(elsewhere, 1) == [other_home.pid]

    assert sorted(stop_helpers_under(run)) == sorted([helper.pid, deeper.pid])
    assert helper.wait(5) != 0 and deeper.wait(5) != 0  # stopped by a signal
    assert other_home.poll() is None and not_a_helper.poll() is None
    assert helpers_under(run) == [] and helpers_under(elsewhere) == [other_home.pid]


def test_a_helper_that_ignores_sigterm_is_killed(tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    deaf = stand_in(started, tmp_path / "home", code=DEAF)
    assert deaf.stdout is not None and deaf.stdout.readline() == b"deaf\n"  # its SIGTERM handler is set
    assert seen(tmp_path, 1) == [deaf.pid]
    assert stop_helpers_under(tmp_path, wait_s=0.5) == [deaf.pid]
    assert deaf.wait(5) == -9  # SIGKILL, after SIGTERM was ignored


def test_nothing_to_stop(tmp_path: Path) -> None:
    assert stop_helpers_under(tmp_path) == []


@pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")
def test_the_real_helper_is_stopped_while_it_loads(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert spawn(socket_path(home), MINILM.name, home, 60.0, None) == "starting"
    pids = seen(tmp_path, 1)
    assert len(pids) == 1  # spawned and running python -m clio.recall.encoder_service, not yet listening
    assert stop_helpers_under(tmp_path) == pids
    assert helpers_under(tmp_path) == []
