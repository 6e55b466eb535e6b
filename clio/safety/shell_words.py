"""The shell-word parsing behind the destructive-command check (clio/safety/sandbox.py): a
tokenised command line split into simple commands, wrappers (sudo, env, xargs...) stripped,
the script of ``sh -c``/``eval``, where ``cd`` goes, ``~``/``$HOME`` expanded, options told
from arguments, and whether a shell or interpreter runs what it reads on stdin.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = [
    "SHELLS",
    "WRAPPERS",
    "expand_home",
    "follow_cd",
    "has_short",
    "inner_script",
    "opts_and_args",
    "reads_stdin",
    "split_commands",
    "strip_wrappers",
]

_SEPARATORS = {";", "&&", "||", "|", "&", "|&", "(", ")", ";;", ";&", "!"}
WRAPPERS = {"sudo", "doas", "env", "nohup", "time", "nice", "ionice", "command", "exec", "builtin",
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
SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish", "su"}


def reads_stdin(argv: list[str]) -> bool:
    """A shell or interpreter given no script file (or ``-``) runs what it reads on stdin."""
    for a in argv[1:]:
        if a in ("-", "-s") or (a.startswith("-") and not a.startswith("--") and "s" in a[1:]):
            return True
        if a in ("-m", "-c") or a.startswith("--"):
            return False
        if not a.startswith("-"):
            return False
    return True


def split_commands(tokens: list[str]) -> list[tuple[list[str], str]]:
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


def strip_wrappers(words: list[str]) -> tuple[list[str], bool, str | None]:
    """Drop ``VAR=value`` prefixes and wrappers such as sudo/env/xargs; report xargs, and the
    string of ``env -S STRING`` (which env splits into a command line itself)."""
    i, via_input = 0, False
    while i < len(words):
        w = words[i]
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w):
            i += 1
            continue
        name = os.path.basename(w)
        if name not in WRAPPERS:
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


def inner_script(argv: list[str]) -> str | None:
    if os.path.basename(argv[0]) == "eval":
        return " ".join(argv[1:])
    for j, a in enumerate(argv[1:], start=1):
        if a.startswith("-") and not a.startswith("--") and "c" in a[1:] and j + 1 < len(argv):
            return argv[j + 1]
    return None


def follow_cd(args: list[str], cwd: Path | None) -> Path | None:
    args = [a for a in args if not (a.startswith("-") and a != "-")]
    if not args:
        return Path.home().resolve()
    target = expand_home(args[0])
    if target is None or args[0] == "-":
        return None
    p = Path(target)
    if not p.is_absolute():
        if cwd is None:
            return None
        p = cwd / p
    return p.resolve()


def expand_home(word: str) -> str | None:
    """``~`` and ``$HOME`` expanded; None when the word depends on another variable."""
    home = str(Path.home())
    word = word.replace("${HOME}", home).replace("$HOME", home)
    if "$" in word:
        return None
    return os.path.expanduser(word)


def opts_and_args(args: list[str]) -> tuple[list[str], list[str]]:
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


def has_short(opts: list[str], letters: str) -> bool:
    return any(
        o.startswith("-") and not o.startswith("--") and any(c in o[1:] for c in letters) for o in opts
    )
