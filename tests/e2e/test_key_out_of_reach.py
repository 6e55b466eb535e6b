"""End to end, as an ordinary user: no shell command clio runs gets clio's key or the user's secrets.

clio runs as ``$CLIO_TEST_USER`` (testkit/unprivileged.py; skipped, saying why, when there is no
such user and none can be made) with its own HOME and CLIO_HOME, the key in its environment and
another in ``$CLIO_HOME/config.yaml``. The fake server has the model run ``testkit/key_probe.py``,
which reads every ``/proc/*/environ`` and ``/proc/*/mem`` it can and the files named, and prints
what it found hex-encoded (so redaction cannot hide a leak). What is checked is every request
clio sent. The control: a process of the same user holding a key in its environment, left
running beside clio, whose key the same probe finds when the user runs it outside clio, and
does not find from a command clio ran (Landlock also closes other processes' ptrace-guarded
``/proc`` files to a restricted process).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from clio.safety.containment import landlock_abi
from clio.safety.wrapper import guards_writes
from testkit.clio_run import CLIO, clio_env, tool_results
from testkit.fakeserver import FakeServer, Reply
from testkit.unprivileged import User, UserTree, run_clio_as

PROBE = Path(__file__).resolve().parents[2] / "testkit" / "key_probe.py"
CREDENTIAL_FILES = {
    ".netrc": "machine api.example.com login me password {}\n",
    ".pgpass": "db.example.com:5432:app:me:{}\n",
    ".ssh/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
    ".aws/credentials": "[default]\naws_secret_access_key = {}\n",
    ".kube/config": "users:\n- name: me\n  user:\n    token: {}\n",
    ".docker/config.json": '{{"auths": {{"r.example.com": {{"auth": "{}"}}}}}}\n',
    ".config/gh/hosts.yml": "github.com:\n  oauth_token: {}\n",
}


def _secret(tag: str) -> str:
    return f"sk-proj-{tag}{uuid.uuid4().hex}{uuid.uuid4().hex[:8]}"


def _plant(tree: UserTree) -> dict[str, str]:
    """The key, the config's key, a secret per credential store; returns name -> secret."""
    secrets = {"env": _secret("Env"), "config": _secret("Conf")}
    (tree.clio_home / "config.yaml").write_text(f"api_key: {secrets['config']}\n", encoding="utf-8")
    for rel, shape in CREDENTIAL_FILES.items():
        path = tree.home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        secrets[rel] = _secret("Cred")
        path.write_text(shape.format(secrets[rel]), encoding="utf-8")
    shutil.copy(PROBE, tree.project / "key_probe.py")
    return secrets


def _run(user: User, tree: UserTree, sandbox: bool) -> tuple[str, str, dict[str, str]]:
    """(every request as text, the probe's result, secrets) for one run; a control process runs beside."""
    secrets = _plant(tree)
    control_key = _secret("Ctl")
    files = ["~/.clio/config.yaml", *(f"~/{rel}" for rel in CREDENTIAL_FILES)]
    command = "python3 key_probe.py " + " ".join(f"'{f}'" for f in files)  # quoted: the probe expands ~
    server = FakeServer().start()
    tree.chown()
    control = subprocess.Popen(
        [*user.prefix(), "sleep", "120"], env={"OPENAI_API_KEY": control_key, "PATH": "/usr/bin:/bin"}
    )
    try:
        server.script(
            Reply(tool_calls=[{"name": "terminal_operations", "id": "call_probe",
                               "arguments": {"operation": "execute", "command": command}}]),
            Reply(text="Done."),
        )  # fmt: skip
        flags = ["--sandbox"] if sandbox else []
        res = run_clio_as(user, tree, [*flags, "--yes", "-p", "Check the environment"], server=server,
                          env_extra={"OPENAI_API_KEY": secrets["env"]})  # fmt: skip
        assert res.returncode == 0, res.stderr
        bodies = "\n".join(json.dumps(b) for b in server.chat_requests)
        probe = tool_results(server.chat_requests[1])["call_probe"]
        direct = subprocess.run([*user.prefix(), "python3", "key_probe.py"], cwd=tree.project, env={"PATH": "/usr/bin:/bin"},
                                capture_output=True, text=True, timeout=60)  # fmt: skip
        assert control_key.encode().hex()[:48] in direct.stdout, direct.stdout[:3000]  # the probe works
    finally:
        control.kill()
        control.wait()
        server.stop()
    secrets["control"] = control_key
    return bodies, probe, secrets


def _leaked(bodies: str, secret: str) -> bool:
    raw = secret.encode()
    return any(s in bodies for s in (secret, secret[::-1], raw.hex(), raw[:24].hex()))


def _probe_line(probe: str, start: str) -> str:
    lines = [ln for ln in probe.splitlines() if ln.startswith(start)]
    assert lines, f"no line {start!r} in:\n{probe[:3000]}"
    return lines[0]


def test_without_sandbox_no_command_gets_the_key(user: User, tree: UserTree) -> None:
    bodies, probe, secrets = _run(user, tree, sandbox=False)
    # clio's own process: its environ and memory are closed (non-dumpable)
    clio_line = next(ln for ln in probe.splitlines() if ln.startswith("pid ") and ln.split()[2] == "clio")
    assert "environ=EACCES" in clio_line and "mem=EACCES" in clio_line, clio_line
    assert not _leaked(bodies, secrets["env"])
    if landlock_abi() >= 1:  # clio's config and other processes: closed by Landlock
        assert _probe_line(probe, "file ~/.clio/config.yaml").endswith("EACCES")
        assert not _leaked(bodies, secrets["config"])
        assert not _leaked(bodies, secrets["control"]), probe[:3000]
    # without the sandbox the user's own credential stores are the user's (the control for the next test)
    assert _leaked(bodies, secrets[".netrc"])


@pytest.mark.skipif(landlock_abi() < 1, reason="this kernel has no Landlock (Linux >= 5.13, in the LSM list)")
def test_sandbox_no_command_gets_the_key_nor_credentials(user: User, tree: UserTree) -> None:
    bodies, probe, secrets = _run(user, tree, sandbox=True)
    for name, secret in secrets.items():
        assert not _leaked(bodies, secret), name
    for rel in CREDENTIAL_FILES:
        assert _probe_line(probe, f"file ~/{rel}").endswith("EACCES"), rel
    assert _probe_line(probe, "file ~/.clio/config.yaml").endswith("EACCES")


def test_other_processes_of_the_user_cannot_read_clio(user: User, tree: UserTree) -> None:
    """Outside any sandbox (the user's other programs): clio is non-dumpable, its environ and memory closed."""
    secrets = _plant(tree)
    control_key = _secret("Ctl")
    server = FakeServer().start()
    server.script(Reply(text="Thinking about it, slowly, one letter at a time.", chunk_chars=1, delay=0.1))
    tree.chown()
    control = subprocess.Popen([*user.prefix(), "sleep", "120"],
                               env={"OPENAI_API_KEY": control_key, "PATH": "/usr/bin:/bin"})  # fmt: skip
    env = clio_env(server, tree.clio_home, {"HOME": str(tree.home), "OPENAI_API_KEY": secrets["env"]})
    clio = subprocess.Popen([*user.prefix(), str(CLIO), "-p", "hello"], cwd=tree.project, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not server.chat_requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.chat_requests, "clio sent no request"
        direct = subprocess.run([*user.prefix(), "python3", "key_probe.py"], cwd=tree.project,
                                env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60)  # fmt: skip
        assert clio.poll() is None, "clio ended before the probe ran"
    finally:
        clio.communicate(timeout=60)
        control.kill()
        control.wait()
        server.stop()
    assert control_key.encode().hex()[:48] in direct.stdout  # the probe reads a dumpable process
    # this test's clio, by its pid (setpriv execs it): another test's clio of the same user may be
    # starting meanwhile (xdist), before it makes itself non-dumpable, and is not the one asked about
    clio_line = next(ln for ln in direct.stdout.splitlines() if ln.split()[1:3] == [str(clio.pid), "clio"])
    assert "environ=EACCES" in clio_line and "mem=EACCES" in clio_line, clio_line
    # no process of the user holds clio's key readably: the test's own runner aside, which made it
    # (it is the user's when the tests run as that user; as root, none of the user's runs it)
    held = [ln.split()[:3] for ln in direct.stdout.splitlines() if secrets["env"].encode().hex()[:48] in ln]
    assert [h for h in held if h[:2] != ["pid", str(os.getpid())]] == [], held


SOCKET_CLIENT = (
    "import socket,sys\n"
    "try:\n"
    "    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b'id_rsa'); print('SENT')\n"
    "except OSError as e:\n"
    "    print('REFUSED', e.errno)\n"
)


@pytest.mark.skipif(landlock_abi() < 1, reason="this kernel has no Landlock (Linux >= 5.13, in the LSM list)")
def test_sandbox_contains_in_time_and_space_as_an_ordinary_user(user: User, tree: UserTree) -> None:
    """--sandbox --yes as the user: a setsid job dies with its command, a socket file outside the
    project is unreachable, .git/config and .git/hooks cannot be written, git commit works."""
    proj = tree.project
    subprocess.run(["git", "init", "-q"], cwd=proj, check=True)
    (proj / "client.py").write_text(SOCKET_CLIENT)
    sock_path = tree.base / "agent.sock"  # outside the project, the user's: like an ssh agent
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(sock_path))
    srv.listen(1)
    srv.settimeout(8)
    got: list[bytes] = []

    def serve() -> None:
        with contextlib.suppress(OSError):
            got.append(srv.accept()[0].recv(64))

    threading.Thread(target=serve, daemon=True).start()
    tree.chown()
    os.chown(sock_path, user.uid, user.gid)
    tick = proj / "tick"
    calls = [
        ("c_bg", f"setsid nohup bash -c 'while true; do date +%s%N >> {tick}; sleep 0.05; done' >/dev/null 2>&1 & sleep 0.3; echo started"),
        ("c_sock", f"python3 client.py {sock_path}"),
        ("c_git", "git config core.fsmonitor 'touch pwned'; echo '[core]' >> .git/config; "
                  "echo 'touch pwned' > .git/hooks/post-checkout; chmod +x .git/hooks/post-checkout; echo tried"),
        ("c_commit", "echo hi > a.txt && git add a.txt && git -c user.name=t -c user.email=t@example.com "
                     "commit -qm 'from the sandbox' && git log --oneline | wc -l"),
    ]  # fmt: skip
    config_before = (proj / ".git" / "config").read_text()
    server = FakeServer().start()
    server.script(
        Reply(tool_calls=[{"name": "terminal_operations", "id": cid, "arguments": {"operation": "execute", "command": c}}
                          for cid, c in calls]),
        Reply(text="Done."),
    )  # fmt: skip
    try:
        res = run_clio_as(user, tree, ["--sandbox", "--yes", "-p", "work"], server=server)
    finally:
        server.stop()
        srv.close()
    assert res.returncode == 0, res.stderr
    results = tool_results(server.chat_requests[1])
    assert results["c_sock"].startswith("REFUSED"), results["c_sock"]
    assert got == []
    assert results["c_commit"].startswith("1"), results["c_commit"]
    if "no PID namespace (" in res.stderr:  # the kernel refuses the user namespaces: said, not pretended
        pytest.skip("no user namespaces for this user here: " + res.stderr.split("no PID namespace (")[1][:120])
    assert (proj / ".git" / "config").read_text() == config_before
    assert not (proj / ".git" / "hooks" / "post-checkout").exists()
    size = tick.stat().st_size
    time.sleep(0.5)
    assert tick.stat().st_size == size, "the setsid job outlived its command"


TAMPER = (
    "echo 'base_url: http://127.0.0.1:9/v1' >> ~/.clio/config.yaml; "
    "echo '[]' > ~/.clio/preferences.json; "
    "mv ~/.clio ~/.clio-moved && mkdir ~/.clio && echo 'base_url: http://127.0.0.1:9/v1' > ~/.clio/config.yaml; "
    "ln -s /tmp ~/.clio/linked; "
    "touch ~/made-by-the-command; echo finished"
)


def _command_as(user: User, tree: UserTree, command: str, guarded: bool, *args: str) -> str:
    """What ``command`` printed when the model had clio run it (no --sandbox) as ``user``; without
    ``guarded``, with the namespaces turned off (the control)."""
    server = FakeServer().start()
    try:
        server.script(
            Reply(tool_calls=[{"name": "terminal_operations", "id": "call_cmd",
                               "arguments": {"operation": "execute", "command": command}}]),
            Reply(text="Done."),
        )  # fmt: skip
        env = {"CLIO_SANDBOX_NO_NAMESPACES": None if guarded else "1"}
        res = run_clio_as(user, tree, [*args, "--yes", "-p", "go on"], server=server, env_extra=env)
        assert res.returncode == 0, res.stderr
        return tool_results(server.chat_requests[1])["call_cmd"]
    finally:
        server.stop()


needs_guard = pytest.mark.skipif(not guards_writes(), reason="no user namespaces here to guard $CLIO_HOME's writes")
GUARDED = pytest.mark.parametrize(
    "guarded", [pytest.param(True, id="guarded", marks=needs_guard), pytest.param(False, id="control-without-namespaces")]
)


@GUARDED
def test_without_sandbox_no_command_changes_clio_home(user: User, tree: UserTree, guarded: bool) -> None:
    """Where would a command send the user's data next time? Not where it writes into clio's config:
    without --sandbox a command cannot write, rename or replace $CLIO_HOME (a read-only mount point
    in its own namespaces), while it can still write the user's home. The control turns the
    namespaces off and the same command succeeds, so the test sees a change when there is one."""
    config = "model: fake-model\n"
    (tree.clio_home / "config.yaml").write_text(config, encoding="utf-8")
    result = _command_as(user, tree, TAMPER, guarded)
    assert "finished" in result and (tree.home / "made-by-the-command").exists(), result
    changed = (tree.clio_home / "config.yaml").read_text(encoding="utf-8") != config
    assert changed is not guarded, result
    assert (tree.home / ".clio-moved").exists() is not guarded, result
    if guarded:
        assert not (tree.clio_home / "preferences.json").exists() and not (tree.clio_home / "linked").exists()
        assert "Read-only file system" in result and "busy" in result, result


@GUARDED
def test_a_missing_clio_home_is_made_before_any_command_can_make_it(
    user: User, tree: UserTree, guarded: bool
) -> None:
    """A user with no $CLIO_HOME yet (settings from the environment): clio makes the folder before
    it runs anything, so a command cannot plant a config there for the next run. The control turns
    the namespaces off, and the same command plants it."""
    shutil.rmtree(tree.clio_home)
    plant = "mkdir -p ~/.clio && echo 'base_url: http://127.0.0.1:9/v1' > ~/.clio/config.yaml; echo finished"
    result = _command_as(user, tree, plant, guarded, "--model", "fake-model")
    assert "finished" in result and tree.clio_home.is_dir(), result
    assert (tree.clio_home / "config.yaml").exists() is not guarded, result
    if guarded:
        assert "Read-only file system" in result, result
