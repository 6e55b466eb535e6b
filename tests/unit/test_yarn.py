"""Thread summaries: extraction of every field, merging across trims, bounded rendering."""

from __future__ import annotations

import json
from itertools import count
from typing import Any

import pytest

import clio.tools.builtin  # noqa: F401  (the tools declare what their operations do: clio.actions)
from clio.context import yarn
from clio.context.tokens import TokenEstimator
from clio.context.yarn import (
    DEFAULT_MAX_CHARS,
    MAX_ESTABLISHED,
    UNRESOLVED,
    ThreadSummary,
    from_dict,
    render,
    summary_message,
    to_dict,
)
from clio.tools.registry import REGISTRY

ACTIONS = REGISTRY.actions()


def summarize(dropped: list[dict[str, Any]], previous: ThreadSummary | None, latest: str | None) -> ThreadSummary:
    return yarn.summarize(dropped, previous, latest, ACTIONS)

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


# -- what the user established (issue 16) -----------------------------------------------
DECISION_PHRASINGS = [
    "We will use pgbouncer in transaction mode.",
    "Let's go with Postgres 16 for the database.",
    "We decided to deploy on Fly.io instead of Heroku.",
    "Decision: the cache lives in Redis.",
    "OK, we'll stick with argparse for the CLI.",
    "Use uv instead of pip from now on.",
    "The plan is to use Celery for background jobs.",
    "SQLite it is.",
]
CONSTRAINT_PHRASINGS = [
    "Never touch the migrations folder.",
    "Don't modify anything under vendor/.",
    "The API must stay backwards compatible.",
    "Keep the config format unchanged.",
    "Avoid adding new dependencies.",
    "Only edit files under src/.",
    "src/legacy.py is off-limits.",
    "Under no circumstances delete user data.",
]
CONVENTION_PHRASINGS = [
    "Always run the tests before committing.",
    "We use snake_case for module names.",
    "Prefer f-strings over format().",
    "Tests go in tests/unit.",
    "From now on, write docstrings in Google style.",
    "Our convention is one class per file.",
]
NOT_ESTABLISHED = [
    "Review src/mod02.py for missing-key handling.",
    "Use grep to find every caller of load_config.",
    "Never mind, show me the README instead.",
    "Don't worry about the warnings for now.",
    "Must we keep that function?",
    "Should we use pgbouncer in transaction mode?",
    "We need to fix the failing test.",
    "Let's run the tests.",
    "Let's look at the next module.",
    "Switch to the other branch.",
    "The bug must be in the loader.",
    "Stop here and tell me what you found.",
    "Always nice to see green tests.",
    "Keep going.",
]


def established(s: ThreadSummary) -> list[tuple[str, str]]:
    return [(kind, text) for kind, _, text in s.established]


@pytest.mark.parametrize(
    ("kind", "text"),
    [("decision", t) for t in DECISION_PHRASINGS]
    + [("constraint", t) for t in CONSTRAINT_PHRASINGS]
    + [("convention", t) for t in CONVENTION_PHRASINGS],
)
def test_what_the_user_states_is_established(kind: str, text: str) -> None:
    s = summarize([user(text), say("Understood.")], None, None)
    assert established(s) == [(kind, text)]
    assert f"- {kind}: {text}" in render(s)


@pytest.mark.parametrize("text", NOT_ESTABLISHED)
def test_requests_questions_and_remarks_are_not_established(text: str) -> None:
    s = summarize([user(text), say("ok")], None, None)
    assert s.established == []
    assert "Established by the user" not in render(s)


def test_several_statements_in_one_message_and_inside_a_task() -> None:
    s = summarize(
        [
            user(
                "Make the loader tolerate missing keys. Never touch src/legacy.py, and we will use pydantic for validation."
            )
        ],
        None,
        None,
    )
    assert established(s) == [
        ("constraint", "Never touch src/legacy.py"),
        ("decision", "we will use pydantic for validation."),
    ]


def test_established_items_merge_across_trims_in_order() -> None:
    s1 = summarize([user("We will use pgbouncer in transaction mode."), say("ok")], None, None)
    s2 = summarize([user("Never touch the migrations folder."), *fo("read_file", "a.py")], s1, None)
    s3 = summarize([user("Prefer f-strings over format()."), say("ok")], s2, None)
    assert established(s1) == [("decision", "We will use pgbouncer in transaction mode.")]  # not modified
    assert established(s3) == [
        ("decision", "We will use pgbouncer in transaction mode."),
        ("constraint", "Never touch the migrations folder."),
        ("convention", "Prefer f-strings over format()."),
    ]


def test_a_repeated_statement_is_kept_once_as_the_newest() -> None:
    s = summarize(
        [user("Never touch the migrations folder."), user("Avoid adding new dependencies.")], None, None
    )
    s = summarize([user("never touch the migrations folder!"), say("ok")], s, None)
    assert established(s) == [
        ("constraint", "Avoid adding new dependencies."),
        ("constraint", "never touch the migrations folder!"),
    ]


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        ("We will use pgbouncer in transaction mode.", "Switch pgbouncer to session mode."),
        ("Let's go with Postgres 16 for the database.", "Let's use SQLite for the database instead."),
        ("We'll use pip for dependencies.", "Use uv instead of pip."),
        ("We'll stick with argparse for the CLI.", "Let's switch the CLI to click."),
        ("Use black for formatting.", "Actually, let's use ruff for formatting."),
    ],
)
def test_a_newer_decision_on_the_same_subject_replaces_the_older(earlier: str, later: str) -> None:
    s = summarize([user(earlier), say("ok"), user("Use grep to find the callers.")], None, None)
    s = summarize([user("Avoid adding new dependencies."), *fo("read_file", "b.py")], s, None)
    s = summarize([user(later), say("ok")], s, None)
    texts = [t for _, t in established(s)]
    assert later in texts and earlier not in texts
    assert "Avoid adding new dependencies." in texts  # an unrelated item stays
    section = render(s).split("Established by the user", 1)[1].split("Recent requests", 1)[0]
    assert later in section and earlier not in section


def test_related_but_different_statements_are_both_kept() -> None:
    s = summarize(
        [
            user("Never touch the migrations folder."),
            user("Never touch the vendored folder."),
            user("Use black for formatting."),
            user("Use ruff for linting."),
            user("Always run the tests before committing."),
            user("Let's use pytest for the tests."),  # another kind: a decision does not replace a convention
        ],
        None,
        None,
    )
    assert len(s.established) == 6


def test_a_revocation_lifts_the_earlier_item() -> None:
    s = summarize(
        [user("Never touch the migrations folder."), user("We will use Redis for the cache.")], None, None
    )
    s = summarize([user("Forget the rule about the migrations folder."), say("ok")], s, None)
    texts = [t for _, t in established(s)]
    assert "Never touch the migrations folder." not in texts
    assert texts == ["We will use Redis for the cache.", "Forget the rule about the migrations folder."]


def test_an_agreed_proposal_is_a_decision() -> None:
    s = summarize(
        [
            user("How should we cache the results?"),
            say("I suggest we use Redis for the cache."),
            user("Sounds good."),
            say("Shall we use ruff for linting?"),
            user("yes"),
            say("Should we use mypy in strict mode?"),
            user("No, not yet."),
        ],
        None,
        None,
    )
    assert established(s) == [
        ("decision", "agreed: use Redis for the cache"),
        ("decision", "agreed: use ruff for linting"),
    ]
    # the agreed question is a decision now, the declined one stays an answered question
    assert s.decisions == [["Should we use mypy in strict mode?", "No, not yet."]]


def test_an_agreement_across_a_trim_is_recorded() -> None:
    s = summarize([user("go on"), say("Done. Shall we switch pgbouncer to session mode?")], None, None)
    assert s.decisions[-1][1] == ""
    s = summarize([user("ok"), say("Switched.")], s, None)
    assert established(s) == [("decision", "agreed: switch pgbouncer to session mode")]
    assert s.decisions == []


def test_established_items_are_capped_oldest_first() -> None:
    s = summarize([user(f"Never touch src/frozen_{i}.py.") for i in range(MAX_ESTABLISHED + 5)], None, None)
    assert len(s.established) == MAX_ESTABLISHED
    assert s.established[0][2] == "Never touch src/frozen_5.py."


def crowded_summary() -> ThreadSummary:
    """Long lists of everything, plus four established items planted first of all."""
    planted = [
        user("We will use pgbouncer in transaction mode."),
        user("The API must stay backwards compatible."),
        user("Never touch the migrations folder."),
        user("We use snake_case for module names."),
    ]
    s = summarize(planted, None, None)
    for cycle in range(20):
        batch = [user(f"task {cycle}: " + "please do a long thing " * 20)]
        for i in range(10):
            batch += fo("read_file", f"very/long/directory/{cycle}/file_{i}_" + "x" * 60 + ".py")
            batch += fo("write_file", f"out/{cycle}/{i}.py")
            batch += tool(
                "version_control", f"[main {cycle:03d}{i:04d}] commit " + "y" * 150, operation="commit"
            )
            batch += [say("Shall I go on with " + "z" * 300 + "?"), user("go on " * 50)]
        s = summarize(batch, s, f"task {cycle}")
    return s


@pytest.mark.parametrize("max_chars", [1200, 1500, 2000, 3000, DEFAULT_MAX_CHARS])
def test_established_items_are_among_the_last_things_cut(max_chars: int) -> None:
    s = crowded_summary()
    assert len(s.established) == 4
    full = render(s, 100_000)
    text = render(s, max_chars)
    assert len(text) <= max_chars and text.endswith("</thread_summary>")
    assert len(text) < len(full)  # the budget did cut
    for _, _, statement in s.established:
        assert statement in text, (max_chars, text)
    assert "Original task: We will use pgbouncer" in text  # the original task stays too


def test_under_a_tiny_budget_established_items_shrink_but_stay_named() -> None:
    s = summarize([user("We will use pgbouncer in transaction mode. " + "Really. " * 40)], None, None)
    s = summarize(
        [user(f"Never touch src/frozen_{i}.py and keep it as it is forever.") for i in range(12)], s, None
    )
    text = render(s, 600)
    assert len(text) <= 600
    assert "Established by the user" in text
    assert "frozen_11" in text  # the newest survives the deepest cut


def test_round_trip_with_established_and_old_saved_summaries() -> None:
    s = summarize(
        [user("We will use pgbouncer in transaction mode."), user("Never touch the migrations folder.")],
        None,
        None,
    )
    assert from_dict(json.loads(json.dumps(to_dict(s)))) == s
    old = to_dict(s)
    del old["established"]  # a summary saved before issue 16
    loaded = from_dict(old)
    assert loaded.established == [] and loaded.original_task == s.original_task
    later = summarize([user("Switch pgbouncer to session mode.")], loaded, None)
    assert established(later) == [("decision", "Switch pgbouncer to session mode.")]
    damaged = from_dict(
        {"established": [["decision", "k", "text"], ["bogus", "k", "t"], ["constraint", 3, "x"], "s"]}
    )
    assert damaged.established == [["decision", "k", "text"]]
