"""What an MCP server sends, checked: tool lists and schemas, namespaced names, results as text.

Everything an MCP server sends is untrusted: a tool list whose schemas are not JSON-schema
objects fails the whole server (:func:`read_tools` raises), descriptions are cut, and a call
goes through the same door as a built-in tool's (``clio.app.mcp_servers.McpTool``: the registry,
the ``mcp`` approval, redacted arguments; the orchestrator stores large results and archives
redacted).
No SDK import here: the objects are read by attribute.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from clio.mcp.config import ServerSpec, tool_name
from clio.safety.visible import escape_invisible

MAX_DESCRIPTION = 1000  # characters of a tool description sent to the model (the fixed part)
MAX_SCHEMA = 8000  # characters of one tool's JSON schema


class Malformed(ValueError):
    """What a server listed is not usable (the sentence says what)."""


@dataclass(frozen=True)
class RemoteTool:
    server: str
    name: str  # the server's own name
    exposed: str  # the name the model sees: server__name
    description: str
    schema: dict[str, Any]


def _check_schema(tool: str, schema: Any) -> dict[str, Any]:
    if not isinstance(schema, dict):
        raise Malformed(f"tool '{tool}' has a malformed input schema (not an object)")
    kind = schema.get("type", "object")
    if kind != "object":
        raise Malformed(f"tool '{tool}' has a malformed input schema (type {kind!r}, not 'object')")
    props = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(props, dict) or not all(isinstance(v, dict) for v in props.values()):
        raise Malformed(f"tool '{tool}' has a malformed input schema (properties)")
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise Malformed(f"tool '{tool}' has a malformed input schema (required)")
    try:
        text = json.dumps(schema)
    except (TypeError, ValueError):
        raise Malformed(f"tool '{tool}' has a malformed input schema (not JSON)") from None
    try:
        from jsonschema import SchemaError, validators  # the SDK's own dependency
    except ImportError:  # pragma: no cover - installed with mcp
        pass
    else:
        try:
            validators.validator_for(schema).check_schema(schema)
        except SchemaError as exc:
            where = "/".join(str(p) for p in exc.path) or "the top"
            raise Malformed(f"tool '{tool}' has a malformed input schema (at {where}: {exc.message[:80]})") from None
    if len(text) > MAX_SCHEMA:
        raise Malformed(f"tool '{tool}' has an input schema of {len(text):,} characters (at most {MAX_SCHEMA:,})")
    return {**schema, "type": "object", "properties": props}


def read_tools(spec: ServerSpec, listed: list[Any]) -> tuple[list[RemoteTool], list[str]]:
    """(the tools offered, the names the allow-list left out); Malformed for a malformed list."""
    out: list[RemoteTool] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for t in listed:
        name = getattr(t, "name", None)
        if not isinstance(name, str) or not name.strip():
            raise Malformed("a tool without a name")
        if not spec.allows(name):
            skipped.append(name)
            continue
        schema = _check_schema(name, getattr(t, "input_schema", None))
        exposed = tool_name(spec.name, name)
        if exposed in seen:
            raise Malformed(f"two tools named '{exposed}'")
        seen.add(exposed)
        description = getattr(t, "description", None) or getattr(t, "title", None) or name
        description = escape_invisible(str(description).strip())[:MAX_DESCRIPTION]
        out.append(RemoteTool(spec.name, name, exposed, f"[MCP {spec.name}] {description}", schema))
    return out, skipped


def result_text(result: Any) -> str:
    """The text of a CallToolResult: text blocks joined, other blocks named, else the structured
    content as JSON."""
    parts: list[str] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(getattr(block, "text", "")))
        elif kind == "resource":
            res = getattr(block, "resource", None)
            text = getattr(res, "text", None)
            parts.append(str(text) if text is not None else f"[resource {getattr(res, 'uri', '')}]")
        elif kind == "resource_link":
            parts.append(f"[resource link {getattr(block, 'uri', '')}]")
        else:
            parts.append(f"[{kind or 'unknown'} content: {getattr(block, 'mime_type', '') or 'not shown'}]")
    if not parts:
        structured = getattr(result, "structured_content", None)
        if structured is not None:
            parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    return "\n".join(parts) or "(no output)"


def describe_error(exc: BaseException) -> str:
    """One line for an exception, looking inside exception groups (anyio's task groups)."""
    while getattr(exc, "exceptions", None):  # an ExceptionGroup (exceptiongroup's on 3.10)
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, Malformed):
        return text
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"command not found: {exc.filename}"
    return f"{type(exc).__name__}: {text}"[:240] if text else type(exc).__name__
