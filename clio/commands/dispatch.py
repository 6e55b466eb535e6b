"""Run a slash command line against the app, reporting failures in one line."""

from __future__ import annotations

from typing import TYPE_CHECKING

import clio.commands.builtin  # noqa: F401  (registers the commands)
from clio.commands.registry import CommandError, ExitRequested, run_command

if TYPE_CHECKING:
    from clio.commands.registry import CommandContext


def run_slash(app: CommandContext, line: str) -> bool:
    """True when the command ran; False (after printing why) when it failed."""
    try:
        run_command(app, line)
    except ExitRequested:
        raise
    except CommandError as exc:
        app.err.print(f"{exc}", markup=False, highlight=False)
        return False
    return True
