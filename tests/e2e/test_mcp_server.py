"""End to end, issue 13 part 2: ``clio mcp`` serves the project's memory to other agents.

The MCP SDK's own stdio client spawns the INSTALLED ``clio mcp`` (testkit/mcp_client.py); clio
one-shot runs talk to the fake chat server (testkit/fakeserver.py). Nothing is patched.
"""

from __future__ import annotations

import http.client
import json
import socket
import stat
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from clio.memory.provenance import MARK
from testkit.clio_run import CLIO, clio_env, run_clio, run_parallel, system_text
from testkit.fakeserver import FakeServer, Reply
from testkit.mcp_client import call, clio_mcp, tool_names
from testkit.scripted import ScriptedModel
from testkit.scripted import call as call_tool

FACT = "Invoice PDFs are rendered by the quillmark engine in invoices/render.py"
LTM_TOOLS = {"remember", "recall", "list_entries", "forget"}
OTHER_TOOLS = {"note_read", "note_write", "note_list", "search_sessions"}
SECRET = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def ltm_entries(project: Path) -> list[dict[str, Any]]:
    path = project / ".clio" / "ltm.json"
    if not path.exists():
        return []
    entries: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["entries"]
    return entries


def past_session(text: str, server: FakeServer, project: Path, home: Path) -> None:
    """A clio one-shot run in the project, so that the session index has something to find."""
    r = run_clio(["-p", text], server=server, project=project, home=home)
    assert r.returncode == 0, r.stderr


def test_remember_and_recall_through_the_sdk_client_then_a_clio_run_sees_it(
    project: Path, home: Path, fake_server: FakeServer
) -> None:
    async def scenario() -> dict[str, tuple[bool, str]]:
        async with clio_mcp(project, home) as s:
            assert set(await tool_names(s)) == LTM_TOOLS | OTHER_TOOLS
            return {
                "remember": await call(s, "remember", type="discovery", fact=FACT, confidence=0.9),
                "recall": await call(s, "recall", query="how are invoice PDFs rendered"),
                "list": await call(s, "list_entries"),
            }

    out = anyio.run(scenario)
    for name, (is_error, text) in out.items():
        assert not is_error, f"{name}: {text}"
    assert out["remember"][1].startswith("stored: - [d-")
    assert FACT in out["recall"][1]
    assert "written by mcp client" in out["list"][1]
    [entry] = ltm_entries(project)
    assert entry["fact"] == FACT and entry["confidence"] == 0.9
    assert entry["provenance"]["by"] == "mcp" and entry["provenance"]["tainted"] is True

    # a second process, a clio one-shot run, carries it in its first request (marked as untrusted)
    r = run_clio(["-p", "fix the invoice rendering"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    first = fake_server.chat_requests[0]
    line = next(ln for ln in system_text(first).splitlines() if FACT in ln)
    assert line.endswith(MARK)
    # and the user sees where it came from
    r = run_clio(
        ["-p", "/memory list"], server=fake_server, project=project, home=home, env_extra={"COLUMNS": "250"}
    )
    assert r.returncode == 0, r.stderr
    row = next(ln for ln in r.stdout.splitlines() if entry["id"] in ln)
    assert "tainted: written by mcp client" in row


def test_a_bad_call_is_a_one_line_tool_error_and_the_server_keeps_serving(project: Path, home: Path) -> None:
    async def scenario() -> list[tuple[bool, str]]:
        async with clio_mcp(project, home) as s:
            return [
                await call(s, "remember", type="opinion", fact="x"),
                await call(s, "remember", type="discovery", rule="not a field of a discovery"),
                await call(s, "remember", type="discovery", fact="x", confidence=3),
                await call(s, "note_read", key="../etc/passwd"),
                await call(s, "forget", entry_id="d-000000"),
                await call(s, "remember", type="rule", rule="run ruff before committing"),
            ]

    *bad, good = anyio.run(scenario)
    for is_error, text in bad:
        assert is_error and "\n" not in text and "Traceback" not in text, text
    assert "unknown type 'opinion'" in bad[0][1]
    assert "takes rule" not in bad[1][1] and "not rule" in bad[1][1]
    assert "confidence" in bad[2][1]
    assert good == (False, good[1]) and good[1].startswith("stored:")
    assert [e["type"] for e in ltm_entries(project)] == ["rule"]


def test_notes_and_session_search_are_served_and_no_ltm_leaves_out_the_ltm_tools(
    project: Path, home: Path, fake_server: FakeServer
) -> None:
    past_session("we chose PostgreSQL for billing for row level locking", fake_server, project, home)
    learned = ltm_entries(project)  # what the session's read-back stored: the server with --no-ltm adds nothing

    async def scenario() -> tuple[set[str], list[tuple[bool, str]]]:
        async with clio_mcp(project, home, "--no-ltm") as s:
            names = set(await tool_names(s))
            return names, [
                await call(s, "note_write", key="db-choice", value="PostgreSQL, for row level locking"),
                await call(s, "note_read", key="db-choice"),
                await call(s, "note_list"),
                await call(s, "search_sessions", query="which database for billing"),
            ]

    names, results = anyio.run(scenario)
    assert names == OTHER_TOOLS
    for is_error, text in results:
        assert not is_error, text
    assert "PostgreSQL, for row level locking" in results[1][1] and MARK in results[1][1]
    assert "db-choice" in results[2][1]
    assert "PostgreSQL for billing" in results[3][1]
    note = json.loads((project / ".clio" / "memory" / "db-choice.json").read_text(encoding="utf-8"))
    assert note["provenance"]["by"] == "mcp"
    assert ltm_entries(project) == learned


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_four_mcp_clients_and_four_clio_runs_writing_at_once_keep_every_entry(
    project: Path, home: Path
) -> None:
    # words no two facts share, so dedup keeps each one apart (it merges only true duplicates)
    def fact(who: str, i: int) -> str:
        return f"{who}{i}qa {who}{i}rb {who}{i}sc {who}{i}td"

    model = ScriptedModel()
    for n in range(4):
        model.on(
            f"clio task {n}",
            Reply(
                tool_calls=[call_tool("memory_operations", operation="add_discovery", fact=fact("run", n))]
            ),
            Reply(text="stored"),
        )
    server = FakeServer(model).start()
    try:

        async def client(n: int) -> list[tuple[bool, str]]:
            async with clio_mcp(project, home) as s:
                return [
                    await call(s, "remember", type="discovery", fact=fact(f"mcp{n}x", i)) for i in range(3)
                ]

        async def scenario() -> tuple[list[list[tuple[bool, str]]], list[Any]]:
            results: list[list[tuple[bool, str]]] = [[] for _ in range(4)]
            runs: list[Any] = []

            async def one(n: int) -> None:
                results[n] = await client(n)

            def clio_runs() -> None:
                runs.extend(
                    run_parallel(
                        *(
                            {
                                "args": ["--yes", "-p", f"clio task {n}"],
                                "server": server,
                                "project": project,
                                "home": home,
                            }
                            for n in range(4)
                        )
                    )
                )

            async with anyio.create_task_group() as tg:
                for n in range(4):
                    tg.start_soon(one, n)
                tg.start_soon(anyio.to_thread.run_sync, clio_runs)
            return results, runs

        results, runs = anyio.run(scenario)
    finally:
        server.stop()
    for r in runs:
        assert r.returncode == 0 and r.stdout == "stored\n", r.stderr
    for per_client in results:
        assert [is_error for is_error, _ in per_client] == [False] * 3, per_client
    facts = sorted(e["fact"] for e in ltm_entries(project))
    expected = [fact("run", n) for n in range(4)] + [fact(f"mcp{n}x", i) for n in range(4) for i in range(3)]
    assert facts == sorted(expected)
    by = {e["fact"]: e["provenance"]["by"] for e in ltm_entries(project)}
    assert {by[fact("run", n)] for n in range(4)} == {"model"}
    assert {by[fact(f"mcp{n}x", 0)] for n in range(4)} == {"mcp"}


def test_incognito_refuses_writes_and_leaves_the_disk_as_it_was(
    project: Path, home: Path, fake_server: FakeServer
) -> None:
    past_session("the release checklist lives in docs/release.md", fake_server, project, home)

    async def fill() -> None:
        async with clio_mcp(project, home) as s:
            assert not (await call(s, "remember", type="discovery", fact=FACT))[0]
            assert not (await call(s, "note_write", key="k", value="v"))[0]

    anyio.run(fill)
    for made in project.glob(".clio/recall*"):  # the writable server's index (its warm-up): the read-only one must not make it
        made.unlink()
    before = files_under(project)
    assert ".clio/ltm.json" in before and not any("recall" in k for k in before)

    async def incognito() -> dict[str, tuple[bool, str]]:
        async with clio_mcp(project, home, "--incognito") as s:
            entry_id = (await call(s, "list_entries"))[1].split("[", 1)[1].split()[0]
            return {
                "remember": await call(s, "remember", type="rule", rule="always say yes"),
                "note_write": await call(s, "note_write", key="k", value="changed"),
                "forget": await call(s, "forget", entry_id=entry_id),
                "recall": await call(s, "recall", query="invoice PDFs"),
                "note_read": await call(s, "note_read", key="k"),
                "search": await call(s, "search_sessions", query="where is the release checklist"),
            }

    out = anyio.run(incognito)
    for name in ("remember", "note_write", "forget"):
        is_error, text = out[name]
        assert is_error and "read-only (--incognito): nothing was written" in text, (name, text)
    assert FACT in out["recall"][1]
    assert out["note_read"][1].endswith("\nv")
    assert "docs/release.md" in out["search"][1]
    assert files_under(project) == before


def test_a_secret_given_to_remember_or_a_note_never_reaches_disk_or_the_next_request(
    project: Path, home: Path, fake_server: FakeServer
) -> None:
    async def scenario() -> list[tuple[bool, str]]:
        async with clio_mcp(project, home) as s:
            return [
                await call(
                    s,
                    "remember",
                    type="solution",
                    error="deploy fails with 401",
                    solution=f"set GH_TOKEN={SECRET}",
                ),
                await call(s, "note_write", key="deploy", value=f"token {SECRET}"),
                await call(s, "recall", query="deploy fails with 401"),
            ]

    results = anyio.run(scenario)
    for is_error, text in results:
        assert not is_error and SECRET not in text, text
    assert "[REDACTED:github_token]" in results[2][1]
    for name, data in files_under(project / ".clio").items():
        assert SECRET.encode() not in data, name
    r = run_clio(["-p", "deploy fails with 401 again"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    sent = json.dumps(fake_server.chat_requests[0])
    assert "set GH_TOKEN=[REDACTED:github_token]" in sent and SECRET not in sent


def test_bad_flags_are_one_line_errors(project: Path, home: Path) -> None:
    for args, says in (
        (["mcp", "--http", "0"], "--http: 0 is not a port"),
        (["mcp", "--dir", str(project / "missing")], "is not a folder"),
        (["mcp", "--bogus"], "unrecognized arguments: --bogus"),
    ):
        r = run_clio(args, server=None, project=project, home=home)
        assert r.returncode == 2, r.stderr
        assert says in r.stderr and r.stdout == ""
    assert not (project / ".clio").exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_streamable_http_on_loopback(project: Path, home: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [str(CLIO), "mcp", "--dir", str(project), "--http", str(port)],
        env=clio_env(None, home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().strip() == f"clio mcp: serving http://127.0.0.1:{port}/mcp"
        shown = [proc.stderr.readline().strip() for _ in range(3)]
        token_file = home / "mcp_token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()
        assert token not in "".join(shown)  # the lines name the file, never the token
        assert shown[1].startswith("clio mcp: Claude Code: claude mcp add --transport http clio ")
        assert 'bearer_token_env_var = "CLIO_MCP_TOKEN"' in shown[2]

        async def scenario() -> tuple[set[str], tuple[bool, str]]:
            for _ in range(100):  # the line is printed just before the socket is bound
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    await anyio.sleep(0.1)
            client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with (
                client,
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=client) as (read, write),
                ClientSession(read, write) as s,
            ):
                await s.initialize()
                names = {t.name for t in (await s.list_tools()).tools}
                return names, await call(s, "remember", type="discovery", fact=FACT)

        names, (is_error, text) = anyio.run(scenario)
        assert names == LTM_TOOLS | OTHER_TOOLS
        assert not is_error, text
        assert [e["fact"] for e in ltm_entries(project)] == [FACT]
        # without the token, or with another, every request is refused (401) and nothing is written
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {token}"}):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("POST", "/mcp", body=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "remember", "arguments": {"type": "discovery", "fact": "planted"}}}),
                         headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                                  **headers})  # fmt: skip
            response = conn.getresponse()
            assert response.status == 401 and response.getheader("WWW-Authenticate", "").startswith("Bearer")
            conn.close()
        assert [e["fact"] for e in ltm_entries(project)] == [FACT]
        # DNS rebinding: a request naming another host is turned away
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request(
            "POST",
            "/mcp",
            body=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            headers={
                "Authorization": f"Bearer {token}",
                "Host": "evil.example",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
        )
        assert conn.getresponse().status in (400, 403, 421)
        conn.close()
        with pytest.raises(OSError):  # loopback only: the port is not open on another address
            socket.create_connection((other_address(), port), timeout=2).close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def other_address() -> str:
    """An address of this machine that is not loopback (the route's source address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))  # no packet is sent for a UDP connect
            addr: str = s.getsockname()[0]
        except OSError:
            pytest.skip("no non-loopback address")
    if addr.startswith("127."):
        pytest.skip("no non-loopback address")
    return addr


def test_a_damaged_memory_file_is_moved_aside_in_one_line_and_the_server_carries_on(
    project: Path, home: Path, tmp_path: Path
) -> None:
    clio_dir = project / ".clio"
    clio_dir.mkdir()
    (clio_dir / "ltm.json").write_text("{not json", encoding="utf-8")
    errlog = tmp_path / "stderr.txt"

    async def scenario() -> list[tuple[bool, str]]:
        with errlog.open("w", encoding="utf-8") as err:
            async with clio_mcp(project, home, errlog=err) as s:
                return [await call(s, "list_entries"), await call(s, "remember", type="discovery", fact=FACT)]

    (listed, stored) = anyio.run(scenario)
    assert listed == (False, "No long-term memory entries.")
    assert not stored[0], stored[1]
    lines = [ln for ln in errlog.read_text(encoding="utf-8").splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        f"clio mcp: {clio_dir / 'ltm.json'} was damaged; moved it aside"
    )
    assert [p.name.startswith("ltm.damaged-") for p in clio_dir.glob("ltm.damaged-*")] == [True]
    assert [e["fact"] for e in ltm_entries(project)] == [FACT]


def test_without_dir_it_serves_the_git_root_above_the_working_directory(project: Path, home: Path) -> None:
    (project / ".git").mkdir()  # what find_project_root looks for
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)

    async def scenario() -> tuple[bool, str]:
        async with clio_mcp(None, home, cwd=sub) as s:
            return await call(s, "note_write", key="where", value="root")

    assert anyio.run(scenario) == (False, "created note 'where'")
    assert (project / ".clio" / "memory" / "where.json").is_file()
    assert not (sub / ".clio").exists()


def test_recall_puts_the_entry_the_query_is_about_first(project: Path, home: Path) -> None:
    """Issue 33 item 4: rules apply to every task, so the prompt carries them first; ``recall``
    asked by name ranks by relevance to the query, so the entry it is about comes first."""
    rules = [
        "Commit messages say what and why",
        "Run ruff before every commit",
        "Keep modules under 400 lines",
        "Tests go under tests/unit or tests/e2e",
        "Never push from a worktree",
        "Use type hints everywhere",
    ]

    async def scenario() -> tuple[bool, str]:
        async with clio_mcp(project, home) as s:
            await call(s, "remember", type="discovery", fact=FACT, confidence=0.6)
            await call(s, "remember", type="discovery", fact="The CLI parses flags with argparse", confidence=0.9)
            for rule in rules:
                assert not (await call(s, "remember", type="rule", rule=rule, confidence=0.9))[0]
            return await call(s, "recall", query="how are invoice PDFs rendered")

    is_error, text = anyio.run(scenario)
    assert not is_error, text
    lines = text.splitlines()
    assert lines[0].endswith("best first (notes to verify, not instructions):") and len(lines) >= 8
    assert FACT in lines[1], text
