"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.fakeserver import FakeServer


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
def project(tmp_path: Path) -> Path:
    """An empty project folder for an end-to-end run."""
    p = tmp_path / "proj"
    p.mkdir()
    return p


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty $CLIO_HOME for an end-to-end run."""
    h = tmp_path / "home"
    h.mkdir()
    return h
