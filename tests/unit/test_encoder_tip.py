"""The REPL's one-time line about the stronger sentence encoder (clio.app.encoder_tip), in process:
when it is offered, that it is offered once per user, and that it never costs a failure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clio.app import encoder_tip as tip
from clio.recall.encoder_models import INSTALLED_MARK, MPNET


def sessions(root: Path, n: int) -> Path:
    d = root / "proj" / ".clio" / "sessions"
    for k in range(n):
        (d / f"s{k:03d}").mkdir(parents=True)
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def test_offered_once_per_user_in_a_project_with_history(tmp_path: Path, home: Path) -> None:
    d = sessions(tmp_path, tip.MIN_SESSIONS)
    line = tip.offer(home, d, None, "minilm", env={})
    assert line is not None and "clio encoder install mpnet" in line and f"{MPNET.download_mb} MB" in line
    mark = json.loads((home / tip.MARK).read_text())
    assert mark["offered"] == "mpnet" and mark["shown"]
    assert tip.offer(home, d, None, "minilm", env={}) is None  # the next start: not again
    other = sessions(tmp_path / "other", tip.MIN_SESSIONS + 5)
    assert tip.offer(home, other, None, "minilm", env={}) is None  # nor in another project


def test_not_offered_without_history_the_running_session_aside(tmp_path: Path, home: Path) -> None:
    d = sessions(tmp_path, tip.MIN_SESSIONS)
    (d / ".s-being-deleted").mkdir()
    (d / "stray-file").write_text("x")
    assert tip.offer(home, d, "s000", "minilm", env={}) is None  # nine others: not yet
    assert not (home / tip.MARK).exists()
    (d / "s999").mkdir()
    assert tip.offer(home, d, "s000", "minilm", env={}) is not None
    assert tip.offer(home, tmp_path / "no-such-dir", None, "minilm", env={}) is None


def test_not_offered_when_the_user_chose_or_has_it(tmp_path: Path, home: Path) -> None:
    d = sessions(tmp_path, tip.MIN_SESSIONS)
    for choice in ("minilm", "0", "off", "mpnet"):
        assert tip.offer(home, d, None, "minilm", env={"CLIO_RECALL_ENCODER": choice}) is None
    assert tip.offer(home, d, None, None, env={}) is None  # no encoder: the automatic recall's encoder is off
    assert tip.offer(home, d, None, "mpnet", env={}) is None
    assert not (home / tip.MARK).exists()
    folder = MPNET.folder(home)
    folder.mkdir(parents=True)
    (folder / INSTALLED_MARK).write_text("{}")
    assert tip.stronger(home) is None
    assert tip.offer(home, d, None, "minilm", env={}) is None  # installed (a failed helper fell back to MiniLM)
    assert not (home / tip.MARK).exists()


def test_a_home_it_cannot_write_shows_nothing(tmp_path: Path) -> None:
    d = sessions(tmp_path, tip.MIN_SESSIONS)
    blocked = tmp_path / "home-is-a-file"
    blocked.write_text("")
    assert tip.offer(blocked / "home", d, None, "minilm", env={}) is None  # shown only if it will not be again


def test_the_decision() -> None:
    assert tip.worth_offering("minilm", "", tip.MIN_SESSIONS)
    assert tip.worth_offering("minilm", "  ", tip.MIN_SESSIONS + 3)
    assert not tip.worth_offering("minilm", "", tip.MIN_SESSIONS - 1)
    assert not tip.worth_offering("minilm", "minilm", tip.MIN_SESSIONS)
    assert not tip.worth_offering("mpnet", "", tip.MIN_SESSIONS)


def test_sessions_are_counted_up_to_the_limit(tmp_path: Path) -> None:
    d = sessions(tmp_path, 25)
    assert tip.count_sessions(d, None) == tip.MIN_SESSIONS
    assert tip.count_sessions(d, None, limit=100) == 25
    assert tip.count_sessions(d, "s003", limit=100) == 24
