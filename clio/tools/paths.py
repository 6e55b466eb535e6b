"""``resolve_path``: every path a tool touches goes through here.

``~`` is expanded, a relative path is taken relative to the project root, ``..`` and symlinks
are resolved; in sandbox mode a path outside the root is refused with a ToolError the model
can read. (The containment test itself, ``is_inside``, lives in clio.safety.sandbox.)
``unresolved_path`` is the same check for an operation on a symlink itself (delete, rename,
info): the final component is not followed.

With or without the sandbox, a path that is or lies in ``$CLIO_HOME`` or a credential store
(``ctx.private``, clio.safety.hide), as given or resolved, is refused with one line saying why.
"""

from __future__ import annotations

import os
from pathlib import Path

from clio.safety.sandbox import is_inside
from clio.tools.context import ToolContext, ToolError

__all__ = ["resolve_path", "unresolved_path"]


def resolve_path(ctx: ToolContext, path: str) -> Path:
    """The absolute, resolved path for a tool argument; refused outside the root in sandbox mode."""
    if not isinstance(path, str) or not path.strip():
        raise ToolError("'path' must be a non-empty string")
    raw = path.strip()
    if "\x00" in raw:
        raise ToolError("the path contains a NUL character")
    p = Path(os.path.expanduser(raw))
    if not p.is_absolute():
        p = ctx.root / p
    try:
        resolved = p.resolve()
    except (OSError, RuntimeError) as exc:  # symlink loops
        raise ToolError(f"cannot resolve path '{raw}': {exc}") from None
    private = ctx.private.reason(p)
    if private is not None:
        raise ToolError(private)
    if ctx.sandbox and not is_inside(resolved, ctx.root.resolve()):
        raise ToolError(
            f"'{raw}' resolves to {resolved}, which is outside the project root (sandbox mode); "
            f"only paths under {ctx.root.resolve()} may be used"
        )
    return resolved


def unresolved_path(ctx: ToolContext, raw: str) -> Path:
    """The path itself (final symlink not followed), after the sandbox check on its target."""
    resolve_path(ctx, raw)
    p = Path(os.path.expanduser(raw.strip()))
    if not p.is_absolute():
        p = ctx.root / p
    if p.name in ("", ".", ".."):
        return p.resolve()
    return resolve_path(ctx, str(p.parent)) / p.name
