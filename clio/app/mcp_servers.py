"""The MCP servers of one App: read from ``mcp_servers:``, started, their tools in the session's
registry, their failures told in one line each, stopped on exit (:mod:`clio.mcp.client`).

Nothing here imports the ``mcp`` SDK; with no server configured it costs nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clio.safety.visible import escape_invisible
from clio.tools.context import ToolContext, ToolError, declined, redacted_args
from clio.tools.registry import Registry
from clio.tools.spec import ToolSpec

if TYPE_CHECKING:
    from clio.mcp.client import McpClients
    from clio.mcp.remote import RemoteTool


QUIET_WAIT = 0.5  # seconds the servers may take to start before a line says clio waits for them


class McpSession:
    def __init__(self, setting: dict[str, Any], root: Path, builtin: Registry, hidden: Sequence[str] = ()) -> None:
        self.clients: McpClients | None = None
        self.registry = builtin  # a copy with the servers' tools when any is configured
        self.names: set[str] = set()  # the MCP tools added to the registry
        self._problems: list[str] = []
        self._started = self._ready = False
        if setting:
            from clio.mcp.config import parse_servers

            parsed = parse_servers(setting)
            self._problems = parsed.problems
            if parsed.servers:
                from clio.mcp.client import McpClients

                self.clients = McpClients(parsed.servers, root, hidden)
                self.registry = builtin.copy()

    def start(self) -> None:
        """Start the configured servers in the background (once); returns at once."""
        if self.clients is not None and not self._started:
            self._started = True
            self.clients.start()

    def ready(self, notice: Callable[[str], None], tools_changed: Callable[[], None]) -> None:
        """Wait for the servers to start (each within its timeout), offer their tools, and say in
        one line each which failed. Ctrl-C while waiting leaves out those not up yet."""
        self.start()
        if self.clients is not None and not self._ready:

            try:
                waiting = self.clients.starting(within=QUIET_WAIT)
                if waiting:  # say what the pause is about, and how to skip it
                    names = ", ".join(f"'{n}'" for n in waiting)
                    it = "it" if len(waiting) == 1 else "them"
                    notice(f"Waiting for MCP server{'s' if len(waiting) > 1 else ''} {names} to start (Ctrl-C leaves {it} out)…")
                self.clients.wait_started()
            except KeyboardInterrupt:
                self.clients.give_up("its start was interrupted (Ctrl-C)")
            self._ready = True
            for t in mcp_tools(self.clients):
                self.registry.add(t)
                self.names.add(t.name)
            tools_changed()
        self.report(notice)

    def report(self, notice: Callable[[str], None]) -> None:
        """One line per problem not told yet (a wrong entry, a server that failed)."""
        problems, self._problems = self._problems, []
        if self.clients is not None:
            problems += self.clients.take_problems()
        for line in problems:
            notice(line)

    def status(self) -> list[dict[str, object]]:
        """Each configured server: name, transport, where, state, error, tools (for /mcp)."""
        if self.clients is None:
            return []
        return [
            {
                "name": st.name,
                "transport": st.spec.transport,
                "where": st.spec.where(),
                "state": st.state,
                "error": st.error,
                "tools": [t.exposed for t in st.tools],
                "skipped": list(st.skipped),
                "start_ms": None if st.start_ms is None else round(st.start_ms),
                "lean": st.spec.lean,
            }
            for st in self.clients.servers.values()
        ]

    def close(self) -> None:
        if self.clients is not None:
            self.clients.close()


class McpTool(ToolSpec):
    """A server's tool in clio's registry: offered while its server is ready (and in the lean
    profile only when the server is configured ``lean: true``). It declares no operations: clio
    cannot tell what it reads or changes, so plan mode refuses it and its results are outside
    content."""

    def __init__(self, remote: RemoteTool, clients: McpClients, lean: bool) -> None:
        super().__init__(remote.exposed, remote.description, {}, run=self._run)
        self.remote = remote
        self.clients = clients
        self.in_lean = lean

    @property
    def parameters(self) -> dict[str, Any]:
        return self.remote.schema

    def schema(self, profile: str = "full") -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def offered(self, profile: str, limit: int | None = None) -> bool:
        ready = self.clients.servers[self.remote.server].state == "ready"
        return ready and (profile != "lean" or self.in_lean)

    def _run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        from clio.mcp.client import CallFailed

        clean = redacted_args(ctx, args)  # nothing secret leaves for another program
        shown = json.dumps(clean, ensure_ascii=False, default=str)
        shown = escape_invisible(shown if len(shown) <= 160 else shown[:159] + "…")
        if not ctx.approve("mcp", f"{self.name} {shown}"):
            raise declined(ctx, f"calling the MCP tool {self.name}")
        try:
            text, is_error = self.clients.call(self.remote.server, self.remote.name, clean)
        except CallFailed as exc:
            raise ToolError(str(exc)) from None
        if is_error:
            raise ToolError(f"{self.name}: {text}")
        return text


def mcp_tools(clients: McpClients) -> list[ToolSpec]:
    """The tools of every ready server, for the session's registry."""
    out: list[ToolSpec] = []
    for st in clients.servers.values():
        out.extend(McpTool(t, clients, st.spec.lean) for t in st.tools)
    return out
