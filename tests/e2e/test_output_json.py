"""Scriptable one-shot runs (issue 12 item 4) through the installed clio: ``--output json`` (one
object at the end) and ``--output stream-json`` (one event per line), validated against schemas
written here; every documented exit code with its stop reason; the answer streamed to a terminal."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pexpect
import pytest

from testkit.clio_run import CLIO, clio_env, run_clio
from testkit.fakeserver import Fail, FakeServer, Reply
from testkit.scripted import call

RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["answer", "session_id", "usage", "tool_calls", "files_changed", "stop_reason", "exit_code"],
    "properties": {
        "type": {"const": "result"},
        "answer": {"type": "string"},
        "session_id": {"type": ["string", "null"]},
        "usage": {
            "type": "object",
            "required": ["prompt_tokens", "completion_tokens", "cached_tokens", "total_tokens", "requests", "cost_usd"],
            "properties": {
                **{
                    k: {"type": "integer", "minimum": 0}
                    for k in ("prompt_tokens", "completion_tokens", "cached_tokens", "total_tokens", "requests")
                },
                "cost_usd": {"type": ["number", "null"], "minimum": 0},
            },
            "additionalProperties": False,
        },
        "tool_calls": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "arguments", "ok"],
                "properties": {
                    "name": {"type": "string"},
                    "arguments": {"type": "object"},
                    "ok": {"type": "boolean"},
                },
            },
        },
        "files_changed": {"type": "array", "items": {"type": "string"}},
        "stop_reason": {"enum": ["done", "max_iterations", "refused", "stuck", "interrupted", "error"]},
        "exit_code": {"type": "integer"},
        "error": {"type": "string"},
        "background": {
            "type": "object",
            "required": ["consolidation", "session_id"],
            "properties": {"consolidation": {"const": True}, "session_id": {"type": "string"}},
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}
EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["type"],
    "oneOf": [
        {
            "properties": {
                "type": {"const": "session"},
                "session_id": {"type": "string"},
                "model": {"type": "string"},
            },
            "required": ["session_id"],
        },
        {"properties": {"type": {"const": "text"}, "text": {"type": "string"}}, "required": ["text"]},
        {
            "properties": {
                "type": {"const": "assistant"},
                "text": {"type": "string"},
                "final": {"type": "boolean"},
                "interrupted": {"type": "boolean"},
            },
            "required": ["text", "final"],
        },
        {
            "properties": {
                "type": {"const": "tool_call"},
                "name": {"type": "string"},
                "arguments": {"type": "object"},
            },
            "required": ["name", "arguments"],
        },
        {
            "properties": {
                "type": {"const": "tool_result"},
                "name": {"type": "string"},
                "ok": {"type": "boolean"},
                "result": {"type": "string"},
            },
            "required": ["name", "ok", "result"],
        },
        {
            "properties": {"type": {"const": "diff"}, "path": {"type": "string"}, "diff": {"type": "string"}},
            "required": ["path", "diff"],
        },
        {"properties": {"type": {"const": "notice"}, "text": {"type": "string"}}, "required": ["text"]},
        {"allOf": [{"properties": {"type": {"const": "result"}}}, RESULT_SCHEMA]},
    ],
}
WRITE = call("file_operations", operation="write_file", path="out.txt", content="hello\n")


def test_output_json_is_one_object_with_the_whole_turn(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    fake_server.script(Reply(tool_calls=[WRITE]), Reply(text="Wrote out.txt."))
    r = run_clio(
        ["--yes", "--output", "json", "-p", "Write out.txt"], server=fake_server, project=project, home=home
    )
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)  # the whole stdout is one JSON object
    jsonschema.validate(obj, RESULT_SCHEMA)
    assert obj["answer"] == "Wrote out.txt." and obj["stop_reason"] == "done" and obj["exit_code"] == 0
    assert obj["tool_calls"] == [
        {
            "name": "file_operations",
            "arguments": {"operation": "write_file", "path": "out.txt", "content": "hello\n"},
            "ok": True,
        }
    ]
    assert obj["files_changed"] == ["out.txt"]
    assert obj["usage"]["requests"] == 2 and obj["usage"]["total_tokens"] > 0
    sessions = [p for p in (project / ".clio" / "sessions").iterdir() if not p.name.startswith(".")]
    assert [s.name for s in sessions] == [obj["session_id"]]


def test_output_stream_json_is_one_event_per_line_ending_with_the_result(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    (project / "cfg.txt").write_text(f"token={token}\n", encoding="utf-8")
    fake_server.script(
        Reply(tool_calls=[call("file_operations", operation="read_file", path="cfg.txt"), WRITE]),
        Reply(text="All done here."),
    )
    r = run_clio(
        ["--yes", "--output", "stream-json", "-p", "Read cfg, write out"],
        server=fake_server,
        project=project,
        home=home,
    )
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    for e in events:
        jsonschema.validate(e, EVENT_SCHEMA)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "session" and kinds[-1] == "result"
    assert kinds.count("tool_call") == 2 and kinds.count("tool_result") == 2 and "diff" in kinds
    assert "".join(e["text"] for e in events if e["type"] == "text") == "All done here."
    assert events[-1]["answer"] == "All done here." and events[-1]["files_changed"] == ["out.txt"]
    assert token not in r.stdout  # the file's secret was redacted in the events


@pytest.mark.parametrize(
    ("setup", "code", "reason"),
    [
        ("error", 6, "error"),  # the endpoint could not be used (issue 27: was 1, undocumented)
        ("max_iterations", 3, "max_iterations"),
        ("refused", 4, "refused"),
        ("stuck", 5, "stuck"),
    ],
)
def test_every_exit_code_has_its_stop_reason(
    fake_server: FakeServer, project: Path, home: Path, setup: str, code: int, reason: str
) -> None:
    (project / "a.txt").write_text("x\n", encoding="utf-8")
    args = ["--output", "json", "-p", "go"]
    if setup == "error":
        fake_server.script(
            *[Fail(400, {"error": {"message": "model not found", "type": "invalid_request_error"}})] * 3
        )
    elif setup == "max_iterations":
        (project / ".clio").mkdir()
        (project / ".clio" / "config.yaml").write_text("max_iterations: 2\n", encoding="utf-8")
        fake_server.responder = lambda body: Reply(
            tool_calls=[call("file_operations", operation="file_exists", path="a.txt")]
        )
    elif setup == "refused":
        fake_server.script(Reply(tool_calls=[WRITE]), Reply(text="Could not."))
    else:
        fake_server.responder = lambda body: Reply(
            tool_calls=[call("file_operations", operation="read_file", path="a.txt")]
        )
    r = run_clio(args, server=fake_server, project=project, home=home)
    assert r.returncode == code, r.stderr
    obj = json.loads(r.stdout)
    jsonschema.validate(obj, RESULT_SCHEMA)
    assert obj["stop_reason"] == reason and obj["exit_code"] == code
    if setup == "error":
        assert "model not found" in obj["error"]
    elif setup == "refused":  # what was refused (issue 27: no error on exit 4)
        assert obj["error"].startswith("refused for lack of approval: write: create ")
    elif setup == "max_iterations":
        assert obj["error"] == "the turn stopped at max_iterations (2)"
    else:
        assert obj["error"].startswith("Stopped: the model repeated the same call")


def test_the_answer_streams_to_a_terminal_before_the_reply_ends(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    fake_server.script(Reply(text="first half of the answer ... second half", chunk_chars=5, delay=0.25))
    child = pexpect.spawn(
        str(CLIO),
        ["-p", "stream please"],
        cwd=str(project),
        env={**clio_env(fake_server, home), "TERM": "xterm"},
        encoding="utf-8",
        timeout=30,
    )
    child.expect("first half")
    # printed as it arrived: the end was not even sent yet (all at once, it would be in the buffer)
    assert "second half" not in child.buffer
    child.expect("second half")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_output_json_needs_a_one_shot_run(fake_server: FakeServer, project: Path, home: Path) -> None:
    r = run_clio(["--output", "json"], server=fake_server, project=project, home=home)
    assert r.returncode == 2 and "--output json is for one-shot runs" in r.stderr
    assert os.listdir(project) == [] or not (project / ".clio" / "sessions").exists()
