"""git in the destructive-command check (clio/safety/sandbox.py): subcommands that destroy
history or uncommitted work (forced pushes, hard resets, clean, checkout/restore of everything,
branch -D, stash clear, reflog expire...) and settings, given with ``-c`` or ``git config``,
whose value git runs as a command.
"""

from __future__ import annotations

import re

from clio.lazy_re import lazy
from clio.safety.shell_words import has_short, opts_and_args

__all__ = ["check_git", "git_setting"]

_GIT_GLOBAL_ARG = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"}


# config keys whose value git runs as a command (or that load more config)
_GIT_COMMAND_KEYS = lazy(
    r"^(core\.(fsmonitor|hookspath|sshcommand|pager|editor|askpass|gitproxy)|sequence\.editor|diff\.external"
    r"|diff\..+\.(textconv|command)|filter\..+|credential(\..+)?\.helper|gpg(\..+)?\.program|pager\..+"
    r"|uploadpack\..+|protocol\..*allow|merge\..+\.driver|remote\..+\.(uploadpack|receivepack|proxy)"
    r"|include\..*|includeif\..*)$",
    re.I,
)


def git_setting(key: str, value: str | None) -> str | None:
    key = key.strip()
    if key.lower().startswith("alias."):
        return (
            "a git alias that runs a shell command"
            if value is not None and value.lstrip().startswith("!")
            else None
        )
    if _GIT_COMMAND_KEYS.match(key):
        return f"git setting {key} runs a command"
    return None


def check_git(args: list[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        opt = args[i]
        value = args[i + 1] if opt == "-c" and i + 1 < len(args) else None
        if opt.startswith("--config-env"):
            return "git --config-env takes settings from the environment (cannot be checked)"
        if value is not None:
            key, eq, val = value.partition("=")
            why = git_setting(key, val if eq else None)
            if why:
                return f"git -c: {why}"
        i += 2 if opt in _GIT_GLOBAL_ARG else 1
    if i >= len(args):
        return None
    sub, rest = args[i], args[i + 1 :]
    opts, pos = opts_and_args(rest)
    if sub == "push":
        if has_short(opts, "f") or any(o.startswith(("--force", "--mirror")) for o in opts):
            return "git push --force overwrites remote history"
        if any(p.startswith("+") for p in pos):
            return "git push with a +refspec overwrites remote history"
        if (
            has_short(opts, "d")
            or "--delete" in opts
            or "--prune" in opts
            or any(p.startswith(":") for p in pos)
        ):
            return "git push deletes remote refs"
    elif sub == "reset" and ("--hard" in opts or "--merge" in opts):
        return "git reset --hard discards uncommitted work"
    elif sub == "clean":
        if has_short(opts, "n") or "--dry-run" in opts:
            return None
        if has_short(opts, "fxX") or "--force" in opts:
            return "git clean deletes untracked files"
    elif sub == "checkout":
        if has_short(opts, "f") or "--force" in opts:
            return "git checkout --force discards uncommitted changes"
        if any(p in (".", "*", ":/", "./") for p in pos):
            return "git checkout . discards all uncommitted changes"
    elif sub == "restore":
        staged_only = ("--staged" in opts or has_short(opts, "S")) and not (
            "--worktree" in opts or has_short(opts, "W")
        )
        if not staged_only and any(p in (".", "*", ":/", "./") for p in pos):
            return "git restore . discards all uncommitted changes"
    elif sub == "branch" and (has_short(opts, "D") or ("--force" in opts and "--delete" in opts)):
        return "git branch -D deletes a branch that may not be merged"
    elif sub == "stash" and pos[:1] == ["clear"]:
        return "git stash clear deletes every stash"
    elif sub == "filter-branch":
        return "git filter-branch rewrites history"
    elif sub == "update-ref" and (has_short(opts, "d") or "--stdin" in opts):
        return "git update-ref -d deletes a ref"
    elif sub == "reflog" and pos[:1] in (["expire"], ["delete"]):
        return "git reflog expire/delete drops recovery points"
    elif sub == "config":
        keys = pos[1:] if pos[:1] in (["set"], ["--add"]) else pos
        if len(keys) >= 2:
            why = git_setting(keys[0], keys[1])
            if why:
                return f"git config: {why}"
    return None
