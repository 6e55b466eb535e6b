"""``clio mcp`` over stdio speaks JSON-RPC itself (clio/mcp/stdio.py, no SDK): the protocol's edges,
through the INSTALLED ``clio mcp`` on raw pipes (what the SDK's client would never send), and the
SDK's own client for what it does send. tests/e2e/test_mcp_server.py covers the tools themselves."""

from __future__ import annotations

import json
import select
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from testkit.clio_run import CLIO, clio_env
from testkit.mcp_client import call, clio_mcp

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw\u202e pipe", "version": "1"}}


class Pipe:
    """``clio mcp`` with its stdin and stdout in the test's hands, one JSON-RPC line at a time."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc, self.next_id = proc, 0

    def send_line(self, raw: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float = 30) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "no reply from clio mcp"
        line = self.proc.stdout.readline()
        assert line.endswith(b"\n"), line
        msg: dict[str, Any] = json.loads(line)
        return msg

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send_line(json.dumps(msg).encode())
        got = self.reply()
        assert got["id"] == self.next_id and got["jsonrpc"] == "2.0", got
        return got

    def initialize(self) -> dict[str, Any]:
        result: dict[str, Any] = self.request("initialize", INIT)["result"]
        self.send_line(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        return result


@pytest.fixture
def pipe(project: Path, home: Path) -> Iterator[Pipe]:
    proc = subprocess.Popen(
        [str(CLIO), "mcp", "--dir", str(project)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clio_env(None, home), cwd=project,
    )  # fmt: skip
    yield Pipe(proc)
    assert proc.stdin is not None
    proc.stdin.close()  # the client leaves: the server ends by itself
    assert proc.wait(timeout=30) == 0
    if proc.stdout:
        proc.stdout.close()
    if proc.stderr:
        proc.stderr.close()


def test_a_request_before_initialize_is_refused_and_ping_always_answers(pipe: Pipe) -> None:
    assert pipe.request("ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}
    early = pipe.request("tools/list")
    assert early["error"]["code"] == -32602 and "initialize" in early["error"]["message"]
    pipe.initialize()
    assert len(pipe.request("tools/list")["result"]["tools"]) == 8


@pytest.mark.parametrize(
    ("asked", "agreed"),
    [("2024-11-05", "2024-11-05"), ("2025-06-18", "2025-06-18"), ("2025-11-25", "2025-11-25"), ("1999-01-01", "2025-11-25")],
)
def test_the_protocol_version_is_the_clients_when_served_else_the_newest(pipe: Pipe, asked: str, agreed: str) -> None:
    result = pipe.request("initialize", {**INIT, "protocolVersion": asked})["result"]
    assert result["protocolVersion"] == agreed
    assert result["serverInfo"]["name"] == "clio-memory" and "verify" in result["instructions"]
    assert set(result["capabilities"]) == {"tools", "prompts", "resources"}


def test_bad_lines_get_json_rpc_errors_and_the_server_reads_on(pipe: Pipe) -> None:
    pipe.initialize()
    pipe.send_line(b"this is not json")
    parse = pipe.reply()
    assert parse["id"] is None and parse["error"]["code"] == -32700 and parse["error"]["message"] == "Parse error"
    pipe.send_line(b"\xff\xfe not utf-8")
    assert pipe.reply()["error"]["code"] == -32700
    pipe.send_line(b'[{"jsonrpc": "2.0", "id": 9, "method": "ping"}]')  # a batch: not in MCP
    assert pipe.reply()["error"]["code"] == -32600
    pipe.send_line(b'{"jsonrpc": "2.0", "id": 10}')  # no method
    assert pipe.reply() == {"jsonrpc": "2.0", "id": 10, "error": {"code": -32600, "message": "Invalid Request"}}
    unknown = pipe.request("no/such/method")
    assert unknown["error"] == {"code": -32601, "message": "Method not found", "data": "no/such/method"}
    pipe.send_line(b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}')
    assert pipe.request("ping")["result"] == {}  # the notification got no reply; the session goes on


def test_tool_errors_are_results_marked_as_errors_in_one_line(pipe: Pipe) -> None:
    pipe.initialize()
    for params, said in (
        ({"name": "no_such_tool", "arguments": {}}, "Unknown tool: no_such_tool"),
        ({"name": "note_read", "arguments": {}}, "Error executing tool note_read: 'key' is required"),
        ({"name": "recall", "arguments": {"query": "x", "limit": "many"}}, "'limit' should be a whole number"),
        ({"name": "note_read", "arguments": {"key": "../etc/passwd"}}, "Error executing tool note_read: "),
        ({"name": "forget", "arguments": {"entry_id": "d-000000"}}, "no entry 'd-000000'"),
    ):
        result = pipe.request("tools/call", params)["result"]
        assert result["isError"] is True and len(result["content"]) == 1, result
        text = result["content"][0]["text"]
        assert said in text and "\n" not in text and "Traceback" not in text, text
    bad = pipe.request("tools/call", {"name": "note_read", "arguments": ["key"]})
    assert bad["error"]["code"] == -32602


def test_large_and_unicode_arguments_go_through_whole(pipe: Pipe, project: Path) -> None:
    pipe.initialize()
    value = "ünïcödé ✓ 日本語 \U0001f600 " + "x" * 300_000 + " end"
    wrote = pipe.request("tools/call", {"name": "note_write", "arguments": {"key": "big", "value": value}})
    assert wrote["result"] == {"content": [{"type": "text", "text": "created note 'big'"}], "isError": False}
    read = pipe.request("tools/call", {"name": "note_read", "arguments": {"key": "big"}})["result"]
    assert read["isError"] is False and read["content"][0]["text"].endswith("\n" + value)
    note = json.loads((project / ".clio" / "memory" / "big.json").read_text(encoding="utf-8"))
    assert note["value"] == value and note["provenance"]["by"] == "mcp"
    assert "\u202e" not in json.dumps(note, ensure_ascii=False)  # the client's name made printable


def test_prompt_and_resource_give_the_memory_block(pipe: Pipe) -> None:
    pipe.initialize()
    stored = pipe.request("tools/call", {"name": "remember", "arguments": {"type": "rule", "rule": "run ruff first"}})
    assert stored["result"]["isError"] is False
    assert [p["name"] for p in pipe.request("prompts/list")["result"]["prompts"]] == ["memory_block"]
    got = pipe.request("prompts/get", {"name": "memory_block", "arguments": {"task": "commit"}})["result"]
    assert "run ruff first" in got["messages"][0]["content"]["text"]
    templates = pipe.request("resources/templates/list")["result"]["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["clio://memory/{task}"]
    read = pipe.request("resources/read", {"uri": "clio://memory/before%20a%20commit"})["result"]
    assert "run ruff first" in read["contents"][0]["text"] and read["contents"][0]["mimeType"] == "text/markdown"
    assert pipe.request("resources/read", {"uri": "clio://other/x"})["error"]["code"] == -32602
    assert pipe.request("prompts/get", {"name": "nope", "arguments": {}})["error"]["code"] == -32602


def test_the_sdk_client_sees_a_tool_error_as_is_error(project: Path, home: Path) -> None:
    async def scenario() -> tuple[tuple[bool, str], tuple[bool, str], str]:
        async with clio_mcp(project, home) as s:
            missing = await call(s, "note_read", key="nothing-here")
            unknown = await call(s, "not_a_tool")
            prompt = await s.get_prompt("memory_block", {"task": "anything"})
            return missing, unknown, str(getattr(prompt.messages[0].content, "text", ""))

    missing, unknown, block = anyio.run(scenario)
    assert missing[0] is True and "no note 'nothing-here'" in missing[1]
    assert unknown == (True, "Unknown tool: not_a_tool")
    assert block == "(no long-term memory yet)"
