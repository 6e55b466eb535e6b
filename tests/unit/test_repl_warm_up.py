"""The REPL's warm-up (clio.ui.repl._warm_up) begins once the prompt is drawn, not before: begun
earlier, it held the interpreter's lock while the prompt was being drawn."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from clio import lazy_re
from clio.safety import launch
from clio.ui import repl


def test_the_warm_up_waits_for_the_prompt_then_starts_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    monkeypatch.setattr(launch, "start", lambda: started.append("launcher"))
    monkeypatch.setattr(lazy_re, "warm", lambda: started.append("patterns"))
    monkeypatch.setattr(repl, "PROMPT_WAIT", 30.0)
    memory = SimpleNamespace(meaning=SimpleNamespace(start_preload=lambda: started.append("embedder")))
    recall = SimpleNamespace(start_warm_up=lambda: started.append("recall"))
    app: Any = SimpleNamespace(memory=memory, auto_recall=recall)
    shown = threading.Event()
    thread = threading.Thread(target=repl._warm_up, args=(app, shown, True), daemon=True)
    thread.start()
    thread.join(0.3)
    assert started == [] and thread.is_alive()  # the prompt is not drawn yet: nothing begun
    shown.set()
    thread.join(30)
    assert not thread.is_alive()
    assert started == ["embedder", "recall", "launcher", "patterns"]


def test_without_memory_the_warm_up_leaves_the_embedder_and_the_index(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    monkeypatch.setattr(launch, "start", lambda: started.append("launcher"))
    monkeypatch.setattr(lazy_re, "warm", lambda: started.append("patterns"))
    shown = threading.Event()
    shown.set()
    repl._warm_up(SimpleNamespace(), shown, False)  # type: ignore[arg-type]
    assert started == ["launcher", "patterns"]
