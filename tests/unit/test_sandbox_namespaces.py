"""The sandbox in time and space: hidden paths, its own PID and mount namespaces, no socket files.

Real commands through ``run_command`` under the real kernel (as clio runs them). Each test skips,
saying why, when the kernel lacks what it needs (Landlock; unprivileged user namespaces).
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from clio.safety.containment import landlock_abi
from clio.safety.hide import FILE_RIGHTS_MASK, grant_except, hidden_paths
from clio.safety.wrapper import guards_writes, isolation
from clio.tools.terminal import protected_in_project, run_command

needs_landlock = pytest.mark.skipif(landlock_abi() < 1, reason="this kernel has no Landlock")
needs_ns = pytest.mark.skipif(
    landlock_abi() < 1 or not isolation()[0], reason=f"no namespaces for the sandbox here: {isolation()[1]}"
)
PY = shlex.quote(sys.executable)


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    _git(proj, "init", "-q")
    (proj / ".clio").mkdir()
    (proj / ".clio" / "config.yaml").write_text("model: x\n")
    return proj


# --- which paths are granted (pure: a fake add) --------------------------------------------


def test_grant_except_walks_only_the_way_to_hidden_paths(tmp_path: Path) -> None:
    (tmp_path / "home" / ".clio").mkdir(parents=True)
    (tmp_path / "home" / "proj").mkdir()
    (tmp_path / "home" / ".bashrc").write_text("x")
    (tmp_path / "home" / "link").symlink_to(tmp_path / "home" / ".clio")
    added: dict[str, int] = {}
    grant_except(lambda p, a: added.__setitem__(p, a), [tmp_path / "home" / ".clio"], 0xFFFF)
    home = str(tmp_path / "home")
    assert f"{home}/proj" in added and added[f"{home}/proj"] == 0xFFFF
    assert added[f"{home}/.bashrc"] == 0xFFFF & FILE_RIGHTS_MASK  # a file gets file rights only
    assert not any(p == f"{home}/.clio" or p.startswith(f"{home}/.clio/") for p in added)  # link too
    assert "/" not in added and home not in added and "/usr" in added


def test_nothing_hidden_grants_the_root() -> None:
    added: list[str] = []
    grant_except(lambda p, a: added.append(p), ["/no/such/path"], 1)
    assert added == ["/"]


def test_hidden_paths_are_clio_home_always_and_credential_stores_under_the_sandbox(tmp_path: Path) -> None:
    assert hidden_paths(tmp_path, False) == (str(tmp_path),)
    boxed = hidden_paths(tmp_path, True, ["~/secrets"])
    assert str(Path.home() / ".ssh") in boxed and str(Path.home() / "secrets") in boxed


# --- hidden from every command, sandbox or not --------------------------------------------


@needs_landlock
@pytest.mark.parametrize("contained", [False, True])
def test_hidden_files_cannot_be_read(tmp_path: Path, repo: Path, contained: bool) -> None:
    clio_home = tmp_path / "clio_home"
    clio_home.mkdir()
    (clio_home / "config.yaml").write_text("api_key: sk-hidden\n")
    (tmp_path / "other.txt").write_text("visible\n")
    cmd = f"cat {clio_home}/config.yaml; cat {tmp_path}/other.txt; echo made > new.txt && cat new.txt"
    out = run_command(cmd, repo, 30, contained=contained, hidden=[str(clio_home)]).output
    assert "sk-hidden" not in out and "Permission denied" in out
    assert "visible" in out and "made" in out
    free = run_command(f"cat {clio_home}/config.yaml", repo, 30).output  # the control: nothing hidden
    assert "sk-hidden" in free


needs_guard = pytest.mark.skipif(not guards_writes(), reason="no user namespaces here to guard $CLIO_HOME's writes")


@needs_guard
def test_without_the_sandbox_clio_home_is_read_only_and_pinned_and_the_rest_as_it_was(
    tmp_path: Path, repo: Path
) -> None:
    clio_home = tmp_path / "clio_home"
    clio_home.mkdir()
    (clio_home / "config.yaml").write_text("model: x\n")
    tick = repo / "tick"
    cmd = (
        f"echo 'base_url: http://127.0.0.1:9' >> {clio_home}/config.yaml; touch {clio_home}/new; "
        f"mv {clio_home} {tmp_path}/moved; rm -rf {clio_home}; ln -s /tmp {clio_home}/link; "
        f"echo beside > {tmp_path}/beside.txt; "
        f"setsid nohup bash -c 'while true; do date +%s%N >> {tick}; sleep 0.05; done' >/dev/null 2>&1 & "
        f"echo $! > {tick}.pid; sleep 0.3; echo started"
    )
    out = run_command(cmd, repo, 30, hidden=[str(clio_home)]).output
    pid = int(Path(f"{tick}.pid").read_text())
    try:
        assert "started" in out and (tmp_path / "beside.txt").read_text() == "beside\n", out
        assert sorted(p.name for p in clio_home.iterdir()) == ["config.yaml"], out
        assert (clio_home / "config.yaml").read_text() == "model: x\n" and not (tmp_path / "moved").exists()
        assert "Read-only file system" in out and "Device or resource busy" in out, out
        size = tick.stat().st_size
        time.sleep(0.6)
        assert tick.stat().st_size > size  # no PID namespace: its job still runs, as before
    finally:
        os.kill(pid, 9)  # the job this test started, by its id


# --- its own namespaces ---------------------------------------------------------------------


@needs_ns
def test_a_setsid_job_is_gone_when_the_command_ends(repo: Path) -> None:
    tick = repo / "tick"
    cmd = (
        f"setsid nohup bash -c 'while true; do date +%s%N >> {tick}; sleep 0.05; done' >/dev/null 2>&1 & "
        f"echo $! > {tick}.pid; sleep 0.5; echo started"
    )
    res = run_command(cmd, repo, 30, contained=True)
    assert "started" in res.output
    size = tick.stat().st_size
    time.sleep(0.6)
    assert tick.stat().st_size == size  # nothing writes any more
    # the control: the same command without the sandbox leaves its job running
    free_tick = repo / "free"
    run_command(cmd.replace(str(tick), str(free_tick)), repo, 30)
    pid = int(Path(f"{free_tick}.pid").read_text())
    try:
        size = free_tick.stat().st_size
        time.sleep(0.6)
        assert free_tick.stat().st_size > size
    finally:
        os.kill(pid, 9)  # the job this test started, by its id


@needs_ns
def test_proc_shows_only_the_commands_own_processes(repo: Path) -> None:
    out = run_command("ls /proc | grep -E '^[0-9]+$' | sort -n | head -3", repo, 30, contained=True).output
    assert out.split()[0] == "1"
    assert str(os.getpid()) not in out.split()


@needs_ns
def test_git_config_hooks_and_clio_are_read_only_but_commits_work(repo: Path) -> None:
    before = (repo / ".git" / "config").read_text()
    cmd = (
        "git config core.fsmonitor 'touch pwned'; echo x >> .git/config; "
        "echo 'touch pwned' > .git/hooks/post-checkout; echo x > .clio/config.yaml; "
        "mv .git .git-moved; mv .clio .clio-moved; "
        "echo hello > a.txt && git add a.txt && "
        "git -c user.name=t -c user.email=t@example.com commit -qm 'from the sandbox' && echo COMMITTED"
    )
    res = run_command(cmd, repo, 60, contained=True)
    assert "COMMITTED" in res.output, res.output
    assert (repo / ".git" / "config").read_text() == before
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()
    assert (repo / ".clio" / "config.yaml").read_text() == "model: x\n"
    assert not (repo / ".git-moved").exists() and not (repo / ".clio-moved").exists()
    assert "from the sandbox" in _git(repo, "log", "--oneline")
    assert protected_in_project(repo)[1] == [str(repo / ".git")]


def _unix_listener(path: Path) -> tuple[socket.socket, list[bytes]]:
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    srv.listen(1)
    srv.settimeout(5)
    got: list[bytes] = []

    def serve() -> None:
        try:
            conn, _ = srv.accept()
            got.append(conn.recv(100))
            conn.close()
        except OSError:
            pass

    threading.Thread(target=serve, daemon=True).start()
    return srv, got


@needs_landlock
def test_a_socket_file_outside_the_project_cannot_be_reached(tmp_path: Path, repo: Path) -> None:
    code = (
        "import socket,sys\n"
        "try:\n"
        "    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b'leak'); print('SENT')\n"
        "except OSError as e:\n"
        "    print('ERR', e.errno)\n"
    )
    for network, expect in ((False, "ERR 13"), (True, "SENT")):
        path = tmp_path / f"agent-{network}.sock"
        srv, got = _unix_listener(path)
        try:
            out = run_command(f"{PY} -c {shlex.quote(code)} {path}", repo, 30, contained=True, network=network)
            assert out.output.splitlines()[0] == expect, out.output
            time.sleep(0.2)
            assert (got == [b"leak"]) is network
        finally:
            srv.close()


def test_without_namespaces_the_line_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLIO_SANDBOX_NO_NAMESPACES", "1")
    isolation.cache_clear()
    try:
        ok, line = isolation()
        if landlock_abi() >= 1:
            assert not ok and line.startswith("no PID namespace (turned off") and "outlive" in line
    finally:
        monkeypatch.delenv("CLIO_SANDBOX_NO_NAMESPACES")
        isolation.cache_clear()


def test_credential_stores_are_the_users_setting_and_sandbox_hide_still_adds_to_them(tmp_path: Path) -> None:
    from clio.config import load_settings

    home, clio_dir = tmp_path / "home", tmp_path / "proj" / ".clio"
    home.mkdir()
    clio_dir.mkdir(parents=True)
    (home / "config.yaml").write_text("credential_stores: [~/work/secrets]\nsandbox_hide: [/srv/keys]\n")
    # a project may not choose what is private: not even when trusted
    (clio_dir / "config.yaml").write_text("sandbox_hide: [/]\ncredential_stores: [/proj]\n")
    settings, warnings = load_settings(home, clio_dir, {}, env={})
    assert settings.credential_stores == ["~/work/secrets", "/srv/keys"]
    assert settings.project is not None and set(settings.project.refused) == {"sandbox_hide", "credential_stores"}
    assert not settings.project.risky  # nothing to trust: it is refused outright
    assert sum("ignored: which paths are your credential stores is yours" in w for w in warnings) == 2, warnings
    assert not any("unknown setting" in w for w in warnings), warnings
    trusted, _ = load_settings(home, clio_dir, {}, env={}, trusted_digest=settings.project.digest)
    assert trusted.project is not None and trusted.project.trusted
    assert trusted.credential_stores == ["~/work/secrets", "/srv/keys"]
    (home / "config.yaml").write_text("sandbox_hide: ~/one-path\n")
    settings, warnings = load_settings(home, None, {}, env={})
    assert settings.credential_stores == [] and any("sandbox_hide must be a list of paths" in w for w in warnings)
