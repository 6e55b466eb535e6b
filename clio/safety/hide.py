"""What a shell command may not read: clio's own folder, and under ``--sandbox`` the user's
credential stores.

Landlock is an allow-list: a right granted on a folder reaches everything beneath it, and
nothing can be carved out of it afterwards. So a path is hidden by granting the right on every
*sibling* along the way down to it instead of on ``/``: the entries of ``/`` but ``/home``, the
entries of ``/home`` but ``/home/me``, the entries of ``/home/me`` but ``.clio``. Only the folders
that lead to a hidden path are listed (typically ``/``, ``/home``, ``/home/me``), once per
command, when the wrapper starts.

What that costs: a file created directly in one of those leading folders (``~/new.txt``) *after*
the command started has no rule, so that same command cannot read or write it (the next one
can); moving a file into or out of such a folder copies it instead (``mv`` falls back to a copy
on the EXDEV Landlock returns).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "CREDENTIAL_STORES", "FILE_RIGHTS_MASK", "credential_stores", "grant_except", "hidden_paths", "hidden_set",
]  # fmt: skip

# The user's credential stores, hidden from sandboxed commands (clio's own folder is hidden from
# every command). Relative to the home folder.
CREDENTIAL_STORES = (
    ".ssh", ".netrc", ".pgpass", ".aws", ".kube", ".docker/config.json", ".config/gh",
    ".git-credentials", ".config/gcloud", ".azure", ".gnupg", ".password-store",
)  # fmt: skip

# Landlock rights that make sense on a file (the others only on folders).
FILE_RIGHTS_MASK = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)


def credential_stores(home: Path | None = None, extra: Iterable[str] = ()) -> list[str]:
    """The credential stores under ``home`` (default: the user's) plus ``extra`` (``~`` expanded)."""
    base = os.path.expanduser("~") if home is None else str(home)
    out = [os.path.join(base, rel) for rel in CREDENTIAL_STORES]
    out += [os.path.expanduser(p) for p in extra if p]
    return out


def hidden_paths(clio_home: Path, sandbox: bool, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """What shell commands may not read: clio's own folder always (its config may hold the key,
    its memory key and MCP token live there); under the sandbox also the credential stores and
    the user's ``sandbox_hide`` list."""
    out = [str(clio_home)]
    if sandbox:
        out += credential_stores(extra=extra)
    return tuple(out)


def hidden_set(paths: Iterable[str | Path]) -> set[str]:
    """The real paths of ``paths`` that exist (a missing path has nothing to hide)."""
    out: set[str] = set()
    for p in paths:
        real = os.path.realpath(p)
        if os.path.lexists(real) and real != "/":
            out.add(real)
    return out


def _ancestors(hidden: set[str]) -> set[str]:
    out: set[str] = set()
    for h in hidden:
        parent = os.path.dirname(h)
        while True:
            out.add(parent)
            if parent == "/":
                break
            parent = os.path.dirname(parent)
    return out


def _is_hidden(real: str, hidden: set[str]) -> bool:
    return any(real == h or real.startswith(h + "/") for h in hidden)


def grant_except(add: Callable[[str, int], None], hidden_paths: Sequence[str | Path], access: int) -> int:
    """Call ``add(path, rights)`` so that ``access`` is granted on everything but ``hidden_paths``.

    Folders get ``access``, files ``access & FILE_RIGHTS_MASK``. Symlinks are followed (a rule
    applies to what it resolves to), so a link pointing into a hidden folder grants nothing.
    Returns the number of rules added."""
    hidden = hidden_set(hidden_paths)
    if not hidden:
        add("/", access)
        return 1
    leading = _ancestors(hidden)
    count = 0
    todo = ["/"]
    while todo:
        folder = todo.pop()
        try:
            names = os.listdir(folder)
        except OSError:
            continue  # cannot be listed: nothing beneath it is granted (safe side)
        for name in names:
            path = os.path.join(folder, name)
            real = os.path.realpath(path)
            if _is_hidden(real, hidden):
                continue
            if real in leading:
                if real == path:
                    todo.append(path)
                continue  # a link to a leading folder: that folder is walked itself
            try:
                rights = access if os.path.isdir(real) else access & FILE_RIGHTS_MASK
                add(real, rights)
            except OSError:
                continue  # vanished or cannot be opened: left without a rule (denied)
            count += 1
    return count
