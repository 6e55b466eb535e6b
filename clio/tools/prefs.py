"""The ``preferences`` tool: the agent records and recalls the user's stable preferences.

Service: ``ctx.services["prefs"]`` (a :class:`clio.store.prefs_store.PrefStore`).
"""

from __future__ import annotations

from typing import Any

from clio.memory.prefs import TYPES, PrefError, describe
from clio.store.prefs_store import PrefStore
from clio.tools.registry import (
    Handler,
    ToolContext,
    ToolError,
    dispatch,
    need,
    operation_schema,
    redacted_args,
    tool,
)

DESCRIPTION = (
    "The user's lasting preferences, scored 0-10 (0-1.5: never; 7-10: prefer). add only stable "
    "ones the user actually expressed; silence is not a preference. apply (id) when you follow one."
)
PARAMETERS = operation_schema(
    ["add", "update", "recall", "apply"],
    {
        "text": {"type": "string"},
        "score": {"type": "number", "description": "0-10"},
        "type": {"type": "string", "enum": list(TYPES)},
        "scenarios": {"type": "array", "items": {"type": "string"}, "description": "e.g. coding, writing"},
        "id": {"type": "string"},
        "query": {"type": "string"},
        "scenario": {"type": "string"},
        "limit": {"type": "integer"},
    },
)
MAX_LIMIT = 50


def _store(ctx: ToolContext) -> PrefStore:
    store: PrefStore = ctx.service("prefs")
    return store


def _opt_str(args: dict[str, Any], key: str) -> str | None:
    val = args.get(key)
    if val is None or val == "":
        return None
    if not isinstance(val, str):
        raise ToolError(f"'{key}' must be a string")
    return val


def _add(ctx: ToolContext, args: dict[str, Any]) -> str:
    store = _store(ctx)
    text = need(args, "text")
    score = need(args, "score", (int, float, str))
    added = store.add(text, score, _opt_str(args, "type"), args.get("scenarios"))
    line = describe(added.pref, store.clock())
    if added.merged:
        return f"Already known; re-added (score {added.previous_score:.1f} -> {added.pref.score:.1f}): {line}"
    return f"Added: {line}"


def _update(ctx: ToolContext, args: dict[str, Any]) -> str:
    store = _store(ctx)
    pid = need(args, "id")
    score = args.get("score")
    p = store.update(pid, _opt_str(args, "text"), score, _opt_str(args, "type"), args.get("scenarios"))
    return f"Updated: {describe(p, store.clock())}"


def _recall(ctx: ToolContext, args: dict[str, Any]) -> str:
    store = _store(ctx)
    limit = args.get("limit", 10)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ToolError(f"'limit' must be an integer from 1 to {MAX_LIMIT}")
    found = store.recall(_opt_str(args, "query"), _opt_str(args, "scenario"), _opt_str(args, "type"), limit)
    if not found:
        return "No preferences match."
    now = store.clock()
    return "\n".join(describe(p, now) for p in found)


def _apply(ctx: ToolContext, args: dict[str, Any]) -> str:
    store = _store(ctx)
    p, refreshed = store.apply(need(args, "id"))
    note = "refreshed" if refreshed else "already refreshed in the last 12 hours"
    return f"Applied {p.id} ({note})."


OPS: dict[str, Handler] = {"add": _add, "update": _update, "recall": _recall, "apply": _apply}


@tool("preferences", DESCRIPTION, PARAMETERS)
def preferences(ctx: ToolContext, args: dict[str, Any]) -> str:
    try:
        return dispatch(OPS, ctx, redacted_args(ctx, args))  # preferences land on disk: no secrets
    except PrefError as exc:
        raise ToolError(str(exc)) from None
