"""Who goes first on a local endpoint (a single-slot server serves one request at a time): a
run's turn, then a consolidation child's request (clio.app.background). ``.clio/turn.lock`` is
held shared by every turn and exclusively by a child while its request is under way (its pid in
the file); a turn that finds a child's request under way stops that child."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clio.config import Settings
    from clio.paths import Paths

TURN_LOCK = "turn.lock"


@contextlib.contextmanager
def users_turn(settings: Settings, paths: Paths) -> Iterator[None]:
    """Held around a turn when the endpoint is local (a single-slot server serves one request at a
    time): a child's consolidation request never starts meanwhile, and one under way is stopped
    (its session stays marked: read back later). The user's request goes first."""
    path = paths.clio_dir / TURN_LOCK
    if not settings.is_local_endpoint() or not path.exists():
        yield
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        deadline = time.monotonic() + 2.0
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                _stop_child(os.pread(fd, 32, 0).decode().strip())
                if time.monotonic() > deadline:
                    break  # never wait long for it: the user's turn goes ahead anyway
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)


def _stop_child(holder: str) -> None:
    """SIGTERM the consolidation child ``holder`` names, once checked to be one (a pid reused by
    another program is never signalled; without /proc nothing is)."""
    if not holder.isdigit():
        return
    try:
        cmd = Path(f"/proc/{holder}/cmdline").read_bytes()
        if b"clio.app.background" in cmd:
            os.kill(int(holder), signal.SIGTERM)
    except OSError:
        return


@contextlib.contextmanager
def childs_request(paths: Paths) -> Iterator[None]:
    """The child's side of :func:`users_turn`: waits for no turn to be under way, then holds it."""
    fd = os.open(paths.clio_dir / TURN_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
        os.ftruncate(fd, 0)
    finally:
        os.close(fd)
