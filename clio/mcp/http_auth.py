"""``clio mcp --http``: a bearer token, required on every request.

The token is made on first use (``secrets.token_urlsafe(32)``) and kept in ``$CLIO_HOME/mcp_token``
with owner-only permissions; no shell command clio runs can read ``$CLIO_HOME``
(clio/safety/hide.py). Any other local process or user without the token gets 401: the server
lets its clients ``remember``, ``forget`` and search past sessions.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

__all__ = ["TOKEN_NAME", "BearerGate", "load_token", "register_lines"]

TOKEN_NAME = "mcp_token"
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def load_token(home: Path) -> str:
    """The token in ``home/mcp_token``, made (0600) when missing, empty or unreadable."""
    path = home / TOKEN_NAME
    with contextlib.suppress(OSError, UnicodeDecodeError):
        token = path.read_text(encoding="utf-8").strip()
        if len(token) >= 32:
            if path.stat().st_mode & 0o077:
                path.chmod(0o600)
            return token
    home.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    tmp = home / f".{TOKEN_NAME}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, token.encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return token


def register_lines(url: str, home: Path) -> list[str]:
    """How to register this server with Claude Code and Codex CLI (the token read from its file)."""
    token_file = home / TOKEN_NAME
    return [
        f"token: {token_file} (owner-only; every request needs 'Authorization: Bearer <token>')",
        f"Claude Code: claude mcp add --transport http clio {url} --header \"Authorization: Bearer $(cat {token_file})\"",
        f"Codex CLI: export CLIO_MCP_TOKEN=$(cat {token_file}); in ~/.codex/config.toml: "
        f'[mcp_servers.clio] url = "{url}" bearer_token_env_var = "CLIO_MCP_TOKEN"',
    ]


class BearerGate:
    """ASGI middleware: HTTP requests without ``Authorization: Bearer <token>`` get 401."""

    def __init__(self, app: App, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http":
            given = b""
            for name, value in scope.get("headers") or []:
                if name.lower() == b"authorization":
                    given = value
                    break
            if not hmac.compare_digest(given, self.expected):
                body = b'{"error": "unauthorized: this clio mcp server needs its bearer token"}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="clio"'),
                    (b"content-length", str(len(body)).encode()),
                ]})  # fmt: skip
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
