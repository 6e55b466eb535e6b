"""Shared pytest fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.clio_run import wait_background
from testkit.encoder_helper import stop_helpers_under
from testkit.fakeserver import FakeServer
from testkit.pgserver import PgServer, why_not
from testkit.scripted import AppFactory

# Every clio a test starts would start its own encoder helper (~265 MB, alive for half an hour
# when idle) in its own $CLIO_HOME: off unless a test turns it on (tests/*/test_recall_encoder.py
# pass CLIO_RECALL_ENCODER=None to their runs).
os.environ["CLIO_RECALL_ENCODER"] = "0"

# Run in parallel (pytest-xdist, `-n auto` in pyproject.toml), a test file is the unit of work, so
# its module fixtures (a long session, a llama.cpp server) are made once; files that share a
# machine-wide resource run on one worker, one after another:
SHARED = {
    # the unprivileged test user: test_launcher_user counts that user's launchers on the machine
    "user": "cliotest",
    "tree": "cliotest",
    # one PostgreSQL cluster per worker: its tests on one worker start one
    "pg_server": "postgres",
    "pg_url": "postgres",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The end-to-end files first (the long units; the many short unit-test files fill the tail
    of a parallel run), each test marked with its file's group for ``--dist loadgroup``."""
    items.sort(key=lambda item: "/e2e/" not in f"/{item.nodeid}")  # stable: file order kept
    paths = [item.nodeid.split("::", 1)[0] for item in items]
    groups: dict[str, str] = {}
    for item, path in zip(items, paths, strict=True):
        shared = next((SHARED[f] for f in getattr(item, "fixturenames", ()) if f in SHARED), None)
        if shared is not None:
            groups[path] = shared  # the whole file joins the shared group
        else:
            groups.setdefault(path, path)
    for item, path in zip(items, paths, strict=True):
        item.add_marker(pytest.mark.xdist_group(groups[path]))


@pytest.fixture(autouse=True)
def no_helper_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test with a ``tmp_path``: any encoder helper whose $CLIO_HOME lies in it is stopped.
    A test stops the helpers it started (``stop_helper``), but one still loading when asked for its
    pid never answers, and would stay for its idle half hour (~265 MB) after the run."""
    tmp = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if tmp is not None:
        stop_helpers_under(tmp)


@pytest.fixture(scope="session", autouse=True)
def no_helper_left_in_the_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """At the end of the run (each xdist worker's): the same for every helper whose $CLIO_HOME lies
    under the run's temporary folders (tests that made theirs with ``tmp_path_factory``)."""
    yield
    stop_helpers_under(tmp_path_factory.getbasetemp())


@pytest.fixture
def fake_server(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    """One started FakeServer per test, stopped afterwards.

    Options: change its attributes (`fake_server.context_limit = 8000`), or parametrize indirectly with
    the constructor's keyword arguments: `@pytest.mark.parametrize("fake_server", [{"context_limit": 8000}],
    indirect=True)`.
    """
    kwargs: dict[str, Any] = dict(getattr(request, "param", None) or {})
    server = FakeServer(**kwargs).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """An empty project folder for an end-to-end run; afterwards, any consolidation child clio left
    working in it (clio.app.background) is waited for, or killed: nothing is left running."""
    p = tmp_path / "proj"
    p.mkdir()
    yield p
    wait_background(p, timeout=30)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty $CLIO_HOME for an end-to-end run."""
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def app_factory(fake_server: FakeServer, project: Path, home: Path) -> Iterator[AppFactory]:
    """Builds real in-process Apps in ``project`` against ``fake_server``; all closed afterwards.

    ``app_factory(ui=RecordingUI(), max_iterations=3, context_window=8000, yes=True)``: see
    testkit/scripted.py's AppFactory.
    """
    factory = AppFactory(fake_server, project, home)
    try:
        yield factory
    finally:
        factory.close_all()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A real PostgreSQL server on 127.0.0.1 for the whole run (testkit/pgserver.py); the tests that
    use it skip, saying why, where none can start (scripts/install-postgres.sh installs one)."""
    reason = why_not()
    if reason is not None:
        pytest.skip(f"team memory needs PostgreSQL: {reason}")
    server = PgServer().start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A fresh, empty database on the session's server."""
    return pg_server.new_database()
