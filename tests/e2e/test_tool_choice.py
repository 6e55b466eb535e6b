"""``tool_choice`` end to end: ``required`` makes a turn's first request demand a tool call (small
local models otherwise often answer in words where they should act); the later requests of the
turn are ``auto`` so the model can answer. Unset, clio sends no tool_choice at all."""

from __future__ import annotations

from pathlib import Path
from subprocess import CompletedProcess

from testkit.clio_run import run_clio
from testkit.fakeserver import FakeServer, Reply

READ = {"name": "file_operations", "arguments": {"operation": "read_file", "path": "a.txt"}}


def ask(server: FakeServer, project: Path, home: Path, text: str, *flags: str) -> CompletedProcess[str]:
    return run_clio(["--model", "fake-model", *flags, "-p", text], server=server, project=project, home=home)


def turn(server: FakeServer) -> None:
    server.script(Reply(tool_calls=[READ]), Reply(tool_calls=[READ]), Reply(text="It says alpha."))


def test_required_applies_to_the_first_request_of_each_turn(
    project: Path, home: Path, fake_server: FakeServer
) -> None:
    (project / "a.txt").write_text("alpha\n")
    (project / ".clio").mkdir()
    (project / ".clio" / "config.yaml").write_text("tool_choice: required\n")
    for k in range(2):
        turn(fake_server)
        r = ask(fake_server, project, home, "What does a.txt say?", *(["--resume"] if k else []))
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "It says alpha."
    choices = [body.get("tool_choice") for body in fake_server.turn_requests]  # the run's turn (a read-back it left aside)
    assert choices == ["required", "auto", "auto"] * 2


def test_unset_sends_none_and_a_bad_value_is_named(
    project: Path, home: Path, fake_server: FakeServer
) -> None:
    (project / "a.txt").write_text("alpha\n")
    turn(fake_server)
    r = ask(fake_server, project, home, "What does a.txt say?")
    assert r.returncode == 0, r.stderr
    assert all("tool_choice" not in body for body in fake_server.chat_requests)
    (project / ".clio" / "config.yaml").write_text("tool_choice: always\n")  # .clio/ exists: the session
    fake_server.script(Reply(text="ok"))
    ignored = ask(fake_server, project, home, "hi")  # a project's bad value: one line, never fatal (issue 25)
    assert ignored.returncode == 0, ignored.stderr
    assert "tool_choice: 'always' ignored (expected auto or required); using None" in ignored.stderr
    assert "tool_choice" not in fake_server.chat_requests[-1]
    (project / ".clio" / "config.yaml").unlink()
    (home / "config.yaml").write_text("tool_choice: always\n")  # the user's own: theirs to fix
    bad = ask(fake_server, project, home, "hi")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "tool_choice must be auto or required (got 'always')" in bad.stderr
    assert len(fake_server.chat_requests) == 4


def test_a_leading_text_call_runs_when_the_request_required_one(
    project: Path, home: Path, fake_server: FakeServer
) -> None:
    """A model without native tool calls, told a call is required, writes the call and then prose on
    the same line; clio runs it. The same text on the turn's later (auto) request stays the answer."""
    (project / "a.txt").write_text("alpha\n")
    (project / ".clio").mkdir()
    (project / ".clio" / "config.yaml").write_text("tool_choice: required\n")
    text_call = (
        '{"name": "file_operations", "arguments": {"operation": "read_file", "path": "a.txt"}}. It says beta.'
    )
    fake_server.script(Reply(text=text_call), Reply(text=text_call))
    r = ask(fake_server, project, home, "What does a.txt say?")
    assert r.returncode == 0, r.stderr
    first, second = fake_server.chat_requests
    assert first["tool_choice"] == "required" and second["tool_choice"] == "auto"
    sent = second["messages"]
    call = next(m for m in sent if m["role"] == "assistant")
    assert (
        call["content"] == "It says beta." and call["tool_calls"][0]["function"]["name"] == "file_operations"
    )
    assert next(m for m in sent if m["role"] == "tool")["content"].endswith("alpha\n")
    assert r.stdout.strip() == text_call  # the auto request's reply is an answer, not a call
