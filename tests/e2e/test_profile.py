"""The tool profile end to end: what the installed clio sends in a small window and a large one.

A 2k-token window (llama-server -c 2048 and the like) cannot carry the full profile's ~1,500-1,800
tokens of system prompt and tool schemas; clio sends the lean profile there (files, shell, git,
short schemas, short system prompt), the full one elsewhere, and what the user configures wins.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.clio_run import archive_messages, run_clio, session_dirs, system_text, wait_background
from testkit.fakeserver import FakeServer, Reply

LEAN = ["file_operations", "version_control", "terminal_operations"]
FULL = [
    "file_operations",
    "version_control",
    "terminal_operations",
    "todo_operations",
    "user_collaboration",
    "memory_operations",
    "preferences",
]


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


def run(project: Path, home: Path, server: FakeServer, *args: str) -> Any:
    return run_clio(["--model", "fake-model", *args], server=server, project=project, home=home)


def test_small_window_sends_the_lean_profile(project: Path, home: Path, fake_server: FakeServer) -> None:
    fake_server.script(Reply(text="hi"), Reply(text="hi"))
    small = run(project, home, fake_server, "--context-window", "2048", "-p", "hello")
    assert small.returncode == 0, small.stderr
    large = run(project, home, fake_server, "--context-window", "32768", "-p", "hello")
    assert large.returncode == 0, large.stderr
    lean_body, full_body = fake_server.chat_requests
    assert tool_names(lean_body) == LEAN
    assert tool_names(full_body) == FULL
    lean_sys, full_sys = system_text(lean_body), system_text(full_body)
    assert str(project.resolve()) in lean_sys and "todo_operations" not in lean_sys
    assert "todo_operations" in full_sys
    lean_tokens, full_tokens = fake_server.prompt_tokens(lean_body), fake_server.prompt_tokens(full_body)
    assert lean_tokens * 3 < full_tokens, (lean_tokens, full_tokens)
    assert lean_tokens < (2048 - 512) / 3  # the fixed part leaves two thirds of the budget


@pytest.fixture
def short_project() -> Iterator[Path]:
    """A project at a path of fixed length: the system prompt names the project's path, and in a
    2k window the lean fixed part is near a third of the limit, so pytest's base folder
    (/tmp/pytest-of-USER/pytest-N/popen-gwK/..., longer as N grows) must not decide the figures."""
    root = Path(tempfile.mkdtemp(prefix="clio-profile-", dir="/tmp"))
    p = root / "proj"
    p.mkdir()
    try:
        yield p
        wait_background(p, timeout=30)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_context_command_names_the_profile(short_project: Path, home: Path, fake_server: FakeServer) -> None:
    project = short_project
    r = run(project, home, fake_server, "--context-window", "2048", "-p", "/context --json")
    assert r.returncode == 0, r.stderr
    figures = json.loads(r.stdout)
    assert figures["profile"] == "lean" and figures["tools"] == LEAN
    assert figures["full_fixed_tokens"] > figures["limit_tokens"] / 3 > figures["fixed_tokens"]
    text = run(project, home, fake_server, "--context-window", "2048", "-p", "/context")
    assert "lean profile: 3 tools (the full profile's fixed part would be" in " ".join(text.stdout.split())
    assert fake_server.chat_requests == []  # slash commands call no model


def test_the_configured_profile_wins(project: Path, home: Path, fake_server: FakeServer) -> None:
    (project / ".clio").mkdir()
    config = project / ".clio" / "config.yaml"
    fake_server.script(Reply(text="a"), Reply(text="b"))
    config.write_text("profile: full\n")
    assert run(project, home, fake_server, "--context-window", "2048", "-p", "hi").returncode == 0
    config.write_text("profile: lean\n")
    assert run(project, home, fake_server, "--context-window", "128000", "-p", "hi").returncode == 0
    # in a large window the lean profile has room for the recall operation
    assert [tool_names(b) for b in fake_server.chat_requests] == [FULL, [*LEAN, "memory_operations"]]
    # a project's bad value is ignored with one line (issue 25: a project never stops clio) ...
    config.write_text("profile: tiny\n")
    fake_server.script(Reply(text="c"))
    ignored = run(project, home, fake_server, "-p", "hi")
    assert ignored.returncode == 0, ignored.stderr
    assert "profile: 'tiny' ignored (expected auto or full or lean); using 'auto'" in ignored.stderr
    # ... the user's own is theirs to fix: one line, nothing sent
    config.unlink()
    (home / "config.yaml").write_text("profile: tiny\n")
    bad = run(project, home, fake_server, "-p", "hi")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "profile must be auto, full or lean (got 'tiny')" in bad.stderr
    assert len(fake_server.chat_requests) == 3


def test_lean_profile_runs_only_what_it_offered(project: Path, home: Path, fake_server: FakeServer) -> None:
    """A native call to a tool the lean profile left out gets an error result; the same call written
    as text is not recovered (it is not one of the offered tools) and stays the answer."""
    (project / "notes.txt").write_text("kept\n")
    text_call = '```json\n{"name": "memory_operations", "arguments": {"operation": "ltm_stats"}}\n```'
    fake_server.script(
        Reply(tool_calls=[{"name": "todo_operations", "arguments": {"operation": "read"}}]),
        Reply(text=text_call),
    )
    r = run(project, home, fake_server, "--context-window", "2048", "-p", "go")
    assert r.returncode == 0, r.stderr
    follow = fake_server.chat_requests[1]["messages"]
    result = next(m for m in follow if m["role"] == "tool")
    assert result["content"].startswith("Error: unknown tool 'todo_operations'")
    assert '"memory_operations"' in r.stdout  # the text was the answer, not a call
    archive = archive_messages(session_dirs(project)[0])
    assert not archive[-1].get("tool_calls") and archive[-1]["role"] == "assistant"


def test_a_stated_small_window_switches_to_lean_mid_turn(project: Path, home: Path) -> None:
    """clio is told 32,000 tokens; the server has 2,048 and says so in its rejection. The retry
    already goes out in the lean profile (the full one alone would take most of that window)."""
    server = FakeServer(chars_per_token=4.0, context_limit=2048).start()
    try:
        server.script(Reply(text="done"))
        question = "Explain this log:\n" + "".join(
            f"{i:03d} warning: slow disk on node {i % 7}\n" for i in range(120)
        )
        r = run(project, home, server, "--context-window", "32000", "-p", question)
        assert r.returncode == 0, r.stderr
        first, retry = server.chat_requests
        assert tool_names(first) == FULL and server.prompt_tokens(first) > 2048
        assert tool_names(retry) == LEAN and server.prompt_tokens(retry) <= 2048
        notice = " ".join(r.stderr.split())
        assert "context window is 2,048 tokens, not 32,000" in notice
        assert "the lean tool profile (files, shell, git) from now on" in notice
        assert r.stdout.strip() == "done"
    finally:
        server.stop()
