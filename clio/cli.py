"""Command line: parse flags, build the App, hand over to the REPL or the one-shot runner."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from clio import __version__
from clio.config import ConfigError, load_settings
from clio.llm.errors import LLMError
from clio.paths import resolve_paths
from clio.store.atomic import add_damaged_hook
from clio.store.sessions import SessionBusy, SessionNotFound, SessionStore


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="clio",
        description="A terminal coding agent with built-in memory, for any OpenAI-compatible endpoint.",
    )
    p.add_argument("--input", metavar="TEXT", help="run one turn with TEXT first ('-' reads stdin)")
    p.add_argument("--exit", action="store_true", help="exit after --input instead of staying in the REPL")
    p.add_argument("-p", dest="print_input", metavar="TEXT", help="same as --input TEXT --exit")
    p.add_argument("--new", action="store_true", help="start a new session (the default)")
    p.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="ID|NAME",
        help="resume a session (the most recent one if no argument)",
    )
    p.add_argument("--sessions", action="store_true", help="list this project's sessions and exit")
    p.add_argument("--model", help="model name (env CLIO_MODEL)")
    p.add_argument(
        "--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (env OPENAI_BASE_URL)"
    )
    p.add_argument("--config", metavar="DIR", help="user config dir (default $CLIO_HOME or ~/.clio)")
    p.add_argument(
        "--dir", metavar="PATH", help="project root (default: the git root above the working directory)"
    )
    p.add_argument("--context-window", type=int, metavar="N", help="the model's context window in tokens")
    p.add_argument("--no-color", action="store_true", help="plain output (also NO_COLOR)")
    p.add_argument(
        "--yes", "-y", action="store_true", help="approve tool actions without asking (for scripts)"
    )
    p.add_argument("--debug", action="store_true", help="log requests and internals to stderr")
    p.add_argument("--no-ltm", action="store_true", help="do not inject long-term memory or preferences")
    p.add_argument(
        "--no-custom-instructions", action="store_true", help="ignore .clio/instructions.md and AGENTS.md"
    )
    p.add_argument(
        "--incognito", action="store_true", help="write nothing to disk; no memory, no instructions"
    )
    p.add_argument(
        "--sandbox", action="store_true", help="confine file and git tools to the project; ask before shell"
    )
    p.add_argument("--version", action="version", version=f"clio {__version__}")
    return p


def fail(err: Console, message: str, code: int = 1) -> int:
    err.print(f"clio: {message}", markup=False, highlight=False, soft_wrap=True)
    return code


def list_sessions(store: SessionStore, out: Console) -> None:
    import time

    infos = store.list()
    if not infos:
        out.print("No sessions yet in this project.")
        return
    table = Table("id", "name", "messages", "updated", box=None, header_style="bold")
    for i in infos:
        table.add_row(
            i.id,
            i.name or "-",
            str(i.message_count),
            time.strftime("%Y-%m-%d %H:%M", time.localtime(i.updated)),
        )
    out.print(table)


def read_input(value: str) -> str:
    return sys.stdin.read() if value == "-" else value


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    color = not (args.no_color or os.environ.get("NO_COLOR"))
    # soft_wrap: a message is one line however long (scripts read stderr line by line)
    err = Console(file=sys.stderr, no_color=not color, highlight=False, soft_wrap=True)
    out = Console(file=sys.stdout, no_color=not color, highlight=False)
    if args.debug:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(name)s: %(message)s")

    def damaged(path: Path, moved: Path) -> None:
        err.print(
            f"clio: {path} was damaged; moved it aside to {moved.name} and started a fresh one", markup=False
        )

    add_damaged_hook(damaged)
    try:
        paths = resolve_paths(args.dir, args.config)
        flags: dict[str, Any] = {
            "model": args.model,
            "base_url": args.base_url,
            "context_window": args.context_window,
            "incognito": args.incognito,
            "no_ltm": args.no_ltm or args.incognito,
            "no_custom_instructions": args.no_custom_instructions,
            "sandbox": args.sandbox,
            "yes": args.yes,
            "debug": args.debug,
        }
        settings, warnings = load_settings(paths.home, paths.clio_dir, flags)
        settings.color = color
        for w in warnings:
            err.print(f"clio: {w}", markup=False)
        if args.sessions:
            list_sessions(SessionStore(None if args.incognito else paths.sessions_dir), out)
            return 0
        if args.print_input is not None:
            args.input, args.exit = args.print_input, True
        text = read_input(args.input) if args.input is not None else None
        one_shot = text is not None and args.exit
        if one_shot:
            from clio.ui.oneshot import run_one_shot

            return run_one_shot(settings, paths, text or "", resume=args.resume, out=out, err=err)
        from clio.ui.repl import run_repl

        return run_repl(settings, paths, first_input=text, resume=args.resume, out=out, err=err)
    except ConfigError as exc:
        return fail(err, str(exc), 2)
    except (LLMError, SessionBusy) as exc:
        return fail(err, str(exc))
    except SessionNotFound as exc:
        return fail(err, f"{exc}")
    except KeyboardInterrupt:
        return fail(err, "interrupted", 130)


if __name__ == "__main__":
    sys.exit(main())
