"""Where the file tool may write, and what each write leaves behind.

- :func:`display`: a path as the model sees it;
- :func:`protected_reason`: why a path (``.git/``, clio's own ``.clio/``) needs the user's own
  yes for this exact write, and is refused in one-shot mode;
- :func:`approve`: asks for a write (the approver may show its diff, ``ctx.proposed``; a path
  outside the project, possible without ``--sandbox``, is its own question every time) and, once
  approved, keeps what the paths hold for ``/undo`` (``Services.snapshots``);
- :func:`change_of` / :func:`done`: the write's unified diff, recorded once it is on disk (shown,
  kept in the result's meta) with what clio left there noted for ``/undo``.
"""

from __future__ import annotations

from pathlib import Path

from clio.safety.sandbox import is_inside
from clio.tools.context import ToolContext, ToolError, declined
from clio.tools.diffs import MAX_DIFF_CHARS, Change, unified


def display(ctx: ToolContext, p: Path) -> str:
    """A path as the model should see it: relative to the root when inside it."""
    try:
        rel = p.relative_to(ctx.root.resolve())
    except ValueError:
        return str(p)
    return str(rel) if str(rel) != "." else "."


def _git_dirs(ctx: ToolContext) -> list[Path]:
    """The repository's real git dirs when ``<root>/.git`` is a ``gitdir:`` pointer file (worktrees,
    submodules, --separate-git-dir): they need not have a ``.git`` component."""
    pointer = ctx.root / ".git"
    if not pointer.is_file():
        return []
    try:
        first = pointer.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return []
    if not first.startswith("gitdir:"):
        return []
    gitdir = Path(first.removeprefix("gitdir:").strip())
    if not gitdir.is_absolute():
        gitdir = ctx.root / gitdir
    out = [gitdir.resolve()]
    try:  # a linked worktree's git dir names the shared one
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return out
    if common:
        out.append((gitdir / common).resolve() if not Path(common).is_absolute() else Path(common).resolve())
    return out


def protected_reason(ctx: ToolContext, p: Path) -> str | None:
    """Why writing ``p`` is refused without explicit approval (None: an ordinary project path).

    Both ``p`` as given and its resolution are checked, so a symlink into ``.git`` is caught."""
    candidates = [p]
    try:
        candidates.append(p.resolve())
    except (OSError, RuntimeError):
        pass
    for q in candidates:
        parts = [part.lower() for part in q.parts]  # case-insensitive file systems
        if ".git" in parts or any(q == g or g in q.parents for g in _git_dirs(ctx)):
            return (
                "it is inside .git/, git's own folder: a change there (config, hooks, attributes) "
                "could make git run programs"
            )
        if ".clio" in parts:
            return (
                "it is inside .clio/, clio's own folder (settings, instructions, memory, sessions): "
                "a change there would alter how clio runs next time"
            )
    return None


def approve(ctx: ToolContext, summary: str, *paths: Path, change: Change | None = None) -> None:
    """Ask for the action (the approver may show ``change``, the diff it makes); raises when refused.
    Once approved, what the paths hold is kept for /undo; an approved ``change`` is recorded with
    :func:`done` once it is on disk."""
    ctx.proposed, ctx.proposed_shown = change, False
    try:
        _ask(ctx, summary, *paths)
    finally:
        ctx.proposed = None
    snapshots = ctx.services.snapshots
    if snapshots is not None:
        for p in paths:
            snapshots.keep(p)


def change_of(ctx: ToolContext, p: Path, before: str | None, after: str | None) -> Change:
    label = display(ctx, p)
    return Change(label, unified(label, before, after))


def done(ctx: ToolContext, change: Change | None, *paths: Path) -> None:
    """A change is on disk: shown/kept as a diff, and what clio left noted for /undo."""
    if change is not None:
        ctx.changes.append((change, ctx.proposed_shown))
    snapshots = ctx.services.snapshots
    if snapshots is not None:
        for p in paths:
            snapshots.after(p)


def old_text(p: Path) -> str | None:
    """What a file holds before a change, for its diff (None: no file; undecodable bytes replaced)."""
    try:
        with p.open("rb") as f:
            return f.read(MAX_DIFF_CHARS + 1).decode("utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _ask(ctx: ToolContext, summary: str, *paths: Path) -> None:
    for p in paths:
        reason = protected_reason(ctx, p)
        if reason is None:
            continue
        if not ctx.interactive:
            ctx.refused.append(f"write: {summary}")
            raise ToolError(
                f"refused: {summary}: {reason}. Such a write needs the user's approval in an "
                "interactive session and is always refused in one-shot mode (even with --yes). "
                "Do not try another way (terminal, rename, symlink); tell the user what you wanted "
                "to change and why, and continue without it."
            )
        question = f"{summary} ({reason})"
        if not ctx.approve("write", question, destructive=True):
            raise declined(ctx, summary, "It is a protected path: do not try another way to change it.")
        return  # the user approved this exact write
    root = ctx.root.resolve()
    outside = [str(p) for p in paths if not is_inside(p.resolve(), root)]
    if outside:  # asked every time, as its own question: an [a]lways for writes never covers it
        unnamed = [p for p in outside if p not in summary]
        question = f"{summary} ({', '.join(unnamed)})" if unnamed else summary
        if not ctx.approve("outside", question, destructive=True):
            raise declined(ctx, summary, "It is outside the project: do not retry it; ask the user first.")
        return
    if not ctx.approve("write", summary):
        raise declined(ctx, summary, "Do not retry it unchanged; ask or take another approach.")


def created(ctx: ToolContext, p: Path) -> None:
    ctx.created_files.add(str(p.resolve()))
