"""Token estimation: exact with tiktoken when its encoding is at hand, else a learned ratio.

Counting model (the one the fake server uses too)::

    prompt_tokens = ceil(prompt_chars / chars_per_token) + 3 * len(messages) + 3

where ``prompt_chars`` is the characters of every message's content, of every tool
call's name and arguments, and of the tool schemas as compact JSON.  The ratio is
learned from the ``prompt_tokens`` every response reports (``observe``).  With an
exact encoding the same formula holds with token counts in place of ``chars / ratio``.

Counts are cheap to repeat: a message's size is ``len()`` of its strings (O(1)) in
ratio mode, and a bounded cache keyed on the string objects in exact mode, so a
window is recounted every turn without re-encoding anything.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from clio.messages import Message

PER_MESSAGE = 3  # tokens of overhead per message (role, separators)
PRIMING = 3  # tokens that prime the assistant's reply
DEFAULT_RATIO = 3.5  # code tokenizes denser than prose; a low ratio over-counts, which is the safe side
MIN_RATIO, MAX_RATIO = 1.0, 12.0
ALPHA = 0.3  # weight of a new sample in the moving average
_SANE_SAMPLE = (0.5, 50.0)  # samples outside this band are measurement errors, not ratios
_CACHE_MAX = 50_000

def tools_json(schemas: list[dict[str, Any]] | None) -> str:
    """The tool schemas as the characters that are counted: compact JSON, "" for no tools."""
    if not schemas:
        return ""
    return json.dumps(schemas, separators=(",", ":"))


def message_strings(msg: Message) -> Iterable[str]:
    """The strings of a message that count: content (text parts) and tool calls' names and arguments."""
    content = msg.get("content")
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield part["text"]
    for call in msg.get("tool_calls") or ():
        fn = call.get("function") or {}
        name = fn.get("name")
        if isinstance(name, str):
            yield name
        args = fn.get("arguments")
        if isinstance(args, str):
            yield args
        elif args is not None:
            yield json.dumps(args)


def chars_of(msgs: Iterable[Message], schemas: list[dict[str, Any]] | None = None) -> int:
    """The characters the ratio applies to: messages' counted strings plus the tools' JSON."""
    return sum(len(s) for m in msgs for s in message_strings(m)) + len(tools_json(schemas))


class TokenEstimator:
    """Counts tokens for one model; exact with an encoding, else by a learned chars-per-token ratio."""

    def __init__(self, model: str, chars_per_token: float | None = None, *, encoding: Any | None = None):
        self.model = model
        self.encoding = encoding
        self._ratio = _clamp(chars_per_token) if chars_per_token else DEFAULT_RATIO
        self.samples = 0
        self.encode_calls = 0  # how many strings were actually encoded (cache misses)
        self._cache: dict[str, int] = {}

    # -- properties --------------------------------------------------------------------
    @property
    def chars_per_token(self) -> float:
        return self._ratio

    @property
    def exact(self) -> bool:
        return self.encoding is not None

    # -- sizes: chars (ratio mode) or tokens (exact mode), before overheads --------------
    def _encoded_len(self, text: str) -> int:
        if not text:
            return 0
        enc: Any = self.encoding
        cache = self._cache
        n = cache.get(text)
        if n is None:
            self.encode_calls += 1
            n = len(enc.encode(text, disallowed_special=()))
            if len(cache) >= _CACHE_MAX:
                del cache[next(iter(cache))]  # oldest first
            cache[text] = n
        return n

    def size_of_text(self, text: str) -> int:
        return self._encoded_len(text) if self.exact else len(text)

    def size_of(self, msg: Message) -> int:
        """A message's size without overheads: characters, or tokens when exact."""
        content = msg.get("content")
        if type(content) is str and not msg.get("tool_calls"):  # the common case, without a generator
            return self._encoded_len(content) if self.encoding is not None else len(content)
        if self.exact:
            return sum(self._encoded_len(s) for s in message_strings(msg))
        return sum(len(s) for s in message_strings(msg))

    def size_of_tools(self, schemas: list[dict[str, Any]] | None) -> int:
        return self.size_of_text(tools_json(schemas))

    def tokens_from(self, size: int, n_messages: int) -> int:
        """Tokens of a request whose summed size is ``size`` over ``n_messages`` messages."""
        body = size if self.exact else math.ceil(size / self._ratio)
        return body + PER_MESSAGE * n_messages + PRIMING

    # -- counts ------------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        size = self.size_of_text(text)
        return size if self.exact else math.ceil(size / self._ratio)

    def count_message(self, msg: Message) -> int:
        """One message: 3 tokens of overhead + content + tool calls' names and arguments."""
        size = self.size_of(msg)
        return (size if self.exact else math.ceil(size / self._ratio)) + PER_MESSAGE

    def count_messages(self, msgs: list[Message]) -> int:
        """A list of messages, with the 3 tokens that prime the reply."""
        return self.tokens_from(sum(self.size_of(m) for m in msgs), len(msgs))

    def count_tools(self, schemas: list[dict[str, Any]] | None) -> int:
        return self.count_text(tools_json(schemas))

    def count_request(self, msgs: list[Message], schemas: list[dict[str, Any]] | None) -> int:
        """Messages and tool schemas together, by the server's formula (one ceil over all chars)."""
        size = sum(self.size_of(m) for m in msgs) + self.size_of_tools(schemas)
        return self.tokens_from(size, len(msgs))

    def chars_of(self, msgs: list[Message], schemas: list[dict[str, Any]] | None) -> int:
        return chars_of(msgs, schemas)

    # -- learning ----------------------------------------------------------------------
    def observe(self, msgs: list[Message], schemas: list[dict[str, Any]] | None, prompt_tokens: int) -> None:
        """Learn chars-per-token from the prompt_tokens a response reported for ``msgs``."""
        if not isinstance(prompt_tokens, int) or isinstance(prompt_tokens, bool):
            return
        body_tokens = prompt_tokens - PER_MESSAGE * len(msgs) - PRIMING
        chars = chars_of(msgs, schemas)
        if body_tokens <= 0 or chars <= 0:
            return
        sample = chars / body_tokens
        if not (_SANE_SAMPLE[0] <= sample <= _SANE_SAMPLE[1]):
            return
        sample = _clamp(sample)
        if self.samples == 0:
            self._ratio = sample
        else:
            self._ratio = _clamp(ALPHA * sample + (1 - ALPHA) * self._ratio)
        self.samples += 1

    # -- persistence -------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"chars_per_token": round(self._ratio, 4), "samples": self.samples}

    @classmethod
    def from_state(cls, model: str, state: Any, *, encoding: Any | None = None) -> TokenEstimator:
        """Rebuild from ``state()``; anything malformed falls back to the defaults."""
        est = cls(model, encoding=encoding)
        if not isinstance(state, dict):
            return est
        ratio = state.get("chars_per_token")
        samples = state.get("samples")
        if (
            isinstance(ratio, (int, float))
            and not isinstance(ratio, bool)
            and math.isfinite(ratio)
            and ratio > 0
        ):
            est._ratio = _clamp(float(ratio))
            if isinstance(samples, int) and not isinstance(samples, bool) and samples >= 0:
                est.samples = samples
            else:
                est.samples = 1
        return est


def _clamp(x: float) -> float:
    return min(MAX_RATIO, max(MIN_RATIO, float(x)))
