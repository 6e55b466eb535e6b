"""Listing and searching for ``file_operations``: list_dir, file_search (glob), grep_search (regex).

Walks skip version-control, cache and virtualenv folders, and every private path (``$CLIO_HOME``,
the credential stores: ``ctx.private``), counted but never named; every result list is capped
and says so when it is. grep_search reads each file as a stream (``streamed.py``), so a file of
any size is searched (up to bounds it names), and it says what it skipped and why.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from clio.safety.sandbox import is_inside
from clio.tools.context import ToolContext, ToolError, need
from clio.tools.paths import resolve_path
from clio.tools.streamed import SNIFF, is_binary, lines_of, size_text
from clio.wording import plural

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
MAX_GREP_FILE = 256 << 20  # bytes of one file a grep reads
MAX_GREP_TOTAL = 1 << 30  # bytes one grep reads in all


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


class _Private:
    """The private paths of one listing or search, and how many of them it left out."""

    def __init__(self, ctx: ToolContext) -> None:
        self.private = ctx.private
        self.forms = ctx.private.forms()
        self.count = 0

    def skip(self, path: str, link: bool) -> bool:
        """Whether ``path`` (real when ``link`` is False) is private: a link is resolved first."""
        hit = self.private.reason(path, self.forms) if link else self.private.covers(path, self.forms)
        if hit is not None:
            self.count += 1
        return hit is not None

    def note(self) -> str:
        return _count(self.count, "private path") + (" (clio's own folder, credential stores: never read)" if self.count else "")


def _walk(base: Path, private: _Private) -> Iterator[Path]:
    """Files under ``base`` in sorted order, skipping SKIP_DIRS and private paths (symlinked
    folders are not followed; ``base`` is resolved, so only links need resolving)."""
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(
            d for d in dirnames
            if d not in SKIP_DIRS and not private.skip(os.path.join(dirpath, d), os.path.islink(os.path.join(dirpath, d)))
        )  # fmt: skip
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if not private.skip(path, os.path.islink(path)):
                yield Path(path)


def _base(ctx: ToolContext, args: dict[str, Any]) -> Path:
    base = resolve_path(ctx, args.get("path") or ".")
    if not base.exists():
        raise ToolError(f"{args.get('path')} does not exist")
    return base


def list_dir(ctx: ToolContext, args: dict[str, Any]) -> str:
    base = _base(ctx, args)
    if not base.is_dir():
        raise ToolError(f"{_display(ctx, base)} is not a directory")
    private = _Private(ctx)
    entries = sorted(base.iterdir(), key=lambda e: (not e.is_dir(), e.name.lower()))
    entries = [e for e in entries if e.name != ".git" and not private.skip(str(e), True)]
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
            shown.append(f"{e.name}  ({size_text(size)})")
    head = f"{_display(ctx, base) or '.'}/ ({plural(len(entries), 'entry', 'entries')})"
    left_out = f"\n[not listed: {private.note()}]" if private.count else ""
    if not entries:
        return f"{head}\n(empty){left_out}"
    more = f"\n[... {len(entries) - MAX_LIST} more entries]" if len(entries) > MAX_LIST else ""
    return head + "\n" + "\n".join(shown) + more + left_out


def file_search(ctx: ToolContext, args: dict[str, Any]) -> str:
    pattern = need(args, "pattern")
    base = _base(ctx, args)
    match = _matcher(pattern)
    limit = min(int(args.get("max_results") or MAX_FILES), MAX_FILES * 5)
    matches: list[str] = []
    root = ctx.root.resolve()
    private = _Private(ctx)
    for f in _walk(base, private):
        if match(f.relative_to(base).as_posix()):
            matches.append(_display(ctx, f) if is_inside(f, root) else str(f))
    matches.sort()
    total = len(matches)
    found = matches[:limit]
    left_out = f" [skipped: {private.note()}]" if private.count else ""
    if not found:
        return f"no files match '{pattern}' under {_display(ctx, base) or '.'}{left_out}"
    more = f"\n[... {total - len(found)} more; narrow the pattern]" if total > len(found) else ""
    head = f"{plural(total, 'file')} match{'es' if total == 1 else ''} '{pattern}'"
    return head + "\n" + "\n".join(found) + more + (f"\n{left_out.strip()}" if left_out else "")


@dataclass
class _Skipped:
    """What a grep left out, and why: told with the result so that "no matches" is the truth."""

    binary: int = 0
    private: str = ""  # what of clio's own folder and the credential stores was left out
    symlinks: int = 0
    special: int = 0
    unreadable: int = 0
    unsearched: int = 0
    partly: list[tuple[str, str]] = field(default_factory=list)

    def text(self) -> str:
        parts = [
            _count(self.binary, "binary file"),
            _count(self.symlinks, "symlink") + (" (not followed)" if self.symlinks else ""),
            _count(self.special, "special file") + (" (pipe, socket or device)" if self.special else ""),
            _count(self.unreadable, "unreadable file"),
            _count(self.unsearched, "file")
            + (f" not searched (the search stops after reading {size_text(MAX_GREP_TOTAL)})" if self.unsearched else ""),
        ]
        parts.append(self.private)
        said = [p for p in parts if p] + [f"{name} searched only in part: {why}" for name, why in self.partly]
        return "; ".join(said)


def _count(n: int, what: str) -> str:
    return plural(n, what) if n else ""


def _grep_file(fh: BinaryIO, rx: re.Pattern[str], name: str, budget: int, hits: list[str], limit: int) -> bool:
    """Append ``name:line: text`` for each matching line of an open file; False once ``limit`` is hit."""
    for piece in lines_of(fh, budget):
        if rx.search(piece.text):
            if len(hits) >= limit:
                return False
            text = piece.text.strip()
            if len(text) > MAX_LINE:
                text = text[:MAX_LINE] + " [...]"
            hits.append(f"{name}:{piece.lineno}: {text}")
    return True


def grep_search(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Matching lines of every text file under ``path``, each file read as a stream (any size),
    at most MAX_GREP_FILE bytes of one file and MAX_GREP_TOTAL of the whole search."""
    pattern = need(args, "pattern")
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None
    base = _base(ctx, args)
    include = args.get("include")
    match = _matcher(include) if isinstance(include, str) and include.strip() else None
    limit = max(1, min(int(args.get("max_results") or 50), MAX_GREP))
    private = _Private(ctx)
    files = [base] if base.is_file() else _walk(base, private)
    hits: list[str] = []
    skipped = _Skipped()
    capped = False
    n_files = scanned = 0
    for f in files:
        if match is not None and f != base and not match(f.relative_to(base).as_posix()):
            continue
        budget = min(MAX_GREP_FILE, MAX_GREP_TOTAL - scanned)
        try:
            st = f.lstat()
            if stat.S_ISLNK(st.st_mode):
                skipped.symlinks += 1
                continue
            if not stat.S_ISREG(st.st_mode):
                skipped.special += 1
                continue
            if budget <= 0:
                skipped.unsearched += 1
                continue
            with f.open("rb") as fh:
                if is_binary(fh.read(SNIFF)):
                    skipped.binary += 1
                    continue
                fh.seek(0)
                n_files += 1
                name = _display(ctx, f)
                capped = not _grep_file(fh, rx, name, budget, hits, limit)
                read = fh.tell()
        except OSError:
            skipped.unreadable += 1
            continue
        scanned += read
        if capped:
            break
        if read < st.st_size:
            why = f"its first {size_text(read)} of {size_text(st.st_size)}"
            skipped.partly.append((name, why + (" (the limit for one file)" if budget == MAX_GREP_FILE else "")))
    skipped.private = private.note()
    left_out = skipped.text()
    where = _display(ctx, base) or "."
    if not hits:
        note = f" (skipped: {left_out})" if left_out else ""
        return f"no matches for /{pattern}/ in {plural(n_files, 'file')} under {where}{note}"
    tail = f"\n[stopped at {limit} matches; narrow the pattern, path or include]" if capped else ""
    if left_out:
        tail += f"\n[skipped: {left_out}]"
    return "\n".join(hits) + tail
