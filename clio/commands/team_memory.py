"""``/memory team``: the authors of a shared memory (docs/team-memory.md).

/memory team                  where the memory lives, the authors and their entries, who is ignored
/memory team ignore <author>  leave that author's entries out of this user's prompts and listings
/memory team unignore <author>
/memory team drop <author>    delete every entry that author wrote from the shared store (asks first)
/memory team import           bring this checkout's own entries (.clio/ltm.json) to the shared store

Ignoring is private (``$CLIO_HOME/team.json``); dropping and importing change the shared store for
everyone. Each subcommand is declared once, in :data:`SUBCOMMANDS` beside its handler; ``/memory``'s
usage line is built from it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.markup import escape

from clio.commands.registry import CommandContext, CommandError, split_sub
from clio.memory import ltm


def _shared(app: CommandContext) -> Any:
    from clio.team.store import SharedLtmStore

    store: Any = app.services.ltm
    if isinstance(store, SharedLtmStore):
        return store
    app.console.print(
        "This project's memory is not shared (no shared_memory in your config or CLIO_SHARED_MEMORY; "
        "see docs/team-memory.md)."
    )
    return None


def _ignore(app: CommandContext, store: Any, author: str, on: bool) -> None:
    from clio.team.open import Ignored

    changed = Ignored(app.paths.home / "team.json").set(author, on)
    state = "ignored" if on else "no longer ignored"
    app.console.print(f"{escape(author)} is {state}{'' if changed else ' (already)'} in your prompts and listings.")


def _drop(app: CommandContext, store: Any, author: str) -> None:
    if not app.confirm(f"Delete every entry {author} wrote from the shared memory, for the whole team?"):
        app.console.print("Nothing deleted.")
        return
    try:
        count = store.drop_author(author)
    except ltm.LtmError as exc:
        raise CommandError(str(exc)) from None
    app.console.print(f"Deleted {count} entr{'y' if count == 1 else 'ies'} by {escape(author)} from the shared memory.")


def _import(app: CommandContext, store: Any, _arg: str) -> None:
    own = store.own
    count = len(own.all()) if own is not None and own.enabled else 0
    if not count:
        app.console.print("This checkout has no own entries to bring to the shared memory (.clio/ltm.json).")
        return
    if not app.confirm(f"Bring this checkout's {count} own entr{'y' if count == 1 else 'ies'} to the shared memory, for the whole team?"):
        app.console.print("Nothing imported.")
        return
    try:
        added, same, foreign = store.import_own()
    except ltm.LtmError as exc:
        raise CommandError(str(exc)) from None
    line = f"Imported {added} entr{'y' if added == 1 else 'ies'} to the shared memory as {escape(store.link.author)}"
    line += f"; {same} already there" if same else ""
    line += f"; {foreign} foreign left out (/memory adopt them first)" if foreign else ""
    app.console.print(line + ". .clio/ltm.json is left as it is (unused while shared memory is on).")


def _status(app: CommandContext, store: Any, _arg: str) -> None:
    from clio.team.open import Ignored

    link = store.link
    status = "reachable" if link.online else f"unreachable ({link.db.down or 'no answer yet'}): using the local copy"
    app.console.print(f"Shared memory of {escape(link.project)} at {escape(link.db.where)}: {status}.")
    app.console.print(f"You are {escape(link.author)}; {len(link.queue)} change(s) waiting in {link.queue_label}.")
    skip = Ignored(app.paths.home / "team.json")()
    for who, count in store.authors():
        mark = " (ignored)" if who in skip else (" (you)" if who == link.author else "")
        app.console.print(f"  {escape(who)}{mark}: {count} entr{'y' if count == 1 else 'ies'}")


Handler = Callable[[CommandContext, Any, str], None]
# name -> (argument shown in the usage, needs that argument, handler)
SUBCOMMANDS: dict[str, tuple[str, bool, Handler]] = {
    "": ("", False, _status),
    "ignore": ("<author>", True, lambda app, store, who: _ignore(app, store, who, True)),
    "unignore": ("<author>", True, lambda app, store, who: _ignore(app, store, who, False)),
    "drop": ("<author>", True, _drop),
    "import": ("", False, _import),
}
USAGE_TAIL = "team [" + " | ".join(f"{n} {a}".strip() for n, (a, _, _) in SUBCOMMANDS.items() if n) + "]"
USAGE = "/memory " + USAGE_TAIL


def team(app: CommandContext, arg: str) -> None:
    sub, rest = split_sub(arg)
    spec = SUBCOMMANDS.get(sub)
    if spec is None or (spec[1] and not rest.strip()):
        raise CommandError(f"Usage: {USAGE}")
    store = _shared(app)
    if store is not None:
        spec[2](app, store, rest.strip())
