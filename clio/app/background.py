"""Consolidation after the run, never in the user's way (issue 33 item 3).

A run that ends with something to read back (its own session, or an earlier one never
consolidated: a killed REPL, a consolidation skipped or cut short) starts one detached child
(:func:`spawn`) after its answer is printed, then exits at once. The child (``python -m
clio.app.background``, its settings and paths handed over through a pipe, never argv or disk)
runs in its own process group, with no terminal and its output to ``/dev/null``, so it survives
the parent's exit and a Ctrl-C there. It:

- takes ``.clio/consolidation.lock`` (a ``flock``; the holder's pid in it), one child at a time
  per project, the next one waiting for it;
- resumes the session it was started for (waiting a few seconds while the parent still holds
  it: the session's own lock means no two processes ever consolidate the same session), reads
  it back (:meth:`clio.app.app.App.consolidate`), then the most recent earlier session not yet
  consolidated (:meth:`clio.app.consolidate.Consolidator.previous`), and, for a REPL session,
  memory upkeep (compaction of faded topics);
- records every request it sends in that session's usage (``session.json`` ``usage``: ``/cost``
  after ``--resume`` and ``clio sessions`` count it), since the run that started it has already
  printed its usage line;
- appends what it did to ``.clio/consolidation.log`` (``learned 2 new (r-…) from session …``).

A session whose read-back did not finish (killed, endpoint down, no answer) keeps its marker
where it was and is picked up by a later run's child.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

from clio.memory import consolidate as cons
from clio.store.sessions import SessionBusy

if TYPE_CHECKING:
    from clio.app.app import App
    from clio.app.consolidate import Outcome
    from clio.config import Settings
    from clio.paths import Paths

LOCK_NAME = "consolidation.lock"
LOG_NAME = "consolidation.log"  # what each child did, one line each
BUSY_WAIT = 15.0  # seconds the child waits for the parent to let go of its session
NOTICE = "clio: saving what this session established in the background (/memory list learned shows it)"


def pending(app: App) -> bool:
    """Whether a child would have something to do: this session's new part is worth reading back,
    or a recent earlier session was never consolidated. Cheap: no request, no child otherwise."""
    if not app.memory.consolidates or app.session is None:
        return False
    s = app.session
    part = cons.new_part(s.messages, s.info.consolidated)
    if part and cons.worth_it(part):
        return True
    recent = app.sessions.recent(6)
    return any(i.id != s.id and i.message_count > i.consolidated for i in recent)


def spawn(settings: Settings, paths: Paths, session_id: str, *, upkeep: bool = False) -> int | None:
    """Start the detached child for ``session_id``; its pid (None when it could not start)."""
    payload = pickle.dumps((settings, paths, session_id, upkeep))
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "clio.app.background"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=paths.cwd,
            start_new_session=True,  # its own process group: the parent's Ctrl-C and exit leave it be
            close_fds=True,
        )
    except OSError:
        return None
    assert child.stdin is not None
    try:
        child.stdin.write(payload)
        child.stdin.close()
    except OSError:
        return None
    return child.pid


def _open_lock(paths: Paths) -> int:
    paths.clio_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(paths.clio_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)  # one child at a time: the next waits its turn
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


class _Quiet:
    """The child's turn UI (clio.agent.turn.TurnUI): it sends no turn and has no screen."""

    def waiting(self) -> None: ...
    def pause(self) -> None: ...
    def text(self, delta: str) -> None: ...
    def answer_done(self, content: str, *, interrupted: bool, final: bool) -> None: ...
    def tool_start(self, name: str, args: dict[str, Any]) -> None: ...
    def tool_done(self, name: str, ok: bool, result: str) -> None: ...
    def notice(self, text: str) -> None: ...
    def diff(self, diff: str, left: int) -> None: ...


def _resume(settings: Settings, paths: Paths, session_id: str) -> App | None:
    from io import StringIO

    from rich.console import Console

    from clio.app.app import App

    quiet = Console(file=StringIO())
    deadline = time.monotonic() + BUSY_WAIT
    while True:
        try:
            return App.start(
                settings, paths, resume=session_id, interactive=False, console=quiet, err=quiet, ui=_Quiet()
            )
        except SessionBusy:
            if time.monotonic() > deadline:
                return None  # still open elsewhere: a later run picks it up
            time.sleep(0.2)


def run(settings: Settings, paths: Paths, session_id: str, upkeep: bool) -> None:
    fd = _open_lock(paths)
    try:
        app = _resume(settings, paths, session_id)
        if app is None:
            return
        try:
            _log(paths, app.consolidate())
            if app.memory.ask is not None and app.session is not None:
                _log(paths, app.memory.consolidator.previous(app.session.id, app.memory.ask))
            if upkeep and (done := app.upkeep()):
                _log(paths, f"compacted {done} faded memory topic(s) into summaries")
        finally:
            app.close()
    finally:
        os.close(fd)


def _log(paths: Paths, outcome: Outcome | str | None) -> None:
    """What a child did, one line each in ``.clio/consolidation.log`` (ids and counts, no content)."""
    if outcome is None:
        return
    line = outcome if isinstance(outcome, str) else outcome.describe()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    with open(paths.clio_dir / LOG_NAME, "a", encoding="utf-8") as f:
        f.write(f"{stamp} {line}\n")


def main() -> int:
    settings, paths, session_id, upkeep = pickle.loads(sys.stdin.buffer.read())  # from the parent, through a pipe
    args: tuple[Any, ...] = (settings, paths, str(session_id), bool(upkeep))
    with contextlib.suppress(Exception, KeyboardInterrupt):
        run(*args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
