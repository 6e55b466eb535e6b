"""Loading tiktoken's encoding for a model: the one piece of token counting that does I/O.

tiktoken downloads an encoding on first use, with no timeout; offline (as on machines that reach
only package registries) that fails or hangs. The estimator itself (``clio.context.tokens``) is pure
and takes the loaded encoding, or None to count with its learned ratio.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from clio import threads

__all__ = ["clear_encoding_cache", "encoding_name", "load_encoding"]

_enc_lock = threading.Lock()
_loaded: dict[str, Any] = {}
_failed: set[str] = set()


# First words of every model name tiktoken knows (its MODEL_TO_ENCODING and prefix tables): other
# names (llama, qwen, mistral, fake-model...) are answered without importing tiktoken (~15 ms).
_OPENAI_FAMILIES = ("gpt", "o1", "o3", "o4", "chatgpt", "text", "code", "davinci", "curie", "babbage", "ada", "cushman", "ft:")


def encoding_name(model: str) -> str | None:
    """The tiktoken encoding name of a model, None for models tiktoken does not know."""
    if not any(c.lower().startswith(_OPENAI_FAMILIES) for c in (model, model.rsplit("/", 1)[-1])):
        return None
    try:
        from tiktoken.model import encoding_name_for_model
    except Exception:
        return None
    for candidate in (model, model.rsplit("/", 1)[-1]):  # "openai/gpt-4o" as OpenRouter spells it
        try:
            return encoding_name_for_model(candidate)
        except Exception:
            continue
    return None


def load_encoding(model: str, cache_dir: Path | None = None, *, timeout: float = 3.0) -> Any | None:
    """The tiktoken encoding of ``model``, or None (unknown model, offline, any failure).

    tiktoken downloads an encoding on first use, with no timeout; offline that either
    fails at once (no DNS) or hangs (packets dropped).  The load runs in a daemon thread
    joined for at most ``timeout`` seconds, and a failure is remembered so it is not
    retried in this process.  ``cache_dir`` becomes TIKTOKEN_CACHE_DIR (unless the user
    set one) so an encoding loaded once is read from disk next time.
    """
    name = encoding_name(model)
    if name is None:
        return None
    with _enc_lock:
        if name in _loaded:
            return _loaded[name]
        if name in _failed:
            return None
        if cache_dir is not None and "TIKTOKEN_CACHE_DIR" not in os.environ:
            os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
        result: dict[str, Any] = {}

        def work() -> None:
            try:
                import tiktoken

                result["enc"] = tiktoken.get_encoding(name)
            except BaseException as exc:  # network, hash mismatch, unwritable cache...
                result["err"] = exc

        thread = threads.start(work, "clio-tiktoken-load")
        thread.join(timeout)
        enc = result.get("enc")
        if enc is None:
            _failed.add(name)
            return None
        _loaded[name] = enc
        return enc


def clear_encoding_cache() -> None:
    """Forget loaded encodings and remembered failures (tests, or after going online)."""
    with _enc_lock:
        _loaded.clear()
        _failed.clear()
