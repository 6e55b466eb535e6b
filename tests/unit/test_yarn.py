"""Thread summaries: extraction of every field, merging across trims, bounded rendering."""

from __future__ import annotations

import json
from itertools import count
from typing import Any

from clio.memory.tokens import TokenEstimator
from clio.memory.yarn import (
    DEFAULT_MAX_CHARS,
    UNRESOLVED,
    ThreadSummary,
    from_dict,
    render,
    summarize,
    summary_message,
    to_dict,
)

_ids = count()


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def tool(name: str, result: str, **args: Any) -> list[dict[str, Any]]:
    """One unit: an assistant call of ``name`` with ``args`` and its result."""
    cid = f"call_{next(_ids)}"
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            ],
        },
        {"role": "tool", "tool_call_id": cid, "content": result},
    ]


def fo(op: str, path: str, result: str = "ok", **more: Any) -> list[dict[str, Any]]:
    return tool("file_operations", result, operation=op, path=path, **more)


def sh(command: str, result: str) -> list[dict[str, Any]]:
    return tool("terminal_operations", result, operation="execute", command=command)


def first_cycle() -> list[dict[str, Any]]:
    return [
        user("Add a --verbose flag to the CLI in app.py"),
        *fo("read_file", "app.py", "def main(): ..."),
        *fo("read_file", "cli/args.py", "import argparse"),
        *fo("replace_string", "app.py", "Replaced 1 occurrence", old_string="a", new_string="b"),
        *fo("write_file", "docs/cli.md", "Wrote 120 bytes"),
        *fo("replace_string", "util.py", "Error: old_string not found in util.py"),
        *fo("rename_file", "old.py", "Renamed", new_path="new.py"),
        *fo("delete_file", "tmp.txt", "Deleted"),
        *fo("create_file", "ghost.py", "Error: permission denied"),
        *sh("pytest -q tests/test_cli.py", "F.\nFAILED tests/test_cli.py::test_verbose\nexit code: 1"),
        *sh("pytest -q tests/test_cli.py", "..\n2 passed\nexit code: 0"),
        *tool("version_control", "[main 1a2b3c4] Add --verbose flag\n 2 files changed", operation="commit"),
        say("Done. Should I also document the flag in the README?"),
        user("yes, briefly"),
        *tool(
            "user_collaboration",
            "3.11",
            operation="request_input",
            question="Which Python version do you target?",
        ),
        *tool("version_control", "On branch main", operation="status"),
    ]


def test_every_field_is_extracted() -> None:
    dropped = first_cycle()
    s = summarize(dropped, None, "now add --quiet too")
    assert s.original_task == "Add a --verbose flag to the CLI in app.py"
    assert s.current_task == "now add --quiet too"
    assert s.recent_requests == ["Add a --verbose flag to the CLI in app.py", "yes, briefly"]
    assert s.files_read == ["app.py", "cli/args.py"]
    assert s.files_modified == [
        "app.py",
        "docs/cli.md",
        "old.py -> new.py",
        "tmp.txt (deleted)",
    ]  # failed ones out
    assert s.commits == [["1a2b3c4", "Add --verbose flag"]]
    assert s.decisions == [
        ["Done. Should I also document the flag in the README?", "yes, briefly"],
        ["Which Python version do you target?", "3.11"],
    ]
    errors = dict((e, r) for e, r in s.errors)
    assert len(errors) == 3
    util = next(e for e in errors if "util.py" in e)
    assert "old_string not found" in util and errors[util] == UNRESOLVED
    pytest_err = next(e for e in errors if "terminal_operations" in e)
    assert "exit code 1" in pytest_err and "FAILED tests/test_cli.py::test_verbose" in pytest_err
    assert "pytest -q tests/test_cli.py" in errors[pytest_err] and errors[pytest_err] != UNRESOLVED
    assert s.tool_counts == {
        "file_operations": 8,
        "terminal_operations": 2,
        "version_control": 2,
        "user_collaboration": 1,
    }
    assert s.messages_compressed == len(dropped) and s.trims == 1


def test_current_task_falls_back_to_the_last_dropped_request() -> None:
    s = summarize([user("first"), say("ok"), user("second")], None, None)
    assert s.current_task == "second"
    s2 = summarize([say("just talk")], s, None)
    assert s2.current_task == "second"


def test_commit_output_variants() -> None:
    s = summarize(
        [
            *tool("version_control", "[abc1234] plain form", operation="commit"),
            *tool("version_control", "[master (root-commit) 0f9e8d7c] first commit", operation="commit"),
            *tool("version_control", "nothing to commit, working tree clean", operation="commit"),
        ],
        None,
        None,
    )
    assert s.commits == [["abc1234", "plain form"], ["0f9e8d7c", "first commit"]]


def test_merging_across_three_trim_cycles() -> None:
    s1 = summarize(first_cycle(), None, "now add --quiet too")
    snapshot = to_dict(s1)
    cycle2 = [
        user("now add --quiet too"),
        *[m for i in range(45) for m in fo("read_file", f"src/mod{i}.py")],  # far more than the list keeps
        *fo("replace_string", "util.py", "Replaced 1 occurrence"),  # resolves cycle 1's error
        say("Which flag should win when both are given?"),  # answered in the next cycle
    ]
    s2 = summarize(cycle2, s1, "make quiet win")
    assert to_dict(s1) == snapshot  # previous summary not modified
    cycle3 = [
        user("make quiet win"),
        *sh("pytest", "exit code: 2\nerror: collection failed"),
        *tool("version_control", "[main 9f8e7d6] Add --quiet", operation="commit"),
        *[m for i in range(6) for m in [user(f"request {i}"), say("ok")]],
    ]
    s3 = summarize(cycle3, s2, "request 5")

    assert s3.original_task == "Add a --verbose flag to the CLI in app.py"
    assert s3.files_read[0] == "app.py"  # the first file read survives
    assert "src/mod44.py" in s3.files_read and "src/mod0.py" not in s3.files_read
    assert len(s3.files_read) <= 30
    assert s3.commits == [["1a2b3c4", "Add --verbose flag"], ["9f8e7d6", "Add --quiet"]]
    assert ["Which flag should win when both are given?", "make quiet win"] in s3.decisions
    util = next(r for e, r in s3.errors if "util.py" in e)
    assert util.startswith("resolved")
    assert any("exit code 2" in e and r == UNRESOLVED for e, r in s3.errors)
    assert s3.recent_requests == [f"request {i}" for i in range(1, 6)]
    assert s3.current_task == "request 5"
    assert s3.trims == 3
    assert s3.messages_compressed == len(first_cycle()) + len(cycle2) + len(cycle3)
    assert s3.tool_counts["file_operations"] == 8 + 46
    assert s3.tool_counts["version_control"] == 3


def test_render_is_tagged_complete_and_bounded() -> None:
    s = summarize(first_cycle(), None, "now add --quiet too")
    text = render(s)
    assert text.startswith("<thread_summary>") and text.endswith("</thread_summary>")
    for needle in ("Add a --verbose flag", "now add --quiet too", "app.py", "docs/cli.md", "1a2b3c4", "3.11"):
        assert needle in text
    msg = summary_message(s)
    assert msg["role"] == "system" and msg["meta"]["kind"] == "thread_summary" and msg["content"] == text


def test_render_stays_bounded_whatever_the_session_length() -> None:
    s: ThreadSummary | None = None
    for cycle in range(60):
        batch = [user(f"task {cycle}: " + "please do a long thing " * 40)]
        for i in range(20):
            batch += fo("read_file", f"very/long/directory/name/number/{cycle}/file_{i}_" + "x" * 80 + ".py")
            batch += fo("write_file", f"out/{cycle}/{i}.py")
            batch += sh(f"make target{i}", "Error: " + "boom " * 100)
            batch += tool(
                "version_control", f"[main {cycle:03d}{i:04d}] commit " + "y" * 300, operation="commit"
            )
            batch += [say("Shall I go on with " + "z" * 500 + "?"), user("yes " * 200)]
        s = summarize(batch, s, f"task {cycle}")
    assert s is not None
    text = render(s)
    est = TokenEstimator("any", chars_per_token=3.5)
    assert len(text) <= DEFAULT_MAX_CHARS
    assert est.count_text(text) <= 1500
    small = render(s, 1500)
    assert len(small) <= 1500 and small.endswith("</thread_summary>")
    assert "task 0" in small  # the original task is the last thing to go
    assert "file_0_" in render(s, 3000)  # so is the first file read


def test_dict_round_trip_and_damaged_input() -> None:
    s = summarize(first_cycle(), None, "x")
    assert from_dict(json.loads(json.dumps(to_dict(s)))) == s
    assert from_dict(None) == ThreadSummary()
    damaged = from_dict(
        {"original_task": 5, "files_read": ["a", 3], "commits": [["h"], ["h", "m"]], "trims": -2}
    )
    assert damaged.original_task == "" and damaged.files_read == ["a"]
    assert damaged.commits == [["h", "m"]] and damaged.trims == 0
