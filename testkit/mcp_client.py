"""Drive the INSTALLED ``clio mcp`` with the MCP SDK's own client (``mcp.client.stdio``).

Used by tests/e2e/test_mcp_server.py and benches/bench_mcp_server.py: the server runs as an
agent would start it (a subprocess speaking JSON-RPC on its stdin/stdout), in the test's
project, with the test's CLIO_HOME.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from testkit.clio_run import CLIO, clio_env


@asynccontextmanager
async def clio_mcp(
    project: Path | None,
    home: Path,
    *flags: str,
    cwd: Path | None = None,
    errlog: TextIO = sys.stderr,
    env_extra: Mapping[str, str | None] | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized client session with ``clio mcp --dir PROJECT FLAGS...`` (its stderr to
    ``errlog``); ``project=None`` gives no --dir (then ``cwd`` decides). ``env_extra`` as for
    :func:`testkit.clio_run.clio_env` (None removes a variable)."""
    home.mkdir(parents=True, exist_ok=True)
    where = ["--dir", str(project)] if project is not None else []
    params = StdioServerParameters(
        command=str(CLIO),
        args=["mcp", *where, *flags],
        env=clio_env(None, home, env_extra),
        cwd=str(cwd or project or Path.cwd()),
    )
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text_of(result: Any) -> str:
    """The text of a tool result (its text blocks joined)."""
    return "\n".join(str(getattr(c, "text", "")) for c in result.content)


async def call(session: ClientSession, tool: str, **args: Any) -> tuple[bool, str]:
    """(is_error, text) of one tool call."""
    result = await session.call_tool(tool, args)
    return bool(result.is_error), text_of(result)


async def tool_names(session: ClientSession) -> Sequence[str]:
    return [t.name for t in (await session.list_tools()).tools]
