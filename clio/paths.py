"""Where things live: the project root, its .clio folder, and the user's $CLIO_HOME.

Every folder clio creates for its own state goes through ``ensure_dir``: a ``.clio`` folder
gets a ``.gitignore`` holding ``*`` (as virtual environments and tool caches do), so clio's
state (history, sessions, locks) never shows in ``git status`` nor lands in a commit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Paths:
    root: Path  # the project root (git root above the working directory, else the working directory)
    cwd: Path  # where clio was started
    home: Path  # $CLIO_HOME (user-level config, preferences, history of nothing project-specific)

    @property
    def clio_dir(self) -> Path:
        return self.root / ".clio"

    @property
    def sessions_dir(self) -> Path:
        return self.clio_dir / "sessions"

    @property
    def memory_dir(self) -> Path:
        return self.clio_dir / "memory"

    def ensure_clio_dir(self) -> Path:
        """Create ``.clio`` (with its ``.gitignore``) when missing; returns it. Never call in incognito."""
        ensure_dir(self.clio_dir)
        return self.clio_dir


CLIO_DIR_NAME = ".clio"
GITIGNORE_TEXT = "# clio's own state (history, sessions, memory, locks): kept out of git\n*\n"


def ensure_clio_gitignore(clio_dir: Path) -> bool:
    """Give an existing ``.clio`` folder a ``.gitignore`` holding ``*`` when it has none.

    Never overwrites: a ``.gitignore`` the user edited (or any file or link of that name) is
    kept. Best effort: returns whether the file was written."""
    target = clio_dir / ".gitignore"
    if os.path.lexists(target):
        return False
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except OSError:  # another process made it first, or the folder is read-only
        return False
    try:
        os.write(fd, GITIGNORE_TEXT.encode())
    finally:
        os.close(fd)
    return True


def clio_dir_of(path: Path) -> Path | None:
    """The nearest folder named ``.clio`` at or above ``path``, if any."""
    for d in (path, *path.parents):
        if d.name == CLIO_DIR_NAME:
            return d
    return None


def escaping_link(root: Path) -> str | None:
    """Why clio must not use ``root/.clio`` (None: it may): a symlink to a folder outside the
    project would carry clio's state and writes elsewhere (a repository can commit such a link)."""
    link = root / ".clio"
    if not link.is_symlink():
        return None
    target = link.resolve()
    if target.is_relative_to(root.resolve()):
        return None
    return f"{link} is a symlink to {target}, outside the project: clio will not write through it."


def ensure_dir(path: Path) -> None:
    """``mkdir -p path``; when ``path`` is or lies in a ``.clio`` folder, that folder gets its ``.gitignore``.

    The one way clio creates folders for its own state (atomic writes and locks use it), so a
    project whose ``.clio`` predates the ``.gitignore`` gets it on the next write."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    clio_dir = clio_dir_of(path.absolute())
    if clio_dir is not None:
        ensure_clio_gitignore(clio_dir)


def find_project_root(start: Path) -> Path:
    """The nearest folder at or above ``start`` holding ``.git``; else ``start`` itself."""
    start = start.resolve()
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return start


def resolve_paths(dir_flag: str | None, config_flag: str | None, env: dict[str, str] | None = None) -> Paths:
    env = dict(os.environ) if env is None else env
    cwd = Path(dir_flag).expanduser().resolve() if dir_flag else Path.cwd().resolve()
    root = cwd if dir_flag else find_project_root(cwd)  # --dir names the project root itself
    if config_flag:
        home = Path(config_flag).expanduser().resolve()
    elif env.get("CLIO_HOME"):
        home = Path(env["CLIO_HOME"]).expanduser().resolve()
    else:
        home = Path.home() / ".clio"
    return Paths(root=root, cwd=cwd, home=home)
