"""Nothing planted for later (issue 34, item 3): after each command run under ``--sandbox``, git
configuration it left that would run code in the user's own later git commands is undone.

A sandboxed command may write the project, so it can make or change a nested repository
(``git init vendor``, then ``core.fsmonitor = …`` in ``vendor/.git/config``, then ``git add vendor``:
a gitlink, and the user's next plain ``git status`` recurses into it and runs the fsmonitor,
outside any sandbox), a submodule's ``.git/modules/x/config`` or hooks, or a hook in the folder
the user's ``core.hooksPath`` names inside the project. The kernel cannot tell a ``.git`` folder by
its name, so clio looks afterwards:

- :func:`before` stats the git places it knew after the previous command (cheap: no walk; the
  first time it walks);
- :func:`after` walks the project for git places: every ``.git`` folder, or ``.git`` file whose
  ``gitdir:`` lies in the project, below the top one; every repository under a ``.git/modules``;
  the top ``.git`` itself (its config and hooks are read-only mounts where the kernel has user
  namespaces, writable otherwise); the top repository's ``core.hooksPath`` when it lies in the
  project. In each one that is new or changed since :func:`before`: every setting whose value git
  runs or that loads more config (:func:`clio.safety.git_checks.git_setting`: ``core.fsmonitor``,
  ``core.hooksPath``, ``core.sshCommand``, filter and textconv drivers, ``include.path``,
  ``includeIf``, ``!`` aliases...) is removed from its ``config`` (``git config --file F
  --unset-all``), and every new or changed executable hook loses its execute bits (git runs only
  executable hooks; the text stays, to be read).

Returns one line per thing undone, for the tool's result. Ordinary work is untouched: commits in
the main repository, a scratch ``git init`` (in the private temp or in the project), submodule
objects and refs, a nested repository's ordinary settings (user.name, remotes, branches).
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass, field

from clio.safety.git_checks import git_setting

__all__ = ["Known", "after", "before"]

MAX_ENTRIES = 300_000  # entries walked per command; past it the walk stops (said in the result)
_TOP_SKIP = frozenset({"objects", "refs", "logs", "lfs", "info", "rr-cache", "worktrees"})

Stat = tuple[int, int, int]  # (mtime_ns, size, inode)


@dataclass
class Known:
    """The git places of a project and the stat of each file that matters in them."""

    places: list[str] = field(default_factory=list)  # git dirs (and the top hooksPath), real paths
    stats: dict[str, Stat] = field(default_factory=dict)


_KNOWN: dict[str, list[str]] = {}  # project root -> its git places after the last command


def _stat(path: str) -> Stat | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _files(place: str) -> list[str]:
    """The files of a git place that can run code: its config and its hooks (a hooks folder
    itself: the files in it)."""
    if os.path.basename(place) == ".hookspath":
        folder = os.path.dirname(place)
        return [os.path.join(folder, n) for n in _listdir(folder)]
    hooks = os.path.join(place, "hooks")
    return [os.path.join(place, "config"), *(os.path.join(hooks, n) for n in _listdir(hooks))]


def _listdir(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _snapshot(places: list[str]) -> Known:
    known = Known(places)
    for place in places:
        for f in _files(place):
            st = _stat(f)
            if st is not None:
                known.stats[f] = st
    return known


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _gitdir_of_file(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            line = f.read(4096).strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    target = line[len("gitdir:") :].strip()
    return os.path.realpath(os.path.join(os.path.dirname(path), target))


def _modules(gitdir: str, out: list[str]) -> None:
    """Every repository beneath ``gitdir/modules`` (submodules, and theirs)."""
    for folder, dirs, files in os.walk(os.path.join(gitdir, "modules")):
        if "config" in files and ("HEAD" in files or "objects" in dirs):
            out.append(folder)
        dirs[:] = [d for d in dirs if d not in _TOP_SKIP]


_HOOKS_PATH: dict[tuple[object, ...], str | None] = {}


def _hooks_path(root: str) -> str | None:
    """The top repository's ``core.hooksPath`` (the user's config and the project's) when it lies
    inside the project: hooks there are ordinary project files. Asked of git again only when the
    project's or the user's git config changed (a git start per command would cost ~5 ms)."""
    home = os.path.expanduser("~")
    key = (root, *(_stat(os.path.join(d, n)) for d, n in (
        (root, ".git/config"), (home, ".gitconfig"), (home, ".config/git/config"))))  # fmt: skip
    if key not in _HOOKS_PATH:
        _HOOKS_PATH[key] = _ask_hooks_path(root)
    return _HOOKS_PATH[key]


def _ask_hooks_path(root: str) -> str | None:
    try:
        res = subprocess.run(["git", "config", "--get", "core.hooksPath"], cwd=root, capture_output=True,
                             text=True, timeout=10, env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"})  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    value = res.stdout.strip()
    if res.returncode != 0 or not value:
        return None
    path = os.path.realpath(os.path.join(root, os.path.expanduser(value)))
    top_git = os.path.join(root, ".git")
    return path if _inside(path, root) and not _inside(path, top_git) else None


def _walk(root: str) -> tuple[list[str], bool]:
    """(git places under ``root``, whether the walk was complete)."""
    places: list[str] = []
    top = os.path.join(root, ".git")
    if os.path.isdir(top):
        places.append(top)
        _modules(top, places)
    hooks_path = _hooks_path(root)
    if hooks_path is not None:
        places.append(os.path.join(hooks_path, ".hookspath"))
    seen = 0
    for folder, dirs, files in os.walk(root):
        seen += len(dirs) + len(files)
        if seen > MAX_ENTRIES:
            return places, False
        if folder == root:
            dirs[:] = [d for d in dirs if d != ".git"]
        if ".git" in dirs:
            dirs.remove(".git")
            nested = os.path.realpath(os.path.join(folder, ".git"))
            if _inside(nested, root) and nested not in places:
                places.append(nested)
                _modules(nested, places)
        if ".git" in files:
            gitdir = _gitdir_of_file(os.path.join(folder, ".git"))
            if gitdir is not None and _inside(gitdir, root) and os.path.isdir(gitdir) and gitdir not in places:
                places.append(gitdir)
    return places, True


def before(root: str) -> Known:
    """What the git places known from the last command look like now (a walk the first time)."""
    root = os.path.realpath(root)
    places = _KNOWN.get(root)
    if places is None:
        places = _walk(root)[0]
    return _snapshot(places)


def _config_keys(config: str) -> list[tuple[str, str]]:
    try:
        res = subprocess.run(["git", "config", "--file", config, "--no-includes", "-z", "--list"],
                             capture_output=True, timeout=10)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return []
    out = []
    for entry in res.stdout.split(b"\0"):
        if entry:
            key, _, value = entry.decode("utf-8", "replace").partition("\n")
            out.append((key, value))
    return out


def _neutralise_config(config: str, shown: str) -> list[str]:
    if os.path.islink(config):  # never edit through a link (it may lead to the user's own config)
        return _unlink(config, f"removed the link {shown}")
    done = []
    for key in dict.fromkeys(k for k, v in _config_keys(config) if git_setting(k, v)):
        subprocess.run(["git", "config", "--file", config, "--unset-all", key], capture_output=True, timeout=10)
        done.append(f"removed {key} from {shown}")
    return done


def _unlink(path: str, said: str) -> list[str]:
    try:
        os.unlink(path)
    except OSError:
        return []
    return [said]


def _disarm_hook(path: str, shown: str) -> list[str]:
    if os.path.islink(path):  # it runs what it points to: the link goes (never chmod through it)
        return _unlink(path, f"removed the link {shown}")
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or not st.st_mode & 0o111 or path.endswith(".sample"):
            return []
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o111)
    except OSError:
        return []
    return [f"made {shown} non-executable"]


def after(root: str, known: Known) -> list[str]:
    """Undo what a command planted in the project's git places; one line per thing undone."""
    root = os.path.realpath(root)
    places, complete = _walk(root)
    _KNOWN[root] = places
    done: list[str] = []
    for place in places:
        for f in _files(place):
            st = _stat(f)
            if st is None or known.stats.get(f) == st:
                continue
            shown = os.path.relpath(f, root)
            if os.path.basename(f) == "config" and os.path.dirname(f) == place:
                done += _neutralise_config(f, shown)
            else:
                done += _disarm_hook(f, shown)
    if not complete:
        done.append(f"(the project has over {MAX_ENTRIES:,} entries: git places past them were not checked)")
    return done
