"""How the servers clio talks to say "your prompt does not fit".

Every OpenAI-compatible server words a context-length rejection its own way: OpenAI and Groq use
``code: context_length_exceeded``, llama.cpp ``type: exceed_context_size_error``, vLLM, OpenRouter,
Ollama, LM Studio, TGI/Together, Mistral, Gemini and Anthropic-compatible endpoints each a message of
their own. ``is_context_length_error`` recognises all of them from the HTTP status, the decoded error
body (whatever the client handed over: the full ``{"error": {...}}`` document, the inner error dict,
a raw string) and the exception message, so the client can raise the one exception the context
engine reacts to. ``context_numbers`` reads the window size and the requested size out of such a
rejection where the server states them.

False positives are worse than misses here (a misread rate limit would make clio throw history
away), so rate-limit and quota wordings never match, auth/not-found/rate-limit statuses never
match, and the patterns name the context window explicitly; a bare "too long" or "maximum length"
(an over-long single string, an invalid tool schema) does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from clio.lazy_re import lazy

__all__ = ["context_numbers", "is_context_length_error"]

# Error codes / types that mean exactly this, in any dialect.
CONTEXT_CODES = frozenset(
    {
        "context_length_exceeded",  # OpenAI, Azure, Groq, DeepSeek, LiteLLM
        "exceed_context_size_error",  # llama.cpp server
        "context_window_exceeded",  # LiteLLM / some gateways
        "model_context_window_exceeded",  # OpenAI Responses API
        "context_length_error",
        "prompt_too_long",
    }
)

_CONTEXT_PATTERNS = [
    # OpenAI, vLLM, OpenRouter, DeepSeek, Mistral, Fireworks, Groq:
    # "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens..."
    r"maximum context length",
    r"max(imum)?[ _-]?context[ _-]?(length|window|size)\s+(is|of)\s+\d+",
    r"reduce the length of the (messages|prompt|input)",
    # llama.cpp: "request (6419 tokens) exceeds the available context size (2048 tokens), try
    # increasing it"; older: "the request exceeds the available context size, try increasing it"
    r"exceeds? the available context size",
    r"context size has been exceeded",
    r"input is too large to process\. increase the physical batch size",
    # Ollama / generic: "prompt too long; exceeded max context length by 12 tokens",
    # "input length exceeds the context length", "exceeds the context window"
    r"\bprompt (is )?too long\b",
    r"exceed(s|ed)? (the )?(max(imum)? )?(model'?s? )?context (length|window|size|limit)",
    r"exceed(s|ed)? (the )?context[ _-]?(length|window)",
    r"\binput length exceeds\b",
    # LM Studio: "... the model is loaded with context length of only 4096 tokens, which is not
    # enough"; "The number of tokens to keep from the initial prompt is greater than the context
    # length"; "context the overflows"
    r"context length of only \d+",
    r"greater than the context length",
    r"context (the )?overflows",
    # Anthropic(-compatible): "prompt is too long: 210000 tokens > 200000 maximum",
    # "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000"
    r"exceed context limit",
    r"\binput is too long\b",
    # vLLM: "The decoder prompt (length 5000) is longer than the maximum model length of 4096",
    # "Input prompt (5000 tokens) is too long and exceeds limit of 4096"
    r"longer than the maximum model length",
    r"prompt \(\d+ tokens\) is too long",
    # TGI / Together / HF: "`inputs` tokens + `max_new_tokens` must be <= 4097",
    # "`inputs` must have less than 4096 tokens"
    r"`?inputs`? tokens \+ `?max_new_tokens`? must be <=",
    r"`?inputs`? must have less than \d+ tokens",
    # Mistral: "Prompt contains 40000 tokens ... too large for model with 32768 maximum context length"
    r"too large for model with \d+ maximum context",
    # Gemini (OpenAI-compatible): "The input token count (1200000) exceeds the maximum number of
    # tokens allowed (1048576)"
    r"input token count.{0,40}exceeds the maximum number of tokens",
    # Cohere and others: "too many tokens: total number of tokens in the prompt cannot exceed 4081"
    r"too many tokens",
    r"tokens in the prompt cannot exceed",
    r"\bcontext[_ ]length\b.{0,40}\b(exceeded|too (long|large))",
]
_CONTEXT_RE = lazy("|".join(f"(?:{p})" for p in _CONTEXT_PATTERNS), re.IGNORECASE | re.DOTALL)

# Wordings that must never count even when a context pattern also matches (Groq's 413 "Request too
# large ... on tokens per minute (TPM)", OpenAI's "Rate limit reached ... tokens per min").
_NOT_CONTEXT_RE = lazy(
    r"rate[ _-]?limit|per minute|per min\b|per day|\b[TR]PM\b|\bTPD\b|quota|too many requests"
    r"|billing|credits?\b",
    re.IGNORECASE,
)
_NOT_CONTEXT_CODES = frozenset({"rate_limit_exceeded", "insufficient_quota", "tokens", "requests"})
_NOT_CONTEXT_STATUS = frozenset({401, 402, 403, 404, 408, 429})

_CODE_KEYS = frozenset({"code", "type", "error_code", "error_type", "reason", "status"})


def is_context_length_error(status: int | None, body: Any, message: str) -> bool:
    """True when the server rejected the request because the prompt does not fit its context window.

    ``status``: HTTP status or None (an error event inside a stream); ``body``: the decoded error
    body in any shape (dict, list, str, None); ``message``: the exception's text.
    """
    if status in _NOT_CONTEXT_STATUS:
        return False
    codes = {c.lower() for c in _codes(body)}
    text = "\n".join([message or "", *_strings(body)])
    if codes & _NOT_CONTEXT_CODES or _NOT_CONTEXT_RE.search(text):
        return False
    if codes & CONTEXT_CODES:
        return True
    return bool(_CONTEXT_RE.search(text))


_NUMBER_RES = [
    # llama.cpp: "request (6419 tokens) exceeds the available context size (2048 tokens)"
    lazy(r"request \((?P<req>\d+) tokens\) exceeds the available context size \((?P<win>\d+) tokens\)"),
    # OpenAI / vLLM / OpenRouter: "maximum context length is 8192 tokens. However, you requested
    # 9000 tokens" / "... your messages resulted in 9000 tokens" / "your request has 1500 input tokens"
    lazy(
        r"maximum context length is (?P<win>\d+) tokens.{0,80}?"
        r"(?:requested (?:about )?|resulted in |has )(?P<req>\d+)",
        re.DOTALL,
    ),
    lazy(r"maximum context length is (?P<win>\d+)"),
    # Anthropic: "prompt is too long: 210000 tokens > 200000 maximum"
    lazy(r"too long: (?P<req>\d+) tokens > (?P<win>\d+) maximum"),
    # Ollama: "exceeded max context length by 12 tokens" gives no window; LM Studio:
    lazy(r"context length of only (?P<win>\d+)"),
    # vLLM: "longer than the maximum model length of 4096"
    lazy(r"\(length (?P<req>\d+)\) is longer than the maximum model length of (?P<win>\d+)"),
    lazy(r"maximum model length of (?P<win>\d+)"),
]


def context_numbers(body: Any, message: str) -> tuple[int | None, int | None]:
    """``(window, requested)`` tokens as stated by a context-length rejection; None where unstated.

    llama.cpp puts them in the body (``n_ctx``, ``n_prompt_tokens``); others only in the text.
    """
    window = _first_int(body, "n_ctx")
    requested = _first_int(body, "n_prompt_tokens")
    text = "\n".join([message or "", *_strings(body)])
    for rx in _NUMBER_RES:
        m = rx.search(text)
        if not m:
            continue
        groups = m.groupdict()
        if window is None and groups.get("win"):
            window = int(groups["win"])
        if requested is None and groups.get("req"):
            requested = int(groups["req"])
        if window is not None and requested is not None:
            break
    return window, requested


def _walk(value: Any, depth: int = 0) -> Iterator[tuple[str | None, Any]]:
    """(key, value) pairs of a decoded JSON document, a few levels deep."""
    if depth > 5:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            yield (str(k), v)
            if isinstance(v, (dict, list)):
                yield from _walk(v, depth + 1)
    elif isinstance(value, list):
        for v in value[:20]:
            yield (None, v)
            if isinstance(v, (dict, list)):
                yield from _walk(v, depth + 1)
    elif value is not None:
        yield (None, value)


def _strings(body: Any) -> list[str]:
    return [v for _, v in _walk(body) if isinstance(v, str)]


def _codes(body: Any) -> list[str]:
    return [v for k, v in _walk(body) if k in _CODE_KEYS and isinstance(v, str)]


def _first_int(body: Any, key: str) -> int | None:
    for k, v in _walk(body):
        if k == key and isinstance(v, int) and not isinstance(v, bool):
            return v
    return None
