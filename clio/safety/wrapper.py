"""The wrapper every shell command is started through: ``python -I -m clio.safety.wrapper``.

It restricts itself, then ``exec``s the command (so the command and everything it starts
inherit the restriction, and nothing runs in clio's threaded process between fork and exec):

- ``--only-hide`` (every command without ``--sandbox``): ``--hide`` paths (``$CLIO_HOME``) cannot
  be read (clio/safety/containment.py ``hide``); with ``--ns`` also not written, renamed or
  replaced (a user and mount namespace where they are read-only mount points,
  clio/safety/namespaces.py ``guard``);
- otherwise the sandbox (``contain``): writes only beneath ``--write`` folders, no network unless
  ``--net``, ``--hide`` paths unreadable; with ``--ns`` first its own user, mount and PID
  namespaces (clio/safety/namespaces.py): ``--ro`` paths read-only, ``--pin`` folders fixed in
  place, and every process gone when the command ends.

If any step fails it prints one line and exits with 126: a command never runs less confined
than asked.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from clio.safety.containment import EXIT_SETUP_FAILED, contain, hide, landlock_abi

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["WRAPPER", "confine", "guards_writes", "isolation", "main", "parse", "wrap_command", "wrapper_options"]

WRAPPER = (sys.executable, "-I", "-m", "clio.safety.wrapper")


def wrapper_options(
    writable: Sequence[str | Path],
    *,
    network: bool = False,
    hidden: Sequence[str | Path] = (),
    readonly: Sequence[str | Path] = (),
    pinned: Sequence[str | Path] = (),
    namespaces: bool = False,
    only_hide: bool = False,
) -> list[str]:
    """The wrapper's options for a confinement (what :func:`confine` reads back): given to the
    wrapper process on its command line, or to the command launcher (clio/safety/launch.py)."""
    out: list[str] = []
    if only_hide:
        out.append("--only-hide")
    for p in writable:
        out += ["--write", str(p)]
    for p in hidden:
        out += ["--hide", str(p)]
    if namespaces:
        out.append("--ns")
        for p in readonly:
            out += ["--ro", str(p)]
        for p in pinned:
            out += ["--pin", str(p)]
    if network:
        out.append("--net")
    return out


def wrap_command(
    argv: Sequence[str],
    writable: Sequence[str | Path],
    *,
    network: bool = False,
    hidden: Sequence[str | Path] = (),
    readonly: Sequence[str | Path] = (),
    pinned: Sequence[str | Path] = (),
    namespaces: bool = False,
    only_hide: bool = False,
) -> list[str]:
    """``argv`` prefixed with the wrapper that contains it (the same Python interpreter as clio).

    ``only_hide``: no sandbox, just ``hidden`` kept out of reach (``writable`` is ignored); with
    ``namespaces``, out of reach of writes too (:func:`guards_writes` says whether it can be)."""
    options = wrapper_options(writable, network=network, hidden=hidden, readonly=readonly, pinned=pinned,
                              namespaces=namespaces, only_hide=only_hide)  # fmt: skip
    return [*WRAPPER, *options, "--", *argv]


@lru_cache(maxsize=1)
def guards_writes() -> bool:
    """Whether commands run without the sandbox can be kept from writing the hidden folders too
    (a user and mount namespace, :func:`clio.safety.namespaces.guard`). Tried once per process
    on a folder of its own (a real wrapper run of ``true``); off where unprivileged user
    namespaces are, and with ``CLIO_SANDBOX_NO_NAMESPACES=1``."""
    import tempfile

    if landlock_abi() < 1 or os.environ.get("CLIO_SANDBOX_NO_NAMESPACES"):
        return False
    with tempfile.TemporaryDirectory(prefix="clio-guard-") as probe:
        return not _fails(wrapper_options([], hidden=[probe], only_hide=True, namespaces=True))


def _fails(options: list[str]) -> str:
    """Run ``true`` confined as ``options`` say: '' when it works, else why not (its last line).
    Through the command launcher when it is there (clio/safety/launch.py), else the wrapper."""
    import subprocess

    from clio.safety.launch import spawn

    env = {"PATH": os.environ.get("PATH", os.defpath)}
    launched = spawn(options, ["true"], "/", env)
    if launched is not None:
        with launched.stdout:
            out = launched.stdout.read().decode(errors="replace")
        code = launched.wait()
        return "" if code == 0 else (out.strip().splitlines() or [f"exit {code}"])[-1]
    try:
        res = subprocess.run([*WRAPPER, *options, "--", "true"], stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=20, env=env)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if res.returncode == 0:
        return ""
    return (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]


@lru_cache(maxsize=1)
def isolation() -> tuple[bool, str]:
    """Whether sandboxed commands get their own PID and mount namespaces here, and one line.

    Tried once per process (a real wrapper run of ``true``): unprivileged user namespaces may be
    off (``kernel.unprivileged_userns_clone=0``, AppArmor's restriction, a container's seccomp
    profile). ``CLIO_SANDBOX_NO_NAMESPACES=1`` skips them (tests of the fallback)."""
    if landlock_abi() < 1:
        return False, ""
    problem = "turned off (CLIO_SANDBOX_NO_NAMESPACES)" if os.environ.get("CLIO_SANDBOX_NO_NAMESPACES") else ""
    if not problem:
        problem = _fails(wrapper_options([], namespaces=True))
        if not problem:
            return True, (
                "each command in its own PID namespace (nothing it starts outlives it), "
                ".git/config, .git/hooks and .clio read-only"
            )
    return False, (
        f"no PID namespace ({problem.removeprefix('clio sandbox: ')}): a background process may outlive "
        "its command, and .git/config, .git/hooks and .clio stay writable to commands"
    )


_REPEATED = {"--write": "write", "--hide": "hide", "--ro": "ro", "--pin": "pin"}
_USAGE = ("usage: python -m clio.safety.wrapper [--only-hide] [--ns] [--net] [--write DIR]... "
          "[--hide PATH]... [--ro PATH]... [--pin DIR]... -- PROGRAM ARGS...")  # fmt: skip


def parse(args: Sequence[str]) -> tuple[dict[str, list[str]], set[str], list[str]] | None:
    """(repeated options, flags, the program's argv), or None for bad usage. By hand: argparse
    alone costs ~10 ms, paid by every shell command."""
    lists: dict[str, list[str]] = {v: [] for v in _REPEATED.values()}
    flags: set[str] = set()
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return lists, flags, list(args[i + 1 :])
        if a in _REPEATED and i + 1 < len(args):
            lists[_REPEATED[a]].append(args[i + 1])
            i += 2
            continue
        if a in ("--only-hide", "--ns", "--net"):
            flags.add(a)
            i += 1
            continue
        return None
    return None


def confine(
    lists: dict[str, list[str]],
    flags: set[str],
    *,
    guard: Callable[[Sequence[str]], None] | None = None,
    enter: Callable[[Sequence[str], Sequence[str]], None] | None = None,
    walked: Sequence[Sequence[object]] | None = None,
    hidden_real: Sequence[str] | None = None,
) -> None:
    """Restrict the calling process as the options ask (:func:`parse`); what the wrapper and the
    command launcher's child do before ``exec``. Raises OSError when a step fails: the caller
    must then not run the command. With ``--ns`` under the sandbox the caller returns as PID 1 of
    the new PID namespace (the process that called it stays behind, waiting). ``guard``: what
    makes the read-only mounts of ``--only-hide --ns`` (the launcher joins namespaces it holds);
    by default :func:`clio.safety.namespaces.guard`; ``enter``: what makes the sandbox's own
    namespaces (:func:`clio.safety.namespaces.inside` where the launcher made them ahead), by
    default :func:`clio.safety.namespaces.enter`. ``walked``: what to grant around the hidden
    paths, as an earlier walk found it (clio/safety/hide.py ``walk``; checked before use), and
    ``hidden_real`` the real hidden paths it found."""
    if "--only-hide" in flags:
        if "--ns" in flags:
            from clio.safety.namespaces import guard as own_namespaces

            (guard or own_namespaces)(lists["hide"])
        hide(lists["hide"], walked, hidden_real)
    else:
        if "--ns" in flags:
            from clio.safety.namespaces import enter as own_enter

            (enter or own_enter)(lists["ro"], lists["pin"])
        contain(lists["write"], network="--net" in flags, hidden=lists["hide"], walked=walked,
                 hidden_real=hidden_real)  # fmt: skip


SETUP_FAILED = "clio sandbox: cannot confine the command, not running it ({})"


def main(args: Sequence[str] | None = None) -> int:
    parsed = parse(sys.argv[1:] if args is None else args)
    if parsed is None or not parsed[2]:
        print(_USAGE, file=sys.stderr)
        return 2
    lists, flags, argv = parsed
    try:
        confine(lists, flags)
    except OSError as exc:
        print(SETUP_FAILED.format(exc), file=sys.stderr)
        return EXIT_SETUP_FAILED
    signal.pthread_sigmask(signal.SIG_SETMASK, ())  # started from a thread that blocks SIGINT (clio/threads.py): the command blocks nothing
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"clio sandbox: cannot run {argv[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
