"""A Ctrl-C at the REPL's prompt that is never lost, whenever it lands.

While the prompt reads, the terminal is in raw mode and Ctrl-C is a key (prompt-toolkit's binding
aborts the line). Once Enter is read, prompt-toolkit leaves raw mode first and only then removes
its own SIGINT handler: a Ctrl-C in between became a signal sent to a finished prompt and was
dropped, and the message went out. (asyncio's own handler, used when prompt-toolkit's is off, can
drop it too, when the cancellation it asks for is swallowed on the way out.)

So the prompt runs with ``handle_sigint=False`` under this latch: clio's own handler, installed
before the prompt starts and released only inside the code that handles the line, where
KeyboardInterrupt is caught. A signal while the prompt still reads aborts the line as the key
does; a signal after Enter is remembered, and the line is not sent.
"""

from __future__ import annotations

import signal
from types import FrameType
from typing import Any

from prompt_toolkit.application import Application


class SigintLatch:
    """``arm()`` before the prompt, ``release()`` once inside the ``try`` that handles the line:
    it says whether SIGINT came meanwhile and puts the previous handler back. Main thread only
    (where signal handlers live)."""

    def __init__(self, app: Application[Any]) -> None:
        self.app = app
        self.fired = False
        self._previous: Any = None
        self._armed = False

    def arm(self) -> None:
        self.fired = False
        if not self._armed:
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            self._armed = True

    def release(self) -> bool:
        """Whether SIGINT came since ``arm()``; the handler in place before is back."""
        if self._armed:
            signal.signal(signal.SIGINT, self._previous)
            self._armed = False
        fired, self.fired = self.fired, False
        return fired

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.fired = True
        app = self.app
        loop = app.loop
        if app.is_running and loop is not None:
            try:
                loop.call_soon_threadsafe(self._abort)
            except RuntimeError:  # the loop closed meanwhile: the flag alone says it
                pass

    def _abort(self) -> None:
        """Still reading (a SIGINT sent from outside, since raw mode turns Ctrl-C into a key):
        the line is dropped as the Ctrl-C key drops it."""
        app = self.app
        if app.is_running and app.future is not None and not app.future.done():
            self.fired = False  # answered here: the prompt raises KeyboardInterrupt itself
            app.exit(exception=KeyboardInterrupt, style="class:aborting")
