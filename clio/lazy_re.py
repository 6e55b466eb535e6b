"""Regular expressions compiled on first use instead of at import.

clio's modules hold a few hundred patterns (redaction rules, decision phrases, sandbox and
context-error wording); compiling them all at import cost ~0.1 s of start-up, most of it for
patterns a run may never use. ``lazy(pattern, flags)`` stands in for ``re.compile``: the same
methods, compiled the first time one is called (thread-safe: compiling twice is harmless).
"""

from __future__ import annotations

import re
from typing import Any, cast

__all__ = ["lazy", "warm"]

_ALL: list[_Lazy] = []


class _Lazy:
    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return self._compiled

    def __getattr__(self, name: str) -> Any:  # match, search, sub, split, finditer, pattern, ...
        return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        return f"lazy({self._args[0]!r})"


def lazy(pattern: str, flags: int | re.RegexFlag = 0) -> re.Pattern[str]:
    """A pattern that compiles itself when first used (typed as the compiled pattern it acts as)."""
    holder = _Lazy(pattern, int(flags))
    _ALL.append(holder)
    return cast("re.Pattern[str]", holder)


def warm() -> None:
    """Compile every lazy pattern made so far (a REPL does this while the user types)."""
    for holder in list(_ALL):
        holder.compiled()
