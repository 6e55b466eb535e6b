"""Command line: parse flags, build the App, hand over to the REPL or the one-shot runner."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from clio import __version__
from clio.config import ConfigError
from clio.llm.errors import LLMError
from clio.paths import Paths, ensure_dir, escaping_link, resolve_paths
from clio.safety.visible import escape_invisible
from clio.store.atomic import add_damaged_hook
from clio.store.session_lock import SessionBusy
from clio.store.sessions import SessionNotFound, SessionStore
from clio.ui.trust_ask import ProjectTrust


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="clio",
        description="A terminal coding agent with built-in memory, for any OpenAI-compatible endpoint.",
        epilog="clio mcp [--dir PATH] [--http PORT] ...: serve this project's memory to other agents "
        "as an MCP server (clio mcp --help).",
        allow_abbrev=False,  # --resum is a typo, not --resume
    )
    p.add_argument("--input", metavar="TEXT", help="run one turn with TEXT first ('-' reads stdin)")
    p.add_argument("--exit", action="store_true", help="exit after --input instead of staying in the REPL")
    p.add_argument("-p", dest="print_input", metavar="TEXT", help="same as --input TEXT --exit")
    p.add_argument(
        "--output",
        choices=("text", "json", "stream-json"),
        default="text",
        help="one-shot output: the answer as text (default), one JSON object at the end, or one JSON event per line",
    )
    p.add_argument("--new", action="store_true", help="start a new session (the default)")
    p.add_argument(
        "--resume",
        "-c",
        "--continue",
        nargs="?",
        const="",
        metavar="ID|NAME",
        help="resume a session (the most recent one if no argument; -c/--continue: the same)",
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
        "--sandbox",
        action="store_true",
        help="confine file and git tools to the project; run shell commands in an OS sandbox "
        "(writes only in the project, no network)",
    )
    p.add_argument(
        "--sandbox-network", action="store_true", help="with --sandbox: let shell commands use the network"
    )
    p.add_argument(
        "--plan", action="store_true", help="read-only plan mode: the model reads and proposes, changes nothing"
    )
    p.add_argument(
        "--allow-tools", metavar="NAMES", help="comma-separated tools that run without asking (e.g. shell,files)"
    )
    p.add_argument(
        "--deny-tools", metavar="NAMES", help="comma-separated tools never offered to the model (e.g. shell,mcp__docs__*)"
    )
    p.add_argument(
        "--trust",
        action="store_true",
        help="trust this project's .clio/config.yaml as it is now (its endpoint, approvals...), then go on",
    )
    p.add_argument("--version", action="version", version=f"clio {__version__}")
    return p


def unwritable(paths: Paths) -> str | None:
    """Why clio cannot keep its state in this project (None: it can), found before anything is
    asked or typed, so nothing the user writes is lost to a read-only folder. A ``.clio`` that is a
    symlink leaving the project is refused: clio's state (and its writes) would land elsewhere."""
    if why := escaping_link(paths.root):
        return f"{why} Remove the link, or run with --incognito."
    try:
        ensure_dir(paths.clio_dir)
        probe = paths.clio_dir / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        return (
            f"cannot write {paths.clio_dir} ({exc.strerror or exc}): clio keeps this project's sessions "
            "and memory there. Run with --incognito to use clio here without writing anything."
        )
    return None


def _sweep(paths: Paths, err: Console) -> None:
    """Journal the file tool's temp files from now on, and remove those dead runs left."""
    from clio.store.atomic import journal_writes, sweep_stray_temps

    journal = paths.clio_dir / "inflight"
    journal_writes(journal)
    swept = sweep_stray_temps(journal, paths.root)
    if swept:
        names = ", ".join(escape_invisible(str(p.relative_to(paths.root))) for p in swept[:5])
        err.print(f"clio: removed {len(swept)} temp file(s) an interrupted write left: {names}", markup=False)


PIPE_WIDTH = 100_000  # columns of stdout when it is no terminal: lines are never wrapped


def stdout_console(color: bool) -> Console:
    """stdout's console: a terminal's width; to a pipe or a file, lines as long as they are (a
    script reads `clio -p /context | cat` whole, never cut at 80 columns, whatever COLUMNS says)."""
    if sys.stdout.isatty():
        return Console(file=sys.stdout, no_color=not color, highlight=False, emoji=False)
    return Console(
        file=sys.stdout, no_color=not color, highlight=False, emoji=False, soft_wrap=True, width=PIPE_WIDTH
    )


def fail(err: Console, message: str, code: int = 1) -> int:
    err.print(f"clio: {message}", markup=False, highlight=False, soft_wrap=True)
    return code


def list_sessions(store: SessionStore, out: Console) -> None:
    import time

    from rich.table import Table  # ~15 ms: only when a table is shown

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


def _stop_on(signum: int, frame: object) -> None:
    """SIGTERM or SIGHUP (the terminal closed): leave the way Ctrl-D does, through every ``finally``
    (the session saved, MCP servers stopped), once; a second such signal is ignored meanwhile."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    from clio.safety.containment import make_undumpable

    make_undumpable()  # before any key is read: /proc/<clio>/environ and mem closed to other processes
    argv = sys.argv[1:] if argv is None else argv
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _stop_on)
    if argv[:1] == ["mcp"]:  # `clio mcp`: the memory as an MCP server, with its own flags
        from clio.mcp.server import main as mcp_main

        return mcp_main(argv[1:])
    if argv[:1] == ["encoder"]:  # `clio encoder [install|remove]`: the automatic recall's model
        from clio.app.encoder_install import main as encoder_main
        from clio.app.encoder_status import configured

        home = resolve_paths(None, None).home
        return encoder_main(argv[1:], home, configured(home))
    args = build_parser().parse_args(argv)
    color = not (args.no_color or os.environ.get("NO_COLOR"))
    if args.print_input is not None or (args.input is not None and args.exit):
        from clio.ui.prefixed import prefix_stderr

        prefix_stderr()  # a one-shot run: every line on stderr starts with "clio: " (scripts read it)
    # soft_wrap: a message is one line however long (scripts read stderr line by line)
    # emoji=False: text is printed as it is (a model's ":x:" stays so), and rich's emoji table (~5 ms) stays unloaded
    err = Console(file=sys.stderr, no_color=not color, highlight=False, soft_wrap=True, emoji=False)
    out = stdout_console(color)
    if args.debug:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(name)s: %(message)s")

    def damaged(path: Path, moved: Path) -> None:
        err.print(
            f"clio: {path} was damaged; moved it aside to {moved.name} and "
            + (
                "rebuilt it from the session's archive"
                if path.name == "session.json"
                else "started a fresh one"
            ),
            markup=False,
        )

    add_damaged_hook(damaged)
    if args.dir is not None:
        where = Path(args.dir).expanduser()
        if not where.is_dir():
            what = "not a directory" if where.exists() else "no such directory"
            return fail(err, f"--dir {args.dir}: {what}; give the project's folder.", 2)
    try:
        paths = resolve_paths(args.dir, args.config)
        if not (args.incognito or args.sessions):
            problem = unwritable(paths)
            if problem is not None:
                return fail(err, problem, 2)
            _sweep(paths, err)
            with contextlib.suppress(OSError):  # a missing $CLIO_HOME cannot be guarded: a command
                ensure_dir(paths.home)  # could make it, config and all (clio/safety/namespaces.py)
        flags: dict[str, Any] = {
            "model": args.model,
            "base_url": args.base_url,
            "context_window": args.context_window,
            "incognito": args.incognito,
            "no_ltm": args.no_ltm or args.incognito,
            "no_custom_instructions": args.no_custom_instructions,
            "sandbox": args.sandbox,
            "sandbox_network": args.sandbox_network,
            "yes": args.yes,
            "debug": args.debug,
            "plan": args.plan,
            "allow_tools": args.allow_tools,
            "deny_tools": args.deny_tools,
        }
        trust = ProjectTrust(paths, flags, err)
        settings, warnings = trust.load()
        for w in warnings:
            err.print(f"clio: {w}", markup=False)
        if args.print_input is not None:
            args.input, args.exit = args.print_input, True
        if args.exit and args.input is None:
            return fail(err, "--exit needs --input TEXT (or use -p TEXT): there is nothing to run before exiting.", 2)
        if args.sandbox_network and not settings.sandbox:
            return fail(
                err,
                "--sandbox-network lets sandboxed shell commands use the network: it needs --sandbox "
                "(or sandbox: true in your config); without the sandbox commands have the network anyway.",
                2,
            )
        one_shot = args.input is not None and args.exit
        if args.output != "text" and not one_shot:
            return fail(
                err, f"--output {args.output} is for one-shot runs: add -p TEXT (or --input TEXT --exit).", 2
            )
        # the REPL asks once, before the App is built; one-shot runs and scripts never wait for an answer
        can_ask = not (one_shot or args.sessions) and sys.stdin.isatty() and sys.stderr.isatty()
        settings = trust.settle(settings, trust_flag=args.trust, can_ask=can_ask)
        trust.instructions(settings, trust_flag=args.trust, can_ask=can_ask)
        settings.color = color
        if args.debug:  # every log line passes the same redaction as requests and files
            from clio.safety.logs import redact_logs
            from clio.safety.redact import Redactor

            redact_logs(Redactor(settings.redaction))
        if settings.sandbox and not args.sessions:
            from clio.safety.containment import availability
            from clio.safety.wrapper import isolation

            net = "; but the network is allowed (sandbox_network)" if settings.sandbox_network else ""
            ns = f"; {isolation()[1]}" if availability().available else ""
            err.print(f"clio: {availability().reason}{net}{ns}", markup=False, highlight=False)
        if args.sessions:
            from clio.safety.redact import Redactor

            store = SessionStore(
                None if args.incognito else paths.sessions_dir, redact=Redactor(settings.redaction).text
            )
            list_sessions(store, out)
            return 0
        text = read_input(args.input) if args.input is not None else None
        if one_shot:
            from clio.ui.oneshot import run_one_shot

            return run_one_shot(
                settings, paths, text or "", resume=args.resume, out=out, err=err, output=args.output
            )
        from clio.ui.repl import run_repl

        return run_repl(settings, paths, first_input=text, resume=args.resume, out=out, err=err)
    except ConfigError as exc:
        return fail(err, str(exc), 2)
    except LLMError as exc:  # unreachable, key refused, unknown model, errors after the retries
        return fail(err, str(exc), exc.exit_code)
    except SessionBusy as exc:
        return fail(err, str(exc))
    except SessionNotFound as exc:  # --resume NAME that names no session: bad usage
        return fail(err, f"{exc}", 2)
    except KeyboardInterrupt:
        return fail(err, "interrupted", 130)
    except OSError as exc:  # the last resort: one line, never a traceback
        named = f" {exc.filename}" if exc.filename else ""
        return fail(err, f"could not use{named}: {exc.strerror or exc}.")


if __name__ == "__main__":
    sys.exit(main())
