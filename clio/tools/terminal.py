"""``terminal_operations``: run a shell command in the project directory.

``bash -c`` in ``ctx.root``, stdin from /dev/null, its own process group (killed whole on
timeout and on Ctrl-C), stdout and stderr merged. Output is read with ``select`` so memory
stays bounded: the head and the tail are kept, the middle is counted and reported as cut.
Every command goes through ``ctx.approve("shell", ...)``; destructive ones are flagged.

Every command gets an environment without clio's credentials (``scrub_env``). Under
``--sandbox`` every command runs inside the OS sandbox (clio/safety/containment.py): writes
only beneath the project root and a private temp folder (``TMPDIR``), no network unless
``ctx.sandbox_network``; git settings and hooks it plants for the user's later git commands are
undone afterwards (clio/safety/git_plant.py). Where the kernel cannot sandbox, every command asks, even with
``--yes``, and one-shot runs refuse them.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clio.lazy_re import lazy
from clio.safety import git_plant, launch
from clio.safety.containment import availability, landlock_abi, scrub_env
from clio.safety.readonly import readonly_reason
from clio.safety.sandbox import destructive_reason
from clio.safety.wrapper import WRAPPER, guards_writes, isolation, wrapper_options
from clio.tools import shell_undo
from clio.tools.context import ToolContext, ToolError, declined, need
from clio.tools.terminal_spec import SPEC  # the tool's declaration (its handlers are these functions)

__all__ = ["SPEC", "CommandResult", "run_command", "run_typed"]

DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 600
HEAD_BYTES = 15_000
TAIL_BYTES = 15_000
EXIT_GRACE = 1.0  # seconds to keep reading after the shell exits (background children may hold the pipe)
PLAN_READ_ONLY = ("plan mode: this command ran in a read-only sandbox and could not write anything "
                  "(files, the project, git); nothing was changed. Put what writes in your plan.")
PLANTED = ("clio: the command left git settings or hooks that would run code in the user's own later git "
           "commands, outside the sandbox; undone: ")
_DENIED = lazy(r"Permission denied|Read-only file system|Operation not permitted")
_ANSI = lazy(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")


Process = subprocess.Popen[bytes] | launch.Launched  # a started command


class CommandResult:
    def __init__(self, output: str, exit_code: int | None, timed_out: bool, cut: int) -> None:
        self.output = output
        self.exit_code = exit_code
        self.timed_out = timed_out
        self.cut = cut  # bytes left out of the middle


def _kill_group(proc: Process) -> None:
    """SIGTERM the whole group, then SIGKILL what is left."""
    for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:
            # the leader is gone; make sure no member of the group survives
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        return


def protected_in_project(root: Path) -> tuple[list[str], list[str]]:
    """(read-only, pinned) paths of the project for a sandboxed command in its own namespaces:
    git's config and hooks and clio's folder read-only, ``.git`` pinned so that it cannot be
    swapped for another. A missing hooks folder is made first (empty), so none can be planted."""
    git = root / ".git"
    readonly, pinned = [], []
    if git.is_dir() and not git.is_symlink():
        with contextlib.suppress(OSError):
            (git / "hooks").mkdir(exist_ok=True)
        readonly += [str(git / "config"), str(git / "hooks")]
        pinned.append(str(git))
    clio_dir = root / ".clio"
    if clio_dir.is_dir() and not clio_dir.is_symlink():
        readonly.append(str(clio_dir))
    return readonly, pinned


def run_command(
    command: str,
    cwd: Path,
    timeout: float,
    *,
    contained: bool = False,
    read_only: bool = False,
    network: bool = False,
    hidden: Sequence[str] = (),
) -> CommandResult:
    """Run ``command`` with bash; never raises for the command's own failures.

    ``contained``: inside the OS sandbox, writable only beneath ``cwd`` and a private temp folder
    (removed afterwards), in its own namespaces where the kernel allows; ``network`` leaves the
    network open in there. ``hidden``: paths the command can neither read nor write (clio's own
    folder; under the sandbox also the credential stores), sandbox or not, where Landlock exists.
    ``read_only`` (plan mode; implies ``contained``): the project is not writable either, only the
    private temp folder is."""
    env = scrub_env(os.environ)
    env.update(PAGER="cat", GIT_PAGER="cat", GIT_TERMINAL_PROMPT="0", TERM="dumb")
    argv = ["bash", "-c", command]
    private_tmp: str | None = None
    if contained or read_only:
        private_tmp = tempfile.mkdtemp(prefix="clio-shell-")
        env.update(TMPDIR=private_tmp, TMP=private_tmp, TEMP=private_tmp, TEMPDIR=private_tmp)
        isolated = isolation()[0]
        writable: list[str | Path] = [private_tmp]
        readonly: list[str] = []
        pinned: list[str] = []
        if read_only:  # git status & co. then skip refreshing the index (a write they may skip)
            env["GIT_OPTIONAL_LOCKS"] = "0"
        else:
            writable.insert(0, cwd)
            if isolated:
                readonly, pinned = protected_in_project(cwd)
        options: list[str] | None = wrapper_options(writable, network=network, hidden=hidden, readonly=readonly,
                                                    pinned=pinned, namespaces=isolated)  # fmt: skip
    elif hidden and landlock_abi() >= 1:
        options = wrapper_options([], hidden=hidden, only_hide=True, namespaces=guards_writes())
    else:
        options = None  # nothing to confine (no Landlock here): plain bash
    known = git_plant.before(str(cwd)) if contained and not read_only else None
    try:
        res = _run(_start(argv, options, cwd, env), timeout)
    finally:
        if private_tmp is not None:
            shutil.rmtree(private_tmp, ignore_errors=True)
        undone = git_plant.after(str(cwd), known) if known is not None else []
    if undone:  # git settings and hooks that would run in the user's own later git commands
        res.output = res.output.rstrip("\n") + "\n" + PLANTED + "; ".join(undone) + "\n"
    return res


def _start(argv: list[str], options: list[str] | None, cwd: Path, env: dict[str, str]) -> Process:
    """The command started: confined (``options``) by the command launcher (clio/safety/launch.py),
    else through the wrapper process, which does the same at the cost of a Python start; with no
    ``options``, plain bash. Its own process group, stdin from /dev/null, stdout and stderr merged."""
    if options is not None:
        launched = launch.spawn(options, argv, str(cwd), env)
        if launched is not None:
            return launched
        argv = [*WRAPPER, *options, "--", *argv]
    return subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=env,
    )


def _run(proc: Process, timeout: float) -> CommandResult:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    head = bytearray()
    tail = bytearray()
    total = 0
    timed_out = False
    deadline = time.monotonic() + timeout
    exited_at: float | None = None
    try:
        while True:
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > EXIT_GRACE:
                break
            if now > deadline:
                timed_out = True
                _kill_group(proc)
                break
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            total += len(chunk)
            room = HEAD_BYTES - len(head)
            if room > 0:
                head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                tail += chunk
                if len(tail) > TAIL_BYTES:
                    del tail[: len(tail) - TAIL_BYTES]
        if not timed_out:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
    except KeyboardInterrupt:
        _kill_group(proc)
        raise
    finally:
        proc.stdout.close()
    cut = total - len(head) - len(tail)
    text = head.decode("utf-8", errors="replace")
    if cut > 0:
        text += f"\n[... {cut:,} bytes of output cut ...]\n"
    text += tail.decode("utf-8", errors="replace")
    text = _ANSI.sub("", text).replace("\r\n", "\n")
    return CommandResult(text, None if timed_out else proc.returncode, timed_out, max(cut, 0))


def _execute(ctx: ToolContext, args: dict[str, Any]) -> str:
    command = need(args, "command")
    if not command.strip():
        raise ToolError("'command' is empty")
    timeout = DEFAULT_TIMEOUT if args.get("timeout") is None else need(args, "timeout", int)
    timeout = max(1, min(int(timeout), MAX_TIMEOUT))
    reason = destructive_reason(command, ctx.root)
    contained, summary, must_ask = False, command, reason is not None
    if ctx.sandbox:
        sandbox = availability()
        contained = sandbox.available
        if not contained:
            if not ctx.interactive:
                raise ToolError(
                    f"refused: --sandbox is on but {sandbox.reason.removeprefix('no OS sandbox: ')}; "
                    "without an OS sandbox shell commands need the user's approval, and none can be "
                    "given in one-shot mode (even with --yes). Use the file tools instead."
                )
            # asked as a destructive action, so even --yes asks: --yes must not widen the sandbox
            summary, must_ask = f"{command}\n(NOT sandboxed: {sandbox.reason})", True
    if not ctx.approve("shell", summary, destructive=must_ask):
        if reason is not None:
            hint = " In one-shot mode rerun clio with --yes to allow it." if not ctx.interactive else ""
            raise ToolError(
                f"refused: this command is destructive ({reason}) and needs the user's explicit approval, "
                f"which was not given.{hint} Find a safer way or ask the user."
            )
        raise declined(ctx, f"running `{command}`")
    return _run_in(ctx, command, timeout, contained)


def run_typed(ctx: ToolContext, command: str) -> str:
    """A command the user typed (``!command`` in the REPL): the model's path without the question
    (the user asked for it, destructive or not; /undo can take back what it changed in the
    project): scrubbed environment, under --sandbox in the OS sandbox, in plan mode in the
    read-only one. Where the kernel cannot sandbox, --sandbox and plan mode refuse it (ToolError)."""
    if not command.strip():
        raise ToolError("nothing to run: type !command (e.g. !git status)")
    contained = False
    if ctx.sandbox or ctx.plan:
        sandbox = availability()
        if not sandbox.available:
            why = "plan mode runs commands only in a read-only sandbox" if ctx.plan else "--sandbox is on"
            raise ToolError(f"not run: {why}, and {sandbox.reason.removeprefix('no OS sandbox: ')}")
        contained = True
    return _run_in(ctx, command, DEFAULT_TIMEOUT, contained)


def _run_in(ctx: ToolContext, command: str, timeout: int, contained: bool) -> str:
    network = ctx.sandbox_network  # a user-only setting: never from a project config
    snapshots = ctx.services.snapshots
    keep = snapshots is not None and snapshots.current is not None and not ctx.plan  # plan: nothing changes
    scan = shell_undo.before(ctx.root) if keep else None
    try:
        res = run_command(command, ctx.root, timeout, contained=contained, read_only=ctx.plan, network=network,
                          hidden=ctx.hidden)  # fmt: skip
    finally:  # what the command changed under the project can be undone (also after a Ctrl-C)
        if scan is not None and snapshots is not None:
            shell_undo.record(scan, ctx.root, snapshots)
    out = res.output.rstrip("\n")
    body = out if out else "(no output)"
    if ctx.plan and _DENIED.search(out):
        body += f"\n{PLAN_READ_ONLY}"
    if res.timed_out:
        return f"{body}\ntimed out after {timeout} s (the process group was killed)"
    return f"{body}\nexit code: {res.exit_code}"


def _plan_check(args: dict[str, Any]) -> str | None:
    """Plan mode runs a command only in the read-only kernel sandbox, so never where the kernel has
    none; the word check (clio.safety.readonly) refuses early, with a helpful sentence, what plainly
    writes. None: it runs; else why it was not run."""
    command = str(args.get("command") or "")
    sandbox = availability()
    if not sandbox.available:
        return (
            f"`{command}` was not run: plan mode runs shell commands only in a read-only kernel sandbox and "
            f"there is none here ({sandbox.reason.removeprefix('no OS sandbox: ').split(';')[0]}). "
            "Use the file tools to read, and put what you would run in your plan."
        )
    why = readonly_reason(command)
    if why is None:
        return None
    return (
        f"`{command}` was not run, {why}. Use read-only commands (ls, cat, grep, find, git "
        "status/diff/log/show...) to look, and put what you would run in your plan."
    )
