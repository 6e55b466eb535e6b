"""Harness for the real-model tests and bench: a recording proxy in front of a real llama-server.

The proxy is an HTTP server on 127.0.0.1 put between clio and a real llama-server.

clio talks to the proxy exactly as it would to the server (``OPENAI_BASE_URL=proxy.base_url``); the
proxy forwards every request unchanged, streams the reply back chunk by chunk as it arrives (so time
to first token is not distorted), and records what went each way: the request body clio sent, the
HTTP status, the raw reply, and when each piece arrived. The tests read the recorded requests (what
clio really sent) and the server's own figures (``usage``, ``timings``) out of the SSE stream.

    proxy = RecordingProxy("http://127.0.0.1:PORT/v1").start()
    ...  # run clio with OPENAI_BASE_URL=proxy.base_url
    for ex in proxy.chat():                 # the chat-completion exchanges, in order
        ex.body["messages"], ex.status, ex.usage, ex.timings, ex.content
    proxy.stop()

``real_backend(ctx)`` starts both (llama-server on a free loopback port via
``testkit/realmodel_server.py``, then the proxy) and stops both afterwards; ``request_chars`` counts
a recorded request's characters the way clio's token estimator does.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from testkit.clio_run import archive_messages, run_clio, session_dirs
from testkit.realmodel_server import MODEL_ALIAS, start_llama_server

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection"}


@dataclass
class Exchange:
    """One request through the proxy and the reply it got."""

    method: str
    path: str
    body: dict[str, Any]  # the request's JSON body ({} for GET)
    status: int = 0
    reply: bytes = b""
    started: float = 0.0  # time.monotonic() when the request arrived
    ended: float = 0.0
    chunk_times: list[tuple[float, bytes]] = field(default_factory=list)  # (arrival, bytes) per read

    # -- the SSE stream, parsed --------------------------------------------------------------------
    def events(self) -> list[dict[str, Any]]:
        """The JSON objects of the stream's ``data:`` lines (``[DONE]`` left out)."""
        out: list[dict[str, Any]] = []
        for line in self.reply.decode("utf-8", errors="replace").splitlines():
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if not payload or payload == "[DONE]":
                continue
            try:
                obj = json.loads(payload)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
        return out

    def json_reply(self) -> dict[str, Any]:
        """A non-streamed reply (or an error body) as JSON; {} when it is not JSON."""
        try:
            obj = json.loads(self.reply.decode("utf-8", errors="replace"))
        except json.JSONDecodeError:
            return {}
        return obj if isinstance(obj, dict) else {}

    @property
    def streamed(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def content(self) -> str:
        """The assistant text the server sent (all content deltas joined)."""
        parts: list[str] = []
        for ev in self.events():
            for choice in ev.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content")
                if isinstance(piece, str):
                    parts.append(piece)
        return "".join(parts)

    @property
    def content_chunks(self) -> int:
        return sum(
            1
            for ev in self.events()
            for choice in ev.get("choices") or []
            if (choice.get("delta") or {}).get("content")
        )

    @property
    def native_tool_calls(self) -> int:
        return sum(
            len((choice.get("delta") or {}).get("tool_calls") or [])
            for ev in self.events()
            for choice in ev.get("choices") or []
        )

    @property
    def finish_reason(self) -> str | None:
        reason = None
        for ev in self.events():
            for choice in ev.get("choices") or []:
                if choice.get("finish_reason"):
                    reason = choice["finish_reason"]
        return reason

    def _figure(self, key: str) -> dict[str, Any] | None:
        """The server's ``key`` object for this request: the stream's last chunk that carries it,
        or a non-streamed reply's own (clio's judge-model request is not streamed); None if none."""
        if not self.streamed:
            got = self.json_reply().get(key)
            return got if isinstance(got, dict) else None
        found = None
        for ev in self.events():
            if isinstance(ev.get(key), dict):
                found = ev[key]
        return found

    @property
    def usage(self) -> dict[str, Any] | None:
        """The server's usage for this request (the stream's usage chunk), None if it sent none."""
        return self._figure("usage")

    @property
    def timings(self) -> dict[str, Any] | None:
        """llama-server's non-standard ``timings`` object (prompt_n, cache_n, predicted_per_second...)."""
        return self._figure("timings")

    @property
    def cached_tokens(self) -> int | None:
        """The prompt tokens the server found cached: ``usage.prompt_tokens_details.cached_tokens``,
        else ``timings.cache_n``; None if it told neither."""
        got = ((self.usage or {}).get("prompt_tokens_details") or {}).get("cached_tokens")
        if isinstance(got, int):
            return got
        n = (self.timings or {}).get("cache_n")
        return n if isinstance(n, int) else None

    @property
    def first_content_s(self) -> float | None:
        """Seconds from the request's arrival to the arrival of the first non-empty content delta."""
        buf = b""
        for at, data in self.chunk_times:
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if not line.startswith(b"data:"):
                    continue
                try:
                    ev = json.loads(line[5:].strip())
                except (json.JSONDecodeError, UnicodeDecodeError):
                    continue
                if isinstance(ev, dict) and any(
                    (c.get("delta") or {}).get("content") for c in ev.get("choices") or []
                ):
                    return at - self.started
        return None


class RecordingProxy:
    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"the proxy only forwards to loopback, not {upstream}")
        self.up_host = parts.hostname
        self.up_port = parts.port or 80
        self.prefix = parts.path.rstrip("/")  # "/v1"
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the proxy first"
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.prefix}"

    def start(self) -> RecordingProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # replies end when the connection closes: no re-chunking

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                proxy._forward(self, "GET")

            def do_POST(self) -> None:
                proxy._forward(self, "POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="realmodel-proxy", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def clear(self) -> None:
        with self._lock:
            self.exchanges.clear()

    def chat(self) -> list[Exchange]:
        """The chat-completion exchanges so far, in the order they arrived."""
        with self._lock:
            return [e for e in self.exchanges if e.path.endswith("/chat/completions")]

    # -- forwarding --------------------------------------------------------------------------------
    def _forward(self, h: BaseHTTPRequestHandler, method: str) -> None:
        started = time.monotonic()
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {}
        ex = Exchange(method, h.path, body if isinstance(body, dict) else {}, started=started)
        with self._lock:
            self.exchanges.append(ex)
        headers = {k: v for k, v in h.headers.items() if k.lower() not in _HOP_BY_HOP and k.lower() != "host"}
        if raw:
            headers["Content-Length"] = str(len(raw))
        conn = http.client.HTTPConnection(self.up_host, self.up_port, timeout=900)
        try:
            conn.request(method, h.path, body=raw or None, headers=headers)
            resp = conn.getresponse()
            ex.status = resp.status
            h.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in _HOP_BY_HOP:
                    h.send_header(k, v)
            h.send_header("Connection", "close")
            h.end_headers()
            pieces: list[bytes] = []
            while True:
                data = resp.read1(65536)
                if not data:
                    break
                ex.chunk_times.append((time.monotonic(), data))
                pieces.append(data)
                try:
                    h.wfile.write(data)
                    h.wfile.flush()
                except OSError:  # the client went away: keep recording what the server sends
                    pass
            ex.reply = b"".join(pieces)
        except OSError as exc:
            if not ex.status:
                ex.status = 502
                ex.reply = json.dumps({"error": {"message": f"proxy: upstream failed: {exc}"}}).encode()
                try:
                    h.send_response(502)
                    h.send_header("Content-Type", "application/json")
                    h.end_headers()
                    h.wfile.write(ex.reply)
                except OSError:
                    pass
        finally:
            ex.ended = time.monotonic()
            conn.close()


# ---------------------------------------------------------------- server + proxy


def server_threads() -> int:
    """Threads for llama-server: ``$CLIO_REALMODEL_THREADS``, else 1.

    On this 2-core machine, shared with other jobs, ``-t 2`` is fast only while nothing else runs
    (27 tokens/s generated, 82 tokens/s prompt processing) and collapses as soon as something does
    (0.7-2 tokens/s: its two threads wait for each other at every step; one clio turn took 235 s).
    ``-t 1`` stays at 8-16 tokens/s generated and 33-67 tokens/s prompt processing either way.
    """
    raw = os.environ.get("CLIO_REALMODEL_THREADS", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else 1


@dataclass
class Backend:
    upstream: str  # llama-server's base URL (".../v1")
    proxy: RecordingProxy
    ctx: int  # the server's -c
    threads: int
    model: str = MODEL_ALIAS


@contextmanager
def real_backend(ctx: int, threads: int | None = None) -> Iterator[Backend]:
    """A llama-server with ``-c ctx`` on a free loopback port and a recording proxy in front of it.

    Skips the calling test when scripts/real-model.sh has not been run (see realmodel_server).
    """
    n = threads or server_threads()
    upstream, stop = start_llama_server(ctx_size=ctx, threads=n)
    proxy = RecordingProxy(upstream)
    try:
        proxy.start()
        yield Backend(upstream, proxy, ctx, n)
    finally:
        proxy.stop()
        stop()


def request_chars(body: dict[str, Any]) -> int:
    """The characters of a chat request by clio's counting model (clio/context/tokens.py).

    Every message's content (text parts too), every tool call's name and arguments, and the tool
    schemas as compact JSON; no role names, no template. Computed here from the request as it went
    over the wire, independently of clio's code.
    """
    total = 0
    for m in body.get("messages") or []:
        content = m.get("content")
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(
                len(p["text"]) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            total += len(str(fn.get("name") or ""))
            args = fn.get("arguments")
            total += len(args) if isinstance(args, str) else len(json.dumps(args))
    tools = body.get("tools")
    if tools:
        total += len(json.dumps(tools, separators=(",", ":")))
    return total


# ---------------------------------------------------------------- a project clio runs in


class RealProject:
    """A project folder clio runs in against ``backend`` (through its proxy).

    clio's system prompt begins with the project root's path, and llama-server reuses only a cached
    *prefix*: a new path costs a full prefill of the ~1,800-token system prompt and tool schemas
    (15-60 s on this machine). So the tests reuse one path and ``reset()`` it between tests.
    """

    def __init__(self, root: Path, home: Path, backend: Backend) -> None:
        self.root = root
        self.home = home
        self.backend = backend

    @property
    def proxy(self) -> RecordingProxy:
        return self.backend.proxy

    def reset(self, **settings: Any) -> RealProject:
        """Empty the folder, ``git init`` it, write ``.clio/config.yaml``, forget recorded requests."""
        if self.root.exists():
            shutil.rmtree(self.root)
        (self.root / ".clio").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(self.root)], check=True, capture_output=True)
        config = {"model": self.backend.model, "context_window": self.backend.ctx, **settings}
        (self.root / ".clio" / "config.yaml").write_text(
            "".join(f"{k}: {json.dumps(v)}\n" for k, v in config.items()), encoding="utf-8"
        )
        if self.home.exists():
            shutil.rmtree(self.home)
        self.home.mkdir(parents=True)
        self.proxy.clear()
        return self

    def run(self, prompt: str, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """``clio ARGS -p PROMPT`` in the project, talking to the proxy (no API key: a local endpoint)."""
        return run_clio(
            [*args, "-p", prompt],
            server=None,
            project=self.root,
            home=self.home,
            env_extra={"OPENAI_BASE_URL": self.proxy.base_url, "OPENAI_API_KEY": None},
            timeout=timeout,
        )

    def sessions(self) -> list[Path]:
        return session_dirs(self.root)

    def archive(self, session: Path | None = None) -> list[dict[str, Any]]:
        dirs = self.sessions()
        assert dirs, f"no session was written under {self.root / '.clio' / 'sessions'}"
        return archive_messages(session or dirs[-1])

    def ratios(self) -> dict[str, Any]:
        path = self.root / ".clio" / "token_ratios.json"
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        assert isinstance(data, dict)
        return data


def notes_file(path: Path, index: int, size: int = 7000) -> None:
    """~7 KB of numbered lines (prose-like, distinct per file)."""
    words = ["river", "stone", "cloud", "maple", "orbit", "lantern", "copper", "meadow", "signal", "harbor"]
    lines: list[str] = []
    n = 0
    while sum(len(x) + 1 for x in lines) < size:
        n += 1
        picked = [words[(n * 7 + k * 3 + index) % len(words)] for k in range(9)]
        lines.append(f"{n:03d} " + " ".join(picked) + ".")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
