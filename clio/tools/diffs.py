"""Unified diffs of the changes the file tool makes: shown before approval, after the fact, and
kept with the tool's result in the session (its ``meta``, never sent to the model) for the export.

Pure: texts in, diff text out. ``unified`` is difflib's unified diff with ``a/``/``b/`` labels (an absolute path, outside
the project, as it is) and
3 lines of context; a file over :data:`MAX_DIFF_CHARS` or with NUL bytes gets a one-line note
instead. ``clip`` keeps the first lines of a long diff and says how many more there are.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

MAX_DIFF_CHARS = 400_000  # per side: a bigger file is not diffed line by line
SHOWN_LINES = 40  # lines of a diff shown in the terminal before "d shows all"


@dataclass(frozen=True)
class Change:
    """One change the file tool made (or is about to make) to one path."""

    path: str  # as shown to the user (relative to the project)
    diff: str  # unified diff, or a one-line note for binary/huge files

    @property
    def stat(self) -> tuple[int, int]:
        return stat(self.diff)


def unified(path: str, before: str | None, after: str | None) -> str:
    """The unified diff of ``path`` from ``before`` to ``after`` (None: the file does not exist)."""
    for side in (before, after):
        if side is not None and ("\x00" in side or len(side) > MAX_DIFF_CHARS):
            old, new = len(before or ""), len(after or "")
            return f"(no line diff for {path}: binary or over {MAX_DIFF_CHARS:,} characters; {old:,} -> {new:,} characters)"
    a = (before or "").splitlines(keepends=True)
    b = (after or "").splitlines(keepends=True)
    # a/ and b/ prefix a path relative to the project; an absolute one (outside it) is shown as is
    old_label, new_label = (path, path) if path.startswith("/") else (f"a/{path}", f"b/{path}")
    lines = list(
        difflib.unified_diff(
            a,
            b,
            fromfile="/dev/null" if before is None else old_label,
            tofile="/dev/null" if after is None else new_label,
            n=3,
        )
    )
    out = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line[:-1])
        else:  # the last line of a side without a final newline
            out += [line, "\\ No newline at end of file"]
    return "\n".join(out)


def stat(diff: str) -> tuple[int, int]:
    """(lines added, lines removed) of a unified diff."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def clip(diff: str, max_lines: int = SHOWN_LINES) -> tuple[str, int]:
    """(the first ``max_lines`` lines of ``diff``, how many lines were left out)."""
    lines = diff.splitlines()
    if len(lines) <= max_lines:
        return diff, 0
    return "\n".join(lines[:max_lines]), len(lines) - max_lines
