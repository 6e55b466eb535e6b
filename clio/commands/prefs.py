"""``/prefs``: the user's preferences (they follow the user across projects).

/prefs [show]   /prefs add <score> <text>   /prefs remove <id>   /prefs top [n]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.table import Table

import time
from typing import Any

from rich.markup import escape

from clio.commands.registry import CommandContext, CommandError, command, split_sub
from clio.memory.prefs import DAY, Preference, PrefError
from clio.memory.prefs_store import PrefStore

USAGE = "/prefs [show] | add <score 0-10> <text> | remove <id> | top [n]"
SUBCOMMANDS = ("show", "add", "remove", "top")


def _store(app: CommandContext) -> PrefStore:
    store: Any = app.services.prefs
    if not isinstance(store, PrefStore):
        raise CommandError("Preferences are not available in this session.")
    return store


def _table(store: PrefStore, prefs: list[Preference], title: str) -> Table:
    from rich.table import Table  # ~15 ms: only when a table is shown

    now = store.clock()
    table = Table(title=title, title_justify="left")
    table.add_column("id", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("weight", justify="right", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("scenarios")
    table.add_column("preference", overflow="fold")
    table.add_column("seen", no_wrap=True)
    for p in prefs:
        age = max(0.0, (now - p.last_seen) / DAY)
        seen = "today" if age < 1 else f"{age:.0f}d ago"
        table.add_row(
            p.id,
            f"{p.score:.1f}",
            f"{store.weight(p, now):.2f}",
            p.type,
            escape(", ".join(p.scenarios) or "all"),
            escape(p.text),
            seen,
        )
    return table


def _show(app: CommandContext, store: PrefStore, rest: str) -> None:
    prefs = store.all()
    if not prefs:
        app.console.print("No preferences yet. Add one with /prefs add <score 0-10> <text>.")
        return
    now = store.clock()
    prefs.sort(key=lambda p: (p.type != "taboo", -store.weight(p, now)))
    where = f" ({store.path})" if store.path else " (incognito: kept in memory only)"
    app.console.print(_table(store, prefs, f"{len(prefs)} preference(s){where}"))


def _add(app: CommandContext, store: PrefStore, rest: str) -> None:
    score, _, text = rest.partition(" ")
    if not score or not text.strip():
        raise CommandError(f"Usage: {USAGE}")
    added = store.add(text, score)
    p = added.pref
    if added.merged:
        app.console.print(
            f"Updated {p.id}: score {added.previous_score:.1f} -> {p.score:.1f} ({p.type}): {escape(p.text)}"
        )
    else:
        app.console.print(f"Added {p.id} ({p.type}, score {p.score:.1f}): {escape(p.text)}")


def _remove(app: CommandContext, store: PrefStore, rest: str) -> None:
    if not rest:
        raise CommandError("Usage: /prefs remove <id> (see /prefs for the ids)")
    p = store.remove(rest.split()[0])
    app.console.print(f"Removed {p.id}: {escape(p.text)}")


def _top(app: CommandContext, store: PrefStore, rest: str) -> None:
    try:
        n = int(rest) if rest else 10
    except ValueError:
        raise CommandError("Usage: /prefs top [n]") from None
    if n < 1:
        raise CommandError("n must be at least 1")
    prefs = store.top(n)
    if not prefs:
        app.console.print("No preferences yet.")
        return
    stamp = time.strftime("%Y-%m-%d", time.localtime(store.clock()))
    app.console.print(_table(store, prefs, f"top {len(prefs)} by weight on {stamp}"))


HANDLERS = {"show": _show, "add": _add, "remove": _remove, "top": _top}


@command("prefs", "show and edit your preferences", USAGE, subcommands=SUBCOMMANDS)
def prefs_cmd(app: CommandContext, arg: str) -> None:
    sub, rest = split_sub(arg)
    handler = HANDLERS.get(sub or "show")
    if handler is None:
        raise CommandError(f"Unknown /prefs subcommand '{sub}'. Usage: {USAGE}")
    try:
        handler(app, _store(app), rest)
    except PrefError as exc:
        raise CommandError(str(exc)) from None
