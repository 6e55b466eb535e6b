"""What clio knows about the model it talks to: the token estimator and the budget of a request.

- the chars-per-token ratio learned from usage, per model in ``.clio/token_ratios.json``;
- the context window: configured, or known for the model's name, or stated by the endpoint,
  either in its model list (local servers, asked once before the first request of a run, see
  ``clio.llm.window``) or in a rejection (remembered per model for later runs);
- after every change of window, the tool profile is chosen again (``App._apply_profile``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clio.llm.window import probe_window
from clio.memory.tokens import TokenEstimator, load_encoding
from clio.memory.trim import Budget
from clio.store.atomic import locked_update, read_json

if TYPE_CHECKING:
    from pathlib import Path

    from clio.app import App

LEAN_NOTE = "; the lean tool profile (files, shell, git) from now on"


def _ratio_path(app: App) -> Path:
    return app.paths.clio_dir / "token_ratios.json"


def _is_dict(value: Any) -> bool:
    return isinstance(value, dict)


def load_model(app: App, model: str) -> None:
    """The estimator and budget for ``model``, from one read of what was learned about it."""
    enc = load_encoding(model, app.paths.home / "tiktoken" if app.writes else None)
    state: Any = None
    if app.writes:
        states: dict[str, Any] = read_json(_ratio_path(app), dict, validate=_is_dict)
        state = states.get(model)
    if isinstance(state, dict):
        app.estimator = TokenEstimator.from_state(model, state, encoding=enc)
    else:
        app.estimator = TokenEstimator(model, encoding=enc)
    window = app.settings.window()  # unless the endpoint once stated a smaller one for this model
    learned = state.get("context_window") if isinstance(state, dict) else None
    if isinstance(learned, int) and learned >= 1024:
        window = min(window, learned)
    app.budget = budget_for(window, app.settings.max_output_tokens)
    # a local server states its window in its model list: ask before the first request
    app.window_probe = app.settings.context_window is None and app.settings.is_local_endpoint()


def budget_for(window: int, max_output_tokens: int | None) -> Budget:
    """The budget of a ``window``: the configured reply reserve, or the default where it would take
    half the window or more (a 4,096-token reply setting meeting a 4,096-token server)."""
    reserve = max_output_tokens
    if reserve is not None and reserve >= window // 2:
        reserve = None
    return Budget(window, reserve_output=reserve)


def save_ratio(app: App) -> None:
    """Persist the estimator's learned ratio (keeping the window learned for the model)."""
    if not app.writes:
        return
    state = app.estimator.state()
    model = app.estimator.model

    def merge(current: dict[str, Any]) -> dict[str, Any]:
        entry = current.get(model)
        kept = (
            {"context_window": entry["context_window"]}
            if isinstance(entry, dict) and "context_window" in entry
            else {}
        )
        current[model] = {**state, **kept}
        return current

    locked_update(_ratio_path(app), merge, dict, validate=_is_dict)


def use_window(app: App, tokens: int) -> str:
    """Use a window of ``tokens`` from the next request on; returns a note when the profile went lean."""
    app.budget = budget_for(tokens, app.settings.max_output_tokens)
    if app.orchestrator is None:
        return ""
    app.orchestrator.engine.budget = app.budget
    return LEAN_NOTE if app._apply_profile() and app.orchestrator.profile == "lean" else ""


def window_learned(app: App, tokens: int) -> None:
    """The endpoint rejected a request and stated its window: remember it for the model."""
    old = app.budget.context_window
    if app.writes:
        model = app.settings.model

        def merge(current: dict[str, Any]) -> dict[str, Any]:
            entry = current.get(model)
            current[model] = {**(entry if isinstance(entry, dict) else {}), "context_window": tokens}
            return current

        locked_update(_ratio_path(app), merge, dict, validate=_is_dict)
    lean = use_window(app, tokens)
    app.ui.notice(
        f"the endpoint's context window is {tokens:,} tokens, not {old:,}: using {tokens:,}{lean} "
        "(set context_window in .clio/config.yaml to avoid the rejection)"
    )


def probe_once(app: App) -> None:
    """Before the first request of a run: the window a local endpoint states in its model list."""
    if not app.window_probe:
        return
    app.window_probe = False
    stated = probe_window(app.settings.endpoint(), app.settings.api_key, app.settings.model)
    if stated is None or stated == app.budget.context_window:
        return
    old = app.budget.context_window
    lean = use_window(app, stated)
    app.ui.notice(
        f"the endpoint serves a {stated:,}-token context window: using it instead of {old:,}{lean} "
        "(context_window in .clio/config.yaml overrides it)"
    )
