"""The prompt's line handed on once the user pauses typing: the REPL gives it to the automatic
recall (:meth:`clio.app.auto_recall.AutoRecall.typed`), whose encoder helper then does the line's
whole recall (the search, the cosines, the judge), so that if it is sent as typed, Enter only
fetches the block (docs/memory.md).

A line that ends as a sentence ends ("?", ".", "!") is handed on after a much shorter pause
(:data:`ENDED_PAUSE_S`): Enter most often comes next, within a keystroke's time, and the longer
pause would leave the whole recall (the judge's reads most of all) on Enter's path. A sentence
ended inside a longer message only has the helper recall a line that Enter will not send
(docs/memory.md, "Enter after a question mark").

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
ENDED_PAUSE_S = 0.05  # ... or this long when it ends as a sentence ends
ENDS = ("?", ".", "!", "\uff1f", "\u3002", "\uff01")  # and the full-width ？ 。 ！


def pause_for(text: str, pause_s: float = PAUSE_S, ended_pause_s: float = ENDED_PAUSE_S) -> float:
    """How long ``text`` must stay as it is before it is handed on: shorter when it ends as a
    sentence ends (trailing spaces aside)."""
    return min(pause_s, ended_pause_s) if text.rstrip().endswith(ENDS) else pause_s


class TypingAhead:
    def __init__(self, send: Callable[[str], None], pause_s: float = PAUSE_S, ended_pause_s: float = ENDED_PAUSE_S) -> None:
        self.send = send
        self.pause_s = pause_s
        self.ended_pause_s = ended_pause_s
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
                left = self._at + pause_for(self._text, self.pause_s, self.ended_pause_s) - time.monotonic()
                if left > 0:
                    self._cond.wait(left)  # a change meanwhile starts the pause again
                    continue
                text, self._text = self._text, None
            with contextlib.suppress(Exception):
                self.send(text)
