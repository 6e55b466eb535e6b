"""The OS sandbox of shell commands (Landlock + seccomp) and the environment scrub.

Real processes under the real kernel: the command runs through ``run_command`` (and through the
``terminal_operations`` tool) exactly as clio runs it; what is checked is what the kernel let
happen on disk and on the network. Tests of the kernel pieces skip only when the kernel has no
Landlock.
"""

from __future__ import annotations

import base64
import shlex
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import clio.tools.builtin  # noqa: F401  (registers the tools)
import clio.tools.terminal as terminal
from clio.safety.containment import (
    EXIT_SETUP_FAILED,
    Availability,
    availability,
    is_credential_name,
    landlock_abi,
    scrub_env,
)
from clio.safety.wrapper import wrap_command
from clio.tools.context import ToolContext
from clio.tools.registry import REGISTRY
from clio.tools.terminal import run_command

ABI = landlock_abi()
needs_landlock = pytest.mark.skipif(
    ABI < 1, reason="this kernel has no Landlock (Linux >= 5.13, in the LSM list)"
)
needs_net_abi = pytest.mark.skipif(ABI < 4, reason="Landlock network rules need ABI >= 4 (Linux >= 6.7)")
needs_scopes = pytest.mark.skipif(ABI < 6, reason="Landlock scopes need ABI >= 6 (Linux >= 6.12)")
PY = shlex.quote(sys.executable)


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """(project, a sibling folder outside it holding a file)."""
    proj = tmp_path / "proj"
    proj.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("precious\n")
    return proj, outside


@pytest.fixture
def home_target() -> Iterator[Path]:
    """A path in the real $HOME that the tests try to create (removed afterwards if they did)."""
    p = Path.home() / f"clio-sandbox-test-{uuid.uuid4().hex[:8]}"
    yield p
    if p.exists():
        p.unlink()


def _write_probe(path: Path) -> str:
    """A command that tries to create ``path`` and prints OK or the errno name."""
    code = (
        "import errno,sys\n"
        "try:\n"
        f"    open({str(path)!r}, 'w').write('x')\n"
        "    print('WROTE')\n"
        "except OSError as e:\n"
        "    print('ERR', errno.errorcode[e.errno])\n"
    )
    return f"{PY} -c {shlex.quote(code)}"


def _contained(command: str, proj: Path, *, network: bool = False) -> str:
    res = run_command(command, proj, 30, contained=True, network=network)
    assert not res.timed_out
    return res.output


# ---------------------------------------------------------------- availability


def test_availability_matches_the_kernel_and_is_one_line() -> None:
    a = availability()
    assert a.available == (ABI >= 1)
    assert a.abi == ABI
    assert "\n" not in a.reason and len(a.reason) < 160
    if a.available:
        assert f"Landlock ABI {ABI}" in a.reason
    else:
        assert "every shell command will ask" in a.reason


# ---------------------------------------------------------------- filesystem


@needs_landlock
def test_writes_outside_are_refused_by_the_kernel(layout: tuple[Path, Path], home_target: Path) -> None:
    proj, outside = layout
    out = _contained(
        " ; ".join(
            [
                _write_probe(proj / "inside.txt"),
                _write_probe(outside / "new.txt"),
                _write_probe(home_target),
                _write_probe(Path("/tmp") / f"clio-{uuid.uuid4().hex[:6]}"),
            ]
        ),
        proj,
    )
    lines = out.splitlines()
    assert lines[0] == "WROTE", out
    for line in lines[1:4]:
        assert line in ("ERR EACCES", "ERR EPERM"), out
    assert (proj / "inside.txt").read_text() == "x"
    assert not (outside / "new.txt").exists()
    assert not home_target.exists()
    # the same commands without the sandbox do write: the refusal came from the sandbox
    free = run_command(_write_probe(outside / "new.txt"), proj, 30).output
    assert free.strip() == "WROTE" and (outside / "new.txt").exists()


@needs_landlock
@pytest.mark.parametrize(
    "command",
    [
        "rm -rf {outside}",
        "find {outside} -delete",
        "cd {outside} && rm -f keep.txt",
        "mv {outside}/keep.txt ./stolen.txt",
        "X=rm; $X -rf {outside}",
        "echo {b64} | base64 -d | sh",
        PY + " -c 'import shutil; shutil.rmtree(\"{outside}\")'",
        ": > {outside}/keep.txt",
        "ln -sf /dev/null {outside}/keep.txt",
    ],
)
def test_deletes_outside_leave_the_folder_intact(layout: tuple[Path, Path], command: str) -> None:
    proj, outside = layout
    b64 = base64.b64encode(f"rm -rf {outside}\n".encode()).decode()
    res = run_command(command.format(outside=outside, b64=b64), proj, 30, contained=True)
    assert res.exit_code != 0, res.output
    assert (outside / "keep.txt").read_text() == "precious\n"
    assert not (proj / "stolen.txt").exists()


@needs_landlock
def test_work_inside_the_project_still_works(layout: tuple[Path, Path]) -> None:
    proj, _ = layout
    out = _contained(
        "mkdir -p a/b && echo hi > a/b/f && mv a/b/f a/g && ln -s g a/link && cat a/link && "
        "git init -q . && git add -A && git -c user.name=t -c user.email=t@t commit -qm x && "
        "rm -rf a && echo done > /dev/null && ls",
        proj,
    )
    assert out.splitlines()[0] == "hi", out
    assert not (proj / "a").exists()
    assert (proj / ".git").is_dir()


@needs_landlock
def test_private_temp_folder(layout: tuple[Path, Path]) -> None:
    proj, _ = layout
    out = _contained('echo x > "$TMPDIR/t" && cat "$TMPDIR/t" && echo "$TMPDIR" && mktemp', proj)
    lines = out.splitlines()
    assert lines[0] == "x", out
    tmpdir = Path(lines[1])
    assert tmpdir != proj and not tmpdir.is_relative_to(proj)
    assert lines[2].startswith(str(tmpdir)), "mktemp should use the private folder"
    assert not tmpdir.exists(), "the private temp folder is removed after the command"


@needs_landlock
def test_wrapper_never_runs_the_command_unconfined(layout: tuple[Path, Path]) -> None:
    proj, outside = layout
    marker = outside / "ran.txt"
    argv = wrap_command(["sh", "-c", f"touch {marker}"], [proj / "does-not-exist"])
    res = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert res.returncode == EXIT_SETUP_FAILED
    assert "cannot confine the command, not running it" in res.stderr
    assert not marker.exists()


@needs_landlock
def test_confinement_cannot_be_lifted_from_inside(layout: tuple[Path, Path]) -> None:
    """A contained command that runs the wrapper again with wider rules is still confined."""
    proj, outside = layout
    inner = shlex.join(wrap_command(["sh", "-c", f"echo x > {outside}/w.txt"], [outside], network=True))
    res = run_command(inner, proj, 30, contained=True)
    assert res.exit_code != 0
    assert not (outside / "w.txt").exists()


# ---------------------------------------------------------------- network


class _Listener:
    """A TCP server on 127.0.0.1 that answers b'pong' to each connection."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.sendall(b"pong")
            conn.close()


@pytest.fixture
def listener() -> Iterator[_Listener]:
    srv = _Listener()
    yield srv
    srv.sock.close()


def _connect_probe(port: int) -> str:
    code = (
        "import errno,socket\n"
        "try:\n"
        f"    s = socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
        "    print('GOT', s.recv(4).decode())\n"
        "except OSError as e:\n"
        "    print('ERR', errno.errorcode.get(e.errno, e))\n"
    )
    return f"{PY} -c {shlex.quote(code)}"


@needs_landlock
def test_tcp_connect_refused_in_sandbox_and_works_without(listener: _Listener, tmp_path: Path) -> None:
    free = run_command(_connect_probe(listener.port), tmp_path, 30).output
    assert free.strip() == "GOT pong"
    assert listener.accepted == 1
    boxed = _contained(_connect_probe(listener.port), tmp_path)
    assert boxed.strip() in ("ERR EACCES", "ERR EPERM"), boxed
    assert listener.accepted == 1, "the sandboxed command reached the listener"
    # tools that do their own networking are refused as well
    curl = _contained(f"exec 3<>/dev/tcp/127.0.0.1/{listener.port} && echo OPEN", tmp_path)
    assert "OPEN" not in curl
    assert listener.accepted == 1


@needs_landlock
def test_network_open_when_the_user_allows_it(listener: _Listener, tmp_path: Path) -> None:
    out = _contained(_connect_probe(listener.port), tmp_path, network=True)
    assert out.strip() == "GOT pong"


@needs_landlock
def test_udp_refused_in_sandbox(tmp_path: Path) -> None:
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(0.5)
    port = rx.getsockname()[1]
    code = (
        "import errno,socket\n"
        "try:\n"
        f"    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'leak', ('127.0.0.1', {port}))\n"
        "    print('SENT')\n"
        "except OSError as e:\n"
        "    print('ERR', errno.errorcode[e.errno])\n"
    )
    try:
        out = _contained(f"{PY} -c {shlex.quote(code)}", tmp_path)
        assert out.strip() == "ERR EACCES", out
        with pytest.raises(TimeoutError):
            rx.recv(16)
        # without the sandbox the datagram arrives
        assert run_command(f"{PY} -c {shlex.quote(code)}", tmp_path, 30).output.strip() == "SENT"
        assert rx.recv(16) == b"leak"
    finally:
        rx.close()


@needs_net_abi
def test_landlock_alone_refuses_tcp(listener: _Listener, tmp_path: Path) -> None:
    """The Landlock layer by itself (no seccomp filter) refuses TCP connect: two independent layers."""
    code = (
        "import errno,socket\n"
        "from clio.safety import containment as c\n"
        "c._no_new_privs(c._libc())\n"
        f"c._landlock(c._libc(), c.landlock_abi(), [{str(tmp_path)!r}], network=False)\n"
        "s = socket.socket()\n"  # creating the socket is fine: no seccomp here
        "try:\n"
        f"    s.connect(('127.0.0.1', {listener.port}))\n"
        "    print('CONNECTED')\n"
        "except OSError as e:\n"
        "    print('ERR', errno.errorcode[e.errno])\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert res.stdout.strip() == "ERR EACCES", res.stdout + res.stderr
    assert listener.accepted == 0


@needs_landlock
def test_io_uring_refused(tmp_path: Path) -> None:
    code = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "buf = ctypes.create_string_buffer(120)\n"
        "r = libc.syscall(425, 4, buf)\n"
        "print(r, ctypes.get_errno())\n"
    )
    out = _contained(f"{PY} -c {shlex.quote(code)}", tmp_path)
    assert out.strip() == "-1 1", out  # EPERM


@needs_scopes
def test_no_signals_to_processes_outside(tmp_path: Path) -> None:
    victim = subprocess.Popen(["sleep", "30"])
    try:
        out = _contained(f"kill -TERM {victim.pid}; echo rc=$?", tmp_path)
        assert "rc=1" in out, out
        assert victim.poll() is None, "the sandboxed command killed a process outside"
    finally:
        victim.kill()
        victim.wait()


# ---------------------------------------------------------------- through the tool, with --yes


@needs_landlock
def test_yes_does_not_widen_the_sandbox(
    layout: tuple[Path, Path], home_target: Path, listener: _Listener
) -> None:
    proj, outside = layout
    ctx = ToolContext(root=proj, sandbox=True, yes=True, interactive=False)  # approves everything
    for command in (
        f"rm -rf {outside}",
        f"echo x > {home_target}",
        f"touch {outside}/new.txt",
        _connect_probe(listener.port),
    ):
        out, ok = REGISTRY.run(ctx, "terminal_operations", {"operation": "execute", "command": command})
        assert ok, out
        assert "exit code: 0" not in out or "ERR" in out, out
    assert (outside / "keep.txt").read_text() == "precious\n"
    assert not (outside / "new.txt").exists()
    assert not home_target.exists()
    assert listener.accepted == 0
    # and inside the project --yes works as before
    out, ok = REGISTRY.run(ctx, "terminal_operations", {"operation": "execute", "command": "touch made.txt"})
    assert ok and (proj / "made.txt").exists(), out


def test_without_an_os_sandbox_every_command_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback: no kernel support means one-shot refuses and the REPL asks even with --yes."""
    monkeypatch.setattr(
        terminal,
        "availability",
        lambda: Availability(False, 0, False, "no OS sandbox: testing; every shell command will ask"),
    )
    args = {"operation": "execute", "command": "touch ran.txt"}
    ctx = ToolContext(root=tmp_path, sandbox=True, yes=True, interactive=False)
    out, ok = REGISTRY.run(ctx, "terminal_operations", args)
    assert not ok and "even with --yes" in out
    assert not (tmp_path / "ran.txt").exists()

    asked: list[tuple[str, bool]] = []

    def refuse(kind: str, summary: str, *, destructive: bool = False) -> bool:
        asked.append((summary, destructive))
        return False

    ctx = ToolContext(root=tmp_path, sandbox=True, yes=True, interactive=True, approve=refuse)
    out, ok = REGISTRY.run(ctx, "terminal_operations", args)
    assert not ok and not (tmp_path / "ran.txt").exists()
    assert asked == [
        ("touch ran.txt\n(NOT sandboxed: no OS sandbox: testing; every shell command will ask)", True)
    ]


# ---------------------------------------------------------------- the environment


SECRETS = {
    "OPENAI_API_KEY": "sk-test-openai-0123456789",
    "ANTHROPIC_API_KEY": "sk-ant-test-0123456789",
    "GROQ_API_KEY": "gsk-test-0123456789",
    "HF_TOKEN": "hf_test0123456789",
    "SOME_VENDOR_API_KEY": "vendor-0123456789",
}


@pytest.mark.parametrize("contained", [False, pytest.param(True, marks=needs_landlock)])
def test_env_scrub_hides_provider_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, contained: bool
) -> None:
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CLIO_TEST_HARMLESS", "visible")
    out = run_command(
        'env; echo "[$OPENAI_API_KEY]"; echo $OPENAI_API_KEY | base64', tmp_path, 30, contained=contained
    ).output
    for k, v in SECRETS.items():
        assert k not in out and v not in out
        assert base64.b64encode(v.encode()).decode()[:12] not in out
    assert "[]" in out
    assert "CLIO_TEST_HARMLESS=visible" in out
    assert "PATH=" in out


def test_credential_names() -> None:
    for name in ("OPENAI_API_KEY", "azure_openai_api_key", "MISTRAL_API_KEY", "GOOGLE_API_KEY", "HF_TOKEN",
                 "CLIO_API_KEY", "X_APIKEY", "DEEPSEEK_API_KEY", "TOGETHER_API_KEY", "OPENROUTER_API_KEY"):  # fmt: skip
        assert is_credential_name(name), name
    for name in ("PATH", "HOME", "OPENAI_BASE_URL", "KEYBOARD", "API_KEY_FILE", "TOKENIZERS_PARALLELISM"):
        assert not is_credential_name(name), name
    env = {"PATH": "/bin", "OPENAI_API_KEY": "x"}
    assert scrub_env(env) == {"PATH": "/bin"}
    assert env == {"PATH": "/bin", "OPENAI_API_KEY": "x"}  # a copy: clio's own environment is untouched
