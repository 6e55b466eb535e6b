"""``todo_operations``: the session's task list (read, write, add, update).

Stored in ``<session_dir>/todos.json`` (atomic; a damaged file is quarantined) or, without
a session directory, in ``ctx.services.todos_mem``; secrets in an item's content are redacted
before it is kept (with the session's redactor, as the archive is). Items are
``{"id": int, "content": str, "status": "pending" | "in_progress" | "done"}``.
"""

from __future__ import annotations

from typing import Any

from clio.store.atomic import atomic_write_json, read_json
from clio.tools.context import ToolContext, ToolError, need
from clio.tools.registry import register
from clio.tools.results import _redactor
from clio.tools.spec import OWN, READ, Op, ToolSpec

__all__ = ["STATUSES", "format_todos", "load_todos", "save_todos"]

STATUSES = ("pending", "in_progress", "done")
_MARK = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}


def _valid(data: Any) -> bool:
    return isinstance(data, list) and all(
        isinstance(d, dict) and isinstance(d.get("id"), int) and isinstance(d.get("content"), str)
        for d in data
    )


def load_todos(ctx: ToolContext) -> list[dict[str, Any]]:
    """The session's todo items (a copy)."""
    if ctx.session_dir is None:
        return [dict(d) for d in ctx.services.todos_mem or []]
    items: list[dict[str, Any]] = read_json(ctx.session_dir / "todos.json", list, validate=_valid)
    return items


def save_todos(ctx: ToolContext, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep the items, their content redacted; returns what was kept."""
    redactor = _redactor(ctx)
    kept = [dict(d) for d in items]
    if redactor is not None:
        for d in kept:
            if isinstance(d.get("content"), str):
                d["content"] = redactor.redact(d["content"])[0]
    if ctx.session_dir is None:
        ctx.services.todos_mem = [dict(d) for d in kept]
    else:
        atomic_write_json(ctx.session_dir / "todos.json", kept)
    return kept


def format_todos(items: list[dict[str, Any]]) -> str:
    """One line per item: ``[ ] 1. content`` ([~] in progress, [x] done); "(no todos)" when empty."""
    if not items:
        return "(no todos)"
    lines = [f"{_MARK.get(str(d.get('status')), '[ ]')} {d.get('id')}. {d.get('content')}" for d in items]
    done = sum(1 for d in items if d.get("status") == "done")
    return "\n".join(lines) + f"\n({done}/{len(items)} done)"


def _status(value: Any) -> str:
    if value is None:
        return "pending"
    if value not in STATUSES:
        raise ToolError(f"status must be one of {', '.join(STATUSES)}, not {value!r}")
    return str(value)


def _read(ctx: ToolContext, args: dict[str, Any]) -> str:
    return format_todos(load_todos(ctx))


def _write(ctx: ToolContext, args: dict[str, Any]) -> str:
    raw = need(args, "items", list)
    items: list[dict[str, Any]] = []
    for i, entry in enumerate(raw, start=1):
        if isinstance(entry, str):
            content, status = entry, "pending"
        elif isinstance(entry, dict) and isinstance(entry.get("content"), str):
            content, status = entry["content"], _status(entry.get("status"))
        else:
            raise ToolError(f"item #{i} must be a string or an object with 'content' (and optional 'status')")
        if not content.strip():
            raise ToolError(f"item #{i} has empty content")
        items.append({"id": i, "content": content.strip(), "status": status})
    return format_todos(save_todos(ctx, items))


def _add(ctx: ToolContext, args: dict[str, Any]) -> str:
    content = need(args, "content").strip()
    if not content:
        raise ToolError("'content' is empty")
    items = load_todos(ctx)
    new_id = max((d["id"] for d in items), default=0) + 1
    items.append({"id": new_id, "content": content, "status": _status(args.get("status"))})
    return format_todos(save_todos(ctx, items))


def _update(ctx: ToolContext, args: dict[str, Any]) -> str:
    item_id = need(args, "id", int)
    items = load_todos(ctx)
    for d in items:
        if d["id"] == item_id:
            if args.get("status") is not None:
                d["status"] = _status(args["status"])
            content = args.get("content")
            if isinstance(content, str) and content.strip():
                d["content"] = content.strip()
            return format_todos(save_todos(ctx, items))
    ids = ", ".join(str(d["id"]) for d in items) or "none"
    raise ToolError(f"no todo with id {item_id} (ids: {ids})")


# clio's own list, written by the model: no operation reads the outside world
SPEC = register(ToolSpec(
    "todo_operations",
    "Session task list. write replaces all items; update changes status/content by id.",
    {
        "read": Op(_read, READ, outside=False),
        "write": Op(_write, OWN, outside=False),
        "add": Op(_add, OWN, outside=False),
        "update": Op(_update, OWN, outside=False),
    },
    {
        "items": {"type": "array", "items": {"type": "string"}},
        "content": {"type": "string"},
        "id": {"type": "integer"},
        "status": {"type": "string", "enum": list(STATUSES)},
    },
    aliases=("todo",),
))  # fmt: skip
