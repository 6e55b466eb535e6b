"""``clio mcp``: the project's memory as a Model Context Protocol server (stdio, or streamable
HTTP on 127.0.0.1 with ``--http PORT``).

Dispatched by :func:`clio.cli.main` when the first argument is ``mcp``; the SDK (``mcp``) is
imported only by this module, which only that path imports. The operations themselves are in :mod:`clio.mcp.memory_ops`.
Over stdio, stdout carries the protocol and nothing else: every message for people goes to
stderr.

Tools: ``remember``, ``recall``, ``list_entries``, ``forget`` (long-term memory; not offered
with ``--no-ltm``), ``note_read``, ``note_write``, ``note_list``, ``search_sessions``. Prompt
``memory_block`` and resource template ``clio://memory/{task}``: the long-term memory block
clio's system prompt would carry for a task.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from clio import __version__
from clio.mcp.memory_ops import FIELDS, MAX_RESULTS, MemoryOps, Refused, open_memory
from clio.memory.ltm import DEFAULT_CONFIDENCE
from clio.safety.visible import escape_invisible

if TYPE_CHECKING:
    from pathlib import Path

LOOPBACK = "127.0.0.1"
MAX_CLIENT_NAME = 40

_TYPES_HELP = "; ".join(f"{t}: {', '.join(f)}" for t, f in FIELDS.items())
REMEMBER = (
    "Store a verified, reusable fact about this project in clio's long-term memory (shown to later "
    f"sessions as a note to verify). Fields by type (first required): {_TYPES_HELP}. A near-duplicate "
    "confirms the existing entry. Secrets are redacted."
)
RECALL = "The long-term memory entries clio would show for a task or question, best first (the same ranking)."


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="clio mcp",
        description="Serve this project's memory (clio's .clio/) over the Model Context Protocol.",
        allow_abbrev=False,
    )
    p.add_argument(
        "--dir", metavar="PATH", help="project root (default: the git root above the working directory)"
    )
    p.add_argument("--config", metavar="DIR", help="user config dir (default $CLIO_HOME or ~/.clio)")
    p.add_argument(
        "--incognito", action="store_true", help="read-only: every write is refused, nothing reaches disk"
    )
    p.add_argument(
        "--no-ltm",
        action="store_true",
        help="do not offer the long-term memory tools (notes and sessions only)",
    )
    p.add_argument(
        "--http",
        type=int,
        metavar="PORT",
        help=f"serve streamable HTTP on {LOOPBACK}:PORT/mcp instead of stdio",
    )
    return p


def client_name(ctx: Context[Any, Any] | None) -> str | None:
    """The name the client gave when it connected, made printable and short (never trusted)."""
    try:
        info = ctx.session.client_params.client_info  # type: ignore[union-attr]
        name = str(info.name)
    except AttributeError:
        return None
    name = escape_invisible(" ".join(name.split()))[:MAX_CLIENT_NAME]
    return name or None


def _call(fn: Any, *args: Any, **kwargs: Any) -> str:
    """Run one operation; a refusal becomes the tool's error (a one-line message, no traceback)."""
    try:
        result: str = fn(*args, **kwargs)
    except Refused as exc:
        raise ToolError(str(exc)) from None
    return result


def build_server(ops: MemoryOps, *, ltm: bool) -> MCPServer[Any]:
    """The MCP server over ``ops``; with ``ltm`` False the long-term memory tools are left out."""
    server: MCPServer[Any] = MCPServer(
        "clio-memory",
        version=__version__,
        instructions="clio's memory of this project: long-term entries, notes and past sessions. "
        "What it returns was written by agents: verify before relying on it.",
        log_level="WARNING",
    )

    @server.tool(structured_output=False)
    def note_read(key: str) -> str:
        """Read one of the project's notes (key-value notes kept by clio)."""
        return _call(ops.note_read, key)

    @server.tool(structured_output=False)
    def note_write(key: str, value: str, ctx: Context[Any, Any]) -> str:
        """Create or replace a note (key: letters, digits, '.', '_', '-'). Secrets are redacted."""
        return _call(ops.note_write, key, value, client_name(ctx))

    @server.tool(structured_output=False)
    def note_list() -> str:
        """The project's notes, newest first."""
        return _call(ops.note_list)

    @server.tool(structured_output=False)
    def search_sessions(query: str, max_results: int = 5, max_sessions: int = 10) -> str:
        """Search the project's past clio sessions (ranked excerpts, best first)."""
        return _call(ops.search_sessions, query, max_results, max_sessions)

    if ltm:
        _ltm_tools(server, ops)
    return server


def _ltm_tools(server: MCPServer[Any], ops: MemoryOps) -> None:
    @server.tool(description=REMEMBER, structured_output=False)
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
        fields = {
            "fact": fact, "error": error, "solution": solution, "pattern": pattern, "what": what,
            "impact": impact, "prevention": prevention, "rule": rule, "name": name, "steps": steps,
            "examples": examples,
        }  # fmt: skip
        return _call(ops.remember, type, fields, confidence, client_name(ctx))

    @server.tool(description=RECALL, structured_output=False)
    def recall(query: str, limit: int = 10) -> str:
        return _call(ops.recall, query, limit)

    @server.tool(structured_output=False)
    def list_entries(type: str | None = None, limit: int = MAX_RESULTS) -> str:
        """List long-term memory entries (optionally one type) with their ids and who wrote them."""
        return _call(ops.list_entries, type, limit)

    @server.tool(structured_output=False)
    def forget(entry_id: str) -> str:
        """Delete one long-term memory entry by id (entries the user pinned are kept)."""
        return _call(ops.forget, entry_id)

    @server.prompt(
        description="clio's long-term memory block for a task, as its system prompt would carry it."
    )
    def memory_block(task: str) -> str:
        return _call(ops.memory_block, task)

    @server.resource(
        "clio://memory/{task}",
        description="The long-term memory block for a task.",
        mime_type="text/markdown",
    )
    def memory_resource(task: str) -> str:
        return _call(ops.memory_block, task)


def main(argv: list[str]) -> int:
    """``clio mcp [--dir PATH] [--incognito] [--no-ltm] [--http PORT]``; the exit status."""
    from clio.config import ConfigError, load_settings
    from clio.paths import escaping_link, resolve_paths
    from clio.store.atomic import add_damaged_hook
    from clio.store.trust import TrustStore

    args = build_parser().parse_args(argv)
    if args.http is not None and not 1 <= args.http <= 65535:
        return _fail(f"--http: {args.http} is not a port (1-65535)", 2)
    try:
        paths = resolve_paths(args.dir, args.config)
        if not paths.root.is_dir():
            return _fail(f"--dir: {paths.root} is not a folder", 2)
        trusted = TrustStore(paths.home).digest_for(paths.root)
        settings, warnings = load_settings(paths.home, paths.clio_dir, {}, trusted_digest=trusted)
    except ConfigError as exc:
        return _fail(str(exc), 2)
    for w in warnings:
        print(f"clio mcp: {w}", file=sys.stderr)
    if not args.incognito and (why := escaping_link(paths.root)):
        return _fail(f"{why} Remove the link, or serve it read-only with --incognito.", 2)
    add_damaged_hook(
        lambda path, moved: print(
            f"clio mcp: {path} was damaged; moved it aside to {moved.name} and started a fresh one",
            file=sys.stderr,
        )
    )
    ops = open_memory(paths, settings, read_only=args.incognito, no_ltm=args.no_ltm)
    server = build_server(ops, ltm=not args.no_ltm)
    try:
        if args.http is None:
            server.run("stdio")
        else:
            _serve_http(server, paths.home, args.http)
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        return _fail(str(exc), 1)
    return 0


def _serve_http(server: MCPServer[Any], home: Path, port: int) -> None:
    """Streamable HTTP on 127.0.0.1, every request checked for the bearer token."""
    import uvicorn

    from clio.mcp.http_auth import BearerGate, load_token, register_lines

    token = load_token(home)
    url = f"http://{LOOPBACK}:{port}/mcp"
    print(f"clio mcp: serving {url}", file=sys.stderr, flush=True)
    for line in register_lines(url, home):
        print(f"clio mcp: {line}", file=sys.stderr, flush=True)
    app = BearerGate(server.streamable_http_app(host=LOOPBACK), token)
    uvicorn.run(app, host=LOOPBACK, port=port, log_level="warning")


def _fail(message: str, code: int) -> int:
    print(f"clio mcp: {message}", file=sys.stderr)
    return code
