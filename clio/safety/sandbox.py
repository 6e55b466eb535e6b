"""Path containment and the check for destructive shell commands.

- ``is_inside``: whether a resolved path lies beneath the project root. (``resolve_path``,
  which turns a tool argument into a checked path, is in clio/tools/paths.py.)
- ``destructive_reason``: a short reason when a shell command can destroy data (recursive
  ``rm`` outside the project, any forced recursive ``rm``, forced pushes, hard resets, disk tools...) or hides what it runs
  (a command name from a variable or substitution, text piped into a shell, inline interpreter
  code that deletes or spawns), else None. The command is split with shlex where possible;
  anything that does not parse is checked on its raw text with regexes, erring on the side of
  asking. This is the second line: under ``--sandbox`` the kernel confines every command
  (clio/safety/containment.py) whatever this check says.

Here: the walk over a command line (substitutions, here-documents, nested shells) and the
checks of rm, chmod/chown, find and disk tools on their targets. Its parts live beside it:
shell_words.py (the shell-word parsing), inline_code.py (interpreters' inline code),
git_checks.py (git subcommands and settings).

Nothing here imports from clio.tools: tools depend on safety, not the other way round.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from clio.lazy_re import lazy
from clio.safety.git_checks import check_git
from clio.safety.inline_code import CODE_DANGER, INTERPRETER, check_interpreter, code_of
from clio.safety.shell_words import (
    SHELLS,
    WRAPPERS,
    expand_home,
    follow_cd,
    has_short,
    inner_script,
    opts_and_args,
    reads_stdin,
    split_commands,
    strip_wrappers,
)

__all__ = ["destructive_reason", "is_inside"]


def is_inside(path: Path, root: Path) -> bool:
    """True when ``path`` is ``root`` or below it (both already resolved)."""
    return path == root or root in path.parents


# ---------------------------------------------------------------------------------------
# destructive commands

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
    (lazy(r"(\S+)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*\1\s*&"), "a fork bomb"),
    (
        lazy(r">\s*/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-|mapper/)"),
        "writes directly to a disk device",
    ),
    (lazy(r"\bof=/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk)"), "dd onto a disk device"),
]
# only used when the command cannot be tokenised
_FALLBACK_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (lazy(r"\brm\s+(-[a-zA-Z]*[rR]|--recursive)"), "recursive rm (the command could not be parsed)"),
    (lazy(r"\bgit\b.*\bpush\b.*(\s-[a-zA-Z]*f|--force|--mirror|--delete|\s\+\S)"), "a forced git push"),
    (lazy(r"\bgit\b.*\breset\b.*--hard"), "git reset --hard discards uncommitted work"),
    (lazy(r"\bgit\b.*\bclean\b.*\s-[a-zA-Z]*[fx]"), "git clean deletes untracked files"),
    (lazy(r"\bgit\b.*\b(checkout|restore)\b.*\s(\.|\*|:/)(\s|$)"), "discards uncommitted changes"),
    (lazy(r"(^|[\s;&|(])(dd|shred|wipefs|fdisk|sfdisk|parted|mkfs(\.\w+)?)(\s|$)"), "a disk tool"),
    (lazy(r"\bch(mod|own|grp)\s+.*(-R|--recursive)"), "recursive chmod/chown (could not be parsed)"),
]
_SUBST = lazy(r"\$\(([^()]*)\)|`([^`]*)`")
# a backtick substitution where a command name goes: `echo rm` -rf x
_BACKTICK_COMMAND = lazy(r"(^|[;&|(\n]|\b(?:then|do|else)\s)\s*`")
# a shell or ``source`` reading a process substitution: bash <(curl ...)
_SHELL_PROCSUB = lazy(r"(^|[\s;&|(])(sh|bash|zsh|dash|ksh|source|\.)(\s+-\S+)*\s+<\(")
# a here-document or here-string: the program before it and its body
_HEREDOC = lazy(
    r"(?P<line>[^\n]*?)<<-?[ \t]*(?P<q>['\"]?)(?P<tag>\w+)(?P=q)[^\n]*\n(?P<body>.*?)\n[ \t]*(?P=tag)[ \t]*(?:\n|$)",
    re.S,
)
_HERESTRING = lazy(r"(?P<line>[^\n<]*?)<<<\s*(?P<body>'[^']*'|\"[^\"]*\"|\S+)")


def destructive_reason(command: str, root: Path) -> str | None:
    """A short reason if ``command`` can destroy data outside what the project can recover, else None."""
    return _check(command, Path(root).resolve(), depth=0)


def _check(command: str, root: Path, depth: int) -> str | None:
    if depth > 4:
        return "nested shell commands too deep to check"
    for pat, why in _RAW_PATTERNS:
        if pat.search(command):
            return why
    if _BACKTICK_COMMAND.search(command):
        return "the command name comes from a `substitution` (cannot be checked)"
    if _SHELL_PROCSUB.search(command):
        return "runs a script from a process substitution <(...)"
    for m in _SUBST.finditer(command):
        inner = m.group(1) if m.group(1) is not None else m.group(2)
        reason = _check(inner, root, depth + 1)
        if reason:
            return reason
    for pat in (_HEREDOC, _HERESTRING):
        for m in pat.finditer(command):
            reason = _check_fed(m.group("line"), m.group("body").strip("'\""), root, depth)
            if reason:
                return reason
    command = _HEREDOC.sub(lambda m: m.group("line") + " ; ", command)
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
    for words, sep in split_commands(tokens):
        argv, via_input, split_string = strip_wrappers(words)
        if split_string is not None:
            reason = _check(" ".join([split_string, *map(shlex.quote, argv)]), root, depth + 1)
            if reason:
                return reason
            continue
        if not argv:
            continue
        if argv[0].startswith("$") or "$(" in argv[0] or "${" in argv[0]:
            return "the command name comes from a variable or substitution (cannot be checked)"
        name = os.path.basename(argv[0])
        piped = sep in ("|", "|&")
        if name == "cd" or name == "pushd":
            cwd = follow_cd(argv[1:], cwd)
            continue
        if name in SHELLS or name == "eval":
            inner = inner_script(argv)
            if inner is not None:
                if name == "eval" and ("$" in inner or "`" in inner):
                    return "eval of text computed at run time (cannot be checked)"
                reason = _check(inner, root, depth + 1)
                if reason:
                    return reason
            elif piped and reads_stdin(argv):
                return f"pipes text into {name} (what it runs cannot be checked)"
            continue
        if INTERPRETER.match(name):
            reason = check_interpreter(name, argv, piped)
            if reason:
                return reason
            continue
        reason = _check_simple(name, argv[1:], root, cwd, via_input)
        if reason:
            return reason
    return None


def _check_fed(line: str, body: str, root: Path, depth: int) -> str | None:
    """A here-document or here-string fed to the last command of ``line``."""
    last = re.split(r"[;&|(]", line)[-1].split()
    words = [w for w in last if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)]
    if not words:
        return None
    name = os.path.basename(words[0].strip("'\""))
    if name in SHELLS and inner_script(words) is None:
        return _check(body, root, depth + 1)
    if INTERPRETER.match(name) and code_of(name, words) is None and CODE_DANGER.search(body):
        return f"{name} code that deletes files or runs commands"
    return None


def _dangerous_target(target: str, root: Path, cwd: Path | None, *, whole_root: bool = True) -> str | None:
    """Why a recursive operation on ``target`` is dangerous, or None when it stays inside the project."""
    expanded = expand_home(target)
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
        opts, targets = opts_and_args(args)
        if not (has_short(opts, "rR") or "--recursive" in opts):
            return None
        if via_input and not targets:
            return "rm -r on paths read from input (cannot be checked)"
        for t in targets:
            why = _dangerous_target(t, root, cwd)
            if why:
                return f"rm -r on {why}" if not why.startswith("it ") else f"rm -r: {why}"
        if has_short(opts, "f") or "--force" in opts:  # as destructive as git clean -fdx
            return "rm -rf deletes whole folders without asking (files git does not track cannot be recovered)"
        return None
    if name in ("chmod", "chown", "chgrp"):
        opts, rest = opts_and_args(args)
        if not (has_short(opts, "R") or "--recursive" in opts):
            return None
        for t in rest:  # the mode/owner word is checked too: as a relative path it is harmless
            why = _dangerous_target(t, root, cwd, whole_root=False)
            if why:
                return f"recursive {name} on {why}"
        return None
    if name == "find":
        return _check_find(args, root, cwd)
    if name == "git":
        return check_git(args)
    return None


_FIND_ACTIONS = ("-delete", "-exec", "-execdir", "-ok", "-okdir")
_FIND_NARROWING = ("-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
                   "-lname", "-ilname")  # fmt: skip
_DELETERS = {"rm", "unlink", "rmdir", "shred", "truncate", "mv", "srm", "trash", "gio"}


def _check_find(args: list[str], root: Path, cwd: Path | None) -> str | None:
    if not any(a in _FIND_ACTIONS for a in args):
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
    deleting = "-delete" in args
    for j, a in enumerate(args):
        if a in _FIND_ACTIONS[1:] and j + 1 < len(args):
            prog = os.path.basename(args[j + 1])
            if prog in SHELLS or INTERPRETER.match(prog) or prog in WRAPPERS or prog.startswith("$"):
                return f"find -exec runs {prog} on every match (cannot be checked)"
            deleting = deleting or prog in _DELETERS
    if deleting:
        narrowed = any(
            a in _FIND_NARROWING and j + 1 < len(args) and args[j + 1].strip("*") != ""
            for j, a in enumerate(args)
        )
        if not narrowed:
            return "find deletes every file it finds (no -name/-path filter)"
    return None
