"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat completions API, for tests and benchmarks.

Scripted per test (`script(Reply(...), Fail(...))` or a responder function), it records every request,
streams SSE exactly like OpenAI (tool-call arguments split across chunks, usage in a last chunk), counts
tokens at a chosen chars-per-token ratio, and can reject anything over a context limit in the wording of
OpenAI, llama.cpp, vLLM or Ollama.  Standalone: `python testkit/fakeserver.py --port 8399`.
"""

from __future__ import annotations

import argparse
import json
import signal
import ssl
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

try:
    from testkit.fakeserver_sse import (
        Fail,
        Reply,
        common_prefix,
        completion_body,
        count_completion_tokens,
        count_prompt_tokens,
        demo_responder,
        item_from_dict,
        load_script,
        make_usage,
        messages_key,
        stream_chunks,
        validate_request,
    )
except ImportError:  # run as a script: tests/ itself is on sys.path
    from fakeserver_sse import (  # type: ignore[no-redef]
        Fail,
        Reply,
        common_prefix,
        completion_body,
        count_completion_tokens,
        count_prompt_tokens,
        demo_responder,
        item_from_dict,
        load_script,
        make_usage,
        messages_key,
        stream_chunks,
        validate_request,
    )

__all__ = ["Fail", "FakeServer", "Recorded", "Reply", "demo_responder", "item_from_dict", "load_script"]

Responder = Callable[[dict[str, Any]], "Reply | Fail"]


@dataclass
class Recorded:
    """One request the server received (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    raw: bytes


class FakeServer:
    """The fake endpoint. Options are plain attributes, read per request, so a test may change them."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        chars_per_token: float = 4.0,
        context_limit: int | None = None,
        context_dialect: str = "openai",
        model: str = "fake-model",
        accept_stream_options: bool = True,
        api_key: str | None = None,
        validate: bool = True,
        model_info: dict[str, Any] | None = None,
        models: list[str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.responder = responder
        self.chars_per_token = chars_per_token
        self.context_limit = context_limit
        self.context_dialect = context_dialect
        self.model = model
        self.accept_stream_options = accept_stream_options
        self.api_key = api_key
        self.validate = validate  # reject orphaned tool results / unanswered tool calls like OpenAI does
        # extra fields of the model in /v1/models, e.g. {"meta": {"n_ctx": 2048}} (llama-server) or
        # {"max_model_len": 8192} (vLLM)
        self.model_info = dict(model_info or {})
        # the models /v1/models lists (model_info joins each); None: just ``model``, [] lists none
        self.models = None if models is None else list(models)
        # the embeddings API (POST /v1/embeddings): texts -> vectors, for the model ``embed_model``;
        # None: the endpoint has none (404, as a chat-only server answers)
        self.embedder: Callable[[list[str]], list[list[float]]] | None = None
        self.embed_model = "fake-embed"
        self.requests: list[Recorded] = []
        self.dropped: list[int] = []  # indexes into requests of streams the client hung up on
        self._host, self._port = host, port
        self._tls = tls  # a server-side context: the endpoint speaks HTTPS
        self._queue: deque[Reply | Fail] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._previous_key = ""  # serialized messages of the last answered chat request
        self._counter = 0
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    # ------------------------------------------------------------ public API

    @property
    def embedding_requests(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and r.path.rstrip("/") == "/v1/embeddings"]

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            recorded = list(self.requests)
        return [
            r.body
            for r in recorded
            if r.method == "POST" and r.path.rstrip("/") == "/v1/chat/completions" and r.body is not None
        ]

    @property
    def turn_requests(self) -> list[dict[str, Any]]:
        """The chat requests runs sent for their turns: clio's read-backs of finished sessions
        (clio.app.background, a detached process of its own after the run) left out."""
        return [b for b in self.chat_requests if not _is_read_back(b)]

    def script(self, *items: Reply | Fail) -> None:
        """Queue replies/failures; each chat request takes the next one."""
        with self._lock:
            self._queue.extend(items)

    @property
    def pending(self) -> int:
        """Scripted items not consumed yet."""
        with self._lock:
            return len(self._queue)

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        return count_prompt_tokens(body, self.chars_per_token)

    def start(self) -> FakeServer:
        handler = type("Handler", (_Handler,), {"fake": self})
        httpd = _Server((self._host, self._port), handler)
        if self._tls is not None:
            httpd.socket = self._tls.wrap_socket(httpd.socket, server_side=True)
        self._httpd = httpd
        self._stop.clear()
        port = httpd.server_address[1]
        self.base_url = f"{'https' if self._tls else 'http'}://{self._host}:{port}/v1"
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.05,), name=f"fakeserver:{port}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------ request handling (server threads)

    def _record(self, rec: Recorded) -> int:
        with self._lock:
            self.requests.append(rec)
            return len(self.requests) - 1

    def _next_item(self, body: dict[str, Any]) -> Reply | Fail:
        with self._lock:
            # clio's read-back of a finished session runs in the background, whenever it does: it
            # never takes an item scripted for a turn (the responder, if any, answers it)
            if self._queue and not _is_read_back(body):
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(body)
        return Reply(text='{"entries": [], "pairs": []}') if _is_read_back(body) else Reply(text="ok")

    def _gate(self, body: dict[str, Any] | None) -> Fail | None:
        """Checks made before a scripted item is consumed: body, stream_options, shape, length."""
        if body is None:
            return Fail.bad_request("We could not parse the JSON body of your request.")
        if "stream_options" in body and not self.accept_stream_options:
            return Fail.bad_request("Unrecognized request argument supplied: stream_options")
        if self.validate:
            problem = validate_request(body)
            if problem:
                return Fail.bad_request(problem, "messages")
        if self.context_limit is not None:
            prompt = self.prompt_tokens(body)
            completion = int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
            if prompt + completion > self.context_limit:
                return Fail.context_length(self.context_dialect, self.context_limit, prompt, completion)
        return None

    def _plan(self, body: dict[str, Any]) -> tuple[Reply | Fail, dict[str, Any], dict[str, Any]]:
        """Decide the answer to a chat request: (item, usage, ids/metadata for the payload)."""
        item = self._next_item(body)
        key = messages_key(body)
        with self._lock:
            self._counter += 1
            n = self._counter
            previous = self._previous_key
            if isinstance(item, Reply):  # only an answered request fills the prefix cache
                self._previous_key = key
        meta = {
            "cid": f"chatcmpl-fake{n:06d}",
            "created": int(time.time()),
            "model": str(body.get("model") or self.model),
            "call_prefix": f"call_{n}_",
        }
        usage: dict[str, Any] = {}
        if isinstance(item, Reply):
            prompt = self.prompt_tokens(body)
            cached = prompt * common_prefix(previous, key) // len(key) if key else 0
            computed = make_usage(prompt, count_completion_tokens(item, self.chars_per_token), cached)
            usage = item.usage if item.usage is not None else computed
        return item, usage, meta


READ_BACK_MARK = "A coding session in this project has ended."  # clio/prompts/consolidate.md


def _is_read_back(body: dict[str, Any]) -> bool:
    users = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    return bool(users) and str(users[-1].get("content") or "").startswith(READ_BACK_MARK)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # keep-alive and delayed streams must not hold up stop()
    verbose = False

    def server_activate(self) -> None:
        super().server_activate()
        # A connection reset between the select and the accept leaves accept() blocking with
        # nothing to take, and shutdown() then waits for ever (seen once in a CI dry run, in
        # tests/unit/test_fakeserver.py's teardown). Bounded, accept gives up and the loop goes on
        # (socketserver drops the OSError); accepted sockets are blocking as before.
        self.socket.settimeout(1.0)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # a client dropping a keep-alive connection is normal
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeServer
    protocol_version = "HTTP/1.1"
    timeout = 60  # an idle keep-alive connection's thread goes away after this

    def log_message(self, format: str, *args: Any) -> None:
        if getattr(self.server, "verbose", False):  # standalone --verbose
            super().log_message(format, *args)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        body: dict[str, Any] | None = None
        if raw:
            try:
                parsed = json.loads(raw)
                body = parsed if isinstance(parsed, dict) else None
            except ValueError:
                body = None
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        index = self.fake._record(Recorded(method, self.path, headers, body, raw))
        fake = self.fake
        if method == "GET" and path == "/health":
            return self._json(200, {"status": "ok"})
        if fake.api_key is not None and headers.get("authorization") != f"Bearer {fake.api_key}":
            return self._fail(Fail.unauthorized())
        served = [fake.model] if fake.models is None else fake.models
        if method == "GET" and path == "/v1/models":
            return self._json(
                200, {"object": "list", "data": [{**_model_obj(name), **fake.model_info} for name in served]}
            )
        if method == "GET" and path.startswith("/v1/models/"):
            name = path[len("/v1/models/") :]
            if name in served:
                return self._json(200, _model_obj(name))
            return self._fail(Fail.not_found_model(name))
        if method == "POST" and path == "/v1/chat/completions":
            return self._chat(body, index)
        if method == "POST" and path == "/v1/embeddings" and fake.embedder is not None:
            return self._embeddings(body)
        err = {"message": f"Unknown request URL: {method} {path}.", "type": "invalid_request_error"}
        return self._json(404, {"error": {**err, "param": None, "code": "unknown_url"}})

    def _embeddings(self, body: dict[str, Any] | None) -> None:
        fake = self.fake
        texts = (body or {}).get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return self._fail(Fail.bad_request("input must be a string or a list of strings"))
        if (body or {}).get("model") != fake.embed_model:
            return self._fail(Fail.not_found_model(str((body or {}).get("model"))))
        assert fake.embedder is not None
        vectors = fake.embedder(texts)
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        usage = {"prompt_tokens": sum(len(t) // 4 for t in texts), "total_tokens": sum(len(t) // 4 for t in texts)}
        return self._json(200, {"object": "list", "model": fake.embed_model, "data": data, "usage": usage})

    def _chat(self, body: dict[str, Any] | None, index: int) -> None:
        fake = self.fake
        failure = fake._gate(body)
        if failure is not None or body is None:
            return self._fail(failure or Fail.bad_request("missing body"))
        try:
            item, usage, meta = fake._plan(body)
        except Exception as exc:  # a broken responder: say so instead of hanging the client
            return self._fail(Fail(500, f"fake server responder failed: {exc!r}"))
        if isinstance(item, Fail):
            return self._fail(item)
        if not body.get("stream"):
            return self._json(200, completion_body(item, usage=usage, **meta))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = stream_chunks(item, usage=usage if include_usage else None, **meta)
        self._stream(item, chunks, index)

    def _stream(self, reply: Reply, chunks: list[dict[str, Any]], index: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        events = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks] + [b"data: [DONE]\n\n"]
        try:
            for n, event in enumerate(events):
                if reply.cut_after is not None and n >= reply.cut_after:
                    if reply.error_event is not None:  # an error reported inside the started stream
                        self._write_chunk(b"data: " + json.dumps(reply.error_event).encode() + b"\n\n")
                        self._write_chunk(b"data: [DONE]\n\n")
                        self._write_chunk(b"")
                        self.close_connection = False
                    return  # otherwise break off: no [DONE], no terminating chunk
                if n and reply.delay and self.fake._stop.wait(reply.delay):
                    return
                self._write_chunk(event)
            self._write_chunk(b"")
            self.close_connection = False
        except (BrokenPipeError, ConnectionResetError):
            with self.fake._lock:
                self.fake.dropped.append(index)

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", headers or {})

    def _fail(self, fail: Fail) -> None:
        if isinstance(fail.body, str):
            self._send(fail.status, fail.body.encode(), "text/plain; charset=utf-8", fail.headers)
        else:
            self._json(fail.status, fail.body, fail.headers)

    def _send(self, status: int, data: bytes, ctype: str, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def _model_obj(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 1700000000, "owned_by": "fakeserver"}


# ---------------------------------------------------------------- standalone use


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Fake OpenAI-compatible chat completions server")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8399, help="0 lets the OS choose")
    ap.add_argument("--chars-per-token", type=float, default=4.0)
    ap.add_argument("--context-limit", type=int, default=None)
    ap.add_argument("--context-dialect", default="openai", choices=["openai", "llamacpp", "vllm", "ollama"])
    ap.add_argument("--model", default="fake-model")
    ap.add_argument("--api-key", default=None)
    ap.add_argument("--no-stream-options", action="store_true", help="reject requests with stream_options")
    ap.add_argument("--script", help="JSON list of reply/fail objects, used in order before the demo replies")
    ap.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = ap.parse_args(argv)
    server = FakeServer(
        demo_responder,
        chars_per_token=args.chars_per_token,
        context_limit=args.context_limit,
        context_dialect=args.context_dialect,
        model=args.model,
        accept_stream_options=not args.no_stream_options,
        api_key=args.api_key,
        host=args.host,
        port=args.port,
    )
    if args.script:
        server.script(*load_script(args.script))
    server.start()
    assert server._httpd is not None
    server._httpd.verbose = args.verbose
    print(server.base_url, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
