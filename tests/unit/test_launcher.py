"""The command launcher (clio/safety/launcher.py, launch.py): confined commands are started by it,
it holds no secret, a confinement that fails still refuses (126), a dead or missing launcher
leaves the wrapper process to do the same job, and Ctrl-C or a timeout still ends the command.

Real kernel, real bash: every command here runs confined (Landlock; user and mount namespaces
where the kernel allows them, as clio runs them).
"""

from __future__ import annotations

import errno
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from clio.safety import launch
from clio.safety.containment import EXIT_SETUP_FAILED, hide, landlock_abi
from clio.safety.hide import Grant, walk
from clio.safety.kept import Walks
from clio.safety.wrapper import guards_writes, isolation, wrapper_options
from clio.tools.terminal import run_command

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="this kernel has no Landlock (Linux >= 5.13)")

PARENT = "tr '\\0' ' ' < /proc/$PPID/cmdline; echo"  # the program that started bash


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """The folder commands run in (writable under the sandbox), beside the secret folder."""
    (tmp_path / "proj").mkdir()
    return tmp_path / "proj"


@pytest.fixture()
def secret_home(tmp_path: Path) -> Iterator[Path]:
    """A folder standing for $CLIO_HOME, with a key in it; a fresh launcher before and after."""
    home = tmp_path / "clio-home"
    home.mkdir()
    (home / "memory.key").write_text("KEY-" + uuid.uuid4().hex, encoding="utf-8")
    launch.stop()
    yield home
    launch.stop()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_confined_commands_are_started_by_the_launcher(secret_home: Path, project: Path) -> None:
    hidden = [str(secret_home)]
    res = run_command(f"{PARENT}; cat {secret_home}/memory.key", project, 30, hidden=hidden)
    pid = launch.launcher_pid()
    assert pid is not None and _alive(pid)
    assert "-m clio.safety.launcher" in res.output, res.output
    assert "Permission denied" in res.output and "KEY-" not in res.output  # confined as before
    assert res.exit_code == 1
    # under --sandbox too (in its own PID namespace the parent is not visible: the launcher is asked)
    res = run_command(f"echo made > {project}/x; cat {secret_home}/memory.key", project, 30, contained=True,
                      hidden=hidden)  # fmt: skip
    assert (project / "x").read_text() == "made\n"
    assert "Permission denied" in res.output and res.exit_code == 1
    assert launch.launcher_pid() == pid  # the same launcher, still there


def test_a_sandboxed_command_that_ends_at_once_reports_its_own_status(secret_home: Path, project: Path) -> None:
    """In a sandbox spare, the request goes down to the namespace's PID 1, which may read it whole
    and exec the command before the spare is done sending: an empty second send to that closed
    peer was a SIGPIPE, and the command's status read -13 (~4 % of quick sandboxed commands here,
    intermittent in CI's plan-mode test). Every one of these must read 0."""
    if not isolation()[0]:
        pytest.skip("no user namespaces here: sandboxed commands take another path")
    codes = [run_command("true", project, 30, read_only=True).exit_code for _ in range(100)]
    assert codes == [0] * 100, sorted(set(c for c in codes if c != 0))


def test_the_launcher_holds_no_secret(secret_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-proj-" + uuid.uuid4().hex
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("CLIO_TEST_TOKEN", key)  # not a known name: the launcher gets no environment at all
    res = run_command(f"{PARENT}; cat /proc/$PPID/environ; echo rc=$?", project, 30, hidden=[str(secret_home)])
    assert "clio.safety.launcher" in res.output
    assert key not in res.output and "rc=1" in res.output  # the command cannot read its parent's environ
    pid = launch.launcher_pid()
    assert pid is not None
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except PermissionError:  # an ordinary user: the launcher is non-dumpable, its environ closed
        assert os.geteuid() != 0
        assert os.stat(f"/proc/{pid}/environ").st_uid == 0  # what non-dumpable looks like from outside
    else:  # root reads it: nothing in it
        assert environ == b""
    # the command itself still gets the (scrubbed) environment clio gives it
    res = run_command("echo tok=$CLIO_TEST_TOKEN key=$OPENAI_API_KEY", project, 30, hidden=[str(secret_home)])
    assert f"tok={key} key=\n" in res.output


def test_commands_start_with_no_signal_blocked_whichever_thread_started_the_launcher(secret_home: Path, project: Path) -> None:
    """The REPL starts the launcher from its warm-up thread, which blocks SIGINT (clio/threads.py)
    and so would every process forked from it: the launcher unblocks every signal first, so a
    command gets SIGINT as any program expects (its own ``kill -INT``, a test runner's children)."""
    from clio import threads

    threads.start(launch.start, "test-warm-up").join(30)
    assert launch.launcher_pid() is not None
    res = run_command("grep SigBlk /proc/self/status", project, 30, hidden=[str(secret_home)])
    assert res.exit_code == 0, res.output
    assert int(res.output.split()[-1], 16) == 0, res.output


def test_a_confinement_that_fails_still_refuses(secret_home: Path, project: Path) -> None:
    marker = project / "ran"
    missing = project / "no-such-folder"  # a writable folder that does not exist: Landlock cannot add it
    proc = launch.spawn(wrapper_options([missing], hidden=[str(secret_home)]), ["touch", str(marker)],
                        str(project), {"PATH": os.defpath})  # fmt: skip
    assert proc is not None
    with proc.stdout:
        out = proc.stdout.read().decode()
    assert proc.wait(timeout=30) == EXIT_SETUP_FAILED
    assert out.startswith("clio sandbox: cannot confine the command, not running it (") and out.count("\n") == 1
    assert not marker.exists()
    # a request the launcher cannot read is refused the same way, never run as it is
    proc = launch.spawn(["--bogus"], ["touch", str(marker)], str(project), {"PATH": os.defpath})
    assert proc is not None and proc.wait(timeout=30) == EXIT_SETUP_FAILED
    assert not marker.exists()


def test_a_killed_launcher_leaves_the_wrapper_to_confine(secret_home: Path, project: Path) -> None:
    hidden = [str(secret_home)]
    assert "clio.safety.launcher" in run_command(PARENT, project, 30, hidden=hidden).output
    pid = launch.launcher_pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    for _ in range(2):  # the command that finds it dead, and the next
        res = run_command(f"{PARENT}; cat {secret_home}/memory.key; echo > {secret_home}/planted", project, 30,
                          hidden=hidden)  # fmt: skip
        assert "clio.safety.launcher" not in res.output, res.output
        assert "Permission denied" in res.output and "KEY-" not in res.output
        assert not (secret_home / "planted").exists() or not guards_writes()
        assert res.exit_code is not None and res.exit_code != 0
    assert launch.launcher_pid() is None


def test_without_a_launcher_the_wrapper_confines(
    secret_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLIO_NO_LAUNCHER", "1")
    launch.stop()
    res = run_command(f"{PARENT}; cat {secret_home}/memory.key", project, 30, contained=True,
                      hidden=[str(secret_home)])  # fmt: skip
    assert "Permission denied" in res.output and "KEY-" not in res.output
    assert "clio.safety.launcher" not in res.output
    assert launch.launcher_pid() is None


def _pids_with(tag: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if tag.encode() in cmd and _alive(int(entry)):
                found.append(int(entry))
    return found


@pytest.mark.parametrize("contained", [False, True], ids=["default", "sandbox"])
def test_ctrl_c_ends_a_long_command(secret_home: Path, project: Path, contained: bool) -> None:
    tag = uuid.uuid4().hex
    command = f"bash -c 'sleep 60; : {tag}' & echo started; wait"  # a job of its own, found by its tag

    def ctrl_c() -> None:  # once the command runs (its start is not what is tested here), as a user would
        deadline = time.monotonic() + 15
        while not _pids_with(tag) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGINT)

    found = signal.getsignal(signal.SIGINT)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C raises, as clio's REPL makes sure
    timer = threading.Thread(target=ctrl_c, daemon=True)
    start = time.monotonic()
    timer.start()
    try:
        res = run_command(command, project, 60, contained=contained, hidden=[str(secret_home)])
    except KeyboardInterrupt:
        pass
    else:
        pytest.fail(f"Ctrl-C did not end the command: {res!r} (SIGINT's handler before the test: {found!r})")
    finally:
        timer.join(timeout=20)
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - start < 20
    deadline = time.monotonic() + 10
    while _pids_with(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _pids_with(tag) == []  # the whole process group went


def test_a_timeout_ends_a_long_command(secret_home: Path, project: Path) -> None:
    tag = uuid.uuid4().hex
    start = time.monotonic()
    res = run_command(f"echo begun; bash -c 'sleep 60; : {tag}'", project, 1, hidden=[str(secret_home)])
    assert res.timed_out and res.exit_code is None and "begun" in res.output
    assert time.monotonic() - start < 20
    assert _pids_with(tag) == []


def test_output_streams_while_the_command_runs(secret_home: Path, project: Path) -> None:
    """The command writes into clio's own pipe: what it printed is there before it ends."""
    proc = launch.spawn(wrapper_options([], hidden=[str(secret_home)], only_hide=True, namespaces=guards_writes()),
                        ["bash", "-c", "echo first; sleep 30"], str(project), {"PATH": os.defpath})  # fmt: skip
    assert proc is not None
    try:
        assert proc.stdout.readline() == b"first\n"
        assert proc.poll() is None
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
        proc.stdout.close()


def test_the_probes_go_through_the_launcher_too(secret_home: Path) -> None:
    isolation.cache_clear()
    guards_writes.cache_clear()
    try:
        isolation()
        guards_writes()
        assert launch.launcher_pid() is not None
    finally:
        isolation.cache_clear()
        guards_writes.cache_clear()


def _read_in_confined_child(hidden: list[str], walked: list[Grant] | None, path: Path) -> str:
    """In a forked child confined as every command is without --sandbox (``hide``), given the walk:
    what reading ``path`` gives."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            hide(hidden, walked)
            try:
                said = "read " + path.read_text(encoding="utf-8")
            except OSError as exc:
                said = f"refused {exc.errno}"
            os.write(w, said.encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    os.waitpid(pid, 0)
    return out


def test_a_kept_walk_never_grants_a_link_swapped_in_toward_a_hidden_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    secret = home / ".clio"
    secret.mkdir(parents=True)
    (secret / "memory.key").write_text("KEY", encoding="utf-8")
    (home / "work").mkdir()
    (home / "work" / "memory.key").write_text("harmless", encoding="utf-8")
    walked, _stamps = walk([str(secret)])
    assert any(g[0] == str(home / "work") for g in walked)
    assert _read_in_confined_child([str(secret)], walked, home / "work" / "memory.key") == "read harmless"
    # the granted folder is swapped for a link to the hidden one after the walk was kept
    (home / "work" / "memory.key").unlink()
    (home / "work").rmdir()
    (home / "work").symlink_to(secret)
    assert _read_in_confined_child([str(secret)], walked, home / "work" / "memory.key") == f"refused {errno.EACCES}"
    assert _read_in_confined_child([str(secret)], walked, secret / "memory.key") == f"refused {errno.EACCES}"


def test_a_kept_walk_is_walked_again_when_a_leading_folder_changes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".clio").mkdir(parents=True)
    walks = Walks()
    hidden = [str(home / ".clio")]
    first, _ = walks.get(hidden)
    (home / "new.txt").write_text("new", encoding="utf-8")  # an entry of a leading folder
    second, _ = walks.get(hidden)
    assert str(home / "new.txt") not in [g[0] for g in first]
    assert str(home / "new.txt") in [g[0] for g in second]
    assert _read_in_confined_child(hidden, second, home / "new.txt") == "read new"


def test_a_kept_walk_is_walked_again_when_a_credential_store_appears(tmp_path: Path) -> None:
    """A store that did not exist had nothing to hide: the folder it is made in was granted whole.
    Made later, it must be hidden from the next command all the same."""
    home = tmp_path / "home"
    (home / ".clio").mkdir(parents=True)
    (home / ".config").mkdir()
    store = home / ".config" / "gcloud"
    hidden = [str(home / ".clio"), str(store)]
    walks = Walks()
    first, _ = walks.get(hidden)
    assert str(home / ".config") in [g[0] for g in first]  # nothing to hide in it yet
    store.mkdir()
    (store / "token").write_text("TOKEN", encoding="utf-8")
    second, _ = walks.get(hidden)
    assert str(home / ".config") not in [g[0] for g in second]
    assert _read_in_confined_child(hidden, second, store / "token") == f"refused {errno.EACCES}"


def _ticks() -> int:
    with open("/proc/uptime", encoding="ascii") as f:
        return int(float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK"))


@pytest.mark.skipif(not isolation()[0], reason="no user namespaces here: no sandbox namespaces to make ahead")
def test_a_sandboxed_command_from_a_spare_made_ahead_is_as_confined(secret_home: Path, project: Path) -> None:
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".git" / "config").write_text("", encoding="utf-8")
    hidden = [str(secret_home)]
    run_command("true", project, 30, contained=True, hidden=hidden)  # the first: a sandbox spare is then kept
    time.sleep(1.0)
    asked = _ticks()
    res = run_command(
        "cut -d' ' -f22 /proc/1/stat; ls /proc | grep -c '^[0-9]'; echo x >> .git/config; echo rc=$?; "
        f"cat {secret_home}/memory.key; (setsid sleep 60 &); echo made > out",
        project, 30, contained=True, hidden=hidden,
    )  # fmt: skip
    started, processes = (int(x) for x in res.output.split()[:2])
    assert started < asked  # PID 1 was there before the command was asked for: the spare's
    assert processes <= 4  # its own /proc: bash, its pipeline, nothing of the machine's
    assert "rc=1" in res.output and "Read-only file system" in res.output
    assert "Permission denied" in res.output and "KEY-" not in res.output
    assert (project / "out").read_text() == "made\n"
    assert (project / ".git" / "config").read_text() == ""
