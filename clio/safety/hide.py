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

The same list keeps clio's own tools out: :class:`Private` (``$CLIO_HOME`` and the credential
stores, with or without ``--sandbox``) answers why a path a tool was given is refused, and lets
a listing or a search skip what lies beneath it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "CREDENTIAL_STORES", "FILE_RIGHTS_MASK", "Grant", "Private", "credential_stores", "grant_except", "hidden_paths",
    "hidden_set", "unchanged", "walk",
]  # fmt: skip

# The user's credential stores, relative to the home folder: hidden from sandboxed commands, and
# never read by clio's own tools (clio's own folder is hidden from every command and every tool).
# The user adds more with ``credential_stores:`` (formerly ``sandbox_hide:``) in $CLIO_HOME/config.yaml.
CREDENTIAL_STORES = (
    # keys and tokens of tools
    ".ssh", ".netrc", ".pgpass", ".aws", ".kube", ".docker/config.json", ".config/gcloud", ".azure",
    ".gnupg", ".password-store", ".vault-token", ".terraform.d",
    # git hosts and package registries
    ".git-credentials", ".config/git/credentials", ".config/gh", ".config/hub", ".npmrc", ".pypirc",
    ".cargo/credentials.toml", ".cargo/credentials",
    # shell and client histories (passwords typed on command lines)
    ".bash_history", ".zsh_history", ".local/share/fish/fish_history", ".python_history",
    ".psql_history", ".mysql_history",
    # keyrings and browser profiles (saved passwords, cookies)
    ".local/share/keyrings", ".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware",
)  # fmt: skip

# Landlock rights that make sense on a file (the others only on folders).
FILE_RIGHTS_MASK = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)


def credential_stores(home: str | Path | None = None, extra: Iterable[str] = ()) -> list[str]:
    """The credential stores under ``home`` (default: the user's) plus ``extra`` (``~`` expanded)."""
    base = os.path.expanduser("~") if home is None else str(home)
    out = [os.path.join(base, rel) for rel in CREDENTIAL_STORES]
    out += [os.path.expanduser(p) for p in extra if p]
    return out


def hidden_paths(clio_home: Path, sandbox: bool, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """What shell commands may not read: clio's own folder always (its config may hold the key,
    its memory key and MCP token live there); under the sandbox also the credential stores and
    the user's own additions (``credential_stores:``)."""
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


Grant = tuple[str, bool, int, int]  # a real path to grant, whether a folder, its st_dev and st_ino


def walk(hidden_paths: Sequence[str | Path]) -> tuple[list[Grant], list[tuple[str, int, int]]]:
    """The paths :func:`grant_except` grants (everything but ``hidden_paths``) and the leading
    folders with their (st_ino, st_mtime_ns): while those are unchanged, a new walk would find the
    same entries. What the command launcher keeps between commands (clio/safety/launcher.py)."""
    hidden = hidden_set(hidden_paths)
    if not hidden:
        st = os.stat("/")
        return [("/", True, st.st_dev, st.st_ino)], []
    leading = _ancestors(hidden)
    grants: list[Grant] = []
    stamps: list[tuple[str, int, int]] = []
    todo = ["/"]
    while todo:
        folder = todo.pop()
        try:
            st = os.stat(folder)
            names = os.listdir(folder)
        except OSError:
            continue  # cannot be listed: nothing beneath it is granted (safe side)
        stamps.append((folder, st.st_ino, st.st_mtime_ns))
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
                st = os.stat(real)
            except OSError:
                continue  # vanished: no rule (denied)
            grants.append((real, os.path.isdir(real), st.st_dev, st.st_ino))
    return grants, stamps


def unchanged(stamps: Sequence[Sequence[object]]) -> bool:
    """Whether the leading folders of a :func:`walk` are as they were (no entry added, removed,
    renamed or replaced in them)."""
    for folder, ino, mtime in stamps:
        try:
            st = os.stat(str(folder))
        except OSError:
            return False
        if (st.st_ino, st.st_mtime_ns) != (ino, mtime):
            return False
    return True


def _still(
    walked: Sequence[Sequence[object]], hidden_paths: Sequence[str | Path], hidden_real: Iterable[str] | None
) -> list[Grant] | None:
    """The grants of an earlier walk, each checked: still the same file, or (a mount point made
    since, such as a sandbox's own /proc) still a real path outside the hidden ones, as a walk
    would decide it. None: a walk afresh is needed."""
    out: list[Grant] = []
    hidden: set[str] | None = None if hidden_real is None else set(hidden_real)
    for entry in walked:
        real, isdir, dev, ino = str(entry[0]), bool(entry[1]), entry[2], entry[3]
        try:
            st = os.stat(real)
        except OSError:
            continue  # vanished: no rule, as a walk would have it
        if (st.st_dev, st.st_ino) != (dev, ino):
            hidden = hidden_set(hidden_paths) if hidden is None else hidden
            if os.path.realpath(real) != real or _is_hidden(real, hidden):
                return None
            isdir = os.path.isdir(real)
        out.append((real, isdir, st.st_dev, st.st_ino))
    return out


def grant_except(
    add: Callable[[str, int], None],
    hidden_paths: Sequence[str | Path],
    access: int,
    walked: Sequence[Sequence[object]] | None = None,
    hidden_real: Iterable[str] | None = None,
) -> int:
    """Call ``add(path, rights)`` so that ``access`` is granted on everything but ``hidden_paths``.

    Folders get ``access``, files ``access & FILE_RIGHTS_MASK``. Symlinks are followed (a rule
    applies to what it resolves to), so a link pointing into a hidden folder grants nothing.
    ``walked``: the grants of an earlier :func:`walk` of the same ``hidden_paths`` (the launcher's);
    used only if every path is still the very file it was (st_dev, st_ino), else walked afresh;
    ``hidden_real``: that walk's :func:`hidden_set` of ``hidden_paths``.
    Returns the number of rules added."""
    grants: list[Grant] | None = None
    if walked is not None:
        grants = _still(walked, hidden_paths, hidden_real)
    if grants is None:
        grants = walk(hidden_paths)[0]
    count = 0
    for real, isdir, _dev, _ino in grants:
        try:
            add(real, access if isdir else access & FILE_RIGHTS_MASK)
        except OSError:
            continue  # vanished or cannot be opened: left without a rule (denied)
        count += 1
    return count


def _tilde(path: str, home: str) -> str:
    """``path`` with the home folder shown as ``~``."""
    if home not in ("", "/") and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home) :]
    return path


class Private:
    """What no tool of clio's reads or writes, with or without ``--sandbox``: ``$CLIO_HOME`` (its
    config may hold the API key; the memory key, the MCP token) and the credential stores (the
    same list the sandbox hides from commands, :func:`credential_stores`).

    Paths are compared as given (made absolute) and resolved (symlinks and ``..`` followed), on
    both sides, each time: a store made, or a link planted, after clio started is still caught."""

    __slots__ = ("clio_home", "home", "homes", "stores")

    def __init__(self, clio_home: str | Path | None, extra: Iterable[str] = (), home: str | Path | None = None) -> None:
        self.home = os.path.expanduser("~") if home is None else str(home)
        self.clio_home = os.path.abspath(str(clio_home)) if clio_home else None
        # also the default folder and $CLIO_HOME when --config names another: they hold keys too
        named = [self.clio_home or "", os.environ.get("CLIO_HOME") or "", os.path.join(self.home, ".clio")]
        self.homes = tuple(dict.fromkeys(os.path.abspath(os.path.expanduser(h)) for h in named if h))
        self.stores = tuple(os.path.abspath(p) for p in credential_stores(self.home, extra))

    @classmethod
    def default(cls) -> Private:
        """For a context nobody configured: ``$CLIO_HOME`` or ``~/.clio``, and the built-in stores."""
        return cls(os.environ.get("CLIO_HOME") or os.path.join(os.path.expanduser("~"), ".clio"))

    def forms(self) -> list[tuple[str, str]]:
        """(path, why) for every private path, as written and resolved (one list per tool call)."""
        out: list[tuple[str, str]] = []
        entries = [(h, True) for h in self.homes] + [(p, False) for p in self.stores]
        for path, own in entries:
            shown = _tilde(path, self.home)
            why = (
                f"{shown} is clio's own folder (its keys); no tool reads it"
                if own
                else f"{shown} is one of your credential stores; no clio tool reads it"
            )
            for form in {path, os.path.realpath(path)}:
                if form != "/":
                    out.append((form, why))
        return out

    def reason(self, path: str | Path, forms: list[tuple[str, str]] | None = None) -> str | None:
        """Why ``path`` may not be used by a tool ("refused: ..."); None when it may. ``path``
        is private when it is, or lies beneath, a private path, as given or resolved."""
        forms = self.forms() if forms is None else forms
        raw = os.path.abspath(str(path))
        why = self.covers(raw, forms)
        if why is None:
            try:
                why = self.covers(os.path.realpath(raw), forms)
            except (OSError, ValueError):
                pass
        return None if why is None else f"refused: {why}"

    @staticmethod
    def covers(path: str, forms: list[tuple[str, str]]) -> str | None:
        """Why ``path``, taken as it is (absolute, not resolved again), is private; None: it is not.
        For a walk whose folders are already real, so that only links need resolving."""
        for form, why in forms:
            if path == form or path.startswith(form + "/"):
                return why
        return None
