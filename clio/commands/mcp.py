"""/mcp: the configured MCP servers, their state and their tools."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from rich.markup import escape

from clio.commands.registry import command

if TYPE_CHECKING:
    from clio.commands.registry import CommandContext


@command("mcp", "list the MCP servers, their state and tools", "/mcp [--json]")
def mcp_cmd(app: CommandContext, arg: str) -> None:
    servers = app.mcp_status()
    if "--json" in arg.split():
        app.console.file.write(json.dumps(servers) + "\n")
        return
    if not servers:
        app.console.print("No MCP servers configured (mcp_servers: in your config.yaml; see docs/mcp.md).")
        return
    for s in servers:
        state = str(s["state"])
        style = {"ready": "green", "failed": "red"}.get(state, "yellow")
        took = f" in {s['start_ms']} ms" if s["start_ms"] is not None else ""
        lean = ", lean" if s["lean"] else ""
        app.console.print(
            f"[bold]{escape(str(s['name']))}[/bold] [{style}]{state}[/{style}]{took} "
            f"({s['transport']}{lean}: {escape(str(s['where']))})"
        )
        if s["error"]:
            app.console.print(f"  {escape(str(s['error']))}", markup=True)
        tools = list(s["tools"])  # type: ignore[call-overload]
        if tools:
            app.console.print("  tools: " + escape(", ".join(tools)))
        skipped = list(s["skipped"])  # type: ignore[call-overload]
        if skipped:
            app.console.print("  not allowed by tools: " + escape(", ".join(skipped)))
