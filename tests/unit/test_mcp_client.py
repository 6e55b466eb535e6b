"""The MCP client's parts: tool lists checked and namespaced, results read as text, and
McpClients against the real ``mcp-server-time`` (stdio, the reference server from PyPI) in
process: started in the background, called, a failing server costing one line, shut down."""

from __future__ import annotations

import concurrent.futures
import json
import signal
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import pytest

from clio.app.mcp_servers import McpTool, mcp_tools
from clio.mcp.client import CallFailed, McpClients, result_of, wait_for
from clio.mcp.config import ServerSpec, parse_servers
from clio.mcp.remote import describe_error, read_tools, result_text
from clio.safety.containment import landlock_abi
from clio.safety.wrapper import guards_writes
from clio.tools.context import ToolContext
from clio.tools.registry import Registry
from testkit.mcp_servers import process_gone as _gone

OBJ: dict[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def tool(name: str, schema: Any = OBJ, description: str | None = "does it") -> NS:
    return NS(name=name, input_schema=schema, description=description, title=None)


def test_tools_are_namespaced_filtered_and_described() -> None:
    spec = ServerSpec("docs", command="x", tools=("search", "read"))
    tools, skipped = read_tools(spec, [tool("search"), tool("read", {"properties": {}}), tool("delete")])
    assert [t.exposed for t in tools] == ["docs__search", "docs__read"] and skipped == ["delete"]
    assert tools[0].description == "[MCP docs] does it" and tools[0].schema == OBJ
    assert tools[1].schema == {"type": "object", "properties": {}}  # a missing type is an object


@pytest.mark.parametrize(
    "schema",
    [None, "object", {"type": "string"}, {"type": "object", "properties": []}, {"properties": {"a": 3}},
     {"type": "object", "required": "q"}, {"type": "object", "properties": {"a": {"default": object()}}},
     {"type": "object", "additionalProperties": "yes"}, {"type": "object", "properties": {"a": {"type": "strung"}}}],
)
def test_a_malformed_schema_fails_the_whole_list(schema: Any) -> None:
    with pytest.raises(ValueError, match="malformed input schema"):
        read_tools(ServerSpec("bad", command="x"), [tool("fine"), tool("broken", schema)])


def test_a_nameless_tool_or_a_name_clash_fails_the_list() -> None:
    with pytest.raises(ValueError):
        read_tools(ServerSpec("s", command="x"), [tool("")])
    with pytest.raises(ValueError, match="two tools"):
        read_tools(ServerSpec("s", command="x"), [tool("a.b"), tool("a_b")])


def test_descriptions_are_cut_and_invisibles_shown() -> None:
    tools, _ = read_tools(ServerSpec("s", command="x"), [tool("t", description="hi\u202e" + "x" * 5000)])
    assert "\u202e" not in tools[0].description and len(tools[0].description) < 1100


def test_result_text_of_every_block_kind() -> None:
    result = NS(
        content=[
            NS(type="text", text="hello"),
            NS(type="image", mime_type="image/png"),
            NS(type="resource", resource=NS(text="inside", uri="file:///a")),
            NS(type="resource_link", uri="file:///b"),
        ]
    )
    assert result_text(result) == "hello\n[image content: image/png]\ninside\n[resource link file:///b]"
    assert result_text(NS(content=[], structured_content={"a": 1})) == '{"a": 1}'
    assert result_text(NS(content=[])) == "(no output)"


def test_describe_error_looks_inside_groups() -> None:
    class Group(Exception):  # the shape of ExceptionGroup (exceptiongroup's backport on 3.10)
        exceptions = (FileNotFoundError(2, "No such file", "/no/srv"),)

    assert describe_error(Group("unhandled errors in a TaskGroup")) == "command not found: /no/srv"
    assert describe_error(RuntimeError("a\nb")) == "RuntimeError: a"


TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def test_real_time_server_started_called_and_stopped(tmp_path: Path) -> None:
    parsed = parse_servers(
        {"time": {**TIME, "tools": ["get_current_time"]}, "nope": {"command": str(tmp_path / "no-such-server")}}
    )
    clients = McpClients(parsed.servers, tmp_path)
    clients.start()
    try:
        clients.wait_started()
        time, nope = clients.servers["time"], clients.servers["nope"]
        assert time.state == "ready" and [t.exposed for t in time.tools] == ["time__get_current_time"]
        assert time.skipped == ["convert_time"] and time.start_ms is not None
        assert nope.state == "failed" and "command not found" in nope.error
        problems = clients.take_problems()
        assert len(problems) == 1 and "'nope' unavailable" in problems[0] and clients.take_problems() == []

        registry = Registry()
        for t in mcp_tools(clients):
            registry.add(t)
        asked: list[tuple[str, str]] = []

        def approve(kind: str, summary: str, *, destructive: bool = False) -> bool:
            asked.append((kind, summary))
            return True

        ctx = ToolContext(root=tmp_path, approve=approve)
        text, ok = registry.run(ctx, "time__get_current_time", '{"timezone": "Europe/Paris"}')
        assert ok and json.loads(text)["timezone"] == "Europe/Paris"
        assert asked == [("mcp", 'time__get_current_time {"timezone": "Europe/Paris"}')]
        text, ok = registry.run(ctx, "time__get_current_time", '{"timezone": "Nowhere/Special"}')
        assert not ok and "Invalid timezone" in text  # the server's error, the server still up
        assert registry.offered("full") == ["time__get_current_time"] and registry.offered("lean") == []
        with pytest.raises(CallFailed, match="not running"):
            clients.call("nope", "x", {})
    finally:
        clients.close()
    assert clients.servers["time"].state == "stopped"


def _blocked_signals(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        return int(next(line for line in f if line.startswith("SigBlk:")).split()[1], 16)


@pytest.mark.parametrize("hidden", [False, True])
def test_a_server_started_from_the_loop_thread_blocks_no_signal(tmp_path: Path, hidden: bool) -> None:
    """The MCP loop's thread blocks SIGINT (clio/threads.py); the servers it starts, directly or
    through the wrapper that hides folders, must not inherit that."""
    if hidden and landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock: no wrapper")
    pid_file = tmp_path / "pid"
    root = Path(__file__).resolve().parents[2]
    spec = {"command": sys.executable, "args": ["-m", "testkit.mcp_servers", "bad", "echo"], "cwd": str(root),
            "env": {"MCP_TEST_PID_FILE": str(pid_file)}}  # fmt: skip
    (tmp_path / "secret").mkdir()
    clients = McpClients(parse_servers({"e": spec}).servers, tmp_path, hidden=[str(tmp_path / "secret")] if hidden else [])
    clients.start()
    try:
        clients.wait_started()
        assert clients.servers["e"].state == "ready", clients.servers["e"].error
        assert _blocked_signals(int(pid_file.read_text())) & (1 << (signal.SIGINT - 1)) == 0
        assert _blocked_signals(threading.get_native_id()) == 0  # and this thread's mask is as it was
    finally:
        clients.close()


def test_a_declined_call_never_reaches_the_server(tmp_path: Path) -> None:
    clients = McpClients(parse_servers({"time": {**TIME, "lean": True, "tools": ["get_current_time"]}}).servers, tmp_path)
    clients.start()
    try:
        clients.wait_started()
        (t,) = mcp_tools(clients)
        assert isinstance(t, McpTool) and t.offered("lean")
        ctx = ToolContext(root=tmp_path, approve=lambda kind, summary, destructive=False: False, interactive=False)
        registry = Registry()
        registry.add(t)
        text, ok = registry.run(ctx, "time__get_current_time", {"timezone": "UTC"})
        assert not ok and "not allowed: calling the MCP tool time__get_current_time" in text
    finally:
        clients.close()


def test_the_sdk_is_not_imported_on_the_way_to_the_prompt() -> None:
    """The REPL's and the one-shot's modules, config parsing and McpClients before start()."""
    import subprocess

    code = (
        "import sys, pathlib; import clio.app.app, clio.ui.repl, clio.ui.oneshot, clio.commands.builtin; "
        "from clio.mcp.config import parse_servers; from clio.mcp.client import McpClients; "
        "McpClients(parse_servers({'t': {'command': 'x'}}).servers, pathlib.Path('.')); "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'anyio', 'jsonschema'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.skipif(landlock_abi() < 1, reason="this kernel has no Landlock: nothing can hide clio's folder")
def test_a_stdio_server_cannot_read_clios_own_folder(tmp_path: Path) -> None:
    """A stdio server is a program clio runs: like a shell command, it cannot read $CLIO_HOME
    (where the config may hold the API key), while the project stays readable to it."""
    root = Path(__file__).resolve().parents[2]
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    (home / "config.yaml").write_text("api_key: sk-test-not-for-servers\n", encoding="utf-8")
    (project / "README.md").write_text("project text\n", encoding="utf-8")
    spec = {"command": sys.executable, "args": ["-m", "testkit.mcp_servers", "bad", "reader"], "cwd": str(root)}
    clients = McpClients(parse_servers({"reader": spec}).servers, project, hidden=(str(home),))
    clients.start()
    try:
        clients.wait_started()
        assert clients.servers["reader"].state == "ready", clients.servers["reader"].error
        secret, _ = clients.call("reader", "echo", {"text": str(home / "config.yaml")})
        readme, _ = clients.call("reader", "echo", {"text": str(project / "README.md")})
        wrote, _ = clients.call("reader", "echo", {"text": f"write:{home / 'config.yaml'}"})
    finally:
        clients.close()
    assert "sk-test" not in secret and "cannot read" in secret, secret
    assert readme == "project text\n"
    if guards_writes():  # nor write it, where user namespaces let clio make it a read-only mount
        assert wrote == "cannot write: Read-only file system", wrote
        assert (home / "config.yaml").read_text(encoding="utf-8") == "api_key: sk-test-not-for-servers\n"


def test_giving_up_on_a_server_that_never_answers_leaves_it_out(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    pid_file = tmp_path / "silent.pid"
    spec = {
        "command": sys.executable,
        "args": ["-m", "testkit.mcp_servers", "bad", "hang-start"],
        "cwd": str(root),
        "env": {"MCP_TEST_PID_FILE": str(pid_file)},
    }
    clients = McpClients(parse_servers({"silent": {**spec, "timeout": 60}}).servers, tmp_path)
    clients.start()
    try:
        assert clients.starting(within=0.1) == ["silent"]
        deadline = time.monotonic() + 30
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        clients.give_up("its start was interrupted (Ctrl-C)")
        clients.wait_started()  # returns at once: nothing is starting any more
        assert clients.servers["silent"].state == "failed" and mcp_tools(clients) == []
        assert clients.take_problems() == [
            "MCP server 'silent' unavailable: its start was interrupted (Ctrl-C); its tools are left out"
        ]
    finally:
        clients.close()
    assert _gone(int(pid_file.read_text()))  # closed: the process given up on is stopped, not leaked


def test_under_sandbox_an_mcp_call_is_asked_even_with_approvals_allow(app_factory: Any) -> None:
    """MCP servers run outside clio's sandbox: --sandbox makes every call ask, like a shell command."""
    from clio.config import Approvals

    questions: list[str] = []

    def ask(question: str) -> str:
        questions.append(question)
        return "n"

    allow = Approvals(mcp="allow")
    assert app_factory(approvals=allow).tool_ctx.approve("mcp", "time__get_current_time {}")
    app = app_factory(approvals=Approvals(mcp="allow"), sandbox=True, ask=ask)
    assert not app.tool_ctx.approve("mcp", "time__get_current_time {}")
    assert questions and "mcp: time__get_current_time" in questions[0]


def _ctrl_c_to_another_thread(after: float) -> threading.Thread:
    """A Ctrl-C as the kernel may deliver it: to some thread other than the main one."""

    def send() -> None:
        time.sleep(after)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    t = threading.Thread(target=send, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("waiting", ["a start", "a call"])
def test_a_ctrl_c_that_lands_on_another_thread_still_ends_the_wait_at_once(waiting: str) -> None:
    """A wait for a server's start or call is cut short by a Ctrl-C however the kernel hands it
    out; one long Event.wait / Future.result slept through it until its own end (seen in CI)."""
    assert threading.current_thread() is threading.main_thread()
    never = threading.Event()
    pending: concurrent.futures.Future[Any] = concurrent.futures.Future()
    sender = _ctrl_c_to_another_thread(0.3)
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        if waiting == "a start":
            wait_for(never, 60.0)
        else:
            result_of(pending)
    assert time.monotonic() - began < 30.0, "the Ctrl-C waited for the wait's own end"
    sender.join()


def test_the_sliced_waits_return_what_the_plain_ones_would() -> None:
    done = threading.Event()
    assert wait_for(done, 0.25) is False
    done.set()
    assert wait_for(done, 5.0) is True
    ok: concurrent.futures.Future[Any] = concurrent.futures.Future()
    threading.Timer(0.2, ok.set_result, ("answer",)).start()
    assert result_of(ok) == "answer"
    failed: concurrent.futures.Future[Any] = concurrent.futures.Future()
    failed.set_exception(TimeoutError("the call's own timeout"))  # not taken for a slice's end
    with pytest.raises(TimeoutError, match="own timeout"):
        result_of(failed)
