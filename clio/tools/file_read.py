"""``file_operations``' reading side: read a line range, tell whether a path exists, describe a
file, page a stored large result. Nothing here changes a file.

``check_text`` (a path must be an existing text file) and ``MAX_TEXT_BYTES`` (the largest file
read whole) are shared with the writing side, ``clio.tools.file_edit``.
"""

from __future__ import annotations

import stat
import time
from typing import TYPE_CHECKING, Any

from clio.tools import streamed
from clio.tools.context import ToolContext, ToolError, need
from clio.tools.file_guard import display
from clio.tools.paths import resolve_path, unresolved_path
from clio.tools.results import read_stored
from clio.wording import plural

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["MAX_TEXT_BYTES", "check_text", "file_exists", "file_info", "read_file", "read_tool_result"]

MAX_READ_LINES = 800
MAX_READ_CHARS = 40_000
MAX_TEXT_BYTES = 20_000_000


def check_text(ctx: ToolContext, p: Path) -> int:
    """The size of a text file; a missing path, a folder or a binary file is a ToolError."""
    if not p.exists():
        raise ToolError(f"{display(ctx, p)} does not exist")
    if p.is_dir():
        raise ToolError(f"{display(ctx, p)} is a directory; use list_dir")
    size = p.stat().st_size
    with p.open("rb") as f:
        if streamed.is_binary(f.read(streamed.SNIFF)):
            raise ToolError(f"{display(ctx, p)} is a binary file ({size:,} bytes)")
    return size


def read_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    """A line range, read as a stream: a file of any size, at most MAX_READ_LINES/CHARS shown."""
    p = resolve_path(ctx, need(args, "path"))
    size = check_text(ctx, p)
    name = display(ctx, p)
    start = max(1, int(args.get("start_line") or 1))
    end = int(args["end_line"]) if args.get("end_line") else None
    got = streamed.read_range(p, start, max(end, start) if end else None, MAX_READ_LINES, MAX_READ_CHARS)
    if got.total == 0:
        return f"{name} (empty file)"
    if got.last < start:
        raise ToolError(f"start_line {start} is past the end of {name} ({plural(got.total or 0, 'line')})")
    of = f"of {got.total}" if got.total is not None else f"of a {streamed.size_text(size)} file"
    note = ""
    if got.more:
        note = f"\n[... stopped at line {got.last}; read on with start_line={got.last + 1}]"
    return f"{name} (lines {start}-{got.last} {of})\n{got.body}{note}"


def file_exists(ctx: ToolContext, args: dict[str, Any]) -> str:
    p = resolve_path(ctx, need(args, "path"))
    if p.is_dir():
        return f"yes: {display(ctx, p)} is a directory"
    if p.exists():
        return f"yes: {display(ctx, p)} is a file ({p.stat().st_size:,} bytes)"
    return f"no: {display(ctx, p)} does not exist"


def file_info(ctx: ToolContext, args: dict[str, Any]) -> str:
    raw = need(args, "path")
    link = unresolved_path(ctx, raw)
    p = resolve_path(ctx, raw)
    if not p.exists():
        raise ToolError(f"{display(ctx, p)} does not exist")
    st = p.stat()
    mtime = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(st.st_mtime))
    out = [f"path: {display(ctx, link)}"]
    if link.is_symlink():
        out.append(f"symlink to: {display(ctx, p)}")
    if p.is_dir():
        out += ["kind: directory", f"entries: {sum(1 for _ in p.iterdir())}"]
    else:
        with p.open("rb") as fh:
            head = fh.read(8192)
        binary = b"\x00" in head
        out.append(f"kind: {'binary file' if binary else 'text file'}")
        out.append(f"size: {st.st_size:,} bytes")
        if not binary and st.st_size <= MAX_TEXT_BYTES:
            with p.open("rb") as fh:
                data = fh.read()
            n_lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
            out.append(f"lines: {n_lines}")
    out += [f"modified: {mtime}", f"mode: {stat.filemode(st.st_mode)}"]
    return "\n".join(out)


def read_tool_result(ctx: ToolContext, args: dict[str, Any]) -> str:
    handle = need(args, "handle")
    offset = int(args.get("offset") or 0)
    length = int(args["length"]) if args.get("length") else None
    return read_stored(ctx, handle, offset, length)
