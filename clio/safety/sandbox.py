"""Path confinement and the check for destructive shell commands.

- ``resolve_path``: every path a tool touches goes through here (``~`` expanded, relative to
  the project root, ``..`` and symlinks resolved); in sandbox mode a path outside the root
  is refused with a ToolError the model can read.
- ``destructive_reason``: a short reason when a shell command can destroy data (recursive
  ``rm`` outside the project, forced pushes, hard resets, disk tools...), else None. The
  command is split with shlex where possible; anything that does not parse is checked on
  its raw text with regexes, erring on the side of asking.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from clio.tools.registry import ToolContext, ToolError

__all__ = ["destructive_reason", "is_inside", "resolve_path"]


def is_inside(path: Path, root: Path) -> bool:
    """True when ``path`` is ``root`` or below it (both already resolved)."""
    return path == root or root in path.parents


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
    if ctx.sandbox and not is_inside(resolved, ctx.root.resolve()):
        raise ToolError(
            f"'{raw}' resolves to {resolved}, which is outside the project root (sandbox mode); "
            f"only paths under {ctx.root.resolve()} may be used"
        )
    return resolved


# ---------------------------------------------------------------------------------------
# destructive commands

_SEPARATORS = {";", "&&", "||", "|", "&", "|&", "(", ")", ";;", ";&", "!"}
_WRAPPERS = {"sudo", "doas", "env", "nohup", "time", "nice", "ionice", "command", "exec", "builtin",
             "stdbuf", "chroot", "timeout", "xargs", "watch"}  # fmt: skip
_WRAPPER_ARG_OPTS = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "--user", "--group"},
    "nice": {"-n", "--adjustment"},
    "ionice": {"-c", "-n", "-p"},
    "xargs": {"-I", "-L", "-n", "-P", "-d", "-E", "-s", "-a", "--delimiter", "--max-args"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"},
    "env": {"-u", "-C", "--unset", "--chdir"},
    "watch": {"-n", "-d", "--interval"},
    "stdbuf": {"-i", "-o", "-e"},
}
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish", "su"}
_DISK_TOOLS = {
    "dd": "dd writes raw bytes over files or devices",
    "shred": "shred overwrites files irrecoverably",
    "wipefs": "wipefs erases filesystem signatures",
    "fdisk": "fdisk rewrites partition tables",
    "sfdisk": "sfdisk rewrites partition tables",
    "cfdisk": "cfdisk rewrites partition tables",
    "gdisk": "gdisk rewrites partition tables",
    "sgdisk": "sgdisk rewrites partition tables",
    "parted": "parted rewrites partition tables",
    "mkswap": "mkswap formats a device",
    "mke2fs": "mke2fs formats a device",
    "blkdiscard": "blkdiscard erases a device",
}
_RAW_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(\S+)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*\1\s*&"), "a fork bomb"),
    (
        re.compile(r">\s*/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-|mapper/)"),
        "writes directly to a disk device",
    ),
    (re.compile(r"\bof=/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk)"), "dd onto a disk device"),
]
# only used when the command cannot be tokenised
_FALLBACK_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\brm\s+(-[a-zA-Z]*[rR]|--recursive)"), "recursive rm (the command could not be parsed)"),
    (re.compile(r"\bgit\b.*\bpush\b.*(\s-[a-zA-Z]*f|--force|--mirror|--delete|\s\+\S)"), "a forced git push"),
    (re.compile(r"\bgit\b.*\breset\b.*--hard"), "git reset --hard discards uncommitted work"),
    (re.compile(r"\bgit\b.*\bclean\b.*\s-[a-zA-Z]*[fx]"), "git clean deletes untracked files"),
    (re.compile(r"\bgit\b.*\b(checkout|restore)\b.*\s(\.|\*|:/)(\s|$)"), "discards uncommitted changes"),
    (re.compile(r"(^|[\s;&|(])(dd|shred|wipefs|fdisk|sfdisk|parted|mkfs(\.\w+)?)(\s|$)"), "a disk tool"),
    (re.compile(r"\bch(mod|own|grp)\s+.*(-R|--recursive)"), "recursive chmod/chown (could not be parsed)"),
]
_SUBST = re.compile(r"\$\(([^()]*)\)|`([^`]*)`")


def destructive_reason(command: str, root: Path) -> str | None:
    """A short reason if ``command`` can destroy data outside what the project can recover, else None."""
    return _check(command, Path(root).resolve(), depth=0)


def _check(command: str, root: Path, depth: int) -> str | None:
    if depth > 4:
        return "nested shell commands too deep to check"
    for pat, why in _RAW_PATTERNS:
        if pat.search(command):
            return why
    for m in _SUBST.finditer(command):
        inner = m.group(1) if m.group(1) is not None else m.group(2)
        reason = _check(inner, root, depth + 1)
        if reason:
            return reason
    text = command.replace("\\\n", " ").replace("\n", " ; ").replace("`", " ; ")
    try:
        lex = shlex.shlex(text, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        tokens = list(lex)
    except ValueError:
        for pat, why in _FALLBACK_PATTERNS:
            if pat.search(command):
                return why
        return None
    cwd: Path | None = root
    for words in _split(tokens):
        argv, via_input = _strip_wrappers(words)
        if not argv:
            continue
        name = os.path.basename(argv[0])
        if name == "cd" or name == "pushd":
            cwd = _cd(argv[1:], cwd)
            continue
        if name in _SHELLS or name == "eval":
            inner = _inner_script(argv)
            if inner is not None:
                reason = _check(inner, root, depth + 1)
                if reason:
                    return reason
            continue
        reason = _check_simple(name, argv[1:], root, cwd, via_input)
        if reason:
            return reason
    return None


def _split(tokens: list[str]) -> list[list[str]]:
    """Simple commands, with redirections (and their targets) removed."""
    out: list[list[str]] = [[]]
    skip = False
    for tok in tokens:
        if skip:
            skip = False
            continue
        if tok in _SEPARATORS:
            out.append([])
        elif tok and set(tok) <= set("<>&|") and ("<" in tok or ">" in tok):
            skip = True
        else:
            out[-1].append(tok)
    return [c for c in out if c]


def _strip_wrappers(words: list[str]) -> tuple[list[str], bool]:
    """Drop ``VAR=value`` prefixes and wrappers such as sudo/env/xargs; report xargs."""
    i, via_input = 0, False
    while i < len(words):
        w = words[i]
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w):
            i += 1
            continue
        name = os.path.basename(w)
        if name not in _WRAPPERS:
            break
        via_input = via_input or name == "xargs"
        i += 1
        arg_opts = _WRAPPER_ARG_OPTS.get(name, set())
        while i < len(words) and (words[i].startswith("-") or (name == "env" and "=" in words[i])):
            opt = words[i]
            i += 1
            if opt == "--":
                break
            if opt in arg_opts and i < len(words):
                i += 1
        if name == "timeout" and i < len(words):
            i += 1  # the duration
        if name == "watch":
            break
    return words[i:], via_input


def _inner_script(argv: list[str]) -> str | None:
    if os.path.basename(argv[0]) == "eval":
        return " ".join(argv[1:])
    for j, a in enumerate(argv[1:], start=1):
        if a.startswith("-") and not a.startswith("--") and "c" in a[1:] and j + 1 < len(argv):
            return argv[j + 1]
    return None


def _cd(args: list[str], cwd: Path | None) -> Path | None:
    args = [a for a in args if not (a.startswith("-") and a != "-")]
    if not args:
        return Path.home().resolve()
    target = _expand(args[0])
    if target is None or args[0] == "-":
        return None
    p = Path(target)
    if not p.is_absolute():
        if cwd is None:
            return None
        p = cwd / p
    return p.resolve()


def _expand(word: str) -> str | None:
    """``~`` and ``$HOME`` expanded; None when the word depends on another variable."""
    home = str(Path.home())
    word = word.replace("${HOME}", home).replace("$HOME", home)
    if "$" in word:
        return None
    return os.path.expanduser(word)


def _opts_and_args(args: list[str]) -> tuple[list[str], list[str]]:
    opts: list[str] = []
    rest: list[str] = []
    ended = False
    for a in args:
        if not ended and a == "--":
            ended = True
        elif not ended and a.startswith("-") and a != "-":
            opts.append(a)
        else:
            rest.append(a)
    return opts, rest


def _has_short(opts: list[str], letters: str) -> bool:
    return any(
        o.startswith("-") and not o.startswith("--") and any(c in o[1:] for c in letters) for o in opts
    )


def _dangerous_target(target: str, root: Path, cwd: Path | None, *, whole_root: bool = True) -> str | None:
    """Why a recursive operation on ``target`` is dangerous, or None when it stays inside the project."""
    expanded = _expand(target)
    if expanded is None:
        return f"'{target}' depends on a shell variable that cannot be checked"
    p = Path(expanded)
    if not p.is_absolute():
        if cwd is None:
            return f"'{target}' is relative to a directory that cannot be determined"
        p = cwd / p
    parts = p.parts
    glob_at = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[")), None)
    everything = False
    if glob_at is not None:
        everything = glob_at == len(parts) - 1 and parts[-1].strip("*?.[]") == ""
        p = Path(*parts[:glob_at]) if glob_at > 0 else Path("/")
    resolved = Path(os.path.normpath(p))
    try:
        resolved = resolved.resolve()
    except (OSError, RuntimeError):
        pass
    if resolved == Path("/"):
        return "the filesystem root"
    if resolved == Path.home().resolve():
        return "the home directory"
    if not is_inside(resolved, root):
        return f"'{target}' is outside the project root"
    if whole_root and resolved == root and (glob_at is None or everything):
        return f"'{target}' is the whole project"
    if whole_root and resolved == root / ".git" and glob_at is None:
        return "it deletes the git repository"
    return None


def _check_simple(name: str, args: list[str], root: Path, cwd: Path | None, via_input: bool) -> str | None:
    if name.startswith("mkfs"):
        return f"{name} formats a device"
    if name in _DISK_TOOLS:
        return _DISK_TOOLS[name]
    if name == "rm":
        opts, targets = _opts_and_args(args)
        if not (_has_short(opts, "rR") or "--recursive" in opts):
            return None
        if via_input and not targets:
            return "rm -r on paths read from input (cannot be checked)"
        for t in targets:
            why = _dangerous_target(t, root, cwd)
            if why:
                return f"rm -r on {why}" if not why.startswith("it ") else f"rm -r: {why}"
        return None
    if name in ("chmod", "chown", "chgrp"):
        opts, rest = _opts_and_args(args)
        if not (_has_short(opts, "R") or "--recursive" in opts):
            return None
        for t in rest:  # the mode/owner word is checked too: as a relative path it is harmless
            why = _dangerous_target(t, root, cwd, whole_root=False)
            if why:
                return f"recursive {name} on {why}"
        return None
    if name == "find":
        if not any(a in ("-delete", "-exec", "-execdir", "-ok") for a in args):
            return None
        starts = []
        for a in args:
            if a.startswith("-") or a in ("(", "!", "\\("):
                break
            starts.append(a)
        for t in starts or ["."]:
            why = _dangerous_target(t, root, cwd, whole_root=False)
            if why:
                return f"find -delete/-exec on {why}"
        return None
    if name == "git":
        return _check_git(args)
    return None


_GIT_GLOBAL_ARG = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"}


def _check_git(args: list[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _GIT_GLOBAL_ARG else 1
    if i >= len(args):
        return None
    sub, rest = args[i], args[i + 1 :]
    opts, pos = _opts_and_args(rest)
    if sub == "push":
        if _has_short(opts, "f") or any(o.startswith(("--force", "--mirror")) for o in opts):
            return "git push --force overwrites remote history"
        if any(p.startswith("+") for p in pos):
            return "git push with a +refspec overwrites remote history"
        if (
            _has_short(opts, "d")
            or "--delete" in opts
            or "--prune" in opts
            or any(p.startswith(":") for p in pos)
        ):
            return "git push deletes remote refs"
    elif sub == "reset" and ("--hard" in opts or "--merge" in opts):
        return "git reset --hard discards uncommitted work"
    elif sub == "clean":
        if _has_short(opts, "n") or "--dry-run" in opts:
            return None
        if _has_short(opts, "fxX") or "--force" in opts:
            return "git clean deletes untracked files"
    elif sub == "checkout":
        if _has_short(opts, "f") or "--force" in opts:
            return "git checkout --force discards uncommitted changes"
        if any(p in (".", "*", ":/", "./") for p in pos):
            return "git checkout . discards all uncommitted changes"
    elif sub == "restore":
        staged_only = ("--staged" in opts or _has_short(opts, "S")) and not (
            "--worktree" in opts or _has_short(opts, "W")
        )
        if not staged_only and any(p in (".", "*", ":/", "./") for p in pos):
            return "git restore . discards all uncommitted changes"
    elif sub == "branch" and (_has_short(opts, "D") or ("--force" in opts and "--delete" in opts)):
        return "git branch -D deletes a branch that may not be merged"
    elif sub == "stash" and pos[:1] == ["clear"]:
        return "git stash clear deletes every stash"
    elif sub == "filter-branch":
        return "git filter-branch rewrites history"
    return None
