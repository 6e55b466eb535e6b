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
import sys
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from clio.safety.containment import EXIT_SETUP_FAILED, contain, hide, landlock_abi

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["guards_writes", "isolation", "main", "wrap_command"]


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
    out = [sys.executable, "-I", "-m", "clio.safety.wrapper"]
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
    return [*out, "--", *argv]


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
        return not _fails(wrap_command(["true"], [], hidden=[probe], only_hide=True, namespaces=True))


def _fails(argv: list[str]) -> str:
    """Run a probe through the wrapper: '' when it works, else why not (its last line)."""
    import subprocess

    try:
        res = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
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
        problem = _fails(wrap_command(["true"], [], namespaces=True))
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


def _parse(args: Sequence[str]) -> tuple[dict[str, list[str]], set[str], list[str]] | None:
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


def main(args: Sequence[str] | None = None) -> int:
    parsed = _parse(sys.argv[1:] if args is None else args)
    if parsed is None or not parsed[2]:
        print(_USAGE, file=sys.stderr)
        return 2
    lists, flags, argv = parsed
    try:
        if "--only-hide" in flags:
            if "--ns" in flags:
                from clio.safety.namespaces import guard

                guard(lists["hide"])
            hide(lists["hide"])
        else:
            if "--ns" in flags:
                from clio.safety.namespaces import enter

                enter(lists["ro"], lists["pin"])
            contain(lists["write"], network="--net" in flags, hidden=lists["hide"])
    except OSError as exc:
        print(f"clio sandbox: cannot confine the command, not running it ({exc})", file=sys.stderr)
        return EXIT_SETUP_FAILED
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"clio sandbox: cannot run {argv[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
