"""``/memory``: look at and tidy the project's long-term memory (and notes).

/memory add <text>   /memory list [type|tainted|pinned|learned|notes]   /memory search <query>   /memory stats
/memory prune [days]   /memory pin <id>   /memory unpin <id>   /memory compact
/memory consolidate    /memory forget <id>    /memory adopt <id>|all    /memory adopt-clio    /memory clear
/memory team [ignore|unignore|drop <author> | import]   (a shared memory: :mod:`clio.commands.team_memory`)

``/memory compact`` lists the groups of old, faded entries on one topic that compaction
would merge (:func:`clio.memory.lifecycle.compaction_groups`); when the app provides a
``ltm_compactor`` service (a callable: the group's entries -> the summary's fields, or None),
it also replaces each group by the model's summary, the old wordings kept in its history.
``/memory consolidate`` reads the running session back into memory now (what clio otherwise
does when the session ends, :mod:`clio.app.consolidate`); ``/memory list learned`` shows what
consolidation wrote, from which session.

``/memory add TEXT`` (and ``# TEXT`` typed at the REPL's prompt) stores the user's own words as a
rule, provenance ``by: user`` (never tainted), secrets redacted first, deduplicated like any entry.

``/memory adopt-clio`` makes the entries read from CLIO's memory (:mod:`clio.memory.clio_perl`)
the user's own: provenance ``by: user``, adopted from CLIO, no longer a note to verify.

Listings show each entry's provenance: which session wrote it and whether that turn had
read untrusted content (file contents, command output...), so the user can drop it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.table import Table

from typing import Any

from rich.markup import escape

from clio.commands.registry import CommandContext, CommandError, command, split_sub
from clio.commands.team_memory import USAGE_TAIL, team
from clio.memory import lifecycle, ltm, ltm_rank, provenance
from clio.memory.ltm_file import imported
from clio.memory.ltm_stats import day, format_stats
from clio.memory.ltm_store import LtmStore
from clio.memory.notes import NoteStore

USAGE = (
    "/memory add <text> | list [type|tainted|foreign|pinned|learned|imported|notes] | search <query> | stats | prune [days] | "
    "pin <id> | unpin <id> | compact | consolidate | forget <id> | adopt <id>|all | adopt-clio | clear | " + USAGE_TAIL
)
SUBCOMMANDS = (
    "add",
    "list",
    "search",
    "stats",
    "prune",
    "pin",
    "unpin",
    "compact",
    "consolidate",
    "forget",
    "adopt",
    "adopt-clio",
    "clear",
    "team",
)
FILTERS = ("tainted", "foreign", "pinned", "learned", "imported")

PLURALS = {"discoveries": "discovery", **{t + "s": t for t in ltm.TYPES}}
OFF = "Long-term memory is off in this session (incognito): nothing is read or stored."
USER_CONFIDENCE = 0.9  # the user's own words: above what the model's writes start with (0.7)


def _ltm(app: CommandContext) -> LtmStore | None:
    store: Any = app.services.ltm
    if isinstance(store, LtmStore) and store.enabled:
        return store
    app.console.print(OFF)
    return None


def _summary(e: ltm.Entry) -> str:
    return ltm.render_entry(e)[2:]


def origin(e: ltm.Entry, store: LtmStore | None = None) -> str:
    """Who wrote an entry, for people: 'tainted: after reading ... · session X', 'clean turn · ...';
    'written by you' only for the user's own words (a teammate's are 'written by alice@pc')."""
    p = e.provenance
    if imported(e) and p is not None:
        return p.describe()  # imported from CLIO: a note to verify; /memory adopt-clio
    if e.foreign:
        return "FOREIGN: not written by clio on this machine (repository or elsewhere); /memory adopt " + e.id
    if p is None:
        return "unknown (written before provenance was kept)"
    writer = store.writer(e.id) if store is not None else None
    return ("tainted: " if p.tainted else "") + p.describe(writer or "you")


def _entry_table(rows: list[ltm.Entry], title: str, now: float, store: LtmStore | None = None) -> Table:
    from rich.table import Table  # ~15 ms: only when a table is shown

    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("id", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("entry", overflow="fold")
    table.add_column("conf", justify="right", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("active", no_wrap=True)
    table.add_column("origin", overflow="fold")
    for e in rows:
        table.add_row(
            e.id + ((" (pin ignored)" if e.foreign else " (pinned)") if e.pinned else ""),
            e.type,
            escape(_summary(e)),
            f"{e.confidence:.2f}",
            f"{ltm_rank.effective_score(e, now):.2f}",
            day(e.active),
            escape(origin(e, store) + (f" · by {store.describe_author(e.id)}" if store and store.describe_author(e.id) else "")),
        )
    return table


def _list(app: CommandContext, arg: str) -> None:
    from rich.table import Table  # ~15 ms: only when a table is shown

    kind = arg.strip().lower()
    if kind in ("notes", "note"):
        notes: Any = app.services.notes
        items = notes.list() if isinstance(notes, NoteStore) else []
        if not items:
            app.console.print("No notes.")
            return
        table = Table(title=f"{len(items)} note(s)", title_justify="left")
        table.add_column("key", no_wrap=True)
        table.add_column("value", overflow="fold")
        table.add_column("updated", no_wrap=True)
        for n in items:
            table.add_row(escape(n.key), escape(" ".join(n.value.split())[:200]), day(n.updated))
        app.console.print(table)
        return
    wanted = PLURALS.get(kind, kind)
    if wanted and wanted not in ltm.TYPES and wanted not in FILTERS:
        raise CommandError(
            f"Unknown type {kind!r}. Types: {', '.join(ltm.TYPES)}, 'tainted', 'foreign', 'pinned', 'learned', "
            "'imported' or 'notes'."
        )
    store = _ltm(app)
    if store is None:
        return
    if wanted == "tainted":
        rows = [e for e in store.all() if e.tainted]
    elif wanted == "foreign":
        rows = [e for e in store.all() if e.foreign]
    elif wanted == "pinned":
        rows = [e for e in store.all() if e.pinned]
    elif wanted == "imported":
        rows = [e for e in store.all() if imported(e)]
    elif wanted == "learned":
        rows = [e for e in store.all() if e.provenance is not None and e.provenance.by == "consolidation"]
    else:
        rows = [e for e in store.all() if not wanted or e.type == wanted]
    if not rows:
        app.console.print(f"No {wanted or 'long-term memory'} entries.")
        return
    rows.sort(key=lambda e: (list(ltm.TYPES).index(e.type), -e.last_confirmed))
    app.console.print(
        _entry_table(rows, f"{len(rows)} entr{'y' if len(rows) == 1 else 'ies'}", store.clock(), store)
    )


def _add(app: CommandContext, arg: str) -> None:
    """The user teaches clio directly: a rule in their own words (clean, redacted, deduplicated)."""
    text = " ".join(arg.split())
    if not text:
        raise CommandError("Usage: /memory add <text> (e.g. /memory add always use tabs in Makefiles)")
    store = _ltm(app)
    if store is None:
        return
    redactor = app.services.redactor
    hits = 0
    if redactor is not None:
        text, labels = redactor.redact(text)
        hits = len(labels)
    session = app.session
    origin = provenance.from_user(session.id if session is not None else None, store.clock())
    try:
        entry, created = store.add("rule", confidence=USER_CONFIDENCE, provenance=origin, rule=text)
    except ltm.LtmError as exc:
        raise CommandError(f"Not stored: {exc}") from None
    secret = f" ({hits} secret{'s' if hits != 1 else ''} redacted)" if hits else ""
    how = "Remembered" if created else "Already remembered; confirmed"
    app.console.print(f"{how} rule {entry.id}: {escape(_summary(entry)[:160])}{secret}", soft_wrap=True)


def _search(app: CommandContext, arg: str) -> None:
    if not arg.strip():
        raise CommandError("Usage: /memory search <query>")
    store = _ltm(app)
    hits = ltm_rank.search(store.all(), arg) if store is not None else []
    notes: Any = app.services.notes
    note_hits = notes.search(arg) if isinstance(notes, NoteStore) else []
    if not hits and not note_hits:
        app.console.print(f"Nothing matches '{escape(arg)}'.")
        return
    if hits and store is not None:
        title = f"Long-term memory matching '{escape(arg)}'"
        app.console.print(_entry_table([e for _, e in hits], title, store.clock(), store))
    for _, n in note_hits:
        app.console.print(f"note [bold]{escape(n.key)}[/bold]: {escape(' '.join(n.value.split())[:200])}")


def _stats(app: CommandContext, arg: str) -> None:
    store = _ltm(app)
    if store is not None:
        app.console.print(format_stats(store.stats()))


def _prune(app: CommandContext, arg: str) -> None:
    days = lifecycle.PRUNE_UNUSED_DAYS
    if arg.strip():
        try:
            days = float(arg)
        except ValueError:
            raise CommandError("Usage: /memory prune [days] (days: a number >= 0)") from None
        if not days >= 0:
            raise CommandError("Usage: /memory prune [days] (days: a number >= 0)")
    store = _ltm(app)
    if store is None:
        return
    removed = store.prune(max_unused_days=days)
    app.console.print(
        f"Pruned {len(removed)} entr{'y' if len(removed) == 1 else 'ies'} (not confirmed or used for over "
        f"{days:g} days, rules excepted, or score below {lifecycle.PRUNE_SCORE:g}; pinned entries kept)."
    )
    for e in removed:
        app.console.print(f"  - {e.id} {e.type}: {escape(_summary(e)[:120])}")


def _set_pin(app: CommandContext, arg: str, pinned: bool) -> None:
    entry_id = arg.strip()
    verb = "pin" if pinned else "unpin"
    if not entry_id:
        raise CommandError(f"Usage: /memory {verb} <id> (ids are shown by /memory list)")
    store = _ltm(app)
    if store is None:
        return
    entry = store.pin(entry_id, pinned)
    if entry is None:
        app.console.print(f"No entry with id '{escape(entry_id)}'; /memory list shows the ids.")
    elif pinned:
        app.console.print(f"Pinned {escape(entry_id)}: it is never pruned or compacted.")
    else:
        app.console.print(f"Unpinned {escape(entry_id)}: it decays and may be pruned again.")


def _pin(app: CommandContext, arg: str) -> None:
    _set_pin(app, arg, True)


def _unpin(app: CommandContext, arg: str) -> None:
    _set_pin(app, arg, False)


def _compact(app: CommandContext, arg: str) -> None:
    store = _ltm(app)
    if store is None:
        return
    groups = store.compaction_groups()
    if not groups:
        app.console.print("Nothing to compact (no group of old, faded entries on one topic).")
        return
    compactor: Any = app.services.ltm_compactor
    for n, group in enumerate(groups, 1):
        app.console.print(f"Group {n} ({len(group)} {group[0].type} entries):")
        for e in group:
            app.console.print(f"  - {e.id}: {escape(_summary(e)[:120])}")
        if not callable(compactor):
            continue
        fields = compactor(group)
        if not fields:
            app.console.print("  (left as it is: no summary)")
            continue
        try:
            summary = store.compact([e.id for e in group], fields)
        except ltm.LtmError as exc:
            app.console.print(f"  (left as it is: {escape(str(exc))})")
            continue
        if summary is not None:
            app.console.print(f"  -> {summary.id}: {escape(_summary(summary)[:160])}")
    if not callable(compactor):
        app.console.print(
            f"{len(groups)} group(s) could be compacted; compaction by the model is not available here."
        )


def _consolidate(app: CommandContext, arg: str) -> None:
    if arg.strip():
        raise CommandError("Usage: /memory consolidate")
    if _ltm(app) is None:
        return
    outcome = app.consolidate(force=True)
    if outcome is None:
        app.console.print("Consolidation is off here (--no-ltm, or consolidate: false in the config).")
        return
    app.console.print(escape(outcome.describe()))
    for entry, created in outcome.stored:
        app.console.print(f"  {'+' if created else '='} {entry.id}: {escape(_summary(entry)[:160])}")


def _forget(app: CommandContext, arg: str) -> None:
    entry_id = arg.strip()
    if not entry_id:
        raise CommandError("Usage: /memory forget <id> (ids are shown by /memory list)")
    store = _ltm(app)
    if store is None:
        return
    entry = store.get(entry_id)
    if entry is not None and store.delete(entry_id):
        app.console.print(f"Forgot {escape(entry_id)}: {escape(_summary(entry)[:120])}")
    else:
        app.console.print(f"No entry with id '{escape(entry_id)}'; /memory list shows the ids.")


def _adopt(app: CommandContext, arg: str) -> None:
    """Make foreign entries (not signed by this machine's clio) clio's own: the user's explicit act."""
    wanted = arg.split()
    if not wanted:
        raise CommandError("Usage: /memory adopt <id>... | all (/memory list foreign shows them)")
    store = _ltm(app)
    if store is None:
        return
    foreign = [e for e in store.all() if e.foreign]
    ids = None if wanted == ["all"] else wanted
    unknown = [] if ids is None else [i for i in ids if i not in {e.id for e in foreign}]
    if unknown:
        app.console.print(f"Not a foreign entry: {escape(', '.join(unknown))} (/memory list foreign shows them).")
        return
    adopted = store.adopt(ids)
    for e in foreign:
        if e.id in adopted:
            app.console.print(f"Adopted {escape(e.id)}: {escape(_summary(e)[:120])}")
    if not adopted:
        app.console.print("No foreign entries.")
    else:
        app.console.print("They are now clio's own notes, as they were written (a pin included).")


def _adopt_clio(app: CommandContext, arg: str) -> None:
    """The entries read from CLIO's memory (the Perl agent's .clio/ltm.json) made the user's own:
    from notes to verify to what the user knows, each listed; the user's explicit act."""
    if arg.strip():
        raise CommandError("Usage: /memory adopt-clio (/memory list imported shows what it adopts)")
    store = _ltm(app)
    if store is None:
        return
    session = app.session
    adopted = store.adopt_imported(session.id if session is not None else None)
    if not adopted:
        app.console.print("No entries imported from CLIO's memory are waiting to be adopted.")
        return
    for e in adopted:
        app.console.print(f"Adopted {escape(e.id)} ({e.type}): {escape(_summary(e)[:120])}", soft_wrap=True)
    app.console.print(
        f"{len(adopted)} entr{'y' if len(adopted) == 1 else 'ies'} from CLIO are now yours: no longer marked "
        "as notes to verify (/memory forget <id> drops one)."
    )


def _clear(app: CommandContext, arg: str) -> None:
    store = _ltm(app)
    if store is None:
        return
    count = len(store.all())
    if count == 0:
        app.console.print("Long-term memory is already empty.")
        return
    if not app.confirm(f"Delete all {count} long-term memory entries of this project?"):
        app.console.print("Nothing deleted.")
        return
    removed = store.clear()
    app.console.print(f"Deleted {removed} long-term memory entries (notes are kept).")


HANDLERS = {
    "add": _add,
    "list": _list,
    "search": _search,
    "stats": _stats,
    "prune": _prune,
    "pin": _pin,
    "unpin": _unpin,
    "compact": _compact,
    "consolidate": _consolidate,
    "forget": _forget,
    "adopt": _adopt,
    "adopt-clio": _adopt_clio,
    "clear": _clear,
    "team": team,
}


@command("memory", "Show and tidy long-term memory", USAGE, SUBCOMMANDS, aliases=("mem",))
def memory_command(app: CommandContext, arg: str) -> None:
    sub, rest = split_sub(arg)
    handler = HANDLERS.get(sub or "stats")
    if handler is None:
        raise CommandError(f"Unknown subcommand {sub!r}. Usage: {USAGE}")
    handler(app, rest)
