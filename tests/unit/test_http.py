"""clio.llm.http (urllib3 + server-sent events) and what the client builds on it.

In-process: the SSE splitter on byte streams cut anywhere. Against real servers on 127.0.0.1:
errors reported inside a started stream, a forwarding proxy named by the environment, and the
official ``openai`` SDK reading the same scripted replies as clio's client (conformance).
"""

from __future__ import annotations

import http.client
import json
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import openai
import pytest

from clio.llm.client import LLMClient
from clio.llm.endpoint import Endpoint
from clio.llm.errors import ContextLengthError, EndpointUnreachable, ServerError
from clio.llm.http import iter_sse
from testkit.fakeserver import FakeServer, Reply

USER = [{"role": "user", "content": "hello"}]


def make_client(url: str, *, max_retries: int = 2) -> LLMClient:
    return LLMClient(Endpoint(url, "test-key", "fake-model", 10, max_retries), backoff=0.01)


# ---------------------------------------------------------------- SSE framing


STREAM = (
    b": keep-alive comment\r\n\r\n"
    b'data: {"a": 1}\n\n'
    b"event: message\nid: 7\n"
    b'data: {"b":\ndata:  "two lines"}\r\n\r\n'
    b"retry: 100\n\n"
    b'data: {"c": "\xc3\xa9t\xc3\xa9"}\n\n'
    b"data: [DONE]"  # the last event without its blank line
)
EXPECTED = ['{"a": 1}', '{"b":\n "two lines"}', '{"c": "été"}', "[DONE]"]


def pieces(data: bytes, size: int) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13, 1000])
def test_events_survive_any_split_of_the_byte_stream(size: int) -> None:
    assert list(iter_sse(pieces(STREAM, size))) == EXPECTED


def test_an_empty_stream_has_no_events() -> None:
    assert list(iter_sse(iter([b"", b": only a comment\n\n"]))) == []


# ---------------------------------------------------------------- errors inside a started stream


def test_a_status_error_inside_the_stream_is_retried_like_one_before_it(fake_server: FakeServer) -> None:
    fake_server.script(
        Reply(text="partial", cut_after=2, error_event={"error": {"message": "upstream overloaded", "code": 502}}),
        Reply(text="the answer"),
    )
    result = make_client(fake_server.base_url).chat(USER)
    assert result.content == "the answer"
    assert len(fake_server.chat_requests) == 2


def test_a_context_error_inside_the_stream_is_a_context_length_error(fake_server: FakeServer) -> None:
    event = {"error": {"message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."}}
    fake_server.script(Reply(text="x", cut_after=1, error_event=event), Reply(text="never"))
    with pytest.raises(ContextLengthError) as info:
        make_client(fake_server.base_url).chat(USER)
    assert info.value.window == 4096
    assert len(fake_server.chat_requests) == 1  # not retried: the context engine must trim first


def test_an_error_event_without_a_status_counts_as_a_broken_stream(fake_server: FakeServer) -> None:
    event = {"error": {"message": "something went wrong"}}
    fake_server.script(Reply(text="a", cut_after=1, error_event=event), Reply(text="b", cut_after=1, error_event=event))
    with pytest.raises(ServerError, match="breaking off"):
        make_client(fake_server.base_url, max_retries=1).chat(USER)
    assert len(fake_server.chat_requests) == 2


# ---------------------------------------------------------------- a proxy named by the environment


class Proxy(ThreadingHTTPServer):
    """A forwarding HTTP proxy on 127.0.0.1: records each request line, relays body and reply."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        self.seen: list[str] = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ProxyHandler(BaseHTTPRequestHandler):
    server: Proxy

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._relay()

    def do_POST(self) -> None:
        self._relay()

    def _relay(self) -> None:
        self.server.seen.append(f"{self.command} {self.path}")
        target = urlsplit(self.path)  # a proxy is sent the absolute URL
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        upstream = http.client.HTTPConnection(target.hostname or "", target.port or 80, timeout=10)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "proxy-connection")}
        upstream.request(self.command, target.path, body=body or None, headers=headers)
        reply = upstream.getresponse()
        data = reply.read()
        self.send_response(reply.status)
        for key, value in reply.getheaders():
            if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        upstream.close()


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    server = Proxy()
    yield server
    server.shutdown()
    server.server_close()


def test_requests_go_through_the_proxy_the_environment_names(
    fake_server: FakeServer, proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    fake_server.script(Reply(text="through the proxy"))
    client = make_client(fake_server.base_url)
    assert client.chat(USER).content == "through the proxy"
    assert client.list_models() == ["fake-model"]
    assert proxy.seen == [
        f"POST {fake_server.base_url}/chat/completions",
        f"GET {fake_server.base_url}/models",
    ]

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # bypassed: straight to the server
    fake_server.script(Reply(text="direct"))
    assert make_client(fake_server.base_url).chat(USER).content == "direct"
    assert len(proxy.seen) == 2


# ---------------------------------------------------------------- conformance with the openai SDK


REPLIES = [
    Reply(text="Plain text with unicode: été, 日本語, emoji 🎉 and \"quotes\".", chunk_chars=3),
    Reply(
        text="Let me look.",
        tool_calls=[
            {"name": "read_file", "arguments": {"path": "src/a b.py", "lines": [1, 2]}},
            {"name": "run", "arguments": '{"cmd": "pytest -q"}'},
        ],
        arg_chunk_chars=2,
    ),
    Reply(text="", tool_calls=[{"name": "lookup", "arguments": {"q": "x" * 300}}], arg_chunk_chars=7),
]


@pytest.mark.parametrize("reply", REPLIES, ids=["text", "two-calls", "long-arguments"])
def test_clio_reads_what_the_openai_sdk_reads(fake_server: FakeServer, reply: Reply) -> None:
    fake_server.script(reply, reply)
    ours = make_client(fake_server.base_url).chat(USER)
    sdk = openai.OpenAI(base_url=fake_server.base_url, api_key="test-key", max_retries=0, timeout=10)
    theirs = sdk.chat.completions.create(model="fake-model", messages=USER, stream=False)  # type: ignore[arg-type]
    message = theirs.choices[0].message
    assert ours.content == (message.content or "")
    assert ours.finish_reason == theirs.choices[0].finish_reason
    assert [
        (c["function"]["name"], json.loads(c["function"]["arguments"])) for c in ours.tool_calls
    ] == [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]  # type: ignore[union-attr]
    assert ours.usage is not None and theirs.usage is not None
    assert ours.usage.prompt_tokens == theirs.usage.prompt_tokens
    assert ours.usage.completion_tokens == theirs.usage.completion_tokens


# ---------------------------------------------------------------- HTTPS


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (the openssl command line)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def https_server(certificate: tuple[Path, Path]) -> Iterator[FakeServer]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    server = FakeServer(tls=context).start()
    yield server
    server.stop()


def test_https_with_the_users_ca_bundle_and_a_clear_line_without_it(
    https_server: FakeServer, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert https_server.base_url.startswith("https://127.0.0.1:")
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))  # the user's own CA, as with curl
    https_server.script(Reply(text="over TLS"))
    assert make_client(https_server.base_url).chat(USER).content == "over TLS"

    monkeypatch.delenv("SSL_CERT_FILE")  # certifi's bundle does not know a self-signed certificate
    retries: list[str] = []
    with pytest.raises(EndpointUnreachable, match="TLS certificate was not accepted.*SSL_CERT_FILE"):
        make_client(https_server.base_url).chat(USER, on_retry=lambda reason, wait: retries.append(reason))
    assert retries == []  # a refused certificate is not retried
    assert len(https_server.chat_requests) == 1


def test_a_proxy_clio_cannot_use_is_one_line_without_its_credentials(
    fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ALL_PROXY", "socks5://someone:hunter2secret@127.0.0.1:9")
    fake_server.script(Reply(text="never"))
    with pytest.raises(EndpointUnreachable) as info:
        make_client(fake_server.base_url).chat(USER)
    message = str(info.value)
    assert "socks5://127.0.0.1:9" in message and "http:// and https:// proxies only" in message
    assert "hunter2secret" not in message and "someone" not in message
    assert fake_server.chat_requests == []
