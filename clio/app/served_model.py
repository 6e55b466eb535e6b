"""The model a server serves, when the user chose none.

A local server (llama-server, vLLM, LM Studio, Ollama...) serves the models it has, not clio's
default (``gpt-4o-mini``). When no model was chosen (no ``--model``, no ``CLIO_MODEL``, no
``model:`` in a config) and a base URL is set, clio reads the endpoint's ``GET /v1/models`` once,
at start (:func:`clio.llm.window.fetch_models`, a short timeout):

- exactly one model: it is used;
- several: clio stops before anything is sent, with one line naming them and how to pick one
  (:class:`clio.config.ConfigError`, exit code 2); ``clio -p /model`` lists them all;
- none, or no answer: nothing changes; the chat request reports the endpoint as it always did.

The reply is kept for the window probe (:attr:`clio.agent.window.Window.listing`), so a run asks
the server once. Runs with a model chosen, or without a base URL (OpenAI, whose default model is
clio's), never ask: nothing is added to their start; a one-shot slash command asks only when it is
about to send something (``App.settle_model``: /init, /compact, /memory consolidate and compact,
/model's list).
"""

from __future__ import annotations

from typing import Any

from clio.config import ConfigError, Settings
from clio.llm.window import fetch_models, served_models

SOURCE = "the endpoint's model list"
NAMED = 12  # models named in the line when a server serves several


def needs_choice(settings: Settings) -> bool:
    """No model chosen by the user, and a base URL that is not OpenAI's own (whose default is clio's)."""
    url = (settings.base_url or "").strip()
    return bool(url) and "model" not in settings.sources and "://api.openai.com" not in url.lower()


def choose_served_model(settings: Settings) -> Any:
    """Settle ``settings.model`` from the endpoint's model list when the user chose none; returns
    the list (the ``/v1/models`` reply, for the window probe), None when it was not read or not had.
    Raises :class:`ConfigError` when the endpoint serves several models."""
    if not needs_choice(settings):
        return None
    listing = fetch_models(settings.endpoint(), settings.api_key, proxies=not settings.is_local_endpoint())
    models = served_models(listing)
    if len(models) == 1:
        settings.model = models[0]
        settings.sources["model"] = SOURCE
    elif len(models) > 1:
        more = f" and {len(models) - NAMED} more" if len(models) > NAMED else ""
        raise ConfigError(
            f"the endpoint at {settings.endpoint()} serves {len(models)} models ({', '.join(models[:NAMED])}{more}): "
            "pick one with --model NAME, or model: NAME in your config (clio -p /model lists them)."
        )
    return listing
