"""``/skills``, ``/good``, ``/bad``: behaviours learned from the user's feedback.

/skills [show]   /skills add <text>   /skills pin|unpin|ban|unban <id>   /skills history [n]
/good [note]     /bad [note]          (about the last turn)
"""

from __future__ import annotations

import time

from rich.markup import escape

from clio.commands.registry import CommandContext, CommandError, command, split_sub
from clio.memory import skills as S
from clio.memory.behaviours import Behaviours
from clio.memory.skills import SkillError

USAGE = "/skills [show] | add <text> | pin <id> | unpin <id> | ban <id> | unban <id> | history [n]"
SUBCOMMANDS = ("show", "add", "pin", "unpin", "ban", "unban", "history")
LATER = "(in the prompt from the next session on)"
NOW = "(in effect from the next request)"


def _behaviours(app: CommandContext) -> Behaviours:
    b = app.services.skills
    if b is None or not b.enabled:
        raise CommandError("Learned behaviours are off in this run (--no-ltm or --incognito).")
    return b


def _show(app: CommandContext, b: Behaviours, rest: str) -> None:
    from rich.table import Table  # ~15 ms: only when a table is shown

    stated = b.stated()
    table = Table(title=f"behaviours ({b.store.path})", title_justify="left")
    for col in ("id", "mean", "signals", "state"):
        table.add_column(col, no_wrap=True, justify="right" if col in ("mean", "signals") else "left")
    table.add_column("behaviour", overflow="fold")
    for sk in sorted(b.all(), key=lambda s: (s.id not in b.active, -s.mean)):
        against = S.contradiction(sk, stated)
        state = [
            "active" if sk.id in b.active else "",
            "pinned" if sk.pinned else "",
            "banned" if sk.banned else "",
            "off: your preference" if against else "",
        ]
        table.add_row(
            sk.id,
            f"{sk.mean:.2f}",
            str(sk.n),
            escape(", ".join(x for x in state if x) or "-"),
            escape(sk.text),
        )
    app.console.print(table)


def _add(app: CommandContext, b: Behaviours, rest: str) -> None:
    if not rest:
        raise CommandError("Usage: /skills add <text>")
    sk = b.store.add(rest)
    app.console.print(f"Added {sk.id}: {escape(sk.text)} {LATER}")


def _flag(name: str) -> object:
    def handler(app: CommandContext, b: Behaviours, rest: str) -> None:
        if not rest:
            raise CommandError(f"Usage: /skills {name} <id> (see /skills for the ids)")
        value = not name.startswith("un")
        key = name.removeprefix("un")
        sk = b.store.set_flags(rest.split()[0], **{key + "ned": value})
        app.redraw_behaviours()  # the user's explicit word: drawn again now, not only next session
        app.console.print(f"{name.capitalize()}ned {sk.id}: {escape(sk.text)} {NOW}")

    return handler


def _history(app: CommandContext, b: Behaviours, rest: str) -> None:
    try:
        n = int(rest) if rest else 20
    except ValueError:
        raise CommandError("Usage: /skills history [n]") from None
    sigs = b.store.signals()[-max(1, n) :]
    if not sigs:
        app.console.print("No feedback recorded yet.")
        return
    for sig in sigs:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(sig.at))
        note = f" ({sig.note})" if sig.note else ""
        app.console.print(
            escape(
                f"{when} {sig.kind} x{sig.weight:g} session {sig.session[:8]} turn {sig.turn}: "
                f"{', '.join(sig.skills) or 'no behaviour active'}{note}"
            )
        )


HANDLERS = {
    "show": _show,
    "add": _add,
    "pin": _flag("pin"),
    "unpin": _flag("unpin"),
    "ban": _flag("ban"),
    "unban": _flag("unban"),
    "history": _history,
}


@command("skills", "behaviours learned from your feedback", USAGE, subcommands=SUBCOMMANDS)
def skills_cmd(app: CommandContext, arg: str) -> None:
    sub, rest = split_sub(arg)
    handler = HANDLERS.get(sub or "show")
    if handler is None:
        raise CommandError(f"Unknown /skills subcommand '{sub}'. Usage: {USAGE}")
    try:
        handler(app, _behaviours(app), rest)  # type: ignore[operator]
    except SkillError as exc:
        raise CommandError(str(exc)) from None


def _judge(app: CommandContext, kind: str, note: str) -> None:
    try:
        sig = _behaviours(app).record_signal(kind, note=note)
    except SkillError as exc:
        raise CommandError(str(exc)) from None
    what = ", ".join(sig.skills) or "the turn showed none of its behaviours, nothing to learn"
    app.console.print(escape(f"Noted ({kind}) for turn {sig.turn}: {what}"))


@command("good", "the last turn went well (feedback for learned behaviours)", "/good [note]")
def good_cmd(app: CommandContext, arg: str) -> None:
    _judge(app, "good", arg)


@command("bad", "the last turn went badly (feedback for learned behaviours)", "/bad [note]")
def bad_cmd(app: CommandContext, arg: str) -> None:
    _judge(app, "bad", arg)
