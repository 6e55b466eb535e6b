"""``clio --input TEXT --exit``: one turn (tool loop included), answer on stdout, progress on stderr."""

from __future__ import annotations

import sys

from rich.console import Console

from clio.app import App
from clio.commands.dispatch import run_slash
from clio.commands.registry import ExitRequested
from clio.config import Settings
from clio.paths import Paths
from clio.ui.render import OneShotUI


def _tty_ask(question: str) -> str | None:
    """Ask on the terminal when there is one (approvals in a one-shot run started by hand)."""
    try:
        with open("/dev/tty", "r+", encoding="utf-8") as tty:
            tty.write(question)
            tty.flush()
            return tty.readline().rstrip("\n")
    except OSError:
        return None


def run_one_shot(
    settings: Settings, paths: Paths, text: str, *, resume: str | None, out: Console, err: Console
) -> int:
    ui = OneShotUI(out, err)
    ask = _tty_ask if (sys.stdin.isatty() and sys.stderr.isatty() and not settings.yes) else None
    app = App.start(settings, paths, resume=resume, interactive=False, console=out, err=err, ui=ui, ask=ask)
    try:
        if text.lstrip().startswith("/"):
            try:
                return 0 if run_slash(app, text.strip()) else 1
            except ExitRequested:  # `clio -p /exit`: nothing left to do
                return 0
        if not text.strip():
            err.print("clio: the input is empty: pass a request with --input TEXT or -p TEXT", markup=False)
            return 2
        result = app.run_turn(text)
        if result.interrupted:
            return 130
        if result.hit_cap:
            return 3
        if result.stuck:
            return 5
        refused = app.tool_ctx.refused if app.tool_ctx is not None else []
        if refused:
            more = f" and {len(refused) - 1} more" if len(refused) > 1 else ""
            err.print(
                f"clio: refused for lack of approval: {refused[0]}{more}. Approve it in the REPL (clio), "
                "or rerun with --yes where that is enough.",
                markup=False,
            )
            return 4
        return 0
    finally:
        app.close()
