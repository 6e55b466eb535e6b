"""When a run that finds no encoder helper starts it (stop 83; ``EncoderClient.defer_start``).

A one-shot run's message is decided by words when no helper runs (the helper is for what comes
after), and the helper's loading takes both cores for most of a second: a one-shot run starts it
once its message's recall is decided, so its own search never shares the cores with that load,
and it loads while the model answers. The REPL starts it at once (the user types meanwhile). A
real App against the fake server, with the real helper (the packaged MiniLM).
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest

from clio.recall.encoder_client import ENV_SWITCH, EncoderClient
from clio.recall.encoder_readiness import installed, socket_path
from testkit.clio_run import write_archive
from testkit.encoder_helper import stop_helper
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import AppFactory

needs_model = pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")

ASKED = "which port does the staging database listen on again?"


def helper_pid(home: Path, seconds: float) -> int | None:
    """The pid of the helper answering in ``home`` within ``seconds``, else None."""
    client = EncoderClient(home, home, timeout_s=1.0)
    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(OSError, ValueError):
            return client.ping(1.0)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


@needs_model
@pytest.mark.parametrize("interactive", [False, True], ids=["one-shot", "repl"])
def test_a_one_shot_run_starts_the_helper_once_its_recall_is_decided(
    app_factory: AppFactory, fake_server: FakeServer, project: Path, home: Path, monkeypatch: pytest.MonkeyPatch,
    interactive: bool,
) -> None:  # fmt: skip
    monkeypatch.delenv(ENV_SWITCH, raising=False)
    write_archive(project / ".clio" / "sessions", "20261101-090000-aaaa", [
        {"role": "user", "content": "What port does the staging database use?", "meta": {"seq": 0}},
        {"role": "assistant", "content": "The staging database listens on 6543 behind pgbouncer.", "meta": {"seq": 1}},
    ], 1_793_000_000.0)  # fmt: skip
    lock = Path(str(socket_path(home)) + ".lock")  # made by the run that starts the helper
    started_at_request: list[bool] = []

    def answer(body: object) -> Reply:
        started_at_request.append(lock.exists())
        return Reply(text="It listens on 6543.")

    fake_server.responder = answer
    app = app_factory(interactive=interactive)
    assert app.encoder is not None
    try:
        app.run_turn(ASKED)
        label = app.auto_recall.last.get("encoder", "")
        if interactive:  # started as the search found it missing
            assert label.endswith(": starting"), app.auto_recall.last
        else:  # decided by words with no helper started yet; started right after
            assert label.endswith(": starting once this message's recall is decided"), app.auto_recall.last
        assert started_at_request == [True]  # either way it loads while the model answers
        assert helper_pid(home, 60.0) is not None
    finally:
        stop_helper(home)


@needs_model
def test_a_start_left_due_waits_for_the_turn_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client alone: while ``defer_start`` holds, a missing helper is not started (no start
    lock, nothing listening) however often it is asked; a turn that ends before any recall was
    decided (an order, a command) starts it then."""
    monkeypatch.delenv(ENV_SWITCH, raising=False)
    home, clio_dir = tmp_path / "home", tmp_path / "proj" / ".clio"
    home.mkdir()
    clio_dir.mkdir(parents=True)
    lock = Path(str(socket_path(home)) + ".lock")
    client = EncoderClient(home, clio_dir, timeout_s=0.5)
    client.defer_start = True
    try:
        assert client.score(ASKED, [["a unit"]]) is None
        client.embed_ahead(ASKED)
        client.warm_up()
        assert client.state == "starting once this message's recall is decided"
        assert not lock.exists() and helper_pid(home, 0.5) is None
        client.turn_ended()
        assert lock.exists() and client.state == "starting"
        assert helper_pid(home, 60.0) is not None
    finally:
        stop_helper(home)
