"""``clio mcp`` over stdio without the MCP SDK: JSON-RPC 2.0, one message a line.

The SDK's import alone (its pydantic protocol models) takes 1.3-2.7 s on a busy machine, longer than
the whole start should; this module answers the few methods ``clio mcp`` serves from the table in
:mod:`clio.mcp.tools`, with the standard library's ``json``. What it answers, as the SDK did:

- ``initialize``: the client's protocol version when it is one of :data:`VERSIONS`, else the newest
  of them (the client decides whether it can go on); ``ping`` at any time; other requests before
  ``initialize`` are refused (-32602, the SDK's code); notifications are read and dropped.
- ``tools/list``, ``tools/call`` (a refusal, a bad argument or an unknown tool is a result with
  ``isError``, one line), ``prompts/list``/``get`` and ``resources/list``/``templates/list``/``read``
  (the memory block, with long-term memory on).
- Anything else: -32601. A line that is not JSON: -32700, a JSON value that is no request: -32600
  (both with a null id), and the server reads on.

Requests are answered one at a time, in order. stdout carries the protocol and nothing else: while
serving, ``sys.stdout`` is stderr, so a stray print cannot break the stream.
"""

from __future__ import annotations

import json
import sys
from typing import IO, TYPE_CHECKING, Any

from clio.mcp import tools
from clio.mcp.memory_ops import Refused
from clio.safety.visible import escape_invisible

if TYPE_CHECKING:
    from clio.mcp.memory_ops import MemoryOps

VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")  # the handshake's, oldest first
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
MAX_CLIENT_NAME = 40


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    def body(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


def printable_name(name: Any) -> str | None:
    """The name a client gave, made printable and short (never trusted)."""
    if not isinstance(name, str):
        return None
    return escape_invisible(" ".join(name.split()))[:MAX_CLIENT_NAME] or None


class StdioServer:
    """One client's session: :meth:`handle` answers a line, :meth:`serve` reads lines until EOF."""

    def __init__(self, ops: MemoryOps, *, ltm: bool, name: str, version: str) -> None:
        self.ops, self.ltm = ops, ltm
        self.info = {"name": name, "version": version}
        self.tools = tools.offered(ltm=ltm)
        self.initialized = False
        self.client: str | None = None

    # -- the wire -----------------------------------------------------------------------------
    def serve(self, inp: IO[bytes], out: IO[bytes]) -> None:
        """Answer every line of ``inp`` on ``out`` until the client closes it (or stops reading)."""
        for line in inp:
            reply = self.handle(line)
            if reply is None:
                continue
            try:
                out.write(json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
                out.flush()
            except BrokenPipeError:
                return

    def handle(self, line: bytes | str) -> dict[str, Any] | None:
        """The reply to one line (None for a notification, a response, or a blank line)."""
        if not line.strip():
            return None
        try:
            msg = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            return _error(None, RpcError(PARSE_ERROR, "Parse error", str(exc)))
        if not isinstance(msg, dict):
            return _error(None, RpcError(INVALID_REQUEST, "Invalid Request: one JSON-RPC object a line"))
        msg_id = msg.get("id")
        if isinstance(msg_id, bool) or not isinstance(msg_id, (str, int, float, type(None))):
            return _error(None, RpcError(INVALID_REQUEST, "Invalid Request: bad id"))
        method = msg.get("method")
        if method is None and ("result" in msg or "error" in msg):
            return None  # a response: this server sends no requests, so there is nothing to match
        if msg.get("jsonrpc") != "2.0" or not isinstance(method, str):
            return _error(msg_id, RpcError(INVALID_REQUEST, "Invalid Request"))
        params = msg.get("params")
        if "id" not in msg:
            self._notified(method)
            return None
        try:
            if params is not None and not isinstance(params, dict):
                raise RpcError(INVALID_PARAMS, "Invalid params: an object is expected")
            result = self._request(method, params or {})
        except RpcError as exc:
            return _error(msg_id, exc)
        except Exception as exc:  # a bug of ours must not end the session: say it, keep serving
            print(f"clio mcp: {method} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            return _error(msg_id, RpcError(INTERNAL_ERROR, f"Internal error: {type(exc).__name__}"))
        return {"jsonrpc": "2.0", "id": msg_id, "result": result}

    # -- the methods --------------------------------------------------------------------------
    def _notified(self, method: str) -> None:
        if method == "notifications/initialized":
            self.initialized = True  # (requests are already served once initialize was answered)

    def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            return self._initialize(params)
        if method == "ping":
            return {}
        handler = _METHODS.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, "Method not found", method)
        if not self.initialized:
            raise RpcError(INVALID_PARAMS, "Invalid request parameters: initialize first", "")
        result: dict[str, Any] = handler(self, params)
        return result

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        if not isinstance(requested, str) or not isinstance(params.get("clientInfo", {}), dict):
            raise RpcError(INVALID_PARAMS, "Invalid params: protocolVersion (a string) is required")
        self.client = printable_name(params.get("clientInfo", {}).get("name"))
        self.initialized = True  # the SDK serves requests once initialize is answered, too
        return {
            "protocolVersion": requested if requested in VERSIONS else VERSIONS[-1],
            "capabilities": {
                "prompts": {"listChanged": False},
                "resources": {"listChanged": False, "subscribe": False},
                "tools": {"listChanged": False},
            },
            "serverInfo": self.info,
            "instructions": tools.INSTRUCTIONS,
        }

    def _tools_list(self, _params: dict[str, Any]) -> dict[str, Any]:
        return {"tools": [t.listing() for t in self.tools.values()]}

    def _tools_call(self, params: dict[str, Any]) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str):
            raise RpcError(INVALID_PARAMS, "Invalid params: 'name' (a string) is required")
        if arguments is not None and not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, "Invalid params: 'arguments' must be an object")
        tool = self.tools.get(name)
        if tool is None:
            return _tool_result(f"Unknown tool: {name}", error=True)
        try:
            text = tool.run(self.ops, tool.check(arguments or {}), self.client)
        except (Refused, tools.BadArguments) as exc:
            return _tool_result(f"Error executing tool {name}: {exc}", error=True)
        except Exception as exc:  # as the SDK: a failing tool is the tool's error, not the session's
            print(f"clio mcp: {name} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            return _tool_result(f"Error executing tool {name}: {type(exc).__name__}: {exc}", error=True)
        return _tool_result(text, error=False)

    def _prompts_list(self, _params: dict[str, Any]) -> dict[str, Any]:
        if not self.ltm:
            return {"prompts": []}
        task = {"name": "task", "required": True}
        return {"prompts": [{"name": "memory_block", "description": tools.PROMPT, "arguments": [task]}]}

    def _prompts_get(self, params: dict[str, Any]) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments") or {}
        if not self.ltm or name != "memory_block":
            raise RpcError(INVALID_PARAMS, f"Unknown prompt: {name}")
        task = arguments.get("task") if isinstance(arguments, dict) else None
        if not isinstance(task, str):
            raise RpcError(INVALID_PARAMS, "Missing required arguments: {'task'}")
        text = self._block(task)
        return {"description": tools.PROMPT, "messages": [{"role": "user", "content": {"type": "text", "text": text}}]}

    def _resources_list(self, _params: dict[str, Any]) -> dict[str, Any]:
        return {"resources": []}

    def _templates_list(self, _params: dict[str, Any]) -> dict[str, Any]:
        if not self.ltm:
            return {"resourceTemplates": []}
        template = {"name": "memory_resource", "uriTemplate": tools.RESOURCE_TEMPLATE}
        template.update(description=tools.RESOURCE, mimeType="text/markdown")
        return {"resourceTemplates": [template]}

    def _resources_read(self, params: dict[str, Any]) -> dict[str, Any]:
        uri = params.get("uri")
        prefix = tools.RESOURCE_TEMPLATE.split("{", 1)[0]
        if not isinstance(uri, str) or not self.ltm or not uri.startswith(prefix) or "/" in uri[len(prefix) :]:
            raise RpcError(INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri})
        from urllib.parse import unquote

        text = self._block(unquote(uri[len(prefix) :]))
        return {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}

    def _block(self, task: str) -> str:
        try:
            return self.ops.memory_block(task)
        except Refused as exc:
            raise RpcError(INTERNAL_ERROR, str(exc)) from None


_METHODS = {
    "tools/list": StdioServer._tools_list,
    "tools/call": StdioServer._tools_call,
    "prompts/list": StdioServer._prompts_list,
    "prompts/get": StdioServer._prompts_get,
    "resources/list": StdioServer._resources_list,
    "resources/templates/list": StdioServer._templates_list,
    "resources/read": StdioServer._resources_read,
}


def _tool_result(text: str, *, error: bool) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def _error(msg_id: Any, exc: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": exc.body()}


def serve_stdio(server: StdioServer) -> None:
    """Serve on this process's stdin/stdout; prints meant for people go to stderr meanwhile."""
    out = sys.stdout.buffer
    sys.stdout = sys.stderr
    try:
        server.serve(sys.stdin.buffer, out)
    finally:
        sys.stdout = sys.__stdout__
