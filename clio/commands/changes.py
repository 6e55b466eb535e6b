"""``/diff``: every change clio made to files in this session, as one unified diff (app/session_diff.py)."""

from __future__ import annotations

from rich.text import Text

from clio.app.session_diff import session_diff
from clio.commands.registry import CommandContext, command

STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))


def styled(diff: str) -> Text:
    out = Text()
    for line in diff.splitlines():
        style = next((s for prefix, s in STYLES if line.startswith(prefix)), "")
        out.append(line + "\n", style=style)
    return out


@command("diff", "every change clio made to files in this session, as one diff", "/diff")
def diff_cmd(app: CommandContext, arg: str) -> None:
    snapshots = app.services.snapshots
    result = session_diff(snapshots, app.paths.root) if snapshots is not None else None
    if result is None or not result.files:
        app.console.print("No file was changed by clio in this session (or all its changes were undone).")
        return
    for diff in result.diffs:
        app.console.print(styled(diff), end="", soft_wrap=True, highlight=False)
    for note in result.notes:
        app.console.print(Text(note, style="dim"), soft_wrap=True)
    app.console.print(
        Text(f"{len(result.diffs)} of {result.files} file(s) clio changed differ from before its changes.", style="dim")
    )
