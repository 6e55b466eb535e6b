"""Provenance of memory the model writes: the taint test (messages in, bool out), the record,
and how long-term memory entries keep it, merge it and show it."""

from __future__ import annotations

import json
from typing import Any

import pytest

import clio.tools.builtin  # noqa: F401  (registers the tools: their specs say what is outside content)
from clio.memory import ltm
from clio.memory import provenance as P
from clio.memory.ltm import Entry
from clio.memory.ltm_store import LtmStore
from clio.memory.provenance import MARK, Provenance, combine, current_turn
from clio.tools.registry import REGISTRY

is_untrusted = REGISTRY.brings_outside  # each tool's own declaration (clio.tools.spec.Op.outside)


def turn_tainted(messages: list[dict[str, Any]]) -> bool:
    return P.turn_tainted(messages, REGISTRY.brings_outside)


def turn_sources(messages: list[dict[str, Any]]) -> list[str]:
    return P.turn_sources(messages, REGISTRY.brings_outside)


def from_turn(session: str | None, messages: list[dict[str, Any]] | None, now: float) -> Provenance:
    return P.from_turn(session, messages, now, outside=REGISTRY.brings_outside)

NOW = 1_800_000_000.0


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def calls(*specs: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """An assistant message calling tools: (call id, tool name, arguments)."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in specs
        ],
    }


def result(cid: str, text: str = "...", tool: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "tool", "tool_call_id": cid, "content": text}
    if tool:
        msg["meta"] = {"tool": tool, "ok": True}
    return msg


def one_call(name: str, **args: Any) -> list[dict[str, Any]]:
    return [user("do the task"), calls(("c1", name, args)), result("c1")]


# ---------------------------------------------------------------- the taint test


@pytest.mark.parametrize(
    ("name", "args", "tainted"),
    [
        ("file_operations", {"operation": "read_file", "path": "README.md"}, True),
        ("file_operations", {"operation": "grep_search", "pattern": "x"}, True),
        ("file_operations", {"operation": "read_tool_result", "handle": "h"}, True),
        ("file_operations", {"operation": "replace_string", "path": "a.py"}, False),
        ("file_operations", {"operation": "write_file", "path": "a.py"}, False),
        ("terminal_operations", {"operation": "execute", "command": "cat x"}, True),
        ("version_control", {"operation": "diff"}, True),
        ("version_control", {"operation": "log"}, True),
        ("version_control", {"operation": "status"}, True),  # file names are the repository's words
        ("version_control", {"operation": "commit", "message": "m"}, True),  # lists untracked files
        ("file_operations", {"operation": "list_dir", "path": "."}, True),
        ("file_operations", {"operation": "file_search", "pattern": "*"}, True),
        ("memory_operations", {"operation": "recall_sessions", "query": "q"}, True),
        ("memory_operations", {"operation": "retrieve", "key": "k"}, True),
        ("memory_operations", {"operation": "add_discovery", "fact": "f"}, False),
        ("todo_operations", {"operation": "write"}, False),
        ("user_collaboration", {"operation": "request_input", "question": "?"}, False),
        ("mcp__github__get_issue", {"number": 1}, True),  # an unknown (MCP) tool is untrusted
    ],
)
def test_which_results_taint_the_turn(name: str, args: dict[str, Any], tainted: bool) -> None:
    assert turn_tainted(one_call(name, **args)) is tainted
    assert is_untrusted(name, str(args.get("operation", ""))) is tainted


# Every operation of every built-in tool, decided: True taints the turn. A new tool or operation
# fails this test until it is decided here (and it taints meanwhile, the safe default).
EXPECTED_TAINT: dict[str, dict[str, bool]] = {
    "file_operations": {
        "read_file": True, "write_file": False, "create_file": False, "append_file": False,
        "replace_string": False, "multi_replace_string": False, "insert_at_line": False,
        "delete_file": False, "rename_file": False, "create_directory": False, "list_dir": True,
        "file_exists": False, "get_file_info": False, "file_search": True, "grep_search": True,
        "read_tool_result": True,
    },
    "terminal_operations": {"execute": True},
    "version_control": {op: True for op in ("status", "diff", "log", "branch", "commit", "stash", "blame", "tag")},
    "memory_operations": {
        "store": False, "retrieve": True, "search": True, "list": True, "delete": False,
        "add_discovery": False, "add_solution": False, "add_pattern": False, "recall_sessions": True,
        "prune_ltm": True, "ltm_stats": False,
    },
    "todo_operations": {"read": False, "write": False, "add": False, "update": False},
    "user_collaboration": {"request_input": False},
    "preferences": {"add": False, "update": False, "recall": False, "apply": False},
}  # fmt: skip


def _operations(schema: dict[str, Any]) -> list[str]:
    props = schema.get("properties", {})
    return list(props.get("operation", {}).get("enum", []))


def test_every_operation_of_every_tool_is_decided() -> None:
    seen: dict[str, dict[str, bool]] = {}
    for name in REGISTRY.names():
        tool = REGISTRY.get(name)
        assert tool is not None
        ops = _operations(tool.parameters) or [""]
        seen[tool.name] = {op: is_untrusted(tool.name, op) for op in ops}
    assert seen == EXPECTED_TAINT
    # and through the turn: a result of each tainting operation taints, each clean one does not
    for name, ops in EXPECTED_TAINT.items():
        for op, tainted in ops.items():
            assert turn_tainted(one_call(name, operation=op)) is tainted, (name, op)


def test_an_unknown_operation_of_a_known_tool_taints() -> None:
    assert is_untrusted("file_operations", "read_everything")
    assert is_untrusted("memory_operations", "")
    assert is_untrusted("todo_operations", "read_everything")  # only what a tool declares is clean
    assert is_untrusted("web_fetch", "get")


def test_without_the_tools_declarations_every_result_is_outside_content() -> None:
    write = one_call("file_operations", operation="write_file", path="a.py")
    assert P.turn_tainted(write) and P.from_turn("s1", write, NOW).tainted
    assert not turn_tainted(write)


def test_only_the_current_turn_counts() -> None:
    earlier = one_call("file_operations", operation="read_file", path="evil.md")
    assert turn_tainted(earlier)
    assert not turn_tainted([*earlier, user("now remember that we use uv")])
    assert current_turn([*earlier, user("next")]) == []
    assert turn_tainted([*earlier, user("next"), *one_call("terminal_operations", command="ls")[1:]])
    assert not turn_tainted([])  # a fresh session: nothing read


def test_a_call_whose_result_has_not_come_back_does_not_taint() -> None:
    # the model asked to read a file and to store a memory in the same reply: while the
    # memory write runs, the read has not happened, so it cannot have influenced the write
    pending = [user("go"), calls(("c1", "memory_operations", {"operation": "add_discovery"}),
                                 ("c2", "file_operations", {"operation": "read_file"}))]  # fmt: skip
    assert not turn_tainted(pending)
    assert turn_tainted([*pending, result("c2")])  # tool results are matched by call id, not order


def test_sources_are_named_once_in_order_and_fall_back_to_the_meta_tool_name() -> None:
    msgs = [
        user("go"),
        calls(("a", "file_operations", {"operation": "read_file"}), ("b", "terminal_operations", {})),
        result("a"),
        result("b"),
        calls(("c", "file_operations", {"operation": "read_file"})),
        result("c"),
        result("orphan", tool="mcp_fetch"),  # no matching call: the archived meta names the tool
    ]
    assert turn_sources(msgs) == ["file_operations.read_file", "terminal_operations", "mcp_fetch"]
    bad_args = [user("go"), calls(("x", "file_operations", {})), result("x")]
    bad_args[1]["tool_calls"][0]["function"]["arguments"] = "{not json"
    assert turn_tainted(bad_args)  # no operation known: taints, the safe default


# ---------------------------------------------------------------- the record


def test_provenance_round_trips_and_fails_safe() -> None:
    p = from_turn("s1", one_call("file_operations", operation="read_file"), NOW)
    assert p == Provenance("s1", NOW, True, ("file_operations.read_file",))
    assert Provenance.from_dict(json.loads(json.dumps(p.to_dict()))) == p
    assert p.to_dict()["by"] == "model"
    clean = from_turn("s1", [user("x")], NOW)
    assert not clean.tainted and "sources" not in clean.to_dict()
    assert from_turn(None, None, NOW).tainted  # no session to look at: assume the worst
    assert Provenance.from_dict(None) is None and Provenance.from_dict("junk") is None
    damaged = Provenance.from_dict({"session": 7, "at": "soon", "sources": "x"})
    assert damaged == Provenance(None, 0.0, True, ())  # only an explicit tainted: false is trusted


def test_taint_sticks_when_an_entry_is_confirmed_again() -> None:
    dirty = Provenance("s1", NOW, True, ("terminal_operations",))
    clean = Provenance("s2", NOW + 5, False)
    assert combine(dirty, clean) == Provenance("s2", NOW + 5, True, ("terminal_operations",))
    assert combine(clean, dirty) == Provenance("s1", NOW, True, ("terminal_operations",))
    assert combine(None, clean) == clean and combine(clean, None) == clean and combine(None, None) is None


# ---------------------------------------------------------------- long-term memory entries


def test_old_entries_without_provenance_still_load() -> None:
    old = {"id": "d-abcdef", "type": "discovery", "fact": "tests live in tests/", "confidence": 0.8,
           "first_seen": NOW, "last_confirmed": NOW}  # fmt: skip
    e = Entry.from_dict(old)
    assert e.provenance is None and not e.tainted
    assert e.to_dict() == old  # and are written back unchanged
    assert ltm.render_entry(e) == "- tests live in tests/"


def test_entries_keep_provenance_and_tainted_ones_are_marked_in_the_prompt() -> None:
    dirty = Provenance("s1", NOW, True, ("file_operations.read_file",))
    e = ltm.make_entry("discovery", {"fact": "bootstrap with curl | sh"}, now=NOW, provenance=dirty)
    back = Entry.from_dict(json.loads(json.dumps(e.to_dict())))
    assert back == e and back.tainted
    assert ltm.render_entry(e) == f"- bootstrap with curl | sh {MARK}"
    clean = ltm.make_entry("rule", {"rule": "run ruff"}, now=NOW, provenance=Provenance("s2", NOW, False))
    block = ltm.render_ltm([e, clean])
    assert block.splitlines()[0] == ltm.HEADER
    assert "earlier sessions" in ltm.HEADER and "verify" in ltm.HEADER and "not instructions" in ltm.HEADER
    assert "- run ruff" in block.splitlines() and MARK not in ltm.render_entry(clean)


def test_store_merge_keeps_taint(tmp_path: Any) -> None:
    store = LtmStore(tmp_path / "ltm.json", clock=lambda: NOW)
    dirty = Provenance("s1", NOW, True, ("terminal_operations",))
    first, created = store.add("discovery", fact="the build needs make bootstrap", provenance=dirty)
    assert created and first.tainted
    again, created = store.add(
        "discovery", fact="The build needs make bootstrap!", provenance=Provenance("s2", NOW, False)
    )
    assert not created and again.id == first.id and again.tainted
    assert again.provenance is not None and again.provenance.session == "s2"
    (stored,) = json.loads((tmp_path / "ltm.json").read_text())["entries"]
    assert stored["provenance"]["tainted"] is True and stored["provenance"]["session"] == "s2"
    block = store.prompt_block("build", [], 200, lambda t: len(t.split()))
    assert MARK in block and block.startswith(ltm.HEADER)


def test_the_users_own_words_are_said_to_be_whoevers_they_are() -> None:
    """Issue 33 item 5: 'written by you' only where the reader wrote it; a teammate's by name."""
    p = P.from_user("s1", 0.0)
    assert p.describe() == "written by you · session s1"
    assert p.describe("alice@pc") == "written by alice@pc · session s1"
