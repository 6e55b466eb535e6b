"""How a recalled message is shown: the one place that names where a hit came from and lays out a
list of hits (the memory tool's ``recall_sessions`` and ``clio mcp``'s ``search_sessions``; the
automatic recall's block, :mod:`clio.recall.auto`, names its sources here too). Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

EARLIER_HERE = "this session, earlier (no longer in view)"
LINE_CHARS = 400  # one hit's excerpt in a list


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def hit_source(session_id: str, name: str, current: bool, *, in_block: bool = False) -> str:
    """Where a hit came from: the running session (it left the window), else its session by name,
    or by id when it has none (in a block: ``session "name"``, the name already made safe)."""
    if current:
        return EARLIER_HERE
    if in_block:
        return f'session "{name}"' if name else f"session {session_id}"
    return name or session_id or "?"


def format_hits(query: str, hits: Sequence[Mapping[str, Any]], current: str | None = None) -> str:
    """Hits as a model reads them, best first; ``current``: the running session's id."""
    if not hits:
        return f"Nothing archived mentions {query!r} (besides what is in view now)."
    lines = [f"{len(hits)} excerpt(s) from the archive, best first:"]  # (RECALL_HEADER_RE matches this)
    for i, h in enumerate(hits, 1):
        sid, name = str(h.get("session_id") or ""), str(h.get("session_name") or "")
        here = current is not None and sid == current
        head = f"{i}. {hit_source(sid, name, here)} · {h.get('date', '?')} · {h.get('role', '?')}"
        if name and sid and not here:
            head += f" ({sid})"
        parts = h.get("parts") or []
        if len(parts) > 1:  # a unit: the ask, the match, the answer, each on its line
            body = "\n".join(f"   {p.get('role', '?')}: {one_line(str(p.get('excerpt', '')), LINE_CHARS)}" for p in parts)
            lines.append(f"{head}\n{body}")
        else:
            lines.append(f"{head}\n   {one_line(str(h.get('excerpt', '')), LINE_CHARS)}")
    return "\n".join(lines)
