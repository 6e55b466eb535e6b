"""``clio mcp``: the project's memory as a Model Context Protocol server (stdio, or streamable
HTTP on 127.0.0.1 with ``--http PORT``).

Dispatched by :func:`clio.cli.main` when the first argument is ``mcp``. Over stdio the protocol is
answered by :mod:`clio.mcp.stdio` (no SDK: its import alone took longer than the whole start may);
``--http`` uses the SDK (:mod:`clio.mcp.http_server`). What is served is declared in
:mod:`clio.mcp.tools`, done by :mod:`clio.mcp.memory_ops`. Over stdio, stdout carries the protocol
and nothing else: every message for people goes to stderr.

Tools: ``remember``, ``recall``, ``list_entries``, ``forget`` (long-term memory; not offered
with ``--no-ltm``), ``note_read``, ``note_write``, ``note_list``, ``search_sessions``. Prompt
``memory_block`` and resource template ``clio://memory/{task}``: the long-term memory block
clio's system prompt would carry for a task.
"""

from __future__ import annotations

import argparse
import sys

from clio import __version__

LOOPBACK = "127.0.0.1"


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


def main(argv: list[str]) -> int:
    """``clio mcp [--dir PATH] [--incognito] [--no-ltm] [--http PORT]``; the exit status."""
    from clio.config import ConfigError, load_settings
    from clio.mcp.memory_ops import open_memory
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
    ops.warm_up()  # the index brought up to date and the encoder helper started, while the client connects
    try:
        if args.http is None:
            from clio.mcp.stdio import StdioServer, serve_stdio

            serve_stdio(StdioServer(ops, ltm=not args.no_ltm, name="clio-memory", version=__version__))
        else:
            from clio.mcp.http_server import serve_http

            serve_http(ops, ltm=not args.no_ltm, home=paths.home, host=LOOPBACK, port=args.http)
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        return _fail(str(exc), 1)
    return 0


def _fail(message: str, code: int) -> int:
    print(f"clio mcp: {message}", file=sys.stderr)
    return code
