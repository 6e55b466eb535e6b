"""Large tool results: stored whole, the model gets a preview and a handle to page through.

Stored under ``<session_dir>/results/<handle>.txt`` (written atomically) or, without a
session directory (incognito), in ``ctx.stored_results``. Handles look like
``terminal_operations-1a2b3c4d`` and are validated before they touch a path.

Every size here is a share of one number, ``ctx.result_chars`` (8,000 characters, less in a
small context window: ``clio.context.budget.Shares.result_chars``, set by the window): the preview shows its first 5/16 and last
3/16, a page is at most 7/8 of it (so a page, with its header, is never stored again).
"""

from __future__ import annotations

import re
import secrets
from typing import TYPE_CHECKING

from clio.context.budget import RESULT_CHARS
from clio.lazy_re import lazy
from clio.store.atomic import atomic_write_text
from clio.tools.context import ToolContext, ToolError

if TYPE_CHECKING:
    from clio.safety.redact import Redactor

__all__ = ["MAX_PAGE", "RESULT_CHARS", "maybe_store", "page_chars", "read_stored"]

MAX_PAGE = RESULT_CHARS * 7 // 8


def page_chars(ctx: ToolContext) -> int:
    """The longest page ``read_tool_result`` returns in this context."""
    return ctx.result_chars * 7 // 8


_HANDLE = lazy(r"^[A-Za-z0-9_]{1,48}-[0-9a-f]{8}$")


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


def _redactor(ctx: ToolContext) -> Redactor | None:
    """The session's redactor, from a typed ``Services`` or a plain dict of services."""
    return ctx.services.redactor


def maybe_store(ctx: ToolContext, tool_name: str, text: str, limit: int | None = None) -> str:
    """``text`` itself when short; else store it (secrets redacted, like the archive) and return a
    preview plus paging instructions (offsets count in the stored, redacted text)."""
    limit = ctx.result_chars if limit is None else limit
    if len(text) <= limit:
        return text
    redactor = _redactor(ctx)
    if redactor is not None:
        text = redactor.redact(text)[0]
    handle = _new_handle(tool_name)
    if ctx.session_dir is not None:
        atomic_write_text(ctx.session_dir / "results" / f"{handle}.txt", text, durable=False)
    else:
        ctx.stored_results[handle] = text
    head = _cut_head(text, limit * 5 // 16)
    tail = _cut_tail(text, limit * 3 // 16)
    cut = len(text) - len(head) - len(tail)
    return (
        f"{head}\n[... {cut:,} chars not shown ...]\n{tail}\n"
        f"[The full result ({len(text):,} chars) is stored as handle '{handle}'. Read more with "
        f'file_operations {{"operation": "read_tool_result", "handle": "{handle}", '
        f'"offset": {len(head)}}} (offset in characters; pages of up to {page_chars(ctx):,}).]'
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


def read_stored(ctx: ToolContext, handle: str, offset: int = 0, length: int | None = None) -> str:
    """A page of a stored result, with a header saying which characters it covers."""
    text = _load(ctx, handle)
    total = len(text)
    if offset < 0:
        raise ToolError("'offset' must be 0 or more")
    page = page_chars(ctx)
    length = page if length is None else length
    if length <= 0:
        raise ToolError("'length' must be positive")
    if offset >= total:
        raise ToolError(f"offset {offset} is past the end of '{handle}' ({total:,} chars)")
    length = min(length, page)
    end = min(total, offset + length)
    more = f"; next offset {end}" if end < total else "; end of result"
    return f"[{handle}: chars {offset}-{end} of {total}{more}]\n{text[offset:end]}"
