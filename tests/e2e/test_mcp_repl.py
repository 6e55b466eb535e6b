"""The REPL with MCP servers, in a real pseudo-terminal: servers start with the session, Ctrl-C
cancels a call that hangs (the session and the server carry on), and every server process
ends when clio exits."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from testkit.fakeserver import FakeServer, Reply
from testkit.mcp_servers import process_gone as _gone
from tests.e2e.test_repl_pty import Spawn, Term, project, spawn, wait_for  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[2]


def bad_server(mode: str, pid_file: Path, **settings: Any) -> dict[str, Any]:
    """A misbehaving stdio server of testkit.mcp_servers that writes its pid to ``pid_file``."""
    return {
        "command": sys.executable,
        "args": ["-m", "testkit.mcp_servers", "bad", mode],
        "cwd": str(ROOT),
        "env": {"MCP_TEST_PID_FILE": str(pid_file)},
        **settings,
    }


def started(spawn: Spawn, pid_file: Path) -> tuple[Term, int]:  # noqa: F811
    """The REPL up, and the pid of the server that writes ``pid_file`` (started with the session)."""
    term = spawn()
    term.prompt()
    # the server creates the file, then writes its pid: wait for the pid, not for the file alone
    assert wait_for(lambda: pid_file.exists() and pid_file.read_text().strip() != ""), (
        "the REPL did not start its MCP servers with the session"
    )
    return term, int(pid_file.read_text())


def call(name: str, call_id: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[{"id": call_id, "name": name, "arguments": arguments}])


def test_ctrl_c_cancels_a_hung_mcp_call_and_exit_stops_the_servers(
    spawn: Spawn, fake_server: FakeServer, project: Path  # noqa: F811
) -> None:
    pid_file = project.parent / "hang.pid"
    servers = {
        "slow": bad_server("hang-call", pid_file, tool_timeout=120),
        "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
    }
    config = {"mcp_servers": servers, "approvals": {"mcp": "allow"}}
    (project.parent / "home" / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    fake_server.script(
        call("slow__echo", "s1", text="never answered"),
        call("time__get_current_time", "t1", timezone="UTC"),
        Reply(text="TIME-CALL-DONE"),
    )
    term, pid = started(spawn, pid_file)
    term.type("/mcp")
    term.expect(r"slow ready")
    term.expect(r"time ready")
    term.prompt()

    term.type("echo something")
    term.expect(r"slow__echo")
    term.child.sendintr()
    term.expect(r"interrupted")
    term.prompt()
    assert len(fake_server.chat_requests) == 1

    term.type("what time is it")
    term.expect(r"TIME-CALL-DONE")
    term.prompt()
    last = fake_server.chat_requests[-1]["messages"]
    assert '"timezone": "UTC"' in str(last[-1]["content"])
    assert not _gone(pid)  # the cancelled call did not cost the server

    term.child.sendeof()
    assert term.wait_exit(timeout=30) == 0
    assert wait_for(lambda: _gone(pid), timeout=10), "the MCP server outlived clio"


def test_a_line_names_the_server_clio_waits_for_and_ctrl_c_leaves_it_out_then_stopped(
    spawn: Spawn, fake_server: FakeServer, project: Path  # noqa: F811
) -> None:
    """Issue 27: nothing said what the pause was; after Ctrl-C the server outlived clio."""
    pid_file = project.parent / "silent.pid"
    servers = {"silent": bad_server("hang-start", pid_file, timeout=120)}
    (project.parent / "home" / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": servers}), encoding="utf-8")
    fake_server.script(Reply(text="ANSWERED-WITHOUT-IT"))
    term, pid = started(spawn, pid_file)
    term.type("hello")
    term.expect(r"Waiting for MCP server 'silent' to start \(Ctrl-C leaves it out\)")
    assert fake_server.chat_requests == []
    term.child.sendintr()
    term.expect(r"MCP server 'silent' unavailable: its start was interrupted \(Ctrl-C\); its tools are left out")
    term.expect(r"ANSWERED-WITHOUT-IT")
    term.prompt()
    term.child.sendeof()
    assert term.wait_exit(timeout=30) == 0
    assert _gone(pid), "the MCP server given up on outlived clio"
