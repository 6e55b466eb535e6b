"""The environment of every git command clio runs: no program the repository controls runs.

The repository is untrusted, so git run from here never executes programs the repository
controls (``git_env``): every invocation gets command-level config overrides through
``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` (which outrank the repository's
``.git/config``) that turn off ``core.fsmonitor``, hooks (``core.hooksPath=/dev/null``), the
pager, ``diff.external``, credential helpers, askpass and every transport (no lazy fetches in
partial clones, so no ``core.sshCommand``); program-naming keys the repository's own config sets
(filter drivers, textconv, merge drivers, gpg programs, ``core.sshCommand``) are replaced by the
user's global/system value or a harmless one; diff-producing commands get ``--no-ext-diff
--no-textconv``. Commit hooks run only when the user approves running them; otherwise the commit
gets ``--no-verify`` with hooks off.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from clio.lazy_re import lazy

if TYPE_CHECKING:
    import git

__all__ = ["COMMIT_HOOKS", "NO_EXT", "git_env", "harden"]

NO_EXT = ("--no-ext-diff", "--no-textconv")  # on every command that renders a diff

# Environment for every git clio runs: nothing prompts, pages, edits or talks to a remote.
_SAFE_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_SEQUENCE_EDITOR": ":",
    "GIT_ASKPASS": "",  # set but empty: neither core.askPass nor SSH_ASKPASS is run
    "GIT_ALLOW_PROTOCOL": "none",  # no transport at all (outranks protocol.* config)
    "GIT_NO_LAZY_FETCH": "1",  # a partial clone does not fetch missing objects behind our back
    "GIT_OPTIONAL_LOCKS": "0",  # read-only commands (status) do not rewrite the index
}

# Command-level config, outranking the repository's: none of these may run a program.
_FIXED_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),  # replaced when the user approves commit hooks
    ("core.pager", "cat"),
    ("diff.external", ""),
    ("core.askPass", ""),
    ("credential.helper", ""),  # an empty value clears the list of helpers
    ("protocol.allow", "never"),
    ("log.showSignature", "false"),
    ("submodule.recurse", "false"),
)
_HOOKS_KEY = "core.hooksPath"

# Keys naming programs that a repository's own config (local/worktree scope) may not set: the
# user's global/system value is kept, else the harmless value. Keys are as ``git config --list``
# prints them (section and name lower-cased, subsection as written).
_PROGRAM_KEYS: tuple[tuple[re.Pattern[str], str], ...] = (
    (lazy(r"filter\..+\.(clean|smudge|process)"), ""),  # an empty driver is skipped
    (lazy(r"filter\..+\.required"), "false"),
    (lazy(r"diff\..+\.textconv"), "cat"),
    (lazy(r"merge\..+\.driver"), "false"),  # a failed merge driver leaves a conflict
    (lazy(r"gpg\.(openpgp\.)?program"), "gpg"),
    (lazy(r"gpg\.x509\.program"), "gpgsm"),
    (lazy(r"gpg\.ssh\.program"), "ssh-keygen"),
    (lazy(r"gpg\.ssh\.defaultkeycommand"), ""),
    (lazy(r"core\.sshcommand"), "ssh"),
    (lazy(r"core\.gitproxy"), ""),
)
_REPO_SCOPES = ("local", "worktree")

# Hooks a commit (and the ref and index updates it makes) may run.
COMMIT_HOOKS = (
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-auto-gc",
    "post-index-change",
    "reference-transaction",
)


def _with_config(env: dict[str, str], pairs: list[tuple[str, str]]) -> dict[str, str]:
    """``env`` plus ``pairs`` as GIT_CONFIG_KEY_n/VALUE_n, after any the user already set."""
    out = dict(env)
    try:
        start = max(0, int(out.get("GIT_CONFIG_COUNT", "0") or "0"))
    except ValueError:
        start = 0
    for i, (key, value) in enumerate(pairs, start=start):
        out[f"GIT_CONFIG_KEY_{i}"] = key
        out[f"GIT_CONFIG_VALUE_{i}"] = value
    out["GIT_CONFIG_COUNT"] = str(start + len(pairs))
    return out


def _base_env(*, hooks: bool = False) -> dict[str, str]:
    pairs = [(k, v) for k, v in _FIXED_CONFIG if not (hooks and k == _HOOKS_KEY)]
    return _with_config({**os.environ, **_SAFE_ENV}, pairs)


def _config_entries(workdir: Path) -> list[tuple[str, str, str]]:
    """(scope, key, value) of every config entry git sees in ``workdir``, in order (reading runs nothing)."""
    try:
        proc = subprocess.run(
            ["git", "config", "--list", "--show-scope", "-z"],
            cwd=workdir,
            env=_base_env(),
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    fields = proc.stdout.decode("utf-8", errors="surrogateescape").split("\0")
    out = []
    for scope, item in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = item.partition("\n")
        out.append((scope, key, value))
    return out


def _program_overrides(entries: list[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """Overrides for the program-naming keys whose effective value comes from the repository."""
    last: dict[str, str] = {}  # key -> scope of its effective (last) entry
    trusted: dict[str, str] = {}  # key -> the last value set outside the repository
    for scope, key, value in entries:
        if not any(rx.fullmatch(key) for rx, _ in _PROGRAM_KEYS):
            continue
        last[key] = scope
        if scope not in _REPO_SCOPES:
            trusted[key] = value
    out = []
    for key, scope in last.items():
        if scope in _REPO_SCOPES:
            neutral = next(v for rx, v in _PROGRAM_KEYS if rx.fullmatch(key))
            out.append((key, trusted.get(key, neutral)))
            if key.startswith("gpg.") and key not in trusted:  # no signing with a program nobody chose
                out += [
                    ("commit.gpgSign", "false"),
                    ("tag.gpgSign", "false"),
                    ("tag.forceSignAnnotated", "false"),
                ]
    return out


def git_env(workdir: Path, *, hooks: bool = False) -> dict[str, str]:
    """The full environment for a git command in ``workdir`` that runs no repository-controlled
    program. ``hooks=True`` (a commit whose hooks the user approved) leaves the hooks on."""
    env = _base_env(hooks=hooks)
    return _with_config(env, _program_overrides(_config_entries(workdir)))


def harden(repo: git.Repo) -> git.Repo:
    """Every later ``repo.git`` call (and gitpython's own cat-file helpers) runs with ``git_env``."""
    workdir = Path(str(repo.working_tree_dir or repo.git_dir))
    repo.git.update_environment(**git_env(workdir))
    return repo
