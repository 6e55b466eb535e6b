"""Who and what a shared memory belongs to: the project's identity and the author of a write.

A project is named by its git remote, normalized so every URL of one repository gives one id:
``git@github.com:a/b.git``, ``https://github.com/a/b``, ``ssh://git@github.com:22/a/b/`` and
``https://user:token@GitHub.com/a/b.git`` are all ``github.com/a/b`` (no scheme, no user or
credentials, no port, no ``.git``, host in lower case). A local path remote is ``file:`` plus its
absolute path. An explicit ``team_project`` in the user's (or a trusted project's) config wins.
Two repositories with different remotes never share an id, so they never see each other's memory.
"""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
from pathlib import Path

from clio.lazy_re import lazy

_SCP = lazy(r"^(?:[^@/\s]+@)?([^:/\s]+):(?!//)(.+)$")  # git@host:owner/repo (scp-like)
_URL = lazy(r"^([a-z][a-z0-9+.-]*)://(?:[^@/]*@)?([^/:]+)(?::\d*)?(/.*)?$")


class IdentityError(ValueError):
    """No project identity (the message says what to set)."""


def normalize_remote(url: str) -> str:
    """The repository a remote URL names, in one spelling for SSH, HTTPS and git URLs."""
    url = url.strip()
    if not url:
        raise IdentityError("an empty git remote URL")
    if url.lower().startswith("file://"):
        return "file:" + _clean_path(url[7:])
    m = _URL.match(url)
    if m:
        host, path = m.group(2).lower(), m.group(3) or ""
    else:
        scp = _SCP.match(url)
        if scp is None or url.startswith(("/", ".", "~")):
            return "file:" + _clean_path(str(Path(url).expanduser().resolve()))
        host, path = scp.group(1).lower(), scp.group(2)
    return f"{host}/{_clean_path(path).lstrip('/')}"


def _clean_path(path: str) -> str:
    path = path.strip().rstrip("/")
    if path.endswith(".git"):
        path = path[:-4]
    return path.rstrip("/")


def git_remote(root: Path) -> str | None:
    """The URL of ``origin`` (else of the first remote by name); None when there is none."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "config", "--get-regexp", r"^remote\..*\.url$"],
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    remotes = dict(line.split(None, 1) for line in out.splitlines() if " " in line)
    if not remotes:
        return None
    return remotes.get("remote.origin.url") or remotes[sorted(remotes)[0]]


def project_id(root: Path, explicit: str | None = None) -> str:
    """The shared memory's name for this project; IdentityError when it has none."""
    if explicit and explicit.strip():
        return "id:" + explicit.strip()
    url = git_remote(root)
    if url is None:
        raise IdentityError(
            "this project has no git remote to name it by; add one or set team_project in your config"
        )
    return normalize_remote(url)


def default_author() -> str:
    """``user@machine``: who wrote an entry, shown to teammates."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = os.environ.get("USER") or "unknown"
    return f"{user}@{socket.gethostname()}"
