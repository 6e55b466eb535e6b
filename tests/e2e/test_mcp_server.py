"""End to end, issue 13 part 2: ``clio mcp`` serves the project's memory to other agents.

The MCP SDK's own stdio client spawns the INSTALLED ``clio mcp`` (testkit/mcp_client.py); clio
one-shot runs talk to the fake chat server (testkit/fakeserver.py). Nothing is patched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from clio.memory.provenance import MARK
from testkit.clio_run import run_clio, system_text
from testkit.fakeserver import FakeServer
from testkit.mcp_client import call, clio_mcp, tool_names

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
    r = run_clio(
        ["-p", "we chose PostgreSQL for billing for row level locking"],
        server=fake_server,
        project=project,
        home=home,
    )
    assert r.returncode == 0, r.stderr

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
    assert ltm_entries(project) == []
