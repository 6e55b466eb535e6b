"""Fixtures shared by the recall tests (test_recall.py, test_semantic.py)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from clio.messages import make
from clio.recall import embedder as semantic
from clio.store import sessions as sessions_mod
from clio.store.sessions import SessionStore


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SessionStore:
    counter = itertools.count(1)
    monkeypatch.setattr(
        sessions_mod, "new_session_id", lambda now=None: f"20250101-000000-{next(counter):04d}"
    )
    return SessionStore(tmp_path / "sessions")


def add_session(store: SessionStore, texts: list[str]) -> str:
    s = store.create("test-model")
    for i, text in enumerate(texts):
        s.append(make("user" if i % 2 == 0 else "assistant", text))
    s.close()
    return s.id


@pytest.fixture
def lexical_only(monkeypatch: pytest.MonkeyPatch) -> object:
    """bm25 alone, so that rankings are exact (the refine stages work on any fused score)."""
    monkeypatch.setenv(semantic.ENV_SWITCH, "0")
    semantic.reset_embedder()
    yield None
    semantic.reset_embedder()
