"""clio's side of the command launcher (clio/safety/launcher.py): start it, hand it commands.

``start()`` starts the launcher (once per process: at the first command, ``spawn``; the REPL while
its prompt is up) with an empty environment and a fresh ``exec``, so it never holds a secret
whenever it starts. ``spawn(options, argv, cwd, env)`` sends one confined command (the
wrapper's options, clio/safety/wrapper.py ``wrapper_options``) and returns a :class:`Launched`:
the command's pid (its own process group), its output (stdout and stderr merged into one pipe)
and its exit status, as ``subprocess.Popen`` offers them. ``None`` means the launcher is not
there (it could not start, it died, ``CLIO_NO_LAUNCHER=1``): the caller then starts the command
through the wrapper process, as before, correct and slower.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence

__all__ = ["Launched", "launcher_pid", "spawn", "start", "stop"]

REPLY_TIMEOUT = 60.0  # seconds for the launcher to say it forked; more: it is stuck, stopped and not used again


class Launched:
    """A command the launcher started: what ``terminal._run`` uses of ``subprocess.Popen``."""

    def __init__(self, pid: int, reply: socket.socket, stdout_fd: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdout = open(stdout_fd, "rb", buffering=0)  # noqa: SIM115 (closed by the caller)
        self._reply = reply

    def _collect(self, timeout: float | None) -> bool:
        """Read the exit status if it comes within ``timeout`` seconds; True once known."""
        if self.returncode is not None:
            return True
        ready, _, _ = select.select([self._reply], [], [], timeout)
        if not ready:
            return False
        try:
            msg = self._reply.recv(64)
        except OSError:
            msg = b""
        if msg.startswith(b"exit "):
            self.returncode = os.waitstatus_to_exitcode(int(msg[5:]))
        else:  # the launcher died under the command: no one would report it; end it
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            self.returncode = -signal.SIGKILL
            _shared.broken()
        self._reply.close()
        return True

    def poll(self) -> int | None:
        self._collect(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while not self._collect(None if end is None else max(0.0, end - time.monotonic())):
            if end is not None and time.monotonic() >= end:
                raise subprocess.TimeoutExpired(["bash"], timeout or 0.0)
        assert self.returncode is not None
        return self.returncode


class _Launcher:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._off = False  # could not start, or died: not tried again in this process

    def start(self) -> socket.socket | None:
        with self._lock:
            if self._sock is None and not self._off:
                self._start()
            return self._sock

    def _start(self) -> None:
        if not sys.platform.startswith("linux") or os.environ.get("CLIO_NO_LAUNCHER"):
            self._off = True
            return
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-m", "clio.safety.launcher", str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True,  # no Ctrl-C from the terminal, no terminal at all
                env={},  # nothing of clio's environment: no key, whenever it starts
                cwd="/",
            )  # fmt: skip
        except OSError:
            mine.close()
            self._off = True
            return
        finally:
            theirs.close()
        self._sock = mine

    def broken(self) -> None:
        """The launcher failed: stop it and use the wrapper from now on."""
        with self._lock:
            self._stop()
            self._off = True

    def _stop(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._proc is not None:
            with contextlib.suppress(OSError):
                self._proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5)
            self._proc = None

    def stop(self) -> None:
        with self._lock:
            self._stop()
            self._off = False

    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def send(self, frame: bytes, fds: list[int]) -> bool:
        sock = self.start()
        if sock is None:
            return False
        with self._lock:
            try:
                sent = sock.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
                if sent < len(frame):
                    sock.sendall(frame[sent:])
                return True
            except OSError:
                pass
        self.broken()
        return False


_shared = _Launcher()


def start() -> bool:
    """Start this process's launcher if it is not running (no-op after a failure); True: it is."""
    return _shared.start() is not None


def stop() -> None:
    """Stop the launcher (the next command starts a new one)."""
    _shared.stop()


def launcher_pid() -> int | None:
    return _shared.pid()


def spawn(options: Sequence[str], argv: Sequence[str], cwd: str, env: Mapping[str, str]) -> Launched | None:
    """Start ``argv`` confined as ``options`` say, in ``cwd`` with ``env``, stdin from /dev/null,
    stdout and stderr into one pipe; None: the launcher is not there (nothing was started)."""
    body = json.dumps({"args": [*options, "--", *argv], "cwd": cwd, "env": dict(env)}).encode()
    frame = len(body).to_bytes(4, "big") + body
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    stdin = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sent = _shared.send(frame, [stdin, write_end, write_end, theirs.fileno()])
    finally:
        os.close(stdin)
        os.close(write_end)
        theirs.close()
    msg = b""
    if sent:
        try:
            ready, _, _ = select.select([mine], [], [], REPLY_TIMEOUT)
            msg = mine.recv(256) if ready else b""
        except OSError:
            msg = b""
    if msg.startswith(b"pid "):
        return Launched(int(msg[4:]), mine, read_end)
    mine.close()
    os.close(read_end)
    if sent:  # it took the request but did not start it: died, stuck, or could not fork
        _shared.broken()
    return None
