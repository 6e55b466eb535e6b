"""/diff: every change clio made to files in this session as one unified diff, net per file: from
what the file held before clio's first change to it (the session's snapshots, store/snapshots.py)
to what it holds now. A file someone changed after clio's last change to it is named (its diff
then includes their change too); a file whose before-image was not kept is named with why.
Turns put back by /undo are no longer in the snapshots, so they are not shown."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from clio.app.undo import shown_path
from clio.store.snapshots import Kept, Snapshots, missing_reason, sha
from clio.tools.diffs import unified


@dataclass
class SessionDiff:
    diffs: list[str] = field(default_factory=list)  # one unified diff per file that differs
    notes: list[str] = field(default_factory=list)  # files changed by others, copies missing...
    files: int = 0  # files clio changed in the session


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")


def session_diff(snapshots: Snapshots, root: Path) -> SessionDiff:
    first: dict[str, Kept] = {}
    last_after: dict[str, str] = {}
    for turn in snapshots.turns:  # oldest first
        for kept in turn.files:
            first.setdefault(kept.path, kept)
            last_after[kept.path] = kept.after
    out = SessionDiff(files=len(first))
    for path in sorted(first):
        kept, shown = first[path], shown_path(path, root)
        before = snapshots.before(kept)
        if kept.existed and before is None:
            out.notes.append(f"{shown}: no diff, {missing_reason(kept)}")
            continue
        try:
            now = Path(path).read_bytes() if Path(path).is_file() else None
        except OSError:
            now = None
        if last_after[path] and sha(now) != last_after[path]:
            out.notes.append(f"{shown}: changed after clio's last change to it (by you or another program); shown as it is now")
        if now == before:
            out.notes.append(f"{shown}: as it was before clio changed it")
            continue
        out.diffs.append(unified(shown, _text(before), _text(now)))
    return out
