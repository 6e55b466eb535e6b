"""clio.llm.client.LLMClient in-process against the fake server (a real HTTP endpoint on 127.0.0.1).

One streamed chat completion: text deltas in order, tool-call deltas assembled, usage, the
stream_options fallback, the retries (429 with Retry-After, 5xx, a broken stream) and the one
exception each failure maps to.
"""

from __future__ import annotations

import json
import math
import time

import pytest

from clio.llm.client import LLMClient
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
from testkit.fakeserver import Fail, FakeServer, Reply

USER = [{"role": "user", "content": "hello"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "look something up",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]


def make_client(server: FakeServer, *, max_retries: int = 3, model: str = "fake-model") -> LLMClient:
    return LLMClient(Endpoint(server.base_url, "test-key", model, 10, max_retries), backoff=0.01)


class Retries:
    """The client's on_retry sink."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []

    def __call__(self, reason: str, wait: float) -> None:
        self.calls.append((reason, wait))


# ---------------------------------------------------------------- streaming


def test_text_deltas_reach_the_sink_in_order(fake_server: FakeServer) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    fake_server.script(Reply(text=text, chunk_chars=3))
    deltas: list[str] = []
    result = make_client(fake_server).chat(USER, on_text=deltas.append)
    assert deltas == [text[i : i + 3] for i in range(0, len(text), 3)]
    assert result.content == text
    assert result.finish_reason == "stop"
    assert result.tool_calls == []
    assert not result.interrupted


def test_tool_call_deltas_split_across_chunks_are_assembled(fake_server: FakeServer) -> None:
    first = {"q": "where is the config loader", "limit": 3}
    second = {"q": "déjà vu ✓", "nested": {"a": [1, 2, {"b": None}]}}
    fake_server.script(
        Reply(
            text="Let me look.",
            tool_calls=[
                {"name": "lookup", "arguments": first, "id": "call_a"},
                {"name": "lookup", "arguments": second},
            ],
            arg_chunk_chars=4,
        )
    )
    deltas: list[str] = []
    result = make_client(fake_server).chat(USER, TOOLS, on_text=deltas.append)
    assert result.content == "Let me look." == "".join(deltas)
    assert result.finish_reason == "tool_calls"
    assert [c["id"] for c in result.tool_calls] == ["call_a", "call_1_1"]  # the server's own ids
    assert [c["type"] for c in result.tool_calls] == ["function", "function"]
    assert [c["function"]["name"] for c in result.tool_calls] == ["lookup", "lookup"]
    assert [json.loads(c["function"]["arguments"]) for c in result.tool_calls] == [first, second]


def test_usage_is_parsed_from_the_last_chunk(fake_server: FakeServer) -> None:
    usage = {
        "prompt_tokens": 1234,
        "completion_tokens": 56,
        "total_tokens": 1290,
        "prompt_tokens_details": {"cached_tokens": 1000},
    }
    fake_server.script(Reply(text="hi", usage=usage), Reply(text="computed"))
    client = make_client(fake_server)
    result = client.chat(USER)
    assert result.usage is not None
    assert result.usage.as_dict() == {"prompt_tokens": 1234, "completion_tokens": 56, "cached_tokens": 1000}
    assert fake_server.chat_requests[0]["stream_options"] == {"include_usage": True}
    # without a scripted usage the server counts: the client reports the server's figures
    result = client.chat(USER)
    body = fake_server.chat_requests[1]
    assert result.usage is not None
    assert result.usage.prompt_tokens == fake_server.prompt_tokens(body)
    assert result.usage.completion_tokens == math.ceil(len("computed") / fake_server.chars_per_token)


@pytest.mark.parametrize("fake_server", [{"accept_stream_options": False}], indirect=True)
def test_stream_options_are_dropped_when_the_endpoint_refuses_them(fake_server: FakeServer) -> None:
    fake_server.script(Reply(text="first"), Reply(text="second"))
    client = make_client(fake_server, max_retries=0)  # the fallback is not a retry
    retries = Retries()
    assert client.chat(USER, on_retry=retries).content == "first"
    assert client.chat(USER).content == "second"
    sent = fake_server.chat_requests
    assert len(sent) == 3  # refused once, then never asked again
    assert "stream_options" in sent[0]
    assert "stream_options" not in sent[1] and "stream_options" not in sent[2]
    assert client.include_usage is False
    assert retries.calls == []


def test_request_carries_the_options_given(fake_server: FakeServer) -> None:
    client = make_client(fake_server, model="my-model")
    client.chat(USER, TOOLS, tool_choice="required", temperature=0.25, max_tokens=321)
    client.chat(USER, None, tool_choice="required")
    with_tools, without = fake_server.chat_requests
    assert with_tools["model"] == "my-model"
    assert with_tools["messages"] == USER
    assert with_tools["stream"] is True
    assert with_tools["tools"] == TOOLS
    assert with_tools["tool_choice"] == "required"
    assert with_tools["temperature"] == 0.25
    assert with_tools["max_tokens"] == 321
    # no tools: no tool_choice either (endpoints reject a choice without tools)
    assert "tools" not in without and "tool_choice" not in without
    assert "temperature" not in without and "max_tokens" not in without


def test_an_interrupt_in_the_text_sink_returns_the_partial_answer(fake_server: FakeServer) -> None:
    fake_server.script(Reply(text="one two three four five six", chunk_chars=4))
    seen: list[str] = []

    def sink(delta: str) -> None:
        seen.append(delta)
        raise KeyboardInterrupt

    result = make_client(fake_server).chat(USER, on_text=sink)
    assert result.interrupted
    assert seen == ["one "]
    assert result.content == "one "
    assert len(fake_server.chat_requests) == 1  # an interrupt is not retried


# ---------------------------------------------------------------- retries


def test_429_is_retried_after_the_stated_retry_after(fake_server: FakeServer) -> None:
    fake_server.script(Fail.rate_limit(0.3), Fail.rate_limit(0.05), Reply(text="finally"))
    retries = Retries()
    started = time.monotonic()
    result = make_client(fake_server).chat(USER, on_retry=retries)
    elapsed = time.monotonic() - started
    assert result.content == "finally"
    assert retries.calls == [("rate limited", 0.3), ("rate limited", 0.05)]
    assert elapsed >= 0.35
    assert len(fake_server.chat_requests) == 3


def test_server_errors_are_retried_with_backoff_then_succeed(fake_server: FakeServer) -> None:
    fake_server.script(Fail.server_error(500), Fail.server_error(503), Reply(text="recovered"))
    retries = Retries()
    result = make_client(fake_server).chat(USER, on_retry=retries)
    assert result.content == "recovered"
    assert [reason for reason, _ in retries.calls] == ["server error 500", "server error 503"]
    assert all(0 < wait < 1 for _, wait in retries.calls)  # backoff 0.01 s doubling, with jitter
    assert len(fake_server.chat_requests) == 3


def test_a_broken_stream_is_retried_and_the_retry_answers(fake_server: FakeServer) -> None:
    fake_server.script(
        Reply(text="this answer breaks off midway", chunk_chars=5, cut_after=3),
        Reply(text="the whole answer"),
    )
    retries = Retries()
    result = make_client(fake_server).chat(USER, on_retry=retries)
    assert result.content == "the whole answer"
    assert [reason for reason, _ in retries.calls] == ["the stream broke off"]
    assert len(fake_server.chat_requests) == 2


def test_retries_give_up_with_the_mapped_error(fake_server: FakeServer) -> None:
    fake_server.script(Fail.rate_limit(0), Fail.rate_limit(0))
    with pytest.raises(RateLimited, match="429"):
        make_client(fake_server, max_retries=1).chat(USER)
    assert len(fake_server.chat_requests) == 2

    fake_server.script(Fail.server_error(502), Fail.server_error(502))
    with pytest.raises(ServerError, match="502"):
        make_client(fake_server, max_retries=1).chat(USER)

    fake_server.script(Reply(text="a broken reply", cut_after=2), Reply(text="broken again", cut_after=2))
    with pytest.raises(ServerError, match="breaking off"):
        make_client(fake_server, max_retries=1).chat(USER)


def test_an_endpoint_that_is_not_there_is_unreachable() -> None:
    server = FakeServer().start()
    url = server.base_url
    server.stop()  # the port is closed now: connection refused
    retries = Retries()
    client = LLMClient(Endpoint(url, "k", "fake-model", 5, 1), backoff=0.01)
    with pytest.raises(EndpointUnreachable, match="Cannot reach"):
        client.chat(USER, on_retry=retries)
    assert [reason for reason, _ in retries.calls] == ["could not reach the endpoint"]


def test_a_refused_connection_gets_one_quick_retry_whatever_max_retries() -> None:
    server = FakeServer().start()
    url = server.base_url
    server.stop()
    retries = Retries()
    client = LLMClient(Endpoint(url, "k", "fake-model", 5, 4), backoff=1.0)
    with pytest.raises(EndpointUnreachable, match="the connection was refused"):
        client.chat(USER, on_retry=retries)
    assert retries.calls == [("could not reach the endpoint", 0.5)]  # was 4 retries, 1+2+4+8 s


# ---------------------------------------------------------------- errors mapped, never retried


@pytest.mark.parametrize(
    ("fail", "error", "words"),
    [
        (Fail.unauthorized(), AuthError, "401"),
        (Fail(403, {"error": {"message": "no access to this project"}}), AuthError, "403"),
        (Fail.not_found_model("fake-model"), ModelNotFound, "'fake-model' was not found"),
        (Fail.bad_request("Invalid value for 'temperature'"), BadRequest, "temperature"),
    ],
)
def test_fatal_statuses_map_to_one_error_without_retrying(
    fake_server: FakeServer, fail: Fail, error: type[LLMError], words: str
) -> None:
    fake_server.script(fail, Reply(text="never reached"))
    retries = Retries()
    with pytest.raises(error, match=words):
        make_client(fake_server).chat(USER, on_retry=retries)
    assert retries.calls == []
    assert len(fake_server.chat_requests) == 1


@pytest.mark.parametrize(
    ("dialect", "window", "requested"),
    [("openai", 4096, 5000), ("vllm", 8192, 9100), ("llamacpp", 2048, None)],
)
def test_context_length_rejection_states_the_window(
    fake_server: FakeServer, dialect: str, window: int, requested: int | None
) -> None:
    prompt = requested - 100 if requested else 3000
    fake_server.script(Fail.context_length(dialect, window, prompt, 100 if requested else 0))
    with pytest.raises(ContextLengthError) as info:
        make_client(fake_server).chat(USER)
    assert info.value.window == window
    if requested is not None:
        assert info.value.requested == requested
    assert len(fake_server.chat_requests) == 1


def test_context_length_rejection_from_the_servers_own_limit(fake_server: FakeServer) -> None:
    fake_server.context_limit = 50
    big = [{"role": "user", "content": "x" * 400}]
    with pytest.raises(ContextLengthError) as info:
        make_client(fake_server).chat(big, max_tokens=10)
    assert info.value.window == 50
    assert info.value.requested == fake_server.prompt_tokens(fake_server.chat_requests[0]) + 10


# ---------------------------------------------------------------- the model list


@pytest.mark.parametrize("fake_server", [{"model": "zeta-coder", "api_key": "test-key"}], indirect=True)
def test_list_models_reads_the_endpoints_list(fake_server: FakeServer) -> None:
    assert make_client(fake_server).list_models() == ["zeta-coder"]
    listing = [r for r in fake_server.requests if r.path.rstrip("/") == "/v1/models"]
    assert len(listing) == 1 and listing[0].method == "GET"
    assert listing[0].headers["authorization"] == "Bearer test-key"
    wrong = LLMClient(Endpoint(fake_server.base_url, "wrong-key", "zeta-coder", 5, 0))
    with pytest.raises(LLMError, match="Could not list models"):
        wrong.list_models()
