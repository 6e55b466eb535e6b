"""The ``memory_operations`` tool: notes, long-term memory entries and cross-session recall.

Services (from ``ctx.services``): ``notes`` (NoteStore), ``ltm`` (LtmStore), ``recall``
(an object with ``search(query, max_sessions=, max_results=) -> list[dict]``), ``session``
(the running Session: its messages tell whether this turn read untrusted content, so every
long-term memory entry records its provenance, see :mod:`clio.memory.provenance`).
"""

from __future__ import annotations

import math
from typing import Any

from clio.memory import lifecycle, ltm, ltm_rank, provenance
from clio.memory.ltm_stats import day, format_stats
from clio.memory.ltm_store import LtmStore
from clio.memory.notes import NoteError, NoteStore, check_key
from clio.memory.types import TYPES, added_by_tool
from clio.recall.format import format_hits, one_line
from clio.tools.context import ToolContext, ToolError, need, redacted_args
from clio.tools.registry import REGISTRY, register
from clio.tools.spec import OWN, READ, Handler, Lean, Op, ToolSpec

SNIPPET = 160
REFUSED_UNCONFIRMED = (
    "Not saved: this turn read outside content ({sources}), this project is not trusted, and in a "
    "one-shot run nobody can confirm memory proposed after that. Put it in your answer instead; "
    "the user can save it with /memory add, or trust the project with clio --trust."
)
RECALL_REINFORCE = 0.5  # a search hit this close to the best one counts as recalled
MAX_LIST = 50

_STR: dict[str, Any] = {"type": "string"}
_LIST: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
ADDS = added_by_tool()  # add_discovery -> discovery...: the long-term types the model may add
_TYPE_FIELDS: dict[str, dict[str, Any]] = {f: _STR for t in ADDS.values() for f in TYPES[t].text}
_TYPE_FIELDS.update({f: _LIST for t in ADDS.values() for f in TYPES[t].lists})
DESCRIPTION = (
    "Memory. Notes for this project: store/retrieve/search/list/delete (key, value). Long-term "
    "project knowledge shown in later sessions: "
    + ", ".join(f"{op} ({', '.join(TYPES[t].required)})" for op, t in ADDS.items())
    + "; add only verified, reusable facts. recall_sessions (query): search "
    "everything said earlier in this project (past sessions, and this session's messages no longer "
    "in view). prune_ltm (max_age_days unused, min_score), ltm_stats."
)
# In small windows only recall, and only where it fits (a 4k window; below, automatic recall alone).
LEAN = Lean("Search earlier messages: recall_sessions (query).", ("recall_sessions",), ("query",), min_limit=2500)
RESULT_LINE_CHARS = 900  # one recall unit as the tool shows it (header, up to three excerpts)


def _one_line(text: str, limit: int = SNIPPET) -> str:
    return one_line(text, limit)


def _notes(ctx: ToolContext) -> NoteStore:
    store: NoteStore = ctx.service("notes")
    return store


def _ltm(ctx: ToolContext) -> LtmStore:
    store: LtmStore = ctx.service("ltm")
    if not store.enabled:
        raise ToolError("long-term memory is off in this session (incognito); nothing was stored")
    return store


def _number(args: dict[str, Any], key: str, default: float, low: float, high: float) -> float:
    val = args.get(key)
    if val is None:
        return default
    if isinstance(val, str):
        try:
            val = float(val)
        except ValueError:
            raise ToolError(f"'{key}' must be a number") from None
    if isinstance(val, bool) or not isinstance(val, (int, float)) or math.isnan(val):
        raise ToolError(f"'{key}' must be a number")
    if not low <= val <= high:
        raise ToolError(f"'{key}' must be between {low:g} and {high:g} (got {val:g})")
    return float(val)


def _count(args: dict[str, Any], key: str, default: int, high: int) -> int:
    if args.get(key) is None:
        return default
    val: int = need(args, key, int)
    if not 1 <= val <= high:
        raise ToolError(f"'{key}' must be between 1 and {high} (got {val})")
    return val


def _key(args: dict[str, Any]) -> str:
    key: str = need(args, "key")
    try:
        return check_key(key)
    except NoteError as exc:
        raise ToolError(str(exc)) from None


# ---------------------------------------------------------------- notes


def op_store(ctx: ToolContext, args: dict[str, Any]) -> str:
    key = _key(args)
    value: str = need(args, "value")
    origin = write_provenance(ctx, _notes(ctx).clock())
    confirmable(ctx, origin)
    note, created = _notes(ctx).store(key, value, origin.to_dict())
    where = "" if _notes(ctx).persistent else " (kept for this session only: incognito)"
    return f"Stored note '{note.key}' ({'new' if created else 'replaced the old value'}){where}."


def op_retrieve(ctx: ToolContext, args: dict[str, Any]) -> str:
    key = _key(args)
    notes = _notes(ctx)
    note = notes.retrieve(key)
    if note is None:
        keys = [n.key for n in notes.list()[:20]]
        hint = f"existing notes: {', '.join(keys)}" if keys else "there are no notes yet"
        raise ToolError(f"no note named '{key}'; {hint}")
    origin = provenance.Provenance.from_dict(note.provenance)
    mark = f" {provenance.MARK}" if origin is not None and origin.tainted else ""
    return f"Note '{note.key}' (updated {day(note.updated)}){mark}:\n{note.value}"


def op_delete(ctx: ToolContext, args: dict[str, Any]) -> str:
    key = _key(args)
    if not _notes(ctx).delete(key):
        raise ToolError(f"no note named '{key}' (use operation 'list' to see the keys)")
    return f"Deleted note '{key}'."


def op_list(ctx: ToolContext, args: dict[str, Any]) -> str:
    notes = _notes(ctx).list()
    if not notes:
        return "No notes yet (use operation 'store' to add one)."
    lines = [f"{len(notes)} note(s), newest first:"]
    lines += [f"- {n.key} ({day(n.updated)}): {_one_line(n.value, 80)}" for n in notes[:MAX_LIST]]
    if len(notes) > MAX_LIST:
        lines.append(f"... and {len(notes) - MAX_LIST} more (use 'search').")
    return "\n".join(lines)


def op_search(ctx: ToolContext, args: dict[str, Any]) -> str:
    query: str = need(args, "query")
    if not query.strip():
        raise ToolError("'query' must not be empty")
    limit = _count(args, "max_results", 10, MAX_LIST)
    lines: list[str] = []
    notes = _notes(ctx).search(query, limit)
    if notes:
        lines.append("Notes:")
        lines += [f"- {n.key}: {_one_line(n.value)}" for _, n in notes]
    store: LtmStore | None = ctx.services.ltm
    entries = ltm_rank.search(store.all(), query, limit) if store is not None else []
    if entries:
        lines.append("Long-term memory:")
        lines += [f"- [{e.id} {e.type}] {_one_line(ltm.render_entry(e)[2:])}" for _, e in entries]
        if store is not None:  # recalled: reinforce the strong matches (their decay restarts)
            store.reinforce(e.id for score, e in entries if score >= RECALL_REINFORCE)
    return "\n".join(lines) or f"Nothing in notes or long-term memory matches {query!r}."


# ---------------------------------------------------------------- long-term memory


def write_provenance(ctx: ToolContext, now: float) -> provenance.Provenance:
    """Who is writing now: the running session, and whether its current turn read untrusted
    content (no session to look at counts as tainted)."""
    session: Any = ctx.services.session
    messages = getattr(session, "messages", None)
    return provenance.from_turn(
        getattr(session, "id", None), messages, now, ctx.prompt_sources(), REGISTRY.brings_outside
    )


def confirmable(ctx: ToolContext, origin: provenance.Provenance) -> None:
    """Raise a ToolError when memory written now could be the repository's words that nobody
    will confirm: a tainted turn, in a one-shot run, in a project the user has not trusted. In
    the REPL (or a trusted project) such a write is kept, marked as unverified."""
    if origin.tainted and not ctx.keeps_unconfirmed():
        sources = ", ".join(origin.sources) or "untrusted content"
        raise ToolError(REFUSED_UNCONFIRMED.format(sources=sources))


def _add(ctx: ToolContext, type_: str, args: dict[str, Any], fields: dict[str, Any]) -> str:
    store = _ltm(ctx)
    confidence = _number(args, "confidence", ltm.DEFAULT_CONFIDENCE, 0.0, 1.0)
    origin = write_provenance(ctx, store.clock())
    confirmable(ctx, origin)
    try:
        entry, created = store.add(type_, confidence=confidence, provenance=origin, **fields)
    except ltm.LtmError as exc:
        raise ToolError(str(exc)) from None
    note = (
        f" It is marked {provenance.MARK}: this turn read outside content, so later sessions see it "
        "as an unverified note."
        if entry.tainted
        else ""
    )
    if created:
        return f"Stored {type_} {entry.id}.{note}"
    extra = f", applied {entry.fields['applied']}×" if type_ == "solution" else ""
    return f"Stored {type_} {entry.id} (updated an existing entry: confidence {entry.confidence:.2f}{extra}).{note}"


def _examples(args: dict[str, Any], key: str = "examples") -> list[str]:
    val = args.get(key)
    if val is None:
        return []
    if isinstance(val, str):
        return [val]
    if not isinstance(val, list) or not all(isinstance(v, str) for v in val):
        raise ToolError(f"'{key}' must be a list of strings")
    return val


def _adder(type_: str) -> Handler:
    """The operation that adds a ``type_`` entry: its fields from the arguments, the required
    ones needed (clio.memory.types)."""
    spec = TYPES[type_]

    def add(ctx: ToolContext, args: dict[str, Any]) -> str:
        fields: dict[str, Any] = {}
        for name in spec.text:
            fields[name] = need(args, name) if name in spec.required else args.get(name)
        for name in spec.lists:
            fields[name] = _examples(args, name)
        return _add(ctx, type_, args, {k: v for k, v in fields.items() if v is not None})

    return add


def op_prune(ctx: ToolContext, args: dict[str, Any]) -> str:
    days = _number(args, "max_age_days", lifecycle.PRUNE_UNUSED_DAYS, 0.0, 36500.0)
    key = "min_score" if args.get("min_score") is not None else "min_confidence"  # the older name
    floor = _number(args, key, lifecycle.PRUNE_SCORE, 0.0, 1.0)
    store = _ltm(ctx)
    removed = store.prune(days, floor)
    left = len(store.all())
    return (
        f"Pruned {len(removed)} entr{'y' if len(removed) == 1 else 'ies'} (not confirmed or used for over "
        f"{days:g} days (rules excepted) or score below {floor:g}; pinned entries kept); {left} remain."
    )


def op_stats(ctx: ToolContext, args: dict[str, Any]) -> str:
    return format_stats(_ltm(ctx).stats())


# ---------------------------------------------------------------- recall


def op_recall(ctx: ToolContext, args: dict[str, Any]) -> str:
    query: str = need(args, "query")
    if not query.strip():
        raise ToolError("'query' must not be empty")
    max_sessions = _count(args, "max_sessions", 10, 1000)
    max_results = _count(args, "max_results", default_results(ctx.result_chars), MAX_LIST)
    hits = ctx.service("recall").search(query, max_sessions=max_sessions, max_results=max_results)
    session = ctx.services.session
    return format_hits(query, list(hits), getattr(session, "id", None))


def default_results(result_chars: int) -> int:
    """As many hits as a tool result kept inline can show, best first (3 to 10)."""
    return max(3, min(10, result_chars // RESULT_LINE_CHARS))


def _run(ctx: ToolContext, args: dict[str, Any]) -> str:
    return SPEC.dispatch(ctx, redacted_args(ctx, args))  # memory lands on disk: no secrets


# What it reads back (notes, entries, the archive) may be tainted: outside content. Its writes
# only confirm (and change clio's own stores, never the project).
SPEC = register(ToolSpec(
    "memory_operations",
    DESCRIPTION,
    {
        "store": Op(op_store, OWN, outside=False),
        "retrieve": Op(op_retrieve, READ, outside=True),
        "search": Op(op_search, READ, outside=True),
        "list": Op(op_list, READ, outside=True),
        "delete": Op(op_delete, OWN, outside=False),
        **{op: Op(_adder(t), OWN, outside=False) for op, t in ADDS.items()},
        "recall_sessions": Op(op_recall, READ, outside=True),
        "prune_ltm": Op(op_prune, OWN, outside=True),
        "ltm_stats": Op(op_stats, READ, outside=False),
    },
    {
        "key": _STR,
        "value": _STR,
        "query": _STR,
        **_TYPE_FIELDS,
        "confidence": {"type": "number", "description": "0-1"},
        "max_sessions": {"type": "integer"},
        "max_results": {"type": "integer"},
        "max_age_days": {"type": "number"},
        "min_score": {"type": "number"},
    },
    label=("pattern", "query", "key", "fact"),
    aliases=("memory",),
    lean=LEAN,
    run=_run,
))  # fmt: skip
