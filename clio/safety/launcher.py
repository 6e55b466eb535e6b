"""The command launcher: one small process per clio that starts every confined shell command.

``python -I -m clio.safety.launcher FD``, started by clio (clio/safety/launch.py) with an empty
environment (a fresh ``exec``: nothing of clio's memory), no terminal and its own session. It imports only
the confinement modules (clio/safety/wrapper.py, containment.py, namespaces.py, hide.py) and
makes itself non-dumpable (its ``/proc/PID/environ``, ``mem`` and ptrace closed to the user's
other processes). It never holds a key: it only ever sees what the commands themselves get.

For each request on ``FD`` (a unix socket shared with clio only) it forks a child that does what
``python -m clio.safety.wrapper`` does, minus the Python start: a session of its own (clio kills
the process group), the command's stdin/stdout/stderr (file descriptors passed with the request),
the working folder, then :func:`clio.safety.wrapper.confine` (namespaces, Landlock, seccomp) and
``exec`` of the command with the environment clio gave. If any step fails the child prints one
line and exits with 126: a command never runs less confined than asked. The launcher reports
the child's pid, then its wait status, on a reply socket that came with the request.

A request: 4-byte big-endian length, then JSON ``{"args": [wrapper options..., "--", argv...],
"cwd": str, "env": {str: str}}``; with the first bytes (SCM_RIGHTS) four descriptors: stdin,
stdout, stderr, the reply socket (SOCK_SEQPACKET). Replies: ``pid N``, later ``exit STATUS`` (the
raw wait status), or ``error TEXT`` when no child could be forked. When clio goes away (end of
file on ``FD``) the launcher ends; commands still running go on as they would have.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence

from clio.safety.containment import EXIT_SETUP_FAILED, make_undumpable
from clio.safety.kept import Held, Walks
from clio.safety.namespaces import guard, inside, join, prepare, wait_and_exit
from clio.safety.wrapper import SETUP_FAILED, confine, parse

__all__ = ["MAX_REQUEST", "main", "serve"]

MAX_REQUEST = 64 * 1024 * 1024  # bytes of JSON; a 5 MB command line fits with room to spare
_FDS = 4
_PR_SET_DUMPABLE = 4


def _frame(request: dict[str, object]) -> bytes:
    body = json.dumps(request).encode()
    return len(body).to_bytes(4, "big") + body


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _receive(sock: socket.socket, counts: tuple[int, ...] = (_FDS,)) -> tuple[dict[str, object], list[int]] | None:
    """One request and its descriptors (as many as one of ``counts``); None when the sender is gone
    (or sent something unreadable)."""
    fds = array.array("i")
    header = b""
    while len(header) < 4:
        data, ancdata, _flags, _addr = sock.recvmsg(4 - len(header), socket.CMSG_SPACE(max(counts) * fds.itemsize))
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
        if not data:
            _close(list(fds))
            return None
        header += data
    size = int.from_bytes(header, "big")
    body = _read_exactly(sock, size) if size <= MAX_REQUEST else None
    try:
        request = json.loads(body) if body is not None else None
    except ValueError:
        request = None
    if not isinstance(request, dict) or len(fds) not in counts:
        _close(list(fds))
        return None
    return request, list(fds)


def _close(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _guard_with(held: tuple[int, int] | None, cwd: str) -> Callable[[Sequence[str]], None]:
    def enter_held(folders: Sequence[str]) -> None:
        if held is None:
            guard(folders)
        else:
            join(held)
            os.chdir(cwd)

    return enter_held


def _child(request: dict[str, object], fds: list[int], held: tuple[int, int] | None, in_pid_ns: bool = False) -> None:
    """In the forked child: become the command, confined, or exit (126 when confinement fails).
    ``in_pid_ns``: PID 1 of namespaces made ahead (its parent leads the session and waits)."""
    code = EXIT_SETUP_FAILED
    try:
        if not in_pid_ns:
            os.setsid()
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        import ctypes

        # dumpable again (as after exec): a user namespace's uid_map is written through /proc/self
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
        args, cwd, env = request.get("args"), request.get("cwd"), request.get("env")
        parsed = parse([str(a) for a in args]) if isinstance(args, list) else None
        if parsed is None or not parsed[2] or not isinstance(cwd, str) or not isinstance(env, dict):
            print("clio sandbox: the launcher got a bad request, not running it", file=sys.stderr)
            return
        lists, flags, argv = parsed
        try:
            os.chdir(cwd)
            walked, real = request.get("walked"), request.get("hidden_real")
            if in_pid_ns and ("--ns" not in flags or "--only-hide" in flags):
                raise OSError(0, "a sandbox's namespaces for another kind of command")
            confine(lists, flags, guard=_guard_with(held, cwd), enter=inside if in_pid_ns else None,
                    walked=walked if isinstance(walked, list) else None,
                    hidden_real=real if isinstance(real, list) else None)  # fmt: skip
        except OSError as exc:
            print(SETUP_FAILED.format(exc), file=sys.stderr)
            return
        code = 127
        os.closerange(3, 1 << 20)  # the control socket, other commands' pipes and replies, held namespaces
        try:
            os.execvpe(argv[0], argv, {str(k): str(v) for k, v in env.items()})
        except OSError as exc:
            print(f"clio sandbox: cannot run {argv[0]}: {exc.strerror}", file=sys.stderr)
    finally:
        with contextlib.suppress(BaseException):
            sys.stderr.flush()
        os._exit(code)


class Spare:
    """A child forked ahead of the next request, waiting for it on a socket of its own: the fork
    (and the copying of the launcher's pages it costs, ~2-4 ms) is not on the command's way."""

    def __init__(self, sandbox: bool = False) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.pid = os.fork()
        if self.pid == 0:
            (_wait_in_namespaces if sandbox else _wait_for_request)(theirs)  # never returns
        theirs.close()
        self.sock = ours
        self.sandbox = sandbox

    def hand(self, request: dict[str, object], fds: list[int]) -> bool:
        """Give it the request: True when it has it (it is then the command)."""
        frame = _frame(request)
        try:
            sent = self.sock.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
            if sent < len(frame):
                self.sock.sendall(frame[sent:])
            return True
        except OSError:
            self.discard()
            return False
        finally:
            self.sock.close()

    def discard(self) -> None:
        self.sock.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)  # reaped by _reap with the others


def _as_new(sock: socket.socket) -> None:
    """A spare's start: signals as a freshly started program has them, no descriptor of the
    launcher's but ``sock`` (the control socket, other commands' replies, held namespaces)."""
    import gc

    gc.disable()  # it execs soon: a collection would only copy the launcher's pages (copy-on-write)
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    mine = sock.fileno()
    os.closerange(3, mine)
    os.closerange(mine + 1, 1 << 20)


def _wait_in_namespaces(sock: socket.socket) -> None:
    """In a sandbox spare: the sandbox's own user, mount and PID namespaces made ahead, and PID 1
    forked ahead (clio/safety/namespaces.py ``prepare``); the request goes down to PID 1, which
    makes its mounts and becomes the command, while this process leads the session and waits
    (``wait_and_exit``), as ``enter`` has it. Namespaces and a fork are then not on the command's way."""
    try:
        _as_new(sock)
        os.setsid()
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # its uid_map, via /proc/self
        down, up = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid1 = prepare()
        if pid1 == 0:
            sock.close()
            down.close()
            got = _receive(up, (3,))
            if got is not None:
                _child(*got, None, in_pid_ns=True)  # never returns
            os._exit(0)
        up.close()
        got = _receive(sock, (3, 5))
        if got is not None:
            request, fds = got
            frame = _frame(request)
            sent = down.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds[:3]))])
            if sent < len(frame):  # never an empty send: PID 1 may have read it all and exec'd the
                down.sendall(frame[sent:])  # command, and a send to a closed peer is SIGPIPE here
            _close(fds)
            down.close()
            sock.close()
            wait_and_exit(pid1)  # never returns
        os.kill(pid1, signal.SIGKILL)
    except BaseException:
        pass
    os._exit(0)  # the launcher is gone or discarded it, or no namespaces: it will not be handed one


def _wait_for_request(sock: socket.socket) -> None:
    """In a spare: wait for a request, then become its command (:func:`_child`)."""
    try:
        _as_new(sock)
        got = _receive(sock, (3, 5))
    except BaseException:
        got = None
    if got is None:
        os._exit(0)  # the launcher is gone, or discarded it
    request, fds = got
    _child(request, fds, (fds[3], fds[4]) if len(fds) == 5 else None)


def _start(request: dict[str, object], fds: list[int], running: dict[int, socket.socket], held: Held,
           walks: Walks, spare: list[Spare]) -> None:  # fmt: skip
    """Hand a request to the spare (forking one when there is none) and report its pid."""
    reply = socket.socket(fileno=fds[3])
    args = request.get("args")
    ns = None
    parsed = parse([str(a) for a in args]) if isinstance(args, list) else None
    if parsed is not None:
        if "--only-hide" in parsed[1] and "--ns" in parsed[1]:
            ns = held.get(parsed[0]["hide"])
        with contextlib.suppress(OSError):
            request["walked"], request["hidden_real"] = walks.get(parsed[0]["hide"])
    sandboxed = parsed is not None and "--ns" in parsed[1] and "--only-hide" not in parsed[1]
    pid = 0
    try:
        for attempt in range(2):
            ready = [c for c in spare if c.sandbox == sandboxed] if attempt == 0 else []
            child = ready[0] if ready else Spare()  # a plain spare does all itself (namespaces.enter)
            if child in spare:
                spare.remove(child)
            if child.hand(request, fds[:3] + list(ns or ())):
                pid = child.pid
                break
    except OSError as exc:  # no fork
        with contextlib.suppress(OSError):
            reply.send(f"error cannot fork: {exc.strerror}".encode())
    _close(fds[:3])
    if not pid:
        reply.close()
    else:
        running[pid] = reply
        with contextlib.suppress(OSError):
            reply.send(f"pid {pid}".encode())  # else clio gave up on it; its status is still collected


SANDBOX_SPARES = 2  # one ready while the other is being made, for sandboxed commands that follow each other


def _refill(spare: list[Spare], sandbox: bool) -> None:
    """A plain spare ready, and sandbox ones once a sandboxed command was asked for."""
    for kind, want in ((False, 1), (True, SANDBOX_SPARES if sandbox else 0)):
        while sum(c.sandbox == kind for c in spare) < want:
            try:
                spare.append(Spare(kind))
            except OSError:
                break


def _reap(running: dict[int, socket.socket]) -> int:
    """Collect ended children; report the commands' statuses. Returns how many commands ended."""
    ended = 0
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        reply = running.pop(pid, None)
        if reply is not None:
            ended += 1
            with contextlib.suppress(OSError):
                reply.send(f"exit {status}".encode())
            reply.close()


def serve(control: socket.socket) -> None:
    """Answer requests on ``control`` until clio closes it."""
    import select

    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    running: dict[int, socket.socket] = {}
    held = Held()
    walks = Walks()
    spare = [Spare()]
    sandboxes = False  # whether a sandboxed command was asked for: then a sandbox spare is kept too
    with open("/proc/self/mounts", "rb") as mounts:  # exceptional when the mount table changes
        while True:
            # the next spare is forked once nothing else is to be done: not while a command starts
            idle = 0.01 if len(spare) < (1 + SANDBOX_SPARES if sandboxes else 1) else None
            ready, _, changed = select.select([control.fileno(), wake_r], [], [mounts.fileno()], idle)
            if not (ready or changed):
                _refill(spare, sandboxes)
                continue
            if changed:  # the mount table changed: new namespaces, and a spare that holds none of the old
                held.drop()
                walks.walks.clear()
                for old in spare:
                    old.discard()
                spare.clear()
                _refill(spare, sandboxes)
            if wake_r in ready:
                with contextlib.suppress(BlockingIOError):
                    while os.read(wake_r, 512):
                        pass
                if _reap(running):
                    _refill(spare, sandboxes)  # a command ended: its status is out, clio is not waiting on us
            if control.fileno() in ready:
                got = _receive(control)
                if got is None:
                    return  # clio is gone
                args = got[0].get("args")
                sandboxes = sandboxes or (isinstance(args, list) and "--ns" in args and "--only-hide" not in args)
                _start(*got, running, held, walks, spare)
                _reap(running)  # a child that ended at once


def main(args: list[str] | None = None) -> int:
    argv = sys.argv[1:] if args is None else args
    make_undumpable()
    import gc

    gc.freeze()  # what is imported stays out of collections: forks share those pages instead of copying them
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # clio's Ctrl-C is clio's; commands get their default back
    signal.pthread_sigmask(signal.SIG_SETMASK, ())  # started from a thread that blocks SIGINT (clio/threads.py): commands block nothing
    if len(argv) != 1 or not argv[0].isdigit():
        print("usage: python -m clio.safety.launcher FD", file=sys.stderr)
        return 2
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        serve(socket.socket(fileno=int(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
