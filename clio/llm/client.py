"""The model client: one streamed chat completion, with retries, usage and tool-call assembly.

Talks to any OpenAI-compatible endpoint over :mod:`clio.llm.http` (urllib3; the ``openai``
package costs more to import than clio's whole start-up budget). Always streams; asks for
usage in the stream (``stream_options.include_usage``) and stops asking if the endpoint refuses
it. Retries 429 (honouring Retry-After), 5xx, connection failures and streams that break off;
maps every other failure to one exception from :mod:`clio.llm.errors` whose text says what to do.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from clio.llm.dialects import context_numbers, is_context_length_error
from clio.llm.endpoint import Endpoint
from clio.llm.errors import (
    AuthError,
    BadRequest,
    ContextLengthError,
    EndpointUnreachable,
    LLMError,
    ModelNotFound,
    RateLimited,
    ServerError,
)
from clio.llm.http import ConnectFailed, HTTPStatus, StreamFailed, Transport


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
        }


@dataclass
class ChatResult:
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    interrupted: bool = False


class StreamBroken(Exception):
    """The stream ended before the endpoint said it was finished."""


TextSink = Callable[[str], None]
RetrySink = Callable[[str, float], None]  # (reason, seconds to wait)
# A refused connection is a definite answer (nothing listens at that address, typically a local
# server not started): one quick retry, in case it was starting, then the message; not the
# max_retries backoff (4 retries, ~15 s) that timeouts, resets and 5xx get.
REFUSED_RETRIES = 1
REFUSED_WAIT = 0.5


class LLMClient:
    def __init__(self, endpoint: Endpoint, *, backoff: float = 1.0) -> None:
        self.base_url = endpoint.base_url
        self.model = endpoint.model
        self.max_retries = endpoint.max_retries
        self.backoff = backoff
        self.include_usage = True
        self._api_key = endpoint.api_key
        self._timeout = endpoint.timeout
        self._transport_obj: Transport | None = None

    @property
    def _transport(self) -> Transport:
        if self._transport_obj is None:
            self._transport_obj = Transport(self.base_url, self._api_key, self._timeout)
        return self._transport_obj

    # -- public ----------------------------------------------------------------------------------
    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        on_text: TextSink | None = None,
        on_retry: RetrySink | None = None,
        tool_choice: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatResult:
        attempt = 0
        while True:
            try:
                return self._stream_once(messages, tools, on_text, tool_choice, temperature, max_tokens)
            except KeyboardInterrupt:
                raise
            except (StreamBroken, ConnectFailed) as exc:
                if isinstance(exc, ConnectFailed) and exc.tls:  # a certificate problem: retrying will not help
                    raise EndpointUnreachable(
                        f"Cannot reach {self.base_url}: its TLS certificate was not accepted ({_short(str(exc), 120)}); "
                        "if it is signed by your own CA, set SSL_CERT_FILE to that CA's bundle."
                    ) from exc
                reason = (
                    "the stream broke off"
                    if isinstance(exc, StreamBroken)
                    else "could not reach the endpoint"
                )
                refused = isinstance(exc, ConnectFailed) and exc.refused
                if attempt >= (min(self.max_retries, REFUSED_RETRIES) if refused else self.max_retries):
                    if refused:
                        raise EndpointUnreachable(
                            f"Cannot reach {self.base_url}: the connection was refused (nothing is listening "
                            "there); check that the server is running, or set OPENAI_BASE_URL / --base-url "
                            "to the right address."
                        ) from exc
                    if isinstance(exc, StreamBroken):
                        raise ServerError(
                            f"The endpoint at {self.base_url} kept breaking off its replies; try again later."
                        ) from exc
                    raise EndpointUnreachable(
                        f"Cannot reach {self.base_url}: check that the server is running "
                        "or set OPENAI_BASE_URL / --base-url to the right address."
                    ) from exc
                wait = REFUSED_WAIT if refused else self._wait(attempt, None)
            except HTTPStatus as exc:
                if self._drop_stream_options(exc):
                    continue
                err = self._classify(exc)
                retryable = isinstance(err, (RateLimited, ServerError))
                if not retryable or attempt >= self.max_retries:
                    raise err from exc
                reason = "rate limited" if isinstance(err, RateLimited) else f"server error {exc.status}"
                wait = self._wait(attempt, _retry_after(exc))
            attempt += 1
            if on_retry:
                on_retry(reason, wait)
            time.sleep(wait)

    def list_models(self) -> list[str]:
        try:
            listing = self._transport.get_json("/models")
        except HTTPStatus as exc:
            raise LLMError(
                f"Could not list models at {self.base_url}: {exc.status} {_short(_text(exc))}"
            ) from exc
        except (ConnectFailed, StreamFailed) as exc:
            raise LLMError(f"Could not list models at {self.base_url}: {exc}") from exc
        data = listing.get("data") if isinstance(listing, dict) else None
        return sorted(str(m["id"]) for m in data or [] if isinstance(m, dict) and m.get("id"))

    # -- one attempt -----------------------------------------------------------------------------
    def _stream_once(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        on_text: TextSink | None,
        tool_choice: str | None,
        temperature: float | None,
        max_tokens: int | None,
    ) -> ChatResult:
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "stream": True}
        if tools:
            kwargs["tools"] = tools
            if tool_choice:
                kwargs["tool_choice"] = tool_choice
        if temperature is not None:
            kwargs["temperature"] = temperature
        if max_tokens:
            kwargs["max_tokens"] = max_tokens
        if self.include_usage:
            kwargs["stream_options"] = {"include_usage": True}
        result = ChatResult()
        calls: dict[int, dict[str, Any]] = {}
        stream = self._transport.stream("/chat/completions", kwargs)
        text_parts: list[str] = []
        try:
            for chunk in stream:
                if "error" in chunk:  # an error reported inside a started stream (OpenRouter, vLLM)
                    raise _stream_error(chunk)
                if chunk.get("usage"):
                    result.usage = _usage(chunk["usage"])
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta")
                    if isinstance(delta, dict):
                        piece = delta.get("content")
                        if piece:
                            text_parts.append(piece)
                            if on_text:
                                on_text(piece)
                        for tc in delta.get("tool_calls") or []:
                            _merge_call(calls, tc)
                    if choice.get("finish_reason"):
                        result.finish_reason = choice["finish_reason"]
        except KeyboardInterrupt:
            stream.close()
            result.interrupted = True
        except (HTTPStatus, ConnectFailed, StreamBroken):
            stream.close()
            raise
        except StreamFailed as exc:  # the transport failed mid-stream (connection reset, cut-off, bad event)
            stream.close()
            raise StreamBroken(str(exc)) from exc
        except (AttributeError, TypeError, ValueError) as exc:  # an event of the wrong shape
            stream.close()
            raise StreamBroken(f"a malformed event ({exc})") from exc
        result.content = "".join(text_parts)
        result.tool_calls = [_finish_call(calls[i], i) for i in sorted(calls)]
        if not result.interrupted and result.finish_reason is None and result.usage is None:
            raise StreamBroken("no finish_reason")
        return result

    # -- failures --------------------------------------------------------------------------------
    def _drop_stream_options(self, exc: HTTPStatus) -> bool:
        if self.include_usage and exc.status in (400, 422) and "stream_options" in _text(exc):
            self.include_usage = False
            return True
        return False

    def _classify(self, exc: HTTPStatus) -> LLMError:
        status, text = exc.status, _text(exc)
        if is_context_length_error(status, exc.body, text):
            window, requested = context_numbers(exc.body, text)
            return ContextLengthError(
                f"The request is too long for the model's context window ({_short(text)}).", window, requested
            )
        if status == 401:
            return AuthError(
                f"The endpoint at {self.base_url} rejected the API key (401): set OPENAI_API_KEY to a valid key."
            )
        if status == 403:
            return AuthError(
                f"The endpoint refused access (403): check the key's permissions ({_short(text)})."
            )
        if status == 404:
            return ModelNotFound(
                f"Model '{self.model}' was not found at {self.base_url} (404): pick one with --model NAME "
                "(clio -p /model lists the endpoint's models; /model NAME switches in the REPL)."
            )
        if status == 429:
            return RateLimited(
                f"The endpoint is rate limiting requests (429): wait a moment and retry ({_short(text)})."
            )
        if status >= 500:
            return ServerError(f"The endpoint failed with {status}: try again later ({_short(text)}).")
        return BadRequest(f"The endpoint rejected the request ({status}): {_short(text)}")

    def _wait(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), 60.0)
        base = self.backoff * (2**attempt)
        return float(min(base + random.uniform(0, base / 2), 30.0))


def _merge_call(calls: dict[int, dict[str, Any]], tc: dict[str, Any]) -> None:
    idx = tc.get("index")
    if not isinstance(idx, int):
        idx = len(calls)
    slot = calls.setdefault(idx, {"id": "", "name": "", "arguments": []})
    if tc.get("id"):
        slot["id"] = str(tc["id"])
    fn = tc.get("function")
    if isinstance(fn, dict):
        name = fn.get("name")
        if name and name != slot["name"]:
            slot["name"] = name if not slot["name"] else slot["name"] + name  # fragments, or a repeat
        if fn.get("arguments"):
            slot["arguments"].append(str(fn["arguments"]))


def _finish_call(slot: dict[str, Any], index: int) -> dict[str, Any]:
    return {
        "id": slot["id"] or f"call_{index}_{int(time.time() * 1000) % 10**8}",
        "type": "function",
        "function": {"name": slot["name"], "arguments": "".join(slot["arguments"]) or "{}"},
    }


def _usage(u: dict[str, Any]) -> Usage:
    details = u.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        prompt_tokens=int(u.get("prompt_tokens") or 0),
        completion_tokens=int(u.get("completion_tokens") or 0),
        cached_tokens=int(cached or 0),
    )


def _stream_error(chunk: dict[str, Any]) -> Exception:
    """An error event inside a stream: an :class:`HTTPStatus` when it states a status or is a
    context-length rejection (mapped like one before the stream), else the stream broke off."""
    err = chunk.get("error")
    code = err.get("code") if isinstance(err, dict) else None
    text = str(err.get("message") or err) if isinstance(err, dict) else str(err)
    status = code if isinstance(code, int) and 400 <= code < 600 else None
    if status is None and is_context_length_error(400, chunk, text):
        status = 400
    if status is None:
        return StreamBroken(f"the endpoint reported an error mid-stream: {_short(text)}")
    return HTTPStatus(status, chunk, text, {})


def _text(exc: HTTPStatus) -> str:
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            return str(err.get("message") or err)
        return str(err)
    return str(body or exc.text or f"HTTP {exc.status}")


def _short(text: str, n: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _retry_after(exc: HTTPStatus) -> float | None:
    value = next((v for k, v in exc.headers.items() if k.lower() == "retry-after"), None)
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None
