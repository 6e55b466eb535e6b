"""Wire format of the fake chat-completions server: scripted replies, error bodies, token accounting,
and the JSON payloads (streamed chunks and whole completions) shaped like OpenAI's.

Pure functions and dataclasses only; the HTTP side lives in testkit/fakeserver.py.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

VALID_ROLES = {"system", "developer", "user", "assistant", "tool", "function"}


@dataclass
class Reply:
    """One scripted chat completion."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {"name", "arguments": dict|str, "id"?}
    finish_reason: str | None = None  # default: "tool_calls" if tool_calls else "stop"
    chunk_chars: int = 7  # content characters per streamed delta
    arg_chunk_chars: int = 5  # tool-call argument characters per streamed delta
    delay: float = 0.0  # seconds to sleep between streamed chunks
    cut_after: int | None = None  # close the connection after N chunks, without [DONE]
    usage: dict[str, Any] | None = None  # replaces the computed usage
    error_event: dict[str, Any] | None = None  # with cut_after: sent as `data: {...}` then [DONE] (OpenRouter, vLLM)

    def arguments(self, call: dict[str, Any]) -> str:
        args = call.get("arguments", {})
        return args if isinstance(args, str) else json.dumps(args)

    def output_chars(self) -> int:
        return len(self.text) + sum(len(c["name"]) + len(self.arguments(c)) for c in self.tool_calls)

    def finish(self) -> str:
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")


def _openai_error(message: str, type_: str, code: str | None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


@dataclass
class Fail:
    """An HTTP error response (body: a dict is sent as JSON, a str as text/plain)."""

    status: int
    body: dict[str, Any] | str
    headers: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def context_length(
        dialect: str = "openai", n_ctx: int = 8000, n_prompt: int = 9000, n_completion: int = 0
    ) -> Fail:
        """A context-length rejection as the named server family words it."""
        total = n_prompt + n_completion
        requested = (
            f"However, you requested {total} tokens ({n_prompt} in the messages, "
            f"{n_completion} in the completion). Please reduce the length of the messages or completion."
        )
        if dialect == "openai":
            if n_completion:
                tail = requested
            else:
                tail = (
                    f"However, your messages resulted in {n_prompt} tokens. "
                    "Please reduce the length of the messages."
                )
            msg = f"This model's maximum context length is {n_ctx} tokens. {tail}"
            return Fail(
                400, _openai_error(msg, "invalid_request_error", "context_length_exceeded", "messages")
            )
        if dialect == "llamacpp":
            err = {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": n_prompt,
                "n_ctx": n_ctx,
            }
            return Fail(400, {"error": err})
        if dialect == "vllm":  # vLLM's ErrorResponse, not wrapped in "error"
            msg = f"This model's maximum context length is {n_ctx} tokens. {requested}"
            return Fail(
                400,
                {"object": "error", "message": msg, "type": "BadRequestError", "param": None, "code": 400},
            )
        if dialect == "ollama":
            over = max(1, total - n_ctx)
            return Fail(400, {"error": f"prompt too long; exceeded max context length by {over} tokens"})
        raise ValueError(f"unknown context dialect {dialect!r} (openai, llamacpp, vllm, ollama)")

    @staticmethod
    def rate_limit(retry_after: float = 0) -> Fail:
        msg = "Rate limit reached for requests. Please try again later."
        return Fail(
            429,
            _openai_error(msg, "requests", "rate_limit_exceeded"),
            {"Retry-After": f"{retry_after:g}"},
        )

    @staticmethod
    def server_error(status: int = 500) -> Fail:
        msg = "The server had an error while processing your request. Sorry about that!"
        return Fail(status, _openai_error(msg, "server_error", None))

    @staticmethod
    def unauthorized() -> Fail:
        msg = "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."
        return Fail(401, _openai_error(msg, "invalid_request_error", "invalid_api_key"))

    @staticmethod
    def not_found_model(model: str) -> Fail:
        msg = f"The model `{model}` does not exist or you do not have access to it."
        return Fail(404, _openai_error(msg, "invalid_request_error", "model_not_found"))

    @staticmethod
    def bad_request(message: str, param: str | None = None) -> Fail:
        return Fail(400, _openai_error(message, "invalid_request_error", None, param))


# ---------------------------------------------------------------- token accounting


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return 0


def prompt_chars(body: dict[str, Any]) -> int:
    """Characters the server charges for: contents, tool-call names and arguments, the tool schemas."""
    total = 0
    for msg in body.get("messages") or []:
        total += _content_chars(msg.get("content"))
        for call in msg.get("tool_calls") or []:
            fn = call.get("function") or {}
            args = fn.get("arguments") or ""
            total += len(fn.get("name") or "") + len(args if isinstance(args, str) else json.dumps(args))
    if body.get("tools"):
        total += len(json.dumps(body["tools"], separators=(",", ":")))
    return total


def count_prompt_tokens(body: dict[str, Any], chars_per_token: float) -> int:
    n_messages = len(body.get("messages") or [])
    return math.ceil(prompt_chars(body) / chars_per_token) + 3 * n_messages + 3


def count_completion_tokens(reply: Reply, chars_per_token: float) -> int:
    return math.ceil(reply.output_chars() / chars_per_token)


def messages_key(body: dict[str, Any]) -> str:
    """The serialized request whose common prefix with the previous request counts as cached: the
    system message, then the tools (where chat templates render them), then the other messages."""
    msgs = list(body.get("messages") or [])
    head = msgs[:1] if msgs and msgs[0].get("role") == "system" else []
    return json.dumps(
        [*head, body.get("tools") or [], *msgs[len(head) :]], separators=(",", ":"), ensure_ascii=False
    )


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n  # binary search on slice equality: C-speed comparisons
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def make_usage(prompt_tokens: int, completion_tokens: int, cached_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached_tokens},
    }


# ---------------------------------------------------------------- request validation


def validate_request(body: dict[str, Any]) -> str | None:
    """The checks OpenAI applies to a conversation's shape; returns the error message or None."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "[] is too short - 'messages'"
    pending: list[str] = []  # tool_call ids of the last assistant message not answered yet
    answerable: set[str] = set()
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role not in VALID_ROLES:
            return f"Invalid value for 'messages[{i}].role': {role!r}."
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if call_id not in answerable:
                return (
                    f"Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    f"message with 'tool_calls'. (messages[{i}], tool_call_id {call_id!r})"
                )
            if call_id in pending:
                pending.remove(call_id)
            continue
        if pending:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages responding to "
                f"each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                f"{', '.join(pending)}"
            )
        answerable = set()
        for j, call in enumerate(msg.get("tool_calls") or [] if role == "assistant" else []):
            args = (call.get("function") or {}).get("arguments")
            if not isinstance(args, str):
                return (
                    f"Invalid type for 'messages[{i}].tool_calls[{j}].function.arguments': expected a string."
                )
            pending.append(call.get("id"))
            answerable.add(call.get("id"))
    if pending:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}"
        )
    return None


# ---------------------------------------------------------------- payloads


def _call_id(call: dict[str, Any], fallback: str) -> str:
    return str(call.get("id") or fallback)


def completion_body(
    reply: Reply, *, cid: str, created: int, model: str, call_prefix: str, usage: dict[str, Any]
) -> dict[str, Any]:
    """A whole (non-streamed) chat.completion object."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(c, f"{call_prefix}{i}"),
                "type": "function",
                "function": {"name": c["name"], "arguments": reply.arguments(c)},
            }
            for i, c in enumerate(reply.tool_calls)
        ]
    return {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish()}],
        "usage": usage,
    }


def stream_chunks(
    reply: Reply,
    *,
    cid: str,
    created: int,
    model: str,
    call_prefix: str,
    usage: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """The chat.completion.chunk objects of a streamed reply, in order (usage chunk last if given)."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if usage is not None:
            out["usage"] = None  # OpenAI sends a null usage on every chunk when include_usage is on
        return out

    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    step = max(1, reply.chunk_chars)
    chunks += [chunk({"content": reply.text[i : i + step]}) for i in range(0, len(reply.text), step)]
    arg_step = max(1, reply.arg_chunk_chars)
    for index, call in enumerate(reply.tool_calls):
        head = {
            "index": index,
            "id": _call_id(call, f"{call_prefix}{index}"),
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [head]}))
        args = reply.arguments(call)
        for i in range(0, len(args), arg_step):
            frag = {"index": index, "function": {"arguments": args[i : i + arg_step]}}
            chunks.append(chunk({"tool_calls": [frag]}))
    chunks.append(chunk({}, reply.finish()))
    if usage is not None:
        chunks.append(
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": usage,
            }
        )
    return chunks


# ---------------------------------------------------------------- scripts and the demo


def demo_responder(body: dict[str, Any]) -> Reply:
    """A short markdown answer quoting the last user message (the standalone server's default)."""
    last = ""
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            last = str(content or "")
            break
    quoted = "\n".join(f"> {line}" for line in (last.strip() or "(nothing)").splitlines()[:10])
    n = len(body.get("messages") or [])
    text = f"**Fake server** received your message:\n\n{quoted}\n\n- messages in request: {n}\n- model: `{body.get('model')}`\n"
    return Reply(text=text)


def item_from_dict(obj: dict[str, Any]) -> Reply | Fail:
    """{"status", "body", "headers"?} -> Fail; {"fail": "rate_limit", ...kwargs} -> Fail.<kind>(**kwargs);
    anything else -> Reply(**obj)."""
    if "fail" in obj:
        kwargs = {k: v for k, v in obj.items() if k != "fail"}
        factory = getattr(Fail, str(obj["fail"]), None)
        if factory is None or obj["fail"].startswith("_"):
            raise ValueError(f"unknown fail kind {obj['fail']!r}")
        result: Fail = factory(**kwargs)
        return result
    if "status" in obj:
        return Fail(int(obj["status"]), obj.get("body", ""), dict(obj.get("headers") or {}))
    return Reply(**obj)


def load_script(path: str) -> list[Reply | Fail]:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, list):
        raise ValueError(f"{path}: a script is a JSON list of reply/fail objects")
    return [item_from_dict(d) for d in data]
