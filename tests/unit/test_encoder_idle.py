"""How long the encoder helper stays loaded without a request is the user's to say
(``recall_encoder_idle_minutes``, 1 to 1,440, default 30): a helper a run starts is started so, a
running one takes the time the next run that asks it to work carries, and a project's config never
sets it (a repository would keep a process of the user's holding ~265-530 MiB)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from clio.config import ConfigError, load_settings
from clio.recall.encoder_client import ENV_SWITCH, EncoderClient
from clio.recall.encoder_readiness import installed, socket_path


def configs(tmp_path: Path, user: str, project: str = "") -> tuple[Path, Path]:
    home, clio_dir = tmp_path / "home", tmp_path / "proj" / ".clio"
    home.mkdir()
    clio_dir.mkdir(parents=True)
    (home / "config.yaml").write_text(user)
    if project:
        (clio_dir / "config.yaml").write_text(project)
    return home, clio_dir


def test_the_users_config_sets_it_and_a_projects_is_refused(tmp_path: Path) -> None:
    home, clio_dir = configs(tmp_path, "recall_encoder_idle_minutes: 120\n", "recall_encoder_idle_minutes: 1440\nmodel: m\n")
    s, warnings = load_settings(home, clio_dir, {}, env={})
    assert s.recall_encoder_idle_minutes == 120 and s.model == "m"  # the project's other settings apply
    assert len(warnings) == 1 and "recall_encoder_idle_minutes ignored" in warnings[0]
    assert "$CLIO_HOME/config.yaml" in warnings[0]


def test_the_default_is_half_an_hour(tmp_path: Path) -> None:
    home, clio_dir = configs(tmp_path, "")
    s, _ = load_settings(home, clio_dir, {}, env={})
    assert s.recall_encoder_idle_minutes == 30


@pytest.mark.parametrize("value", ["0", "1441", "-5", "soon"])
def test_a_value_out_of_range_is_an_error_naming_the_range(tmp_path: Path, value: str) -> None:
    home, clio_dir = configs(tmp_path, f"recall_encoder_idle_minutes: {value}\n")
    with pytest.raises(ConfigError, match="recall_encoder_idle_minutes"):
        load_settings(home, clio_dir, {}, env={})


def idle_of(client: EncoderClient, want: float, seconds: float = 10.0) -> float:
    """The helper's idle time once it is ``want`` (requests sent without waiting land a moment later)."""
    deadline = time.monotonic() + seconds
    got = float(client.status(5.0)["idle_s"])
    while got != want and time.monotonic() < deadline:
        time.sleep(0.05)
        got = float(client.status(5.0)["idle_s"])
    return got


@pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")
def test_the_helper_stays_as_long_as_the_runs_that_ask_it_say(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_SWITCH, raising=False)
    home, clio_dir = tmp_path / "home", tmp_path / "proj" / ".clio"
    home.mkdir()
    clio_dir.mkdir(parents=True)
    started = EncoderClient(home, clio_dir, timeout_s=5.0, idle_s=7200.0)
    started.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not socket_path(home).exists():
        time.sleep(0.1)
    try:
        assert idle_of(started, 7200.0, 60.0) == 7200.0  # started with the user's time
        # a later run whose user changed the setting: the running helper takes it with its work
        EncoderClient(home, clio_dir, idle_s=600.0).embed_ahead("which port does the staging database use")
        assert idle_of(started, 600.0) == 600.0
        # a run without the setting, a ping, a value out of range or not a number: no change
        plain = EncoderClient(home, clio_dir, timeout_s=5.0)
        plain.embed_ahead("where do the deploy logs go")
        for bad in (5, 10**9, "3600", True, None):
            plain._request({"op": "ahead", "q": "how are releases tagged", "idle": bad}, 5.0)
        assert float(started.status(5.0)["idle_s"]) == 600.0
        EncoderClient(home, clio_dir, idle_s=3600.0).embed_ahead("how do we roll back a release")
        assert idle_of(started, 3600.0) == 3600.0
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(started.ping(2.0), signal.SIGTERM)
