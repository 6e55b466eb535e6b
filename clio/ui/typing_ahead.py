"""The prompt's line handed on once the user pauses typing: the REPL gives it to the automatic
recall (:meth:`clio.app.auto_recall.AutoRecall.embed_ahead`), whose encoder helper embeds it then,
so that on Enter only the search and the cosines are left on the user's path (a stronger model's
query embedding is most of the step: docs/memory.md).

One daemon thread, woken by each change of the line; the callback runs on it, never on the
prompt's, and its failures are its own (nothing of this may disturb typing).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

from clio import threads

PAUSE_S = 0.25  # the line is handed on once it has not changed for this long


class TypingAhead:
    def __init__(self, send: Callable[[str], None], pause_s: float = PAUSE_S) -> None:
        self.send = send
        self.pause_s = pause_s
        self._cond = threading.Condition()
        self._text: str | None = None  # the latest line not handed on yet
        self._at = 0.0  # when it last changed (monotonic)
        self._thread: threading.Thread | None = None

    def changed(self, text: str) -> None:
        """The line is now ``text`` (prompt-toolkit's buffer changed): cheap, never blocks."""
        with self._cond:
            self._text = text
            self._at = time.monotonic()
            if self._thread is None:
                self._thread = threads.start(self._run, "clio-typing-ahead")
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._text is None:
                    self._cond.wait()
                left = self._at + self.pause_s - time.monotonic()
                if left > 0:
                    self._cond.wait(left)  # a change meanwhile starts the pause again
                    continue
                text, self._text = self._text, None
            with contextlib.suppress(Exception):
                self.send(text)
