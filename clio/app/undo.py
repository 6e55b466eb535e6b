"""/undo: the files the last turns changed put back from their snapshots (store/snapshots.py),
newest turn first; a file someone changed since clio's change is put back only if the user says
so. What was undone is told to the model with the user's next message."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from clio.memory.behaviours import Behaviours
from clio.store.snapshots import Restored, Snapshots


def undo(
    snapshots: Snapshots | None, turns: int, confirm: Callable[[str], bool], root: Path, skills: Behaviours
) -> tuple[list[Restored], str]:
    """Put back what the last ``turns`` turns changed: (what was done, the note that tells the
    model, "" when nothing was). An undo is an implicit signal against those turns' behaviours."""
    if snapshots is None:
        return [], ""
    undone = [t.turn for t in snapshots.last(turns)]
    results = undo_turns(snapshots, turns, confirm, root)
    if not results:
        return [], ""
    skills.undone(undone)
    return results, undo_note(results, root)


def undo_turns(snapshots: Snapshots, turns: int, confirm: Callable[[str], bool], root: Path) -> list[Restored]:
    results: list[Restored] = []
    for turn in snapshots.last(turns):
        for kept in reversed(turn.files):
            shown = shown_path(kept.path, root)
            if snapshots.changed_since(kept) and not confirm(
                f"{shown} was changed after clio changed it; put back the version from before clio's change anyway?"
            ):
                results.append(Restored(kept.path, "skipped: changed since clio's change, left as it is"))
                continue
            results.append(snapshots.restore(turn, kept))
        snapshots.forget(turn)
    return results


def nothing_undone(snapshots: Snapshots | None, turns: int) -> str:
    """What to tell the user when ``/undo turns`` found nothing to put back."""
    done, earlier = snapshots.already_undone(turns) if snapshots is not None else (0, False)
    if not done:
        return "Nothing to undo: no file was changed through clio's file tool in this session."
    which = "The last turn's changes were" if turns == 1 else f"The last {turns} turns' changes were"
    before = "it" if turns == 1 else "them"
    more = f"; /undo {turns + 1} for the turn before" if earlier else f"; no turn before {before} changed files"
    return f"{which} already undone{more}."


def undo_note(results: list[Restored], root: Path) -> str:
    done = [f"{shown_path(r.path, root)} ({r.outcome})" for r in results]
    return (
        "[clio: the user ran /undo; these file changes of yours were reverted: "
        + "; ".join(done)
        + ". Read files again before editing them.]"
    )


def shown_path(path: str, root: Path) -> str:
    """A snapshot's absolute path as the user sees it: relative to the project when inside it."""
    prefix = str(root) + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path
