"""A short human label for a tool call (tool lines on screen, the progress checkpoint)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["summarize_args"]


def summarize_args(name: str, args: dict[str, Any], width: int = 70) -> str:
    """A short human label for a tool call: operation plus its most telling argument."""
    op = str(args.get("operation", ""))
    for key in (
        "path",
        "command",
        "pattern",
        "query",
        "key",
        "message",
        "question",
        "fact",
        "text",
        "handle",
    ):
        if key in args and args[key] not in (None, ""):
            val = " ".join(str(args[key]).split())
            if len(val) > width:
                val = val[: width - 1] + "…"
            return f"{op} {val}".strip()
    rest = {k: v for k, v in args.items() if k != "operation"}
    extra = json.dumps(rest, ensure_ascii=False)[:width] if rest else ""
    return f"{op} {extra}".strip()
