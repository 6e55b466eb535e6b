"""The bearer token of ``clio mcp --http``: made once, owner-only, checked on every HTTP request."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import anyio

from clio.mcp.http_auth import TOKEN_NAME, BearerGate, load_token


def test_the_token_is_made_once_owner_only(tmp_path: Path) -> None:
    token = load_token(tmp_path)
    assert len(token) >= 32 and load_token(tmp_path) == token
    path = tmp_path / TOKEN_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.chmod(0o644)
    assert load_token(tmp_path) == token and stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text("short\n")
    assert load_token(tmp_path) != token  # a damaged token is replaced


def _call(gate: BearerGate, scope: dict[str, Any]) -> tuple[int | None, bool]:
    sent: list[dict[str, Any]] = []
    reached: list[bool] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(True)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request"}

    async def send(msg: Any) -> None:
        sent.append(msg)

    gate.app = app
    anyio.run(gate, scope, receive, send)
    status = next((m["status"] for m in sent if m["type"] == "http.response.start"), None)
    return status, bool(reached)


def test_requests_without_the_token_get_401_and_never_reach_the_server() -> None:
    gate = BearerGate(lambda *a: None, "t" * 40)  # type: ignore[arg-type,return-value]
    for headers in ([], [(b"authorization", b"Bearer wrong")], [(b"authorization", b"Bearer " + b"t" * 39)]):
        assert _call(gate, {"type": "http", "headers": headers}) == (401, False)
    assert _call(gate, {"type": "http", "headers": [(b"authorization", b"Bearer " + b"t" * 40)]}) == (None, True)
    assert _call(gate, {"type": "lifespan"}) == (None, True)  # start-up events pass
