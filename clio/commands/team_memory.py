"""``/memory team``: the authors of a shared memory (docs/team-memory.md).

/memory team                  where the memory lives, the authors and their entries, who is ignored
/memory team ignore <author>  leave that author's entries out of this user's prompts and listings
/memory team unignore <author>
/memory team drop <author>    delete every entry that author wrote from the shared store (asks first)

Ignoring is private (``$CLIO_HOME/team.json``); dropping changes the shared store for everyone.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from clio.commands.registry import CommandContext, CommandError, split_sub
from clio.memory import ltm

USAGE = "/memory team [ignore <author> | unignore <author> | drop <author>]"


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


def team(app: CommandContext, arg: str) -> None:
    sub, rest = split_sub(arg)
    author = rest.strip()
    if sub not in ("", "ignore", "unignore", "drop") or (sub and not author):
        raise CommandError(f"Usage: {USAGE}")
    store = _shared(app)
    if store is None:
        return
    from clio.team.open import Ignored

    ignored = Ignored(app.paths.home / "team.json")
    if sub in ("ignore", "unignore"):
        changed = ignored.set(author, sub == "ignore")
        state = "ignored" if sub == "ignore" else "no longer ignored"
        app.console.print(f"{escape(author)} is {state}{'' if changed else ' (already)'} in your prompts and listings.")
        return
    if sub == "drop":
        if not app.confirm(f"Delete every entry {author} wrote from the shared memory, for the whole team?"):
            app.console.print("Nothing deleted.")
            return
        try:
            count = store.drop_author(author)
        except ltm.LtmError as exc:
            raise CommandError(str(exc)) from None
        app.console.print(f"Deleted {count} entr{'y' if count == 1 else 'ies'} by {escape(author)} from the shared memory.")
        return
    link = store.link
    status = "reachable" if link.online else f"unreachable ({link.db.down or 'no answer yet'}): using the local copy"
    app.console.print(f"Shared memory of {escape(link.project)} at {escape(link.db.where)}: {status}.")
    app.console.print(f"You are {escape(link.author)}; {len(link.queue)} change(s) waiting in {link.queue_label}.")
    skip = ignored()
    for who, count in store.authors():
        mark = " (ignored)" if who in skip else (" (you)" if who == link.author else "")
        app.console.print(f"  {escape(who)}{mark}: {count} entr{'y' if count == 1 else 'ies'}")
