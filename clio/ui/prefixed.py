"""stderr of a one-shot run: every line clio writes there starts with ``clio: ``.

Scripts read a one-shot run's stderr line by line and tell clio's lines from anything else by
that prefix: errors, warnings, the usage line, retry notices, tool lines, diffs, the JSON mode's
error line, log lines of ``--debug``. Rather than each place remembering it, the run's
``sys.stderr`` is wrapped (:func:`prefix_stderr`): a line that does not already start with it
gets it (after any colour codes it begins with). Text from the model written to stderr (what it
says beside a tool call) is given the prefix before it is written, so a line it makes up that
starts with ``clio: `` still reads as the model's (``clio: clio: ...``).
"""

from __future__ import annotations

import atexit
import io
import sys
from typing import TextIO

from clio.lazy_re import lazy

PREFIX = "clio: "
_LEADING_SGR = lazy(r"(?:\x1b\[[0-9;]*m)+")


class PrefixedLines(io.TextIOBase):
    """A text stream writing whole lines to ``stream``, each starting with :data:`PREFIX`."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._line = ""  # the part of the current line not written yet
        self._started = False  # part of the current line is out (a flush in the middle of it)

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._line += text
        while "\n" in self._line:
            line, self._line = self._line.split("\n", 1)
            self._emit(line + "\n")
            self._started = False
        return len(text)

    def _emit(self, text: str) -> None:
        if not self._started:
            codes = m.group(0) if (m := _LEADING_SGR.match(text)) else ""
            rest = text[len(codes) :]
            if not rest.startswith(PREFIX):
                text = PREFIX + codes + rest
        self.stream.write(text)

    def flush(self) -> None:
        if self._line:  # a line without its end yet (a question): out now, prefixed once
            self._emit(self._line)
            self._line, self._started = "", True
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", None) or "utf-8"


def prefix_stderr() -> None:
    """From now on every line this process writes to ``sys.stderr`` starts with ``clio: ``."""
    if not isinstance(sys.stderr, PrefixedLines):
        wrapped = PrefixedLines(sys.stderr)
        atexit.register(wrapped.flush)  # a last line without its end is not lost
        sys.stderr = wrapped
