"""The fake chat-completions server, driven through the real `openai` client."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import openai
import pytest

from testkit.fakeserver import FakeServer, Recorded, item_from_dict
from testkit.fakeserver_sse import Fail, Reply

USER = [{"role": "user", "content": "hello"}]


def client(server: FakeServer, key: str = "x") -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=key, max_retries=0, timeout=10)


def create(server: FakeServer, messages: Any = USER, key: str = "x", **kw: Any) -> Any:
    """One chat completion request through the real client (typed loosely: tests send raw dicts)."""
    return client(server, key).chat.completions.create(model="m", messages=messages, **kw)


def stream(server: FakeServer, messages: Any = USER, **kw: Any) -> list[Any]:
    kw.setdefault("stream_options", {"include_usage": True})
    if kw["stream_options"] is None:  # omit it (the client would send an explicit null)
        del kw["stream_options"]
    return list(create(server, messages, stream=True, **kw))


def assemble(chunks: list[Any]) -> tuple[str, list[dict[str, str]], str | None]:
    """What a client rebuilds from the deltas: text, tool calls by index, finish reason."""
    text, finish = "", None
    calls: dict[int, dict[str, str]] = {}
    for ch in chunks:
        for choice in ch.choices:
            delta = choice.delta
            text += delta.content or ""
            for tc in delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] += tc.id or ""
                slot["name"] += (tc.function.name or "") if tc.function else ""
                slot["arguments"] += (tc.function.arguments or "") if tc.function else ""
            finish = choice.finish_reason or finish
    return text, [calls[i] for i in sorted(calls)], finish


def test_streamed_text_with_usage_in_last_chunk(fake_server: FakeServer) -> None:
    text = "The quick brown fox jumps over the lazy dog, twice over."
    fake_server.script(Reply(text=text, chunk_chars=7))
    chunks = stream(fake_server)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    assert assemble(chunks) == (text, [], "stop")
    content_chunks = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(content_chunks) == math.ceil(len(text) / 7)
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert all(c.usage is None for c in chunks[:-1])
    assert last.usage.prompt_tokens == fake_server.prompt_tokens(fake_server.chat_requests[0])
    assert last.usage.completion_tokens == math.ceil(len(text) / 4)
    assert last.usage.total_tokens == last.usage.prompt_tokens + last.usage.completion_tokens


def test_no_usage_chunk_without_include_usage(fake_server: FakeServer) -> None:
    chunks = stream(fake_server, stream_options=None)
    assert assemble(chunks)[0] == "ok"
    assert all(c.choices for c in chunks) and all(c.usage is None for c in chunks)


def test_tool_call_deltas_split_across_chunks_reassemble(fake_server: FakeServer) -> None:
    args0 = {"operation": "read_file", "path": "src/app.py", "start_line": 1, "end_line": 40}
    args1 = '{"operation": "execute", "command": "pytest -q"}'
    fake_server.script(
        Reply(
            text="Let me look.",
            tool_calls=[
                {"name": "file_operations", "arguments": args0, "id": "call_A"},
                {"name": "terminal_operations", "arguments": args1},
            ],
            arg_chunk_chars=5,
        )
    )
    chunks = stream(fake_server)
    text, calls, finish = assemble(chunks)
    assert text == "Let me look." and finish == "tool_calls"
    assert [c["name"] for c in calls] == ["file_operations", "terminal_operations"]
    assert json.loads(calls[0]["arguments"]) == args0 and calls[1]["arguments"] == args1
    assert calls[0]["id"] == "call_A" and calls[1]["id"].startswith("call_")
    deltas = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    for index, args in ((0, json.dumps(args0)), (1, args1)):
        mine = [d for d in deltas if d.index == index]
        assert mine[0].id and mine[0].function.name  # the first delta names the call
        assert all(d.id is None and d.function.name is None for d in mine[1:])  # later: only fragments
        assert len(mine) - 1 == math.ceil(len(args) / 5)


def test_non_streamed_completion(fake_server: FakeServer) -> None:
    fake_server.script(
        Reply(text="Done."),
        Reply(tool_calls=[{"name": "todo_operations", "arguments": {"operation": "read"}}]),
    )
    first = create(fake_server, USER)
    assert first.object == "chat.completion" and first.choices[0].message.content == "Done."
    assert first.choices[0].finish_reason == "stop"
    assert first.usage is not None and first.usage.prompt_tokens == fake_server.prompt_tokens(
        fake_server.chat_requests[0]
    )
    second = create(fake_server, USER)
    call = second.choices[0].message.tool_calls[0]
    assert second.choices[0].finish_reason == "tool_calls" and second.choices[0].message.content is None
    assert call.function.name == "todo_operations" and json.loads(call.function.arguments) == {
        "operation": "read"
    }


@pytest.mark.parametrize(
    ("fail", "exc", "status", "code"),
    [
        (Fail.rate_limit(3), openai.RateLimitError, 429, "rate_limit_exceeded"),
        (Fail.server_error(), openai.InternalServerError, 500, None),
        (Fail.server_error(503), openai.InternalServerError, 503, None),
        (Fail.unauthorized(), openai.AuthenticationError, 401, "invalid_api_key"),
        (Fail.not_found_model("gpt-9"), openai.NotFoundError, 404, "model_not_found"),
        (Fail.context_length(), openai.BadRequestError, 400, "context_length_exceeded"),
        (Fail(418, "I'm a teapot"), openai.APIStatusError, 418, None),
    ],
)
@pytest.mark.parametrize("streamed", [False, True])
def test_fail_kinds_raise_the_right_exception(
    fake_server: FakeServer,
    fail: Fail,
    exc: type[openai.APIStatusError],
    status: int,
    code: str | None,
    streamed: bool,
) -> None:
    fake_server.script(fail, Reply(text="after"))
    with pytest.raises(exc) as info:
        create(fake_server, USER, stream=streamed)
    assert info.value.status_code == status and info.value.code == code
    expected = fail.body["error"] if isinstance(fail.body, dict) else fail.body
    assert info.value.body == expected
    if status == 404:
        assert "gpt-9" in info.value.message
    assert assemble(stream(fake_server))[0] == "after"  # the script moves on


def test_rate_limit_sends_retry_after(fake_server: FakeServer) -> None:
    fake_server.script(Fail.rate_limit(2), Fail.rate_limit(0.5))
    for expected in ("2", "0.5"):
        with pytest.raises(openai.RateLimitError) as info:
            create(fake_server, USER)
        assert info.value.response.headers["retry-after"] == expected


def test_cut_after_breaks_the_stream_off(fake_server: FakeServer) -> None:
    fake_server.script(Reply(text="x" * 70, chunk_chars=7, cut_after=3))
    got: list[Any] = []
    with pytest.raises(openai.APIConnectionError):  # what the openai client really does on a broken stream
        for chunk in create(fake_server, USER, stream=True):
            got.append(chunk)
    assert len(got) == 3 and assemble(got)[0] == "x" * 14 and assemble(got)[2] is None
    # at the HTTP level: the events stop, no [DONE], and the chunked body is never terminated
    fake_server.script(Reply(text="abc", cut_after=2))
    req = urllib.request.Request(
        fake_server.base_url + "/chat/completions",
        json.dumps({"model": "m", "messages": USER, "stream": True}).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        with pytest.raises(Exception) as info:
            resp.read()
        partial = getattr(info.value, "partial", b"")
    assert type(info.value).__name__ == "IncompleteRead"
    assert partial.count(b"data: ") == 2 and b"[DONE]" not in partial
    assert assemble(stream(fake_server))[0] == "ok"  # the server is fine afterwards


def test_client_hanging_up_mid_stream_is_recorded(fake_server: FakeServer) -> None:
    fake_server.script(Reply(text="y" * 400, chunk_chars=1, delay=0.02))
    s = create(fake_server, USER, stream=True)
    for n, _ in enumerate(s):
        if n == 2:
            break
    s.close()
    deadline = time.monotonic() + 10
    while not fake_server.dropped and time.monotonic() < deadline:
        time.sleep(0.02)
    assert fake_server.dropped == [0]


@pytest.mark.parametrize("dialect", ["openai", "llamacpp", "vllm", "ollama"])
def test_context_limit_rejection_in_each_dialect(dialect: str) -> None:
    with FakeServer(context_limit=500, context_dialect=dialect) as server:
        server.script(Reply(text="fits"))
        big = [{"role": "user", "content": "z" * 2400}]
        n_prompt = server.prompt_tokens({"messages": big})
        assert n_prompt == 600 + 3 + 3
        with pytest.raises(openai.BadRequestError) as info:
            create(server, big, stream=True)
        body, message = info.value.body, str(info.value)
        if dialect == "openai":
            assert isinstance(body, dict) and body["code"] == "context_length_exceeded"
            assert (
                "maximum context length is 500 tokens" in body["message"] and "606 tokens" in body["message"]
            )
        elif dialect == "llamacpp":
            assert body == {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 606,
                "n_ctx": 500,
            }
        elif dialect == "vllm":
            assert isinstance(body, dict) and body["type"] == "BadRequestError" and body["object"] == "error"
            assert body["message"].startswith(
                "This model's maximum context length is 500 tokens. However, you requested 606 tokens (606 in the messages, 0 in the completion)."
            )
        else:
            assert body == "prompt too long; exceeded max context length by 106 tokens"
        assert "400" in message
        # max_tokens counts against the window too; a small enough request still gets the scripted reply
        small = [{"role": "user", "content": "z" * 400}]  # 100 + 6 tokens
        with pytest.raises(openai.BadRequestError):
            create(server, small, max_tokens=400)
        reply = create(server, small, max_tokens=394)
        assert reply.choices[0].message.content == "fits"


def test_context_limit_can_be_changed_on_a_running_server(fake_server: FakeServer) -> None:
    fake_server.context_limit = 5
    with pytest.raises(openai.BadRequestError):
        create(fake_server, USER)
    fake_server.context_limit = None
    assert create(fake_server, USER).choices[0].message.content == "ok"


def test_server_rejecting_stream_options() -> None:
    with FakeServer(accept_stream_options=False) as server:
        with pytest.raises(openai.BadRequestError) as info:
            stream(server)
        assert "Unrecognized request argument supplied: stream_options" in str(info.value)
        chunks = stream(server, stream_options=None)
        assert assemble(chunks)[0] == "ok" and all(c.usage is None for c in chunks)


def test_requests_are_recorded(fake_server: FakeServer) -> None:
    c = client(fake_server, key="sk-test")
    assert [m.id for m in c.models.list()] == ["fake-model"]
    assert c.models.retrieve("fake-model").id == "fake-model"
    with pytest.raises(openai.NotFoundError):
        c.models.retrieve("other")
    create(fake_server, key="sk-test", temperature=0.2)
    with urllib.request.urlopen(fake_server.base_url.removesuffix("/v1") + "/health", timeout=10) as resp:
        assert json.loads(resp.read()) == {"status": "ok"}
    assert [(r.method, r.path) for r in fake_server.requests] == [
        ("GET", "/v1/models"),
        ("GET", "/v1/models/fake-model"),
        ("GET", "/v1/models/other"),
        ("POST", "/v1/chat/completions"),
        ("GET", "/health"),
    ]
    chat: Recorded = fake_server.requests[3]
    assert chat.headers["authorization"] == "Bearer sk-test"
    assert chat.body == {"model": "m", "messages": USER, "temperature": 0.2} == json.loads(chat.raw)
    assert fake_server.chat_requests == [chat.body]


def test_api_key_is_enforced() -> None:
    with FakeServer(api_key="sk-right") as server:
        with pytest.raises(openai.AuthenticationError) as info:
            create(server, key="sk-wrong", messages=USER)
        assert info.value.code == "invalid_api_key"
        with pytest.raises(openai.AuthenticationError):
            client(server, key="sk-wrong").models.list()
        assert create(server, key="sk-right", messages=USER).choices


def test_prompt_tokens_formula(fake_server: FakeServer) -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    call = {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"p":"a.py"}'}}
    messages = [
        {"role": "system", "content": "S" * 100},
        {
            "role": "user",
            "content": [{"type": "text", "text": "T" * 21}, {"type": "image_url", "image_url": {"url": "u"}}],
        },
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "name": "read", "content": "R" * 50},
    ]
    schema_chars = len(json.dumps(tools, separators=(",", ":")))
    chars = 100 + 21 + len("read") + len('{"p":"a.py"}') + 50 + schema_chars
    expected = math.ceil(chars / 2.5) + 3 * 4 + 3
    fake_server.chars_per_token = 2.5
    assert fake_server.prompt_tokens({"messages": messages, "tools": tools}) == expected
    chunks = stream(fake_server, messages, tools=tools)
    assert chunks[-1].usage.prompt_tokens == expected


def test_cached_tokens_grow_when_a_request_extends_the_previous(fake_server: FakeServer) -> None:
    history = [{"role": "system", "content": "You are clio. " * 40}, {"role": "user", "content": "task one"}]
    cached, prompts = [], []
    for turn in range(4):
        usage = stream(fake_server, history)[-1].usage
        cached.append(usage.prompt_tokens_details.cached_tokens)
        prompts.append(usage.prompt_tokens)
        history = history + [
            {"role": "assistant", "content": f"answer {turn} " * 30},
            {"role": "user", "content": f"next {turn}"},
        ]
    assert cached[0] == 0
    assert cached[1] < cached[2] < cached[3]
    assert all(0 < c < p for c, p in zip(cached[1:], prompts[1:], strict=True))
    repeat = stream(fake_server, history[:-2])[-1].usage  # the same messages as the last request
    assert repeat.prompt_tokens_details.cached_tokens == repeat.prompt_tokens
    other = stream(fake_server, [{"role": "user", "content": "something else entirely " * 40}])[-1].usage
    assert other.prompt_tokens_details.cached_tokens < other.prompt_tokens // 10
    # a rejected request is never processed, so it does not replace the cached prefix
    fake_server.script(Fail.server_error())
    with pytest.raises(openai.InternalServerError):
        create(fake_server, history)
    again = stream(fake_server, [{"role": "user", "content": "something else entirely " * 40}])[-1].usage
    assert again.prompt_tokens_details.cached_tokens == again.prompt_tokens


def test_usage_override(fake_server: FakeServer) -> None:
    fake_server.script(
        Reply(text="hi", usage={"prompt_tokens": 1234, "completion_tokens": 5, "total_tokens": 1239})
    )
    usage = stream(fake_server)[-1].usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens_details) == (1234, 5, None)


def test_conversation_shape_is_validated_like_openai(fake_server: FakeServer) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    orphan = [*USER, {"role": "tool", "tool_call_id": "c9", "content": "x"}]
    unanswered = [*USER, {"role": "assistant", "content": None, "tool_calls": [call]}, *USER]
    answered = [
        *USER,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
    ]
    for bad, words in (
        (orphan, "must be a response to a preceeding"),
        (unanswered, "did not have response messages: c1"),
    ):
        with pytest.raises(openai.BadRequestError) as info:
            create(fake_server, bad)
        assert words in str(info.value)
    assert create(fake_server, answered).choices[0].message.content == "ok"
    fake_server.validate = False
    assert create(fake_server, orphan).choices[0].message.content == "ok"


def test_responder_policy_drives_a_tool_loop() -> None:
    def policy(body: dict[str, Any]) -> Reply | Fail:
        if body["messages"][-1]["role"] == "tool":
            return Reply(text="The file says " + body["messages"][-1]["content"])
        return Reply(
            tool_calls=[{"name": "file_operations", "arguments": {"operation": "read_file", "path": "a"}}]
        )

    with FakeServer(policy) as server:
        messages: list[dict[str, Any]] = list(USER)
        for _ in range(3):
            text, calls, finish = assemble(stream(server, messages))
            if finish == "stop":
                break
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": c["arguments"]},
                        }
                        for c in calls
                    ],
                }
            )
            messages += [{"role": "tool", "tool_call_id": c["id"], "content": "42"} for c in calls]
        assert text == "The file says 42" and len(server.chat_requests) == 2


def test_responder_error_becomes_a_500() -> None:
    def broken(body: dict[str, Any]) -> Reply | Fail:
        raise RuntimeError("boom")

    with FakeServer(broken) as server, pytest.raises(openai.InternalServerError) as info:
        create(server, USER)
    assert "boom" in str(info.value.body)


def test_script_items_from_json() -> None:
    assert item_from_dict({"text": "hi", "chunk_chars": 2}) == Reply(text="hi", chunk_chars=2)
    assert item_from_dict({"fail": "rate_limit", "retry_after": 4}) == Fail.rate_limit(4)
    assert item_from_dict({"fail": "context_length", "dialect": "vllm"}) == Fail.context_length("vllm")
    assert item_from_dict({"status": 502, "body": "bad gateway"}) == Fail(502, "bad gateway")
    with pytest.raises(ValueError):
        item_from_dict({"fail": "nonsense"})
    with pytest.raises(ValueError):
        Fail.context_length("tgi")


def test_standalone_server(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "scripted first"}, {"fail": "server_error", "status": 502}]))
    proc = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).resolve().parents[2] / "testkit" / "fakeserver.py"),
            "--port",
            "0",
            "--script",
            str(script),
            "--context-limit",
            "8000",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        c: Any = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=10)
        ask = [{"role": "user", "content": "please refactor utils.py"}]
        assert (
            c.chat.completions.create(model="m", messages=ask).choices[0].message.content == "scripted first"
        )
        with pytest.raises(openai.InternalServerError):
            c.chat.completions.create(model="m", messages=ask)
        demo = c.chat.completions.create(model="m", messages=ask).choices[0].message.content or ""
        assert "> please refactor utils.py" in demo
        with pytest.raises(openai.BadRequestError):
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": "w" * 40000}])
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
