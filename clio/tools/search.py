"""Listing and searching for ``file_operations``: list_dir, file_search (glob), grep_search (regex).

Walks skip version-control, cache and virtualenv folders; every result list is capped
and says so when it is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clio.safety.sandbox import is_inside
from clio.tools.paths import resolve_path
from clio.tools.registry import ToolContext, ToolError, need

__all__ = ["SKIP_DIRS", "file_search", "glob_regex", "grep_search", "list_dir"]

SKIP_DIRS = frozenset(
    {
        ".git",
        ".clio",
        "node_modules",
        "__pycache__",
        ".venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)
MAX_LIST = 500
MAX_FILES = 200
MAX_GREP = 500
MAX_LINE = 240
MAX_GREP_BYTES = 2_000_000


def _display(ctx: ToolContext, p: Path) -> str:
    try:
        rel = str(p.relative_to(ctx.root.resolve()))
    except ValueError:
        return str(p)
    return rel


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regex over '/'-separated relative paths: ``**`` spans folders, ``*`` does not."""
    i, out = 0, []
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pattern.find("]", i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : j].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j
        elif c == "{":
            j = pattern.find("}", i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                out.append("(?:" + "|".join(re.escape(a) for a in pattern[i + 1 : j].split(",")) + ")")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def _matcher(pattern: str) -> Any:
    """A predicate on a relative path; a pattern without '/' matches the file name at any depth."""
    pattern = pattern.strip().removeprefix("./")
    rx = glob_regex(pattern)
    if "/" not in pattern:
        return lambda rel: bool(rx.match(rel.rsplit("/", 1)[-1]))
    return lambda rel: bool(rx.match(rel))


def _walk(base: Path) -> Iterator[Path]:
    """Files under ``base`` in sorted order, skipping SKIP_DIRS (symlinked folders are not followed)."""
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            yield Path(dirpath) / name


def _base(ctx: ToolContext, args: dict[str, Any]) -> Path:
    base = resolve_path(ctx, args.get("path") or ".")
    if not base.exists():
        raise ToolError(f"{args.get('path')} does not exist")
    return base


def list_dir(ctx: ToolContext, args: dict[str, Any]) -> str:
    base = _base(ctx, args)
    if not base.is_dir():
        raise ToolError(f"{_display(ctx, base)} is not a directory")
    entries = sorted(base.iterdir(), key=lambda e: (not e.is_dir(), e.name.lower()))
    entries = [e for e in entries if e.name != ".git"]
    shown = []
    for e in entries[:MAX_LIST]:
        if e.is_dir():
            shown.append(e.name + "/")
        elif e.is_symlink():
            shown.append(f"{e.name} -> {os.readlink(e)}")
        else:
            try:
                size = e.stat().st_size
            except OSError:
                size = 0
            shown.append(f"{e.name}  ({_size(size)})")
    head = f"{_display(ctx, base) or '.'}/ ({len(entries)} entries)"
    if not entries:
        return f"{head}\n(empty)"
    more = f"\n[... {len(entries) - MAX_LIST} more entries]" if len(entries) > MAX_LIST else ""
    return head + "\n" + "\n".join(shown) + more


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"


def file_search(ctx: ToolContext, args: dict[str, Any]) -> str:
    pattern = need(args, "pattern")
    base = _base(ctx, args)
    match = _matcher(pattern)
    limit = min(int(args.get("max_results") or MAX_FILES), MAX_FILES * 5)
    matches: list[str] = []
    root = ctx.root.resolve()
    for f in _walk(base):
        if match(f.relative_to(base).as_posix()):
            matches.append(_display(ctx, f) if is_inside(f, root) else str(f))
    matches.sort()
    total = len(matches)
    found = matches[:limit]
    if not found:
        return f"no files match '{pattern}' under {_display(ctx, base) or '.'}"
    more = f"\n[... {total - len(found)} more; narrow the pattern]" if total > len(found) else ""
    return f"{total} files match '{pattern}'\n" + "\n".join(found) + more


def grep_search(ctx: ToolContext, args: dict[str, Any]) -> str:
    pattern = need(args, "pattern")
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None
    base = _base(ctx, args)
    include = args.get("include")
    match = _matcher(include) if isinstance(include, str) and include.strip() else None
    limit = max(1, min(int(args.get("max_results") or 50), MAX_GREP))
    files = [base] if base.is_file() else _walk(base)
    hits: list[str] = []
    capped = False
    n_files = 0
    for f in files:
        if match is not None and f != base and not match(f.relative_to(base).as_posix()):
            continue
        try:
            if f.is_symlink() or f.stat().st_size > MAX_GREP_BYTES:
                continue
            data = f.read_bytes()
        except OSError:
            continue
        if b"\x00" in data[:4096]:
            continue
        n_files += 1
        name = _display(ctx, f)
        for lineno, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if rx.search(line):
                if len(hits) >= limit:
                    capped = True
                    break
                text = line.strip()
                if len(text) > MAX_LINE:
                    text = text[:MAX_LINE] + " [...]"
                hits.append(f"{name}:{lineno}: {text}")
        if capped:
            break
    if not hits:
        return f"no matches for /{pattern}/ in {n_files} files under {_display(ctx, base) or '.'}"
    tail = f"\n[stopped at {limit} matches; narrow the pattern, path or include]" if capped else ""
    return "\n".join(hits) + tail
