"""A sandboxed command's own PID and mount namespaces (inside a user namespace, no privilege).

``enter(readonly, pinned)`` is called by the sandbox wrapper before it restricts itself:

- a user namespace mapping only the user's own uid and gid (so nothing gains privilege, and
  files keep their owner), a mount namespace and a PID namespace;
- the wrapper forks: the child is PID 1 of the new PID namespace and goes on to run the
  command; the parent stays outside, waits, and exits with the child's status (a signal to it
  kills the child). When PID 1 ends, the kernel kills every process left in the namespace: a
  ``setsid``/``nohup``/double-forked job cannot outlive the command;
- the child mounts a fresh ``/proc`` (it sees only its own processes: no other process's
  ``environ`` or ``mem``), pins each of ``pinned`` as a mount point (a folder that is a mount point
  cannot be renamed or removed: ``.git`` cannot be swapped for another) and bind-mounts each of
  ``readonly`` read-only (``.git/config``, ``.git/hooks``, ``.clio``), keeping the flags of the
  mount they are on (a user namespace may not drop nosuid/nodev).

Landlock, applied after this, forbids the command any further mount or unmount.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Sequence

from clio.safety.hide import hidden_set

__all__ = ["NamespaceError", "enter", "guard", "hold", "inside", "join", "prepare", "wait_and_exit"]

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
PR_SET_DUMPABLE = 4
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
# statvfs f_flag bits -> mount flags that a user namespace must keep when remounting
_KEEP = {2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC, 1024: MS_NOATIME, 2048: MS_NODIRATIME, 4096: MS_RELATIME}


class NamespaceError(OSError):
    """A namespace step failed."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise NamespaceError(err, f"{what}: {os.strerror(err)}")


def _mount(libc: ctypes.CDLL, src: str | None, target: str, fstype: str | None, flags: int) -> None:
    enc = (lambda s: None if s is None else s.encode())  # noqa: E731
    _check(libc.mount(enc(src), target.encode(), enc(fstype), ctypes.c_ulong(flags), None), f"mount {target}")


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def _bind_readonly(libc: ctypes.CDLL, path: str) -> None:
    _mount(libc, path, path, None, MS_BIND | MS_REC)
    keep = 0
    st = os.statvfs(path)
    for bit, flag in _KEEP.items():
        if st.f_flag & bit:
            keep |= flag
    _mount(libc, None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | keep)


def wait_and_exit(child: int) -> None:
    """Wait for ``child`` (a signal to this process kills it) and exit with its status."""
    def forward(signum: int, frame: object) -> None:
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)


def _unshare(libc: ctypes.CDLL, flags: int) -> None:
    """New namespaces (``flags`` with a user namespace mapping only the user's own uid and gid),
    mounts made here private to them."""
    uid, gid = os.getuid(), os.getgid()
    _check(libc.unshare(CLONE_NEWUSER | flags), "unshare")
    try:
        _write("/proc/self/setgroups", "deny")
    except FileNotFoundError:
        pass
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)


def guard(folders: Sequence[str]) -> None:
    """Move into new user and mount namespaces and bind-mount each existing one of ``folders``
    read-only onto itself: nothing beneath it can be written, and, a mount point, it can be
    neither renamed, removed nor replaced by a link (what every command gets without
    ``--sandbox``, for ``$CLIO_HOME``). No PID namespace: what the command starts may outlive it,
    as it always could. Returns in the same process; raises NamespaceError when the kernel
    refuses a step."""
    libc = _libc()
    _unshare(libc, CLONE_NEWNS)
    for real in sorted(hidden_set(folders)):  # real paths that exist, never "/"
        if os.path.isdir(real):
            _bind_readonly(libc, real)


def hold(folders: Sequence[str]) -> tuple[int, int]:
    """The namespaces :func:`guard` makes, made once and held open: (user, mount) namespace file
    descriptors that :func:`join` enters (the command launcher, clio/safety/launcher.py, so that
    each command does not pay for new namespaces). Made in a forked child that is gone when this
    returns; the namespaces live as long as the descriptors. Raises NamespaceError."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            _libc().prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # dumpable: its uid_map is written through /proc/self
            try:
                guard(folders)
                os.write(w, b"ok")
                code = 0
            except OSError as exc:
                os.write(w, str(exc).encode()[:500])
            if code == 0:
                signal.pause()  # until killed, once the descriptors are open
        finally:
            os._exit(code)
    os.close(w)
    try:
        said = os.read(r, 600)
        if said != b"ok":
            raise NamespaceError(0, said.decode(errors="replace") or "the namespace holder died")
        return (os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC),
                os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC))  # fmt: skip
    finally:
        os.close(r)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def join(held: tuple[int, int]) -> None:
    """Enter namespaces :func:`hold` made (what :func:`guard` does, without making new ones). The
    working folder is then the namespace's root: the caller changes into its own again."""
    libc = _libc()
    _check(libc.setns(held[0], CLONE_NEWUSER), "setns (user)")
    _check(libc.setns(held[1], CLONE_NEWNS), "setns (mount)")


def enter(readonly: Sequence[str], pinned: Sequence[str] = ()) -> None:
    """Move into new user, mount and PID namespaces; returns in PID 1 of the new PID namespace.

    The calling process becomes the waiting parent and never returns. Raises NamespaceError
    (before forking) when the kernel refuses a step."""
    child = prepare()
    if child:
        wait_and_exit(child)
    try:
        inside(readonly, pinned)
    except OSError as exc:
        print(f"clio sandbox: cannot confine the command, not running it ({exc})", file=sys.stderr)
        os._exit(126)


def prepare() -> int:
    """The first half of :func:`enter`: new user, mount and PID namespaces and a fork; returns the
    child's pid in the caller (which must then :func:`wait_and_exit`), 0 in the child, PID 1 of the
    new PID namespace (which must then call :func:`inside`). The command launcher does this ahead
    of a sandboxed command. Raises NamespaceError (before forking)."""
    _unshare(_libc(), CLONE_NEWNS | CLONE_NEWPID)
    sys.stdout.flush()
    sys.stderr.flush()
    return os.fork()


def inside(readonly: Sequence[str], pinned: Sequence[str] = ()) -> None:
    """The second half of :func:`enter`, in PID 1: its own ``/proc``, ``pinned`` folders fixed in
    place, ``readonly`` paths read-only. Raises NamespaceError."""
    libc = _libc()
    _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path in pinned:
        if os.path.isdir(path):
            _mount(libc, path, path, None, MS_BIND | MS_REC)
    for path in readonly:
        if os.path.lexists(path) and not os.path.islink(path):
            _bind_readonly(libc, path)
