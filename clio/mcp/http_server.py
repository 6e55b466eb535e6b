"""``clio mcp --http PORT``: the same tools, prompt and resource template served by the MCP SDK over
streamable HTTP on 127.0.0.1, every request checked for the bearer token (:mod:`clio.mcp.http_auth`).

The SDK (``mcp``, with pydantic) is imported here and in :mod:`clio.mcp.client` only; stdio is
served without it (:mod:`clio.mcp.stdio`). Names, descriptions and the operations come from
:mod:`clio.mcp.tools`; the SDK derives each schema from the signatures below, and
tests/unit/test_mcp_stdio.py checks that they are the table's.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from clio import __version__
from clio.mcp import tools
from clio.mcp.memory_ops import MAX_RESULTS, MemoryOps, Refused
from clio.mcp.stdio import printable_name
from clio.memory.ltm import DEFAULT_CONFIDENCE

if TYPE_CHECKING:
    from pathlib import Path



def client_name(ctx: Context[Any, Any] | None) -> str | None:
    """The name the client gave when it connected, made printable and short (never trusted)."""
    try:
        info = ctx.session.client_params.client_info  # type: ignore[union-attr]
    except AttributeError:
        return None
    return printable_name(str(info.name))


def _call(name: str, ops: MemoryOps, arguments: dict[str, Any], client: str | None = None) -> str:
    """Run one operation of the table; a refusal becomes the tool's error (one line, no traceback)."""
    tool = tools.offered(ltm=True)[name]
    try:
        return tool.run(ops, tool.check(arguments), client)
    except (Refused, tools.BadArguments) as exc:
        raise ToolError(str(exc)) from None


def _describe(name: str) -> str:
    return tools.offered(ltm=True)[name].description


def build_server(ops: MemoryOps, *, ltm: bool) -> MCPServer[Any]:
    """The SDK's server over ``ops``; with ``ltm`` False the long-term memory tools are left out."""
    server: MCPServer[Any] = MCPServer("clio-memory", version=__version__, instructions=tools.INSTRUCTIONS, log_level="WARNING")

    @server.tool(description=_describe("note_read"), structured_output=False)
    def note_read(key: str) -> str:
        return _call("note_read", ops, {"key": key})

    @server.tool(description=_describe("note_write"), structured_output=False)
    def note_write(key: str, value: str, ctx: Context[Any, Any]) -> str:
        return _call("note_write", ops, {"key": key, "value": value}, client_name(ctx))

    @server.tool(description=_describe("note_list"), structured_output=False)
    def note_list() -> str:
        return _call("note_list", ops, {})

    @server.tool(description=_describe("search_sessions"), structured_output=False)
    def search_sessions(query: str, max_results: int = 5, max_sessions: int = 10) -> str:
        return _call("search_sessions", ops, {"query": query, "max_results": max_results, "max_sessions": max_sessions})

    if ltm:
        _ltm_tools(server, ops)
    return server


def _ltm_tools(server: MCPServer[Any], ops: MemoryOps) -> None:
    @server.tool(description=tools.REMEMBER, structured_output=False)
    def remember(
        type: str,
        ctx: Context[Any, Any],
        confidence: float = DEFAULT_CONFIDENCE,
        fact: str = "",
        error: str = "",
        solution: str = "",
        pattern: str = "",
        what: str = "",
        impact: str = "",
        prevention: str = "",
        rule: str = "",
        name: str = "",
        steps: list[str] | None = None,
        examples: list[str] | None = None,
    ) -> str:
        args = {
            "type": type, "confidence": confidence, "fact": fact, "error": error, "solution": solution,
            "pattern": pattern, "what": what, "impact": impact, "prevention": prevention, "rule": rule,
            "name": name, "steps": steps, "examples": examples,
        }  # fmt: skip
        return _call("remember", ops, args, client_name(ctx))

    @server.tool(description=tools.RECALL, structured_output=False)
    def recall(query: str, limit: int = 10) -> str:
        return _call("recall", ops, {"query": query, "limit": limit})

    @server.tool(description=_describe("list_entries"), structured_output=False)
    def list_entries(type: str | None = None, limit: int = MAX_RESULTS) -> str:
        return _call("list_entries", ops, {"type": type, "limit": limit})

    @server.tool(description=_describe("forget"), structured_output=False)
    def forget(entry_id: str) -> str:
        return _call("forget", ops, {"entry_id": entry_id})

    @server.prompt(description=tools.PROMPT)
    def memory_block(task: str) -> str:
        return _block(ops, task)

    @server.resource(tools.RESOURCE_TEMPLATE, description=tools.RESOURCE, mime_type="text/markdown")
    def memory_resource(task: str) -> str:
        return _block(ops, task)


def _block(ops: MemoryOps, task: str) -> str:
    try:
        return ops.memory_block(task)
    except Refused as exc:
        raise ToolError(str(exc)) from None


def serve_http(ops: MemoryOps, *, ltm: bool, home: Path, host: str, port: int) -> None:
    """Streamable HTTP on ``host`` (clio mcp gives 127.0.0.1), every request checked for the bearer token."""
    import uvicorn

    from clio.mcp.http_auth import BearerGate, load_token, register_lines

    server = build_server(ops, ltm=ltm)
    token = load_token(home)
    url = f"http://{host}:{port}/mcp"
    print(f"clio mcp: serving {url}", file=sys.stderr, flush=True)
    for line in register_lines(url, home):
        print(f"clio mcp: {line}", file=sys.stderr, flush=True)
    app = BearerGate(server.streamable_http_app(host=host), token)
    uvicorn.run(app, host=host, port=port, log_level="warning")
