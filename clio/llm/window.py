"""The context window a local endpoint states in its model list.

A local server knows its own window, and several say it in ``GET /v1/models``: llama.cpp's
llama-server as ``data[].meta.n_ctx`` (its ``-c``), vLLM as ``data[].max_model_len``, others as
``context_length`` or ``context_window``. clio asks once, before the first request of a run,
when the endpoint is local and no ``context_window`` is configured: one GET on loopback costs
milliseconds and spares the user a rejection (or, worse, a window assumed far too small or
large). Ollama and LM Studio do not state it there; for them the configured value, the window
learned from a rejection, or the default applies.

The same list names the models a server serves (:func:`served_models`): when the user chose no
model and a base URL is set, the app reads it once at start (:mod:`clio.app.served_model`) and
hands the listing on, so the window is then read from it without a second request.

The client's own HTTP path (:class:`clio.llm.http.Transport`) with a short timeout, no proxies for
a local server and a capped body: a server that does not answer costs at most the timeout and is
then left to the chat request to report.
"""

from __future__ import annotations

from typing import Any

from clio.llm.errors import LLMError
from clio.llm.http import ConnectFailed, HTTPStatus, StreamFailed, Transport

__all__ = ["fetch_models", "probe_window", "served_models", "stated_window"]

_KEYS = ("n_ctx", "max_model_len", "context_length", "context_window", "max_context_length")
MAX_BODY = 4 << 20
MIN_WINDOW = 1024


def _window_of(entry: dict[str, Any]) -> int | None:
    for holder in (entry.get("meta"), entry):
        if not isinstance(holder, dict):
            continue
        for key in _KEYS:
            value = holder.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= MIN_WINDOW:
                return value
    return None


def stated_window(listing: Any, model: str) -> int | None:
    """The window ``listing`` (a ``/v1/models`` reply) states for ``model``.

    The entry whose id (or an alias) is ``model``; failing that, the only entry, since a server
    that serves one model answers whatever name it is asked for (llama-server does)."""
    if not isinstance(listing, dict) or not isinstance(listing.get("data"), list):
        return None
    entries = [e for e in listing["data"] if isinstance(e, dict)]
    named = [e for e in entries if e.get("id") == model or model in (e.get("aliases") or [])]
    if named:
        return _window_of(named[0])
    return _window_of(entries[0]) if len(entries) == 1 else None


def served_models(listing: Any) -> list[str]:
    """The ids of the models ``listing`` (a ``/v1/models`` reply) names, in its order, once each."""
    if not isinstance(listing, dict) or not isinstance(listing.get("data"), list):
        return []
    ids = (e.get("id") for e in listing["data"] if isinstance(e, dict))
    return list(dict.fromkeys(i for i in ids if isinstance(i, str) and i.strip()))


def fetch_models(base_url: str, api_key: str | None, *, proxies: bool = False, timeout: float = 2.0) -> Any:
    """The endpoint's ``GET /models`` reply as JSON; None when it cannot be had (unreachable, an
    error status, not JSON, too large): the chat request then reports the endpoint as it would."""
    try:
        return Transport(base_url, api_key, timeout, proxies=proxies).get_json("/models", MAX_BODY)
    except (ConnectFailed, HTTPStatus, StreamFailed, LLMError):
        return None


def probe_window(base_url: str, api_key: str | None, model: str, timeout: float = 2.0) -> int | None:
    """Ask the endpoint's ``/models`` for ``model``'s window; None when it does not say (or fails)."""
    return stated_window(fetch_models(base_url, api_key, timeout=timeout), model)
