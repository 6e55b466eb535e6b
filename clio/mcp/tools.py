"""What ``clio mcp`` offers, declared once: its tools (names, descriptions, argument schemas), the
``memory_block`` prompt and the ``clio://memory/{task}`` resource template, and how a call's
arguments are checked and handed to :class:`clio.mcp.memory_ops.MemoryOps`.

No MCP SDK and no pydantic here: the stdio server (:mod:`clio.mcp.stdio`) answers from this table,
and the HTTP server (:mod:`clio.mcp.http_server`, the SDK's) registers the same operations.
Schemas are written as the SDK derives them from a function's signature (pydantic's JSON schema:
``title`` from the name, ``default`` beside optional ones, ``anyOf`` with null for ``X | None``);
arguments are checked as pydantic's lax mode would ("3" is an integer, 5 is not a string), and a
bad one is a one-line tool error. Extra arguments are ignored, as the SDK does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from clio.mcp.memory_ops import FIELDS, MAX_RESULTS, MemoryOps
from clio.memory.ltm import DEFAULT_CONFIDENCE

STRING, INTEGER, NUMBER, OPTIONAL_STRING, OPTIONAL_STRINGS = "string", "integer", "number", "string?", "strings?"
REQUIRED: Any = object()  # the default of an argument that has none

_TYPES_HELP = "; ".join(f"{t}: {', '.join(f)}" for t, f in FIELDS.items())
REMEMBER = (
    "Store a verified, reusable fact about this project in clio's long-term memory (shown to later "
    f"sessions as a note to verify). Fields by type (first required): {_TYPES_HELP}. A near-duplicate "
    "confirms the existing entry. Secrets are redacted."
)
RECALL = "The long-term memory entries clio would show for a task or question, best first (the same ranking)."
PROMPT = "clio's long-term memory block for a task, as its system prompt would carry it."
RESOURCE = "The long-term memory block for a task."
RESOURCE_TEMPLATE = "clio://memory/{task}"
INSTRUCTIONS = (
    "clio's memory of this project: long-term entries, notes and past sessions. "
    "What it returns was written by agents: verify before relying on it."
)
REMEMBER_FIELDS = ("fact", "error", "solution", "pattern", "what", "impact", "prevention", "rule", "name")


class BadArguments(Exception):
    """An argument missing or of the wrong kind; the message names it, in one line."""


@dataclass(frozen=True)
class Param:
    name: str
    kind: str
    default: Any = REQUIRED


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    params: tuple[Param, ...]
    run: Callable[[MemoryOps, dict[str, Any], str | None], str]  # (ops, checked arguments, client name)
    ltm: bool = False  # one of the long-term memory tools (left out with --no-ltm)

    def schema(self) -> dict[str, Any]:
        """The tool's ``inputSchema``, as the SDK would derive it from the same signature."""
        props = {p.name: _prop(p) for p in self.params}
        schema: dict[str, Any] = {"properties": props}
        required = [p.name for p in self.params if p.default is REQUIRED]
        if required:
            schema["required"] = required
        schema.update(type="object", title=f"{self.name}Arguments")
        return schema

    def listing(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "inputSchema": self.schema()}

    def check(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments the operation takes, with defaults; :class:`BadArguments` if one is off."""
        return {p.name: _value(p, arguments) for p in self.params}


def _title(name: str) -> str:
    return " ".join(w.capitalize() for w in name.split("_"))


def _prop(p: Param) -> dict[str, Any]:
    if p.kind == OPTIONAL_STRING:
        prop: dict[str, Any] = {"anyOf": [{"type": "string"}, {"type": "null"}]}
    elif p.kind == OPTIONAL_STRINGS:
        prop = {"anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}]}
    else:
        prop = {"type": p.kind}
    if p.default is not REQUIRED:
        prop["default"] = p.default
    prop["title"] = _title(p.name)
    return prop


def _value(p: Param, arguments: Mapping[str, Any]) -> Any:
    if p.name not in arguments:
        if p.default is REQUIRED:
            raise BadArguments(f"'{p.name}' is required")
        return p.default
    v = arguments[p.name]
    if p.kind in (OPTIONAL_STRING, OPTIONAL_STRINGS) and v is None:
        return None
    if p.kind in (STRING, OPTIONAL_STRING):
        if isinstance(v, str):
            return v
        raise BadArguments(f"'{p.name}' should be a string")
    if p.kind == OPTIONAL_STRINGS:
        if isinstance(v, list) and all(isinstance(x, str) for x in v):
            return v
        raise BadArguments(f"'{p.name}' should be a list of strings")
    return _number(p, v)


def _number(p: Param, v: Any) -> Any:
    """pydantic's lax numbers: an int, a whole float or a numeric string for an integer."""
    try:
        if isinstance(v, str):
            v = float(v.strip()) if p.kind == NUMBER else int(v.strip())
        if isinstance(v, (int, float)) and v == v and abs(v) != float("inf"):  # bool is an int, as in pydantic
            if p.kind == NUMBER:
                return float(v)
            if float(v).is_integer():
                return int(v)
    except ValueError:
        pass
    raise BadArguments(f"'{p.name}' should be {'a number' if p.kind == NUMBER else 'a whole number'}")


def _remember(ops: MemoryOps, a: dict[str, Any], client: str | None) -> str:
    fields = {k: a[k] for k in (*REMEMBER_FIELDS, "steps", "examples")}
    return ops.remember(a["type"], fields, a["confidence"], client)


TOOLS: tuple[Tool, ...] = (
    Tool(
        "note_read",
        "Read one of the project's notes (key-value notes kept by clio).",
        (Param("key", STRING),),
        lambda ops, a, _c: ops.note_read(a["key"]),
    ),
    Tool(
        "note_write",
        "Create or replace a note (key: letters, digits, '.', '_', '-'). Secrets are redacted.",
        (Param("key", STRING), Param("value", STRING)),
        lambda ops, a, c: ops.note_write(a["key"], a["value"], c),
    ),
    Tool("note_list", "The project's notes, newest first.", (), lambda ops, _a, _c: ops.note_list()),
    Tool(
        "search_sessions",
        "Search the project's past clio sessions (ranked excerpts, best first).",
        (Param("query", STRING), Param("max_results", INTEGER, 5), Param("max_sessions", INTEGER, 10)),
        lambda ops, a, _c: ops.search_sessions(a["query"], a["max_results"], a["max_sessions"]),
    ),
    Tool(
        "remember",
        REMEMBER,
        (
            Param("type", STRING),
            Param("confidence", NUMBER, DEFAULT_CONFIDENCE),
            *(Param(f, STRING, "") for f in REMEMBER_FIELDS),
            Param("steps", OPTIONAL_STRINGS, None),
            Param("examples", OPTIONAL_STRINGS, None),
        ),
        _remember,
        ltm=True,
    ),
    Tool(
        "recall",
        RECALL,
        (Param("query", STRING), Param("limit", INTEGER, 10)),
        lambda ops, a, _c: ops.recall(a["query"], a["limit"]),
        ltm=True,
    ),
    Tool(
        "list_entries",
        "List long-term memory entries (optionally one type) with their ids and who wrote them.",
        (Param("type", OPTIONAL_STRING, None), Param("limit", INTEGER, MAX_RESULTS)),
        lambda ops, a, _c: ops.list_entries(a["type"], a["limit"]),
        ltm=True,
    ),
    Tool(
        "forget",
        "Delete one long-term memory entry by id (entries the user pinned are kept).",
        (Param("entry_id", STRING),),
        lambda ops, a, _c: ops.forget(a["entry_id"]),
        ltm=True,
    ),
)


def offered(*, ltm: bool) -> dict[str, Tool]:
    """The tools served, by name, in the order they are listed (no LTM tools with ``ltm`` False)."""
    return {t.name: t for t in TOOLS if ltm or not t.ltm}
