"""Which shell commands plan mode lets run: an allow-list of read-only programs and git
subcommands, checked on the command's words before it runs (pure; no I/O).

A command passes when every simple command in it (split at ``|``, ``&&``, ``||``, ``;``, ``&``,
newlines and parentheses) starts with a bare program name on :data:`PROGRAMS` (never a path: a
``./ls`` in the repository is not ``ls``), uses none of that program's writing or program-running
options (:data:`FORBIDDEN`), and the line has no command substitution and no output redirection
except to ``/dev/null`` (``2>&1`` too). git: only :data:`GIT_READ` subcommands, listings of
branches, tags, remotes and stashes, no options before the subcommand but ``--no-pager``, and no
``--output``/``--ext-diff``/``-O``. Anything else (an interpreter, a build tool, ``sed``/``awk``
whose scripts can write files, ``env``/``xargs``/``nice`` that run another program, variable
assignments, functions) is refused: the list is short on purpose, since a refused read costs a
sentence while an allowed write would break the promise of plan mode.
"""

from __future__ import annotations

import shlex

from clio import lazy_re

PROGRAMS = frozenset(
    [
        "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "find", "pwd", "cd", "echo",
        "printf", "which", "file", "stat", "du", "df", "tree", "diff", "cmp", "sort", "uniq", "cut", "tr",
        "nl", "basename", "dirname", "realpath", "readlink", "date", "uname", "whoami", "id", "true",
        "false", "test", "[", "jq", "column", "fold", "md5sum", "sha1sum", "sha256sum", "od", "xxd",
        "hexdump", "strings", "git",
    ]
)  # fmt: skip
# options that write a file or run a program; a short one (-o) also inside a cluster (-uo)
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "find": ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"),
    "sort": ("-o", "--output", "--compress-program"),
    "rg": ("--pre",),
    "tree": ("-o",),
    "date": ("-s", "--set"),
    "file": ("-C", "--compile"),
    "git": ("--output", "--ext-diff", "-O", "--open-files-in-pager"),
}
ONE_OPERAND = frozenset({"uniq", "xxd"})  # a second operand is the file they write
GIT_READ = frozenset(
    ["status", "log", "diff", "show", "blame", "ls-files", "ls-tree", "rev-parse", "describe", "grep", "shortlog", "cat-file", "rev-list", "merge-base", "name-rev", "show-ref", "count-objects"]
)
GIT_LISTING = {
    "branch": frozenset(["-a", "-r", "-v", "-vv", "-l", "--all", "--list", "--remotes", "--verbose", "--show-current", "--no-color"]),
    "tag": frozenset(["-l", "-n", "--list"]),
    "remote": frozenset(["-v", "--verbose"]),
    "stash": frozenset(["list", "show"]),
}
_HARMLESS_REDIRECT = lazy_re.lazy(r"(?:\d|&)?>>?\s*/dev/null|\d?>&\d")
_SEPARATORS = {"|", "||", "&&", ";", "&", "(", ")", ";;", "|&"}


def readonly_reason(command: str) -> str | None:
    """None when ``command`` is read-only by the rules above, else why not (one clause)."""
    if "`" in command or "$(" in command or "<(" in command or ">(" in command:
        return "it uses command or process substitution"
    text = _HARMLESS_REDIRECT.sub(" ", command).replace("\r", ";").replace("\n", ";")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return "it could not be parsed (unbalanced quotes)"
    simple: list[list[str]] = [[]]
    for w in words:
        if w in _SEPARATORS:
            simple.append([])
        elif w and set(w) <= set("<>&|;()") and ">" in w or w == "<>":
            return "it redirects output into a file"
        elif w and set(w) <= set("<>&|;()"):
            continue  # input redirection (<, <<): reads
        else:
            simple[-1].append(w)
    for argv in simple:
        if argv:
            why = _simple_reason(argv)
            if why is not None:
                return why
    return None


def _simple_reason(argv: list[str]) -> str | None:
    program = argv[0]
    if program not in PROGRAMS:
        return f"`{program}` is not on plan mode's list of read-only programs"
    for arg in argv[1:]:
        for bad in FORBIDDEN.get(program, ()):
            if arg == bad or (bad.startswith("--") and arg.startswith(bad + "=")) or (
                len(bad) == 2 and arg.startswith("-") and not arg.startswith("--") and bad[1] in arg[1:]
            ):
                return f"`{program} {bad}` writes files or runs another program"
    if program in ONE_OPERAND and len([a for a in argv[1:] if not a.startswith("-")]) > 1:
        return f"`{program}` with a second operand writes that file"
    if program == "git":
        return _git_reason(argv[1:])
    return None


def _git_reason(args: list[str]) -> str | None:
    while args and args[0] == "--no-pager":
        args = args[1:]
    if not args:
        return None
    sub, rest = args[0], args[1:]
    if sub.startswith("-"):
        return f"git options before the subcommand ({sub}) are not allowed in plan mode"
    if sub in GIT_READ:
        return None
    allowed = GIT_LISTING.get(sub)
    if allowed is None:
        return f"`git {sub}` is not a read-only git subcommand"
    if any(a not in allowed for a in rest):
        return f"`git {sub}` is allowed in plan mode only as a listing ({', '.join(sorted(allowed))})"
    return None
