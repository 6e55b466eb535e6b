"""/session: show, list, switch, name, delete, export, trim."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.markup import escape

from clio.commands.registry import CommandError, command, split_sub
from clio.memory import provenance
from clio.store.session_lock import SessionBusy
from clio.store.sessions import SessionNotFound
from clio.wording import plural

if TYPE_CHECKING:
    from clio.commands.registry import CommandContext
    from clio.store.session_info import Digest

SUBS = ("show", "list", "switch", "name", "delete", "export", "trim", "digests")
SHOWN_DIGESTS = 3  # /session show: the newest digests of the session (session.json keeps up to 50)


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


@command("session", "manage sessions", "/session show|list|switch|name|delete|export|trim|digests", subcommands=SUBS)
def session_cmd(app: CommandContext, arg: str) -> None:
    sub, rest = split_sub(arg)
    handler = HANDLERS.get(sub or "show")
    if handler is None:
        raise CommandError(f"Unknown /session subcommand '{sub}'; use one of: {', '.join(SUBS)}.")
    handler(app, rest)


def show(app: CommandContext, rest: str) -> None:
    from rich.table import Table  # ~15 ms: only when a table is shown

    app.settle_model(strict=False)  # a one-shot run with no model chosen: the endpoint's one
    s = app.session
    assert s is not None
    u = s.info.usage
    table = Table(box=None, show_header=False)
    table.add_row("id", s.id)
    table.add_row("name", escape(s.info.name or "-"))  # names and digests are text, not markup
    table.add_row("model", escape(app.settings.model))
    table.add_row("created", _when(s.info.created))
    table.add_row("messages", f"{len(s.messages):,}")
    table.add_row(
        "tokens", f"{u.get('prompt_tokens', 0):,} prompt + {u.get('completion_tokens', 0):,} completion"
    )
    table.add_row("stored", escape(str(s.dir)) if s.persistent and app.writes else "nowhere (incognito)")
    for d in s.info.digests[-SHOWN_DIGESTS:]:  # what its read-backs said it settled (recall quotes them)
        table.add_row("digest", escape(_digest_line(d)))
    if len(s.info.digests) > SHOWN_DIGESTS:
        table.add_row("", f"(the newest {SHOWN_DIGESTS} of {len(s.info.digests)} digests: /session digests lists them all)")
    app.console.print(table)


def _digest_line(d: Digest) -> str:
    mark = f" {provenance.MARK}" if d.tainted else ""  # the part it covers read outside content
    return f"{_when(d.at)}, through message {d.through}: {d.text}{mark}"


def digests(app: CommandContext, rest: str) -> None:
    """``/session digests``: every digest of this session, numbered (1 the oldest); ``/session
    digests drop <n>``: the nth out of ``session.json`` and out of the recall index, so automatic
    recall and the memory tool never quote it again (a digest the model got wrong)."""
    s = app.session
    assert s is not None
    words = rest.split()
    if not words:
        if not s.info.digests:
            app.console.print("This session has no digest yet: one is written when a read-back of it settles something.")
            return
        for n, d in enumerate(s.info.digests, 1):
            app.console.print(escape(f"{n}. {_digest_line(d)}"), soft_wrap=True)
        return
    if words[0] != "drop" or len(words) != 2 or not words[1].isdigit():
        raise CommandError("Usage: /session digests [drop <n>] (n as /session digests numbers them)")
    n = int(words[1])
    if not 1 <= n <= len(s.info.digests):
        raise CommandError(f"No digest {n}: this session has {plural(len(s.info.digests), 'digest')}.")
    gone = s.info.digests[n - 1]
    if not app.confirm(f"Drop digest {n} (through message {gone.through}) of this session? Recall stops quoting it."):
        app.console.print("Kept.")
        return
    s.info.digests = [d for d in s.info.digests if d is not gone]
    s.save_meta()  # first: a refresh or a rebuild reads session.json and so never brings it back
    recall = app.services.recall
    if recall is not None:
        recall.drop_digest(s.id, gone.through)
    app.console.print(f"Dropped digest {n} (through message {gone.through}): automatic recall no longer quotes it.")


def list_(app: CommandContext, rest: str) -> None:
    from rich.table import Table  # ~15 ms: only when a table is shown

    infos = app.sessions.list()
    if not infos:
        app.console.print("No saved sessions in this project.")
        return
    table = Table("id", "name", "messages", "updated", box=None, header_style="bold")
    for i in infos:
        current = app.session is not None and i.id == app.session.id
        table.add_row(
            ("* " if current else "  ") + i.id, escape(i.name or "-"), str(i.message_count), _when(i.updated)
        )
    app.console.print(table)


def switch(app: CommandContext, rest: str) -> None:
    if not rest:
        raise CommandError("Usage: /session switch <id|name>")
    try:
        session = app.open_session(rest)
    except (SessionNotFound, SessionBusy) as exc:
        raise CommandError(str(exc)) from None
    app.console.print(
        escape(f"Switched to session {session.id} ({session.info.name or 'unnamed'}, {plural(len(session.messages), 'message')}).")
    )


def name(app: CommandContext, rest: str) -> None:
    if not rest:
        raise CommandError("Usage: /session name <name>")
    assert app.session is not None
    app.session.rename(rest)
    app.console.print(escape(f"Session named '{app.session.info.name}'."))


def delete(app: CommandContext, rest: str) -> None:
    if not rest:
        raise CommandError("Usage: /session delete <id>")
    try:
        info = app.sessions.find(rest)
    except SessionNotFound as exc:
        raise CommandError(str(exc)) from None
    if app.session is not None and info.id == app.session.id:
        raise CommandError("That is the current session; switch to another one before deleting it.")
    if not app.confirm(
        f"Delete session {info.id} ({info.name or 'unnamed'}, {plural(info.message_count, 'message')})?"
    ):
        app.console.print("Kept.")
        return
    try:
        app.sessions.delete(info.id)
    except SessionBusy as exc:
        raise CommandError(str(exc)) from None
    app.console.print(f"Deleted session {info.id}.")


def export(app: CommandContext, rest: str) -> None:
    from pathlib import Path

    from clio.export.html import export_html

    session = app.session
    assert session is not None
    if rest:
        target = Path(rest).expanduser()
        if not target.is_absolute():
            target = app.paths.cwd / target
        if target.is_dir():
            raise CommandError(
                f"{rest} is a folder: name the file, e.g. {Path(rest) / (session.id + '.html')}"
            )
        if not target.parent.is_dir():
            raise CommandError(
                f"No folder {target.parent}: create it first, or name a file in an existing folder."
            )
    elif app.writes:
        target = app.paths.clio_dir / "exports" / f"{session.id}.html"
    else:
        raise CommandError(
            "Incognito writes nothing by itself: name the file, e.g. /session export ~/session.html"
        )
    redactor = app.services.redactor
    messages = [redactor.redact_message(m)[0] if redactor else m for m in session.messages]
    info = session.info.to_dict()
    info["model"] = info.get("model") or app.settings.model
    info["message_count"] = len(messages)
    try:
        written = export_html(info, messages, target)
    except OSError as exc:
        raise CommandError(f"Could not write {target}: {exc.strerror or exc}.") from None
    app.console.print(escape(f"Exported {plural(len(messages), 'message')} to {written}"))


def trim(app: CommandContext, rest: str) -> None:
    """No argument: trim the context window now. A number of days: delete sessions older than that."""
    if rest:
        _delete_old(app, rest)
        return
    report = app.trim_now()
    if not report.dropped:
        window = app.context_figures()["window_messages"]
        app.console.print(f"Nothing to trim: the window holds {window} message(s), {report.before:,} tokens.")
        return
    app.console.print(
        f"Trimmed {plural(report.dropped, 'message')} into the thread summary: {report.before:,} -> {report.after:,} "
        "tokens (the archive keeps every message)."
    )


def _delete_old(app: CommandContext, rest: str) -> None:
    try:
        days = float(rest)
    except ValueError:
        raise CommandError(
            "Usage: /session trim [days]  (no argument trims the context window now)"
        ) from None
    if days < 0:
        raise CommandError("The number of days must be positive.")
    cutoff = time.time() - days * 86400
    current = app.session.id if app.session is not None else None
    old = [i for i in app.sessions.list() if i.updated < cutoff and i.id != current]
    if not old:
        app.console.print(f"No sessions older than {days:g} days.")
        return
    if not app.confirm(f"Delete {len(old)} session(s) last used more than {days:g} days ago?"):
        app.console.print("Kept them.")
        return
    deleted, busy = 0, 0
    for info in old:
        try:
            app.sessions.delete(info.id)
            deleted += 1
        except SessionBusy:
            busy += 1
    app.console.print(
        f"Deleted {deleted} session(s)" + (f"; {busy} open elsewhere were kept." if busy else ".")
    )


HANDLERS = {
    "digests": digests,
    "show": show,
    "list": list_,
    "switch": switch,
    "name": name,
    "delete": delete,
    "export": export,
    "trim": trim,
}
