"""Where things live: the project root, its .clio folder, and the user's $CLIO_HOME."""

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
