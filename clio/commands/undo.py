"""``/undo [N]``: put back the files the last turn (or N turns) changed through the file tool."""

from __future__ import annotations

from rich.markup import escape

from clio.app.undo import nothing_undone, shown_path
from clio.commands.registry import CommandContext, CommandError, command


@command("undo", "put back the files the last turn changed (or the last N turns)", "/undo [N]")
def undo_cmd(app: CommandContext, arg: str) -> None:
    word = arg.strip()
    if word and not (word.isdigit() and int(word) > 0):
        raise CommandError("Usage: /undo [N] (N: how many turns back, 1 by default)")
    results = app.undo(int(word) if word else 1)
    if not results:
        app.console.print(nothing_undone(app.services.snapshots, int(word) if word else 1))
        return
    for r in results:
        app.console.print(f"  {escape(shown_path(r.path, app.paths.root))}: {escape(r.outcome)}")
    back = sum(1 for r in results if not r.outcome.startswith("skipped"))
    app.console.print(f"Undid {back} file change(s); the model is told with your next message.")
