"""Consolidation after the run, never in the user's way (issue 33 item 3).

A run that ends with something to read back (its own session, or an earlier one never
consolidated: a killed REPL, a consolidation skipped or cut short) starts one detached child
(:func:`spawn`) after its answer is printed, then exits at once. The child (``python -m
clio.app.background``, its settings and paths handed over through a pipe, never argv or disk)
runs in its own process group, with no terminal and its output to ``/dev/null``, so it survives
the parent's exit and a Ctrl-C there. It:

- takes ``.clio/consolidation.lock`` (a ``flock``; the holder's pid in it), one child at a time
  per project, the next one waiting for it;
- reads the session it was started for back, then the most recent earlier session not yet
  consolidated (nor judged not worth it: ``session.json`` ``checked``), and, for a REPL
  session, does memory upkeep (compaction of faded topics). It reads a session without its
  lock, so a user resuming it meanwhile is never refused; it takes the lock only to write
  (entries, marker, usage) and writes nothing if the session changed since it was read
  (:class:`_Reader`): that part is read back by a later child. With the project lock, no two
  children ever consolidate the same session;
- records every request it sends in that session's usage (``session.json`` ``usage``: ``/cost``
  after ``--resume`` and ``clio sessions`` count it), since the run that started it has already
  printed its usage line (which says so, :data:`USAGE_CLAUSE`; ``--output json`` carries
  ``"background": {"consolidation": true, "session_id": ...}``);
- with a local endpoint (a single-slot server), sends its request only while no run's turn is
  under way (:func:`clio.app.turn_lock.users_turn`, around every turn), and a turn that starts meanwhile stops it:
  the user's request goes first, and the session stays marked for a later child;
- appends what it did to ``.clio/consolidation.log`` (``learned 2 new (r-…) from session …``).

A session whose read-back did not finish (killed, endpoint down, no answer) keeps its marker
where it was and is picked up by a later run's child.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from clio.app.consolidate import LOOK_BACK, NO_ANSWER, checked
from clio.app.turn_lock import childs_request
from clio.memory import consolidate as cons
from clio.store.session_lock import SessionBusy
from clio.store.sessions import SessionNotFound

if TYPE_CHECKING:
    from clio.app.app import App
    from clio.app.consolidate import Outcome
    from clio.config import Settings
    from clio.paths import Paths

LOCK_NAME = "consolidation.lock"
LOG_NAME = "consolidation.log"  # what each child did, one line each
GRACE = 1.0  # seconds the child waits before reading (rapid `clio --resume -p` runs: one read-back, not one each)
NOTICE = "clio: saving what this session established in the background (/memory list learned shows it)"
# the one-shot run's usage line, when it starts a child: the line is printed first, so the child's
# requests are not in its figures (nor in ``--output json`` usage, which says ``background`` instead)
USAGE_CLAUSE = "the memory read-back in the background is not counted here (its requests go to this session's /cost)"


def pending(app: App) -> bool:
    """Whether a child would have something to do: this session's new part is worth reading back,
    or a recent earlier session has messages neither consolidated nor judged not worth it
    (``SessionInfo.unread``). Cheap: no request, no child otherwise. A new part not worth it is
    noted in the session (:func:`clio.app.consolidate.checked`, one small write, only then): the
    next runs do not count it, nor start a child for it; more messages in it later make it count
    again, read from its marker, this part included."""
    if not app.memory.consolidates or app.session is None:
        return False
    s = app.session
    part = cons.new_part(s.messages, s.info.consolidated)
    if part and cons.worth_it(part):
        return True
    if part and s.info.checked != len(s.messages):
        checked(s)
    recent = app.sessions.recent(LOOK_BACK + 1)
    return any(i.id != s.id and i.unread() for i in recent)


def spawn(settings: Settings, paths: Paths, session_id: str, *, upkeep: bool = False) -> int | None:
    """Start the detached child for ``session_id``; its pid (None when it could not start)."""
    import pickle  # only a run that leaves something to read back pays for these
    import subprocess

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


def _scratch(settings: Settings, paths: Paths) -> App:
    """An App on a new session that is never written (it sends no turn): the memory service,
    client and window the read-back needs, holding no session the user could want to resume."""
    from io import StringIO

    from rich.console import Console

    from clio.app.app import App

    quiet = Console(file=StringIO())
    return App.start(settings, paths, resume=None, interactive=False, console=quiet, err=quiet, ui=_Quiet())


class _Reader:
    """Reads sessions back without holding their locks while the model answers: a user resuming
    the session meanwhile is never refused. The lock is taken only to write (store, marker,
    usage), and only if the session is as it was read; otherwise nothing is written and the
    session stays marked for a later child."""

    def __init__(self, app: App) -> None:
        from clio.agent.side import SideRequest

        self.app = app
        self.spent: list[dict[str, int]] = []
        side = SideRequest(app.client, app.window, app.redactor, self.spent.append, app.settings.temperature)

        def ask(prompt: str, max_tokens: int) -> str:
            if not app.settings.is_local_endpoint():
                return side(prompt, max_tokens)
            with childs_request(app.paths):
                return side(prompt, max_tokens)

        self.ask = ask
        app.memory.ask = ask  # upkeep (compaction) too

    def read_back(self, session_id: str) -> Outcome | None:
        store = self.app.sessions
        try:
            os.close(store.take(session_id))  # open in another run now (resumed): its own child reads it
            session = store.read(session_id)
            as_read = store.info(session_id)
        except (SessionBusy, SessionNotFound, OSError):
            return None
        held: list[int] = []

        def commit() -> bool:
            try:
                fd = store.take(session_id)
            except (SessionBusy, SessionNotFound, OSError):
                return False
            held.append(fd)
            now = store.info(session_id)
            return (now.message_count, now.consolidated, now.checked, now.updated) == (
                as_read.message_count, as_read.consolidated, as_read.checked, as_read.updated,
            )  # fmt: skip

        try:
            return self.app.memory.consolidator.run(session, self.ask, commit=commit)
        finally:
            for fd in held:
                os.close(fd)

    def earlier(self, current_id: str) -> Outcome | None:
        """The most recent earlier session never consolidated (as ``Consolidator.previous``)."""
        recent = self.app.sessions.recent(LOOK_BACK + 1)
        for info in [i for i in recent if i.id != current_id and i.unread()]:
            outcome = self.read_back(info.id)
            if outcome is not None and (not outcome.skipped or outcome.skipped == NO_ANSWER):
                return outcome
        return None

    def record_usage(self, session_id: str) -> bool:
        """The child's requests, in the usage of the session it was started for."""
        if not self.spent:
            return True
        try:
            fd = self.app.sessions.take(session_id)
        except (SessionBusy, SessionNotFound, OSError):
            return False
        try:
            session = self.app.sessions.read(session_id)
            for usage in self.spent:
                session.add_usage(usage)
        finally:
            os.close(fd)
        return True


def run(settings: Settings, paths: Paths, session_id: str, upkeep: bool) -> None:
    time.sleep(GRACE)  # a run resuming the session right away takes it first: that run's child reads it
    fd = _open_lock(paths)
    try:
        app = _scratch(settings, paths)
        try:
            app.settle_model()
            reader = _Reader(app)
            _log(paths, reader.read_back(session_id))
            _log(paths, reader.earlier(session_id))
            if upkeep and (done := app.upkeep()):
                _log(paths, f"compacted {done} faded memory topic(s) into summaries")
            if not reader.record_usage(session_id):
                _log(paths, f"{len(reader.spent)} request(s) not recorded in session {session_id}: it was open")
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
    import pickle
    import signal

    signal.pthread_sigmask(signal.SIG_SETMASK, ())  # clio may start it from a thread that blocks SIGINT (clio/threads.py)

    settings, paths, session_id, upkeep = pickle.loads(sys.stdin.buffer.read())  # from the parent, through a pipe
    args: tuple[Any, ...] = (settings, paths, str(session_id), bool(upkeep))
    with contextlib.suppress(Exception, KeyboardInterrupt):
        run(*args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
