"""A short human label for a tool call (tool lines on screen, the progress checkpoint).

A built-in tool names the arguments that tell its calls apart in its spec (``ToolSpec.label``);
a tool clio knows nothing of (an MCP server's) is labelled by the first of the usual ones it has.
"""

from __future__ import annotations

import json
from typing import Any

from clio.tools.registry import REGISTRY
from clio.tools.spec import ToolSpec

__all__ = ["label", "summarize_args"]

# for tools without a spec here (MCP servers' tools): the argument names that usually tell most
USUAL = ("path", "command", "pattern", "query", "key", "message", "question", "fact", "text", "handle")


def summarize_args(name: str, args: dict[str, Any], width: int = 70) -> str:
    """A short human label for a call of the registered tool ``name``: operation plus its most
    telling argument."""
    return label(REGISTRY.get(name), args, width)


def label(spec: ToolSpec | None, args: dict[str, Any], width: int = 70) -> str:
    """A short label for a call of the tool ``spec`` (None: a tool clio has no spec of)."""
    op = str(args.get("operation", ""))
    for key in spec.label if spec is not None else USUAL:
        if key in args and args[key] not in (None, ""):
            val = " ".join(str(args[key]).split())
            if len(val) > width:
                val = val[: width - 1] + "…"
            return f"{op} {val}".strip()
    rest = {k: v for k, v in args.items() if k != "operation"}
    extra = json.dumps(rest, ensure_ascii=False)[:width] if rest else ""
    return f"{op} {extra}".strip()
