"""Interpreters in the destructive-command check (clio/safety/sandbox.py): the inline code
given to python/perl/node/... (``-c``, ``-e``, ``--eval``...) and whether it deletes files or
runs commands, and text piped into an interpreter that reads its program from stdin.
"""

from __future__ import annotations

import re

from clio.lazy_re import lazy
from clio.safety.shell_words import reads_stdin

__all__ = ["CODE_DANGER", "INTERPRETER", "check_interpreter", "code_of"]

INTERPRETER = lazy(
    r"^(python|pypy)[0-9.]*$|^(perl|ruby|node|nodejs|deno|bun|php|lua[0-9.]*|tclsh|Rscript|osascript|pwsh)$"
)
# the short option that takes inline code, per interpreter family
_CODE_OPTS = {"python": "c", "pypy": "c", "perl": "eE", "ruby": "e", "node": "ep", "nodejs": "ep", "bun": "e",
              "php": "rR", "lua": "e", "tclsh": "", "Rscript": "e", "osascript": "e", "pwsh": "c"}  # fmt: skip
_CODE_LONG = ("--eval", "--print", "--command", "--exec")
CODE_DANGER = lazy(
    r"rmtree|unlink|\bremove(dirs)?\b|rmdir|\brm(_rf|_r|_f)?\b|rmSync|rimraf|truncate|shred|"
    r"os\.system|subprocess|\bpopen|\bspawn|\bexec(Sync|File|[lv]p?e?)?\b|\bsystem\s*\(|shell_exec|passthru|"
    r"proc_open|child_process|FileUtils|File\.delete|Deno\.(remove|run|Command)|b64decode|base64|"
    r"__import__|\beval\s*\(|`",
    re.I,
)


def _family(name: str) -> str:
    m = re.match(r"^(python|pypy|lua)", name)
    return m.group(1) if m else name


def code_of(name: str, argv: list[str]) -> str | None:
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


def check_interpreter(name: str, argv: list[str], piped: bool) -> str | None:
    code = code_of(name, argv)
    if code is not None:
        if CODE_DANGER.search(code):
            return f"{name} inline code that deletes files or runs commands"
        return None
    if piped and reads_stdin(argv):
        return f"pipes text into {name} (what it runs cannot be checked)"
    return None
