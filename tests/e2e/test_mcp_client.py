"""End to end: the installed clio as an MCP client, against real MCP servers and the fake model.

The reference ``mcp-server-time`` (stdio, from PyPI), a streamable-HTTP server written with the
SDK on 127.0.0.1, and hand-written misbehaving servers (testkit/mcp_servers.py) are started by
clio from the user's ``mcp_servers:``. The model's tool call ``time__get_current_time`` must
reach the server and its result come back in the next request; a server that does not exist,
exits mid-call, never answers or lists a malformed schema costs one line and its tools only.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from testkit import mcp_servers
from testkit.clio_run import CLIO, clio_env, run_clio, tool_results
from testkit.fakeserver import FakeServer, Reply

ROOT = Path(__file__).resolve().parents[2]
TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def bad(mode: str, **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "testkit.mcp_servers", "bad", mode], "cwd": str(ROOT), **extra}


def configure(home: Path, servers: dict[str, Any], **more: Any) -> None:
    (home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": servers, **more}), encoding="utf-8")


def offered(body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools") or []}


def call(name: str, call_id: str, **args: Any) -> Reply:
    return Reply(tool_calls=[{"id": call_id, "name": name, "arguments": args}])


def test_a_tool_call_reaches_mcp_server_time_and_its_result_the_next_request(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    configure(home, {"time": TIME})
    fake_server.script(call("time__get_current_time", "c1", timezone="Europe/Paris"), Reply(text="It is late."))
    r = run_clio(["-p", "What time is it in Paris?", "--yes"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "It is late."
    first, second = fake_server.chat_requests
    assert {"time__get_current_time", "time__convert_time"} <= offered(first)
    schema = next(t for t in first["tools"] if t["function"]["name"] == "time__get_current_time")["function"]
    assert "timezone" in schema["parameters"]["properties"] and schema["description"].startswith("[MCP time]")
    result = json.loads(tool_results(second)["c1"])
    assert result["timezone"] == "Europe/Paris" and result["datetime"][:4].isdigit()
    # the tool's line says something of the result (issue 27: it showed only its first line, '{')
    line = next(ln for ln in r.stderr.splitlines() if "time__get_current_time" in ln)
    assert '"datetime"' in line, r.stderr  # a key of the result, not of the arguments


def test_an_mcp_call_needs_approval_and_approvals_mcp_allow_gives_it(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    configure(home, {"time": {**TIME, "tools": ["get_current_time"]}})
    fake_server.script(call("time__get_current_time", "c1", timezone="UTC"), Reply(text="Could not."))
    r = run_clio(["-p", "time?"], server=fake_server, project=project, home=home)
    assert r.returncode == 4, r.stderr  # nobody to approve it in a one-shot run without --yes
    assert "refused for lack of approval: mcp: time__get_current_time" in r.stderr
    assert "not allowed: calling the MCP tool" in tool_results(fake_server.chat_requests[1])["c1"]
    assert offered(fake_server.chat_requests[0]) >= {"time__get_current_time"}
    assert "time__convert_time" not in offered(fake_server.chat_requests[0])  # the allow-list

    configure(home, {"time": {**TIME, "tools": ["get_current_time"]}}, approvals={"mcp": "allow"})
    fake_server.script(call("time__get_current_time", "c2", timezone="UTC"), Reply(text="Done."))
    r = run_clio(["-p", "time?"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert '"timezone": "UTC"' in tool_results(fake_server.chat_requests[-1])["c2"]


def test_an_untrusted_projects_servers_never_start(fake_server: FakeServer, project: Path, home: Path) -> None:
    marker = project / "started"
    (project / ".clio").mkdir()
    evil = {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w').write('x')"]}
    (project / ".clio" / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": {"evil": evil}}))
    fake_server.script(Reply(text="ok"))
    r = run_clio(["-p", "hi"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert "mcp_servers" in r.stderr and not marker.exists()
    assert not any("evil__" in n for n in offered(fake_server.chat_requests[0]))


def test_the_lean_profile_leaves_mcp_tools_out_unless_lean_is_set(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    configure(home, {"time": TIME, "also": {**TIME, "lean": True, "tools": ["convert_time"]}}, profile="lean")
    fake_server.script(Reply(text="ok"))
    r = run_clio(["-p", "hi"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    names = offered(fake_server.chat_requests[0])
    assert "also__convert_time" in names and not any(n.startswith("time__") for n in names)


@pytest.fixture
def http_server() -> Iterator[str]:
    """The SDK-written streamable-HTTP server on 127.0.0.1 (a separate process)."""
    with mcp_servers.http_server() as url:
        yield url


def test_a_streamable_http_server_on_loopback(
    fake_server: FakeServer, project: Path, home: Path, http_server: str
) -> None:
    configure(home, {"words": {"url": http_server}})
    fake_server.script(call("words__word_count", "w1", text="one two three"), Reply(text="Three."))
    r = run_clio(["-p", "count", "--yes"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert "words__word_count" in offered(fake_server.chat_requests[0])
    assert tool_results(fake_server.chat_requests[1])["w1"] == "3 words"


def test_servers_that_cannot_start_cost_one_line_each_and_their_tools(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    configure(
        home,
        {
            "time": TIME,
            "missing": {"command": str(project / "no-such-server")},
            "schema": bad("bad-schema"),
            "garbage": bad("garbage"),
            "silent": bad("hang-start", timeout=2, env={"MCP_TEST_PID_FILE": str(project.parent / "silent.pid")}),
        },
    )
    fake_server.script(Reply(text="fine"))
    r = run_clio(["-p", "hi"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "fine"
    text = " ".join(r.stderr.split())  # notices wrap at the terminal's width
    assert text.count("MCP server '") == 4, r.stderr
    assert "'missing' unavailable: command not found" in text
    assert "'schema' unavailable: tool 'echo' has a malformed input schema" in text
    assert "'garbage' unavailable: returned a malformed tool list" in text
    assert "'silent' unavailable: did not start within 2s" in text
    names = offered(fake_server.chat_requests[0])
    assert "time__get_current_time" in names and not any("echo" in n for n in names)
    # the server given up on at its deadline was stopped with clio (it was left running: issue 27)
    assert mcp_servers.process_gone(int((project.parent / "silent.pid").read_text()))


@pytest.mark.parametrize(
    ("mode", "why"), [("exit-mid-call", "stopped during the call"), ("hang-call", "did not answer within 2s")]
)
def test_a_server_that_dies_or_hangs_mid_call_costs_its_tools_not_the_session(
    fake_server: FakeServer, project: Path, home: Path, mode: str, why: str
) -> None:
    configure(home, {"time": TIME, "bad": bad(mode, tool_timeout=2)})
    fake_server.script(call("bad__echo", "b1", text="hi"), call("bad__echo", "b2", text="again"), Reply(text="ok"))
    r = run_clio(["-p", "echo", "--yes"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    first, second, third = fake_server.chat_requests
    assert "bad__echo" in offered(first) and "bad__echo" not in offered(second)
    assert "time__get_current_time" in offered(second)
    assert why in tool_results(second)["b1"] and "no longer offered" in tool_results(second)["b1"]
    assert "unknown tool 'bad__echo'" in tool_results(third)["b2"]
    assert " ".join(r.stderr.split()).count("MCP server 'bad'") == 1, r.stderr


def test_slash_mcp_lists_servers_state_and_tools_and_context_counts_them(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    configure(home, {"time": TIME, "missing": {"command": str(project / "nothing-here")}})
    r = run_clio(["-p", "/mcp"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())
    assert "time ready in" in out and "time__get_current_time, time__convert_time" in out
    assert "missing failed" in out and "command not found" in out
    r = run_clio(["-p", "/mcp --json"], server=fake_server, project=project, home=home)
    status = {s["name"]: s for s in json.loads(r.stdout)}
    assert status["time"]["state"] == "ready" and status["time"]["transport"] == "stdio"
    assert status["missing"]["state"] == "failed" and status["missing"]["tools"] == []
    r = run_clio(["-p", "/context --json"], server=fake_server, project=project, home=home)
    figures = json.loads(r.stdout)
    assert "time__convert_time" in figures["tools"] and figures["mcp_tool_tokens"] > 50
    r = run_clio(["-p", "/context"], server=fake_server, project=project, home=home)
    assert "MCP tools' schemas:" in r.stdout
    assert fake_server.chat_requests == []


def test_servers_start_only_when_needed_in_a_one_shot_run(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    marker = project.parent / "started"
    configure(home, {"probe": {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"]}})
    r = run_clio(["-p", "/stats"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert not marker.exists() and "MCP" not in r.stderr  # a slash-command-only run starts nothing
    r = run_clio(["-p", "/mcp"], server=fake_server, project=project, home=home)
    assert marker.exists() and "probe failed" in " ".join(r.stdout.split())


def test_secrets_in_the_arguments_never_reach_the_server(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    received = project.parent / "received.jsonl"
    configure(home, {"echo": bad("echo", env={"MCP_TEST_CALLS": str(received)})})
    fake_server.script(call("echo__echo", "e1", text=f"token {secret} here"), Reply(text="ok"))
    r = run_clio(["-p", "echo it", "--yes"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    (got,) = [json.loads(line) for line in received.read_text().splitlines()]
    assert got["text"].startswith("token ") and got["text"].endswith(" here") and secret not in got["text"]
    assert tool_results(fake_server.chat_requests[1])["e1"] == got["text"]


def test_a_large_result_is_stored_and_the_model_gets_a_preview(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    configure(home, {"echo": bad("echo")})
    big = "".join(f"line {i:05d} of a long MCP result\n" for i in range(1500))
    fake_server.script(call("echo__echo", "e1", text=big), Reply(text="ok"))
    r = run_clio(["-p", "echo it", "--yes"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    sent = tool_results(fake_server.chat_requests[1])["e1"]
    assert len(sent) < len(big) // 4 and "is stored as handle 'echo__echo-" in sent
    assert sent.startswith("line 00000") and "line 01499" in sent
    (stored,) = project.glob(".clio/sessions/*/results/echo__echo-*.txt")
    assert stored.read_text() == big


def test_a_garbage_call_result_is_an_error_result_and_the_server_stays(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    configure(home, {"odd": bad("garbage-result")})
    fake_server.script(call("odd__echo", "g1", text="x"), Reply(text="ok"))
    r = run_clio(["-p", "echo", "--yes"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
    result = tool_results(fake_server.chat_requests[1])["g1"]
    assert result.startswith("Error: odd__echo: MCP error:") and "ValidationError" in result
    assert "odd__echo" in offered(fake_server.chat_requests[1])  # one bad answer does not cost the server


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_server_clio_waits_for_is_stopped_when_clio_is_terminated(
    fake_server: FakeServer, project: Path, home: Path, sig: signal.Signals
) -> None:
    """Issue 27: every way out stops the servers; SIGTERM or a closed terminal (SIGHUP) killed clio
    at once and left a server that does not read its stdin running."""
    pid_file = project.parent / "silent.pid"  # not in $CLIO_HOME: no server may write there
    configure(home, {"silent": bad("hang-start", timeout=120, env={"MCP_TEST_PID_FILE": str(pid_file)})})
    proc = subprocess.Popen(
        [str(CLIO), "-p", "hi"], cwd=project, env=clio_env(fake_server, home),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # the first line: clio says it waits for the server
        assert "Waiting for MCP server 'silent' to start" in line, line
        deadline = time.monotonic() + 30
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        pid = int(pid_file.read_text())
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err
    assert mcp_servers.process_gone(pid), "the MCP server outlived clio"
    assert fake_server.chat_requests == []
