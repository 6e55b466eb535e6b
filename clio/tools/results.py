"""Large tool results: stored whole, the model gets a preview and a handle to page through.

Stored under ``<session_dir>/results/<handle>.txt`` (written atomically) or, without a
session directory (incognito), in ``ctx.stored_results``. Handles look like
``terminal_operations-1a2b3c4d`` and are validated before they touch a path.
"""

from __future__ import annotations

import re
import secrets

from clio.store.atomic import atomic_write_text
from clio.tools.registry import ToolContext, ToolError

__all__ = ["HEAD_CHARS", "MAX_PAGE", "TAIL_CHARS", "maybe_store", "read_stored"]

HEAD_CHARS = 2500
TAIL_CHARS = 1500
MAX_PAGE = 7000  # a page (plus its header) stays under the 8,000-char storing limit
_HANDLE = re.compile(r"^[A-Za-z0-9_]{1,48}-[0-9a-f]{8}$")


def _new_handle(tool_name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_]", "_", tool_name)[:48] or "result"
    return f"{safe}-{secrets.token_hex(4)}"


def _cut_head(text: str, n: int) -> str:
    """The first ~n chars, ending at a line break when one is near."""
    head = text[:n]
    nl = head.rfind("\n")
    return head[: nl + 1] if nl > n // 2 else head


def _cut_tail(text: str, n: int) -> str:
    tail = text[-n:]
    nl = tail.find("\n")
    return tail[nl + 1 :] if 0 <= nl < n // 2 else tail


def maybe_store(ctx: ToolContext, tool_name: str, text: str, limit: int = 8000) -> str:
    """``text`` itself when short; else store it and return a preview plus paging instructions."""
    if len(text) <= limit:
        return text
    handle = _new_handle(tool_name)
    if ctx.session_dir is not None:
        atomic_write_text(ctx.session_dir / "results" / f"{handle}.txt", text, durable=False)
    else:
        ctx.stored_results[handle] = text
    head = _cut_head(text, HEAD_CHARS)
    tail = _cut_tail(text, TAIL_CHARS)
    cut = len(text) - len(head) - len(tail)
    return (
        f"{head}\n[... {cut:,} chars not shown ...]\n{tail}\n"
        f"[The full result ({len(text):,} chars) is stored as handle '{handle}'. Read more with "
        f'file_operations {{"operation": "read_tool_result", "handle": "{handle}", '
        f'"offset": {len(head)}, "length": {MAX_PAGE}}} (offset and length in characters).]'
    )


def _load(ctx: ToolContext, handle: str) -> str:
    if not isinstance(handle, str) or not _HANDLE.match(handle):
        raise ToolError(
            f"'{handle}' is not a valid result handle (it looks like 'terminal_operations-1a2b3c4d')"
        )
    if handle in ctx.stored_results:
        return ctx.stored_results[handle]
    if ctx.session_dir is not None:
        path = ctx.session_dir / "results" / f"{handle}.txt"
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            pass
    raise ToolError(f"no stored result with handle '{handle}' in this session")


def read_stored(ctx: ToolContext, handle: str, offset: int = 0, length: int = MAX_PAGE) -> str:
    """A page of a stored result, with a header saying which characters it covers."""
    text = _load(ctx, handle)
    total = len(text)
    if offset < 0:
        raise ToolError("'offset' must be 0 or more")
    if length <= 0:
        raise ToolError("'length' must be positive")
    if offset >= total:
        raise ToolError(f"offset {offset} is past the end of '{handle}' ({total:,} chars)")
    length = min(length, MAX_PAGE)
    end = min(total, offset + length)
    more = f"; next offset {end}" if end < total else "; end of result"
    return f"[{handle}: chars {offset}-{end} of {total}{more}]\n{text[offset:end]}"
