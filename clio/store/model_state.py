"""What was learned about each model, per project: ``.clio/token_ratios.json``.

``{model: {"chars_per_token", "samples", ..., "context_window"?}}``: the estimator's state
(``TokenEstimator.state()``) and, when an endpoint once stated it in a rejection, the model's
context window. Read-modify-written under the file's lock and merged with what is on disk, so
two clio processes learning at once keep both. ``path=None`` (incognito) keeps nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clio.store.atomic import locked_update, read_json


def _is_dict(value: Any) -> bool:
    return isinstance(value, dict)


class ModelStateStore:
    def __init__(self, path: Path | None) -> None:
        self.path = path

    def load(self, model: str) -> dict[str, Any] | None:
        """The stored state of ``model`` (None when nothing was learned, or nothing is kept)."""
        if self.path is None:
            return None
        states: dict[str, Any] = read_json(self.path, dict, validate=_is_dict)
        state = states.get(model)
        return state if isinstance(state, dict) else None

    def save_estimator(self, model: str, state: dict[str, Any]) -> None:
        """Store the estimator's state, keeping the window learned for the model."""
        if self.path is None:
            return

        def merge(current: dict[str, Any]) -> dict[str, Any]:
            entry = current.get(model)
            kept = (
                {"context_window": entry["context_window"]}
                if isinstance(entry, dict) and "context_window" in entry
                else {}
            )
            current[model] = {**state, **kept}
            return current

        locked_update(self.path, merge, dict, validate=_is_dict)

    def save_window(self, model: str, tokens: int) -> None:
        """Remember the window an endpoint stated for ``model``."""
        if self.path is None:
            return

        def merge(current: dict[str, Any]) -> dict[str, Any]:
            entry = current.get(model)
            current[model] = {**(entry if isinstance(entry, dict) else {}), "context_window": tokens}
            return current

        locked_update(self.path, merge, dict, validate=_is_dict)
