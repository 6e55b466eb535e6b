"""End to end, as an ordinary user: clio's shell commands are started by its command launcher
(clio/safety/launcher.py), which holds no key and which neither a command nor the user's other
programs can read; what commands could not reach before they still cannot.

clio runs as ``$CLIO_TEST_USER`` (testkit/unprivileged.py; skipped, saying why, without one), the
key in its environment and another in ``$CLIO_HOME/config.yaml``; the fake server has the model
run the commands.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from clio.safety.containment import landlock_abi
from testkit.clio_run import CLIO, clio_env, tool_results
from testkit.fakeserver import FakeServer, Reply
from testkit.unprivileged import User, UserTree, run_clio_as

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="this kernel has no Landlock (Linux >= 5.13)")

LOOK = (
    "tr '\\0' ' ' < /proc/$PPID/cmdline; echo; "
    "cat /proc/$PPID/environ > /dev/null; echo environ_rc=$?; "
    "head -c 64 /proc/$PPID/mem > /dev/null; echo mem_rc=$?; "
    "cat ~/.clio/config.yaml; echo config_rc=$?; "
    "echo planted > ~/.clio/planted; echo plant_rc=$?"
)


def _keys(tree: UserTree) -> tuple[str, str]:
    env_key, config_key = (f"sk-proj-{tag}{uuid.uuid4().hex}{uuid.uuid4().hex[:8]}" for tag in ("Env", "Conf"))
    (tree.clio_home / "config.yaml").write_text(f"api_key: {config_key}\n", encoding="utf-8")
    return env_key, config_key


def test_commands_come_from_the_launcher_and_reach_nothing_of_clio(user: User, tree: UserTree) -> None:
    env_key, config_key = _keys(tree)
    server = FakeServer().start()
    try:
        server.script(
            Reply(tool_calls=[{"name": "terminal_operations", "id": "call_look",
                               "arguments": {"operation": "execute", "command": LOOK}}]),
            Reply(text="Done."),
        )  # fmt: skip
        res = run_clio_as(user, tree, ["--yes", "-p", "Look around"], server=server,
                          env_extra={"OPENAI_API_KEY": env_key})  # fmt: skip
        assert res.returncode == 0, res.stderr
        bodies = "\n".join(json.dumps(b) for b in server.chat_requests)
        out = tool_results(server.chat_requests[1])["call_look"]
    finally:
        server.stop()
    assert "-m clio.safety.launcher" in out, out  # not the wrapper process: the launcher's child
    for line in ("environ_rc=1", "mem_rc=1", "config_rc=1", "plant_rc=1"):
        assert line in out, out
    assert not (tree.clio_home / "planted").exists()
    for key in (env_key, config_key):
        assert key not in bodies and key.encode().hex()[:48] not in bodies


def _launchers_of(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            status = Path(f"/proc/{entry}/status").read_text(encoding="utf-8")
        except OSError:
            continue
        # the real uid from status: a non-dumpable process's /proc files belong to root
        real = next((ln.split()[1] for ln in status.splitlines() if ln.startswith("Uid:")), "")
        if b"clio.safety.launcher" in cmd and real == str(uid):
            found.append(int(entry))
    return found


def test_the_users_other_programs_cannot_read_the_launcher(user: User, tree: UserTree) -> None:
    """While clio runs (a command, then a slow answer), the user's own programs find the launcher
    non-dumpable: its environ and memory closed, like clio's own. (clio starts it at its first
    command, never for an answer that runs none.)"""
    env_key, _ = _keys(tree)
    server = FakeServer().start()
    server.script(
        Reply(tool_calls=[{"name": "terminal_operations", "arguments": {"operation": "execute", "command": "true"}}]),
        Reply(text="Thinking about it, slowly, one letter at a time.", chunk_chars=1, delay=0.1),
    )
    tree.chown()
    env = clio_env(server, tree.clio_home, {"HOME": str(tree.home), "OPENAI_API_KEY": env_key})
    before = set(_launchers_of(user.uid))
    clio = subprocess.Popen([*user.prefix(), str(CLIO), "--yes", "-p", "hello"], cwd=tree.project, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        launchers: list[int] = []
        while time.monotonic() < deadline and not (launchers and len(server.chat_requests) >= 2):
            launchers = [p for p in _launchers_of(user.uid) if p not in before]
            time.sleep(0.05)
        if not launchers:
            clio.kill()
            out, err = clio.communicate(timeout=30)
            raise AssertionError(f"clio started no command launcher: {out!r} {err!r} {server.chat_requests[-1:]!r}"[:3000])
        pid = launchers[0]
        looks = subprocess.run(
            [*user.prefix(), "bash", "-c", f"cat /proc/{pid}/environ; echo environ_rc=$?; "
             f"head -c 64 /proc/{pid}/mem > /dev/null; echo mem_rc=$?"],
            capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        assert clio.poll() is None, "clio ended before the look"
    finally:
        clio.communicate(timeout=60)
        server.stop()
    assert "environ_rc=1" in looks.stdout and "mem_rc=1" in looks.stdout, looks.stdout + looks.stderr
    assert env_key not in looks.stdout
    deadline = time.monotonic() + 10  # clio gone: its launcher goes too
    while pid in _launchers_of(user.uid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pid not in _launchers_of(user.uid)
