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

Nothing here imports from clio.tools: tools depend on safety, not the other way round.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from clio.lazy_re import lazy

__all__ = ["destructive_reason", "is_inside"]


def is_inside(path: Path, root: Path) -> bool:
    """True when ``path`` is ``root`` or below it (both already resolved)."""
    return path == root or root in path.parents


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
_INTERPRETER = lazy(
    r"^(python|pypy)[0-9.]*$|^(perl|ruby|node|nodejs|deno|bun|php|lua[0-9.]*|tclsh|Rscript|osascript|pwsh)$"
)
# the short option that takes inline code, per interpreter family
_CODE_OPTS = {"python": "c", "pypy": "c", "perl": "eE", "ruby": "e", "node": "ep", "nodejs": "ep", "bun": "e",
              "php": "rR", "lua": "e", "tclsh": "", "Rscript": "e", "osascript": "e", "pwsh": "c"}  # fmt: skip
_CODE_LONG = ("--eval", "--print", "--command", "--exec")
_CODE_DANGER = lazy(
    r"rmtree|unlink|\bremove(dirs)?\b|rmdir|\brm(_rf|_r|_f)?\b|rmSync|rimraf|truncate|shred|"
    r"os\.system|subprocess|\bpopen|\bspawn|\bexec(Sync|File|[lv]p?e?)?\b|\bsystem\s*\(|shell_exec|passthru|"
    r"proc_open|child_process|FileUtils|File\.delete|Deno\.(remove|run|Command)|b64decode|base64|"
    r"__import__|\beval\s*\(|`",
    re.I,
)


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
    for words, sep in _split(tokens):
        argv, via_input, split_string = _strip_wrappers(words)
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
            cwd = _cd(argv[1:], cwd)
            continue
        if name in _SHELLS or name == "eval":
            inner = _inner_script(argv)
            if inner is not None:
                if name == "eval" and ("$" in inner or "`" in inner):
                    return "eval of text computed at run time (cannot be checked)"
                reason = _check(inner, root, depth + 1)
                if reason:
                    return reason
            elif piped and _reads_stdin(argv):
                return f"pipes text into {name} (what it runs cannot be checked)"
            continue
        if _INTERPRETER.match(name):
            reason = _check_interpreter(name, argv, piped)
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
    if name in _SHELLS and _inner_script(words) is None:
        return _check(body, root, depth + 1)
    if _INTERPRETER.match(name) and _code_of(name, words) is None and _CODE_DANGER.search(body):
        return f"{name} code that deletes files or runs commands"
    return None


def _family(name: str) -> str:
    m = re.match(r"^(python|pypy|lua)", name)
    return m.group(1) if m else name


def _code_of(name: str, argv: list[str]) -> str | None:
    """The inline code given to an interpreter (-c, -e, --eval...), else None."""
    letters = _CODE_OPTS.get(_family(name), "")
    for j, a in enumerate(argv[1:], start=1):
        if a.startswith(_CODE_LONG):
            if "=" in a:
                return a.split("=", 1)[1]
            return argv[j + 1] if j + 1 < len(argv) else ""
        if a.startswith("-") and not a.startswith("--") and letters and a[-1] in letters:
            return argv[j + 1] if j + 1 < len(argv) else ""
        if not a.startswith("-"):
            if name == "deno" and a == "eval":
                return " ".join(argv[j + 1 :])
            break
    return None


def _reads_stdin(argv: list[str]) -> bool:
    """A shell or interpreter given no script file (or ``-``) runs what it reads on stdin."""
    for a in argv[1:]:
        if a in ("-", "-s") or (a.startswith("-") and not a.startswith("--") and "s" in a[1:]):
            return True
        if a in ("-m", "-c") or a.startswith("--"):
            return False
        if not a.startswith("-"):
            return False
    return True


def _check_interpreter(name: str, argv: list[str], piped: bool) -> str | None:
    code = _code_of(name, argv)
    if code is not None:
        if _CODE_DANGER.search(code):
            return f"{name} inline code that deletes files or runs commands"
        return None
    if piped and _reads_stdin(argv):
        return f"pipes text into {name} (what it runs cannot be checked)"
    return None


def _split(tokens: list[str]) -> list[tuple[list[str], str]]:
    """Simple commands with the separator before each, redirections (and their targets) removed."""
    out: list[tuple[list[str], str]] = [([], "")]
    skip = False
    for tok in tokens:
        if skip:
            skip = False
            continue
        if tok in _SEPARATORS or tok in ("<(", ">("):
            out.append(([], tok))
        elif tok and set(tok) <= set("<>&|") and ("<" in tok or ">" in tok):
            skip = True
        else:
            out[-1][0].append(tok)
    return [c for c in out if c[0]]


def _strip_wrappers(words: list[str]) -> tuple[list[str], bool, str | None]:
    """Drop ``VAR=value`` prefixes and wrappers such as sudo/env/xargs; report xargs, and the
    string of ``env -S STRING`` (which env splits into a command line itself)."""
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
            if name == "env" and (opt.startswith("--split-string") or re.match(r"^-[a-zA-Z]*S", opt)):
                if "=" in opt and opt.startswith("--"):
                    return words[i:], via_input, opt.split("=", 1)[1]
                tail = opt[opt.index("S") + 1 :] if not opt.startswith("--") else ""
                if tail:
                    return words[i:], via_input, tail
                return words[i + 1 :], via_input, words[i] if i < len(words) else ""
            if opt in arg_opts and i < len(words):
                i += 1
        if name == "timeout" and i < len(words):
            i += 1  # the duration
        if name == "watch":
            break
    return words[i:], via_input, None


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
        if _has_short(opts, "f") or "--force" in opts:  # as destructive as git clean -fdx
            return "rm -rf deletes whole folders without asking (files git does not track cannot be recovered)"
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
        return _check_find(args, root, cwd)
    if name == "git":
        return _check_git(args)
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
            if prog in _SHELLS or _INTERPRETER.match(prog) or prog in _WRAPPERS or prog.startswith("$"):
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


_GIT_GLOBAL_ARG = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"}


# config keys whose value git runs as a command (or that load more config)
_GIT_COMMAND_KEYS = lazy(
    r"^(core\.(fsmonitor|hookspath|sshcommand|pager|editor|askpass|gitproxy)|sequence\.editor|diff\.external"
    r"|diff\..+\.(textconv|command)|filter\..+|credential(\..+)?\.helper|gpg(\..+)?\.program|pager\..+"
    r"|uploadpack\..+|protocol\..*allow|merge\..+\.driver|remote\..+\.(uploadpack|receivepack|proxy)"
    r"|include\..*|includeif\..*)$",
    re.I,
)


def _git_setting(key: str, value: str | None) -> str | None:
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


def _check_git(args: list[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        opt = args[i]
        value = args[i + 1] if opt == "-c" and i + 1 < len(args) else None
        if opt.startswith("--config-env"):
            return "git --config-env takes settings from the environment (cannot be checked)"
        if value is not None:
            key, eq, val = value.partition("=")
            why = _git_setting(key, val if eq else None)
            if why:
                return f"git -c: {why}"
        i += 2 if opt in _GIT_GLOBAL_ARG else 1
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
    elif sub == "update-ref" and (_has_short(opts, "d") or "--stdin" in opts):
        return "git update-ref -d deletes a ref"
    elif sub == "reflog" and pos[:1] in (["expire"], ["delete"]):
        return "git reflog expire/delete drops recovery points"
    elif sub == "config":
        keys = pos[1:] if pos[:1] in (["set"], ["--add"]) else pos
        if len(keys) >= 2:
            why = _git_setting(keys[0], keys[1])
            if why:
                return f"git config: {why}"
    return None
