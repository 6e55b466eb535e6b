"""``file_operations``' writing side: write, create, append, edit (replace, multi-replace,
insert), delete, rename, create a directory.

Every change is asked for through ``clio.tools.file_guard`` (``approve``: protected paths,
``/undo``'s before-images) and reaches disk atomically with the file's mode kept; its diff is
recorded once written. Files created here are recorded in ``ctx.created_files`` so the commit
tool can stage them (and only them) among untracked files.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Any

from clio.store.atomic import atomic_write_text
from clio.tools.context import ToolContext, ToolError, need
from clio.tools.file_guard import approve as _approve
from clio.tools.file_guard import change_of as _change
from clio.tools.file_guard import created as _created
from clio.tools.file_guard import display
from clio.tools.file_guard import done as _done
from clio.tools.file_guard import old_text as _old_text
from clio.tools.file_read import MAX_TEXT_BYTES, check_text
from clio.tools.paths import resolve_path, unresolved_path
from clio.wording import plural

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "append_file",
    "create_directory",
    "create_file",
    "delete_file",
    "insert_at_line",
    "multi_replace",
    "rename_file",
    "replace_string",
    "write_file",
]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write(p: Path, text: str) -> None:
    """Atomic write that keeps an existing file's mode (new files get 0666 minus umask)."""
    try:
        mode = stat.S_IMODE(p.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    if p.is_dir():
        raise ToolError(f"{p} is a directory")
    atomic_write_text(p, text, clio_state=False)
    os.chmod(p, mode)


def _read(ctx: ToolContext, p: Path) -> str:
    """A text file's whole content (decoded UTF-8, line endings untouched), for an edit."""
    size = check_text(ctx, p)
    if size > MAX_TEXT_BYTES:
        raise ToolError(
            f"{display(ctx, p)} is too large to edit in place ({size:,} bytes); read_file reads it"
            " by line range (start_line, end_line) and grep_search searches it"
        )
    return p.read_bytes().decode("utf-8", errors="replace")


def _read_lf(ctx: ToolContext, p: Path) -> tuple[str, str]:
    """Content with CRLF turned into LF for matching, plus the newline to write back."""
    text = _read(ctx, p)
    if "\r\n" in text:
        return text.replace("\r\n", "\n"), "\r\n"
    return text, "\n"


def _write_lf(p: Path, text: str, newline: str) -> None:
    _write(p, text.replace("\n", newline) if newline != "\n" else text)


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _lines(s: str) -> int:
    return s.count("\n") + (1 if s and not s.endswith("\n") else 0)


def write_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    p = resolve_path(ctx, need(args, "path"))
    content = need(args, "content")
    existed = p.exists()
    verb = "overwrite" if existed else "create"
    change = _change(ctx, p, _old_text(p) if existed else None, content)
    _approve(ctx, f"{verb} {display(ctx, p)} ({plural(_lines(content), 'line')})", p, change=change)
    _write(p, content)
    _done(ctx, change, p)
    if not existed:
        _created(ctx, p)
    return f"{'wrote' if existed else 'created'} {display(ctx, p)} ({plural(_lines(content), 'line')}, {len(content.encode()):,} bytes)"


def create_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    p = resolve_path(ctx, need(args, "path"))
    content = args.get("content") or ""
    if not isinstance(content, str):
        raise ToolError("'content' must be a string")
    if p.exists():
        raise ToolError(
            f"{display(ctx, p)} already exists; use write_file to overwrite it or replace_string to edit it"
        )
    change = _change(ctx, p, None, content)
    _approve(ctx, f"create {display(ctx, p)} ({plural(_lines(content), 'line')})", p, change=change)
    _write(p, content)
    _done(ctx, change, p)
    _created(ctx, p)
    return f"created {display(ctx, p)} ({plural(_lines(content), 'line')})"


def append_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    p = resolve_path(ctx, need(args, "path"))
    content = need(args, "content")
    existed = p.exists()
    old, newline = _read_lf(ctx, p) if existed else ("", "\n")
    sep = "\n" if old and not old.endswith("\n") else ""
    new = old + sep + content.replace("\r\n", "\n")
    change = _change(ctx, p, old if existed else None, new)
    _approve(ctx, f"append {plural(_lines(content), 'line')} to {display(ctx, p)}", p, change=change)
    _write_lf(p, new, newline)
    _done(ctx, change, p)
    if not existed:
        _created(ctx, p)
    return f"appended {plural(_lines(content), 'line')} to {display(ctx, p)}"


def _apply_one(text: str, old: Any, new: Any, where: str) -> tuple[str, int]:
    """Replace the single occurrence of ``old``; returns (new text, line of the edit)."""
    if not isinstance(old, str) or old == "":
        raise ToolError(f"{where}: 'old_string' must be a non-empty string")
    if not isinstance(new, str):
        raise ToolError(f"{where}: 'new_string' must be a string")
    old = old.replace("\r\n", "\n")
    count = text.count(old)
    if count == 0:
        hint = ""
        if old.strip() and text.count(old.strip()) == 1:
            hint = (
                " (it matches once without its leading/trailing whitespace: check indentation and line ends)"
            )
        raise ToolError(
            f"{where}: old_string was not found (0 matches){hint}. Copy the exact current text, "
            "including whitespace and indentation, from read_file"
        )
    if count > 1:
        raise ToolError(
            f"{where}: old_string matches {count} times; it must match exactly once. "
            "Add surrounding lines to old_string to make it unique"
        )
    index = text.index(old)
    return text[:index] + new.replace("\r\n", "\n") + text[index + len(old) :], _line_of(text, index)


def replace_string(ctx: ToolContext, args: dict[str, Any]) -> str:
    p = resolve_path(ctx, need(args, "path"))
    text, newline = _read_lf(ctx, p)
    if "old_string" not in args:
        raise ToolError("'old_string' is required for operation 'replace_string'")
    new_text, line = _apply_one(text, args.get("old_string"), args.get("new_string", ""), display(ctx, p))
    change = _change(ctx, p, text, new_text)
    _approve(ctx, f"edit {display(ctx, p)} at line {line}", p, change=change)
    _write_lf(p, new_text, newline)
    _done(ctx, change, p)
    new_lines = _lines(str(args.get("new_string", "")))
    return f"replaced 1 occurrence in {display(ctx, p)} (now lines {line}-{line + max(new_lines, 1) - 1})"


def multi_replace(ctx: ToolContext, args: dict[str, Any]) -> str:
    p = resolve_path(ctx, need(args, "path"))
    reps = need(args, "replacements", list)
    if not reps:
        raise ToolError("'replacements' is empty")
    text, newline = _read_lf(ctx, p)
    original = text
    lines: list[int] = []
    for i, rep in enumerate(reps, start=1):
        if not isinstance(rep, dict):
            raise ToolError(
                f"replacement #{i} must be an object with old_string and new_string; nothing was changed"
            )
        try:
            text, line = _apply_one(
                text, rep.get("old_string"), rep.get("new_string", ""), f"replacement #{i}"
            )
        except ToolError as exc:
            raise ToolError(f"{exc}; nothing was changed in {display(ctx, p)}") from None
        lines.append(line)
    change = _change(ctx, p, original, text)
    _approve(ctx, f"edit {display(ctx, p)} ({len(reps)} replacements)", p, change=change)
    _write_lf(p, text, newline)
    _done(ctx, change, p)
    return f"applied {len(reps)} replacements in {display(ctx, p)} (at lines {', '.join(map(str, lines))})"


def insert_at_line(ctx: ToolContext, args: dict[str, Any]) -> str:
    p = resolve_path(ctx, need(args, "path"))
    line = need(args, "line", int)
    content = need(args, "content").replace("\r\n", "\n")
    text, newline = _read_lf(ctx, p)
    lines = text.splitlines(keepends=True)
    if line < 1 or line > len(lines) + 1:
        raise ToolError(
            f"'line' must be between 1 and {len(lines) + 1} for {display(ctx, p)} ({plural(len(lines), 'line')})"
        )
    if not content.endswith("\n"):
        content += "\n"
    if line == len(lines) + 1 and lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    lines.insert(line - 1, content)
    change = _change(ctx, p, text, "".join(lines))
    _approve(ctx, f"insert {plural(_lines(content), 'line')} into {display(ctx, p)} at line {line}", p, change=change)
    _write_lf(p, "".join(lines), newline)
    _done(ctx, change, p)
    return f"inserted {plural(_lines(content), 'line')} into {display(ctx, p)} before line {line}"


def delete_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    p = unresolved_path(ctx, need(args, "path"))
    if not p.exists() and not p.is_symlink():
        raise ToolError(f"{display(ctx, p)} does not exist")
    if p.resolve() == ctx.root.resolve():
        raise ToolError("refusing to delete the project root")
    is_dir = p.is_dir() and not p.is_symlink()
    if is_dir and any(p.iterdir()):
        raise ToolError(
            f"{display(ctx, p)} is a non-empty directory; delete its files first or use the terminal"
        )
    change = None if is_dir or p.is_symlink() else _change(ctx, p, _old_text(p), None)
    _approve(ctx, f"delete {display(ctx, p)}", p, change=change)
    if is_dir:
        p.rmdir()
    else:
        p.unlink()
    if change is not None:
        _done(ctx, change, p)
    ctx.created_files.discard(str(p.resolve()))
    return f"deleted {display(ctx, p)}"


def rename_file(ctx: ToolContext, args: dict[str, Any]) -> str:
    src = unresolved_path(ctx, need(args, "path"))
    dst = resolve_path(ctx, need(args, "new_path"))
    if not src.exists() and not src.is_symlink():
        raise ToolError(f"{display(ctx, src)} does not exist")
    if dst.exists():
        raise ToolError(f"{display(ctx, dst)} already exists; delete it first or pick another name")
    _approve(ctx, f"rename {display(ctx, src)} -> {display(ctx, dst)}", src, dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    created = str(src.resolve())
    os.rename(src, dst)
    _done(ctx, None, src, dst)
    ctx.created_files.discard(created)
    _created(ctx, dst)  # the new name is clio's doing: the commit tool stages it with the old one's removal
    return f"renamed {display(ctx, src)} -> {display(ctx, dst)}"


def create_directory(ctx: ToolContext, args: dict[str, Any]) -> str:
    p = resolve_path(ctx, need(args, "path"))
    if p.is_dir():
        return f"{display(ctx, p)} already exists"
    if p.exists():
        raise ToolError(f"{display(ctx, p)} exists and is not a directory")
    _approve(ctx, f"create directory {display(ctx, p)}", p)
    p.mkdir(parents=True)
    _done(ctx, None, p)
    return f"created directory {display(ctx, p)}"
