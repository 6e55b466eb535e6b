"""Tool calls recovered from text (clio.llm.recover)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from clio.llm.recover import recover_tool_calls

TOOLS = {"file_operations", "terminal_operations", "version_control"}


def recover(text: str, tools: set[str] = TOOLS) -> tuple[str, list[dict[str, Any]]]:
    counter = itertools.count(1)
    return recover_tool_calls(text, tools, make_id=lambda: f"call_{next(counter)}")


def simple(calls: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls]


READ = {"operation": "read_file", "path": "README.md"}


# --- shapes that are calls -------------------------------------------------------------------

# Exactly what llama-server + Qwen2.5-Coder-0.5B returned here (docs/real-model.md).
LLAMA_FENCED = (
    '```json\n{\n  "name": "file_operations",\n  "arguments": {\n    "operation": "read_file",\n'
    '    "path": "README.md"\n  }\n}\n```\n\n\n\n\n\n'
)
LLAMA_REQUIRED_RUN = (
    '{"name": "file_operations", "arguments": {"operation": "read_file", "path": "README.md"}}.'
    '{"name": "terminal_operations", "arguments": {"command": "cat README.md"}}.'
    '{"name": "file_operations", "arguments": {"operation": "read_file", "path": "README.md"}}.'
    '{"name": "terminal_operations", "arguments": {"'
)

POSITIVE: list[tuple[str, str, list[tuple[str, dict[str, Any]]], str]] = [
    ("llama fenced json", LLAMA_FENCED, [("file_operations", READ)], ""),
    (
        "fence without language",
        '```\n{"name": "terminal_operations", "arguments": {"command": "ls"}}\n```',
        [("terminal_operations", {"command": "ls"})],
        "",
    ),
    (
        "fence tool_call language",
        '```tool_call\n{"name": "terminal_operations", "arguments": {"command": "ls"}}\n```',
        [("terminal_operations", {"command": "ls"})],
        "",
    ),
    (
        "fence with prose around",
        'I will read the file first.\n\n```json\n{"name": "file_operations", "arguments": '
        '{"operation": "read_file", "path": "README.md"}}\n```\n\nThen I will summarise it.',
        [("file_operations", READ)],
        "I will read the file first.\n\nThen I will summarise it.",
    ),
    (
        "arguments as a JSON string",
        '```json\n{"name": "file_operations", "arguments": '
        '"{\\"operation\\": \\"read_file\\", \\"path\\": \\"README.md\\"}"}\n```',
        [("file_operations", READ)],
        "",
    ),
    (
        "parameters key (Llama style)",
        '{"name": "terminal_operations", "parameters": {"command": "pwd"}}',
        [("terminal_operations", {"command": "pwd"})],
        "",
    ),
    (
        "list of calls in one fence",
        '```json\n[{"name": "terminal_operations", "arguments": {"command": "ls"}},\n'
        ' {"name": "version_control", "arguments": {"operation": "status"}}]\n```',
        [("terminal_operations", {"command": "ls"}), ("version_control", {"operation": "status"})],
        "",
    ),
    (
        "qwen tool_call tags",
        '<tool_call>\n{"name": "file_operations", "arguments": {"operation": "read_file", '
        '"path": "README.md"}}\n</tool_call>',
        [("file_operations", READ)],
        "",
    ),
    (
        "two tool_call tags with prose",
        'Let me look.\n<tool_call>{"name": "terminal_operations", "arguments": {"command": "ls"}}'
        '</tool_call>\n<tool_call>{"name": "version_control", "arguments": {"operation": "log"}}'
        "</tool_call>",
        [("terminal_operations", {"command": "ls"}), ("version_control", {"operation": "log"})],
        "Let me look.",
    ),
    (
        "unclosed tool_call tag at the end",
        '<tool_call>\n{"name": "terminal_operations", "arguments": {"command": "ls"}}',
        [("terminal_operations", {"command": "ls"})],
        "",
    ),
    (
        "tool_call tags inside a fence",
        '```\n<tool_call>\n{"name": "terminal_operations", "arguments": {"command": "ls"}}\n'
        "</tool_call>\n```",
        [("terminal_operations", {"command": "ls"})],
        "",
    ),
    (
        "function tag (Llama 3.1)",
        '<function=terminal_operations>{"command": "git status"}</function>',
        [("terminal_operations", {"command": "git status"})],
        "",
    ),
    (
        "bare object as whole content",
        '  {"name": "version_control", "arguments": {"operation": "diff"}}  ',
        [("version_control", {"operation": "diff"})],
        "",
    ),
    (
        "bare multi-line object on its own lines after prose",
        'Reading it now:\n{\n  "name": "file_operations",\n  "arguments": {"operation": "read_file", '
        '"path": "README.md"}\n}\nDone.',
        [("file_operations", READ)],
        "Reading it now:\n\nDone.",
    ),
    (
        "nested braces and fences inside string arguments",
        '```json\n{"name": "file_operations", "arguments": {"operation": "write_file", "path": "a.py", '
        '"content": "def f():\\n    return {\\"a\\": [1, {\\"b\\": \\"}\\"}]}\\n```\\n"}}\n```',
        [
            (
                "file_operations",
                {
                    "operation": "write_file",
                    "path": "a.py",
                    "content": 'def f():\n    return {"a": [1, {"b": "}"}]}\n```\n',
                },
            )
        ],
        "",
    ),
    (
        "unicode arguments",
        '```json\n{"name": "terminal_operations", "arguments": {"command": "echo héllo 日本 🙂"}}\n```',
        [("terminal_operations", {"command": "echo héllo 日本 🙂"})],
        "",
    ),
    (
        "OpenAI-shaped object",
        '```json\n{"type": "function", "function": {"name": "terminal_operations", '
        '"arguments": "{\\"command\\": \\"ls\\"}"}}\n```',
        [("terminal_operations", {"command": "ls"})],
        "",
    ),
    (
        "trailing commas tolerated",
        '```json\n{"name": "terminal_operations", "arguments": {"command": "ls -la",},}\n```',
        [("terminal_operations", {"command": "ls -la"})],
        "",
    ),
    (
        "empty arguments string",
        '{"name": "version_control", "arguments": ""}',
        [("version_control", {})],
        "",
    ),
    (
        "llama-server run of calls under tool_choice=required (deduplicated)",
        LLAMA_REQUIRED_RUN,
        [("file_operations", READ), ("terminal_operations", {"command": "cat README.md"})],
        '{"name": "terminal_operations", "arguments": {"',
    ),
    (
        "two separate fences keep their order",
        '```json\n{"name": "version_control", "arguments": {"operation": "status"}}\n```\nand\n'
        '```json\n{"name": "terminal_operations", "arguments": {"command": "ls"}}\n```',
        [("version_control", {"operation": "status"}), ("terminal_operations", {"command": "ls"})],
        "and",
    ),
    (
        "tilde fence",
        '~~~json\n{"name": "terminal_operations", "arguments": {"command": "ls"}}\n~~~',
        [("terminal_operations", {"command": "ls"})],
        "",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected", "rest"), [p[1:] for p in POSITIVE], ids=[p[0] for p in POSITIVE]
)
def test_recovers_calls(text: str, expected: list[tuple[str, dict[str, Any]]], rest: str) -> None:
    remaining, calls = recover(text)
    assert simple(calls) == expected
    assert remaining == rest


# --- shapes that are not calls ---------------------------------------------------------------

NEGATIVE: list[tuple[str, str]] = [
    ("plain prose", "The file README.md describes the project."),
    ("prose that only talks about JSON", 'Reply with JSON such as a "name" and "arguments" field.'),
    (
        "inline JSON example in a sentence",
        'A call looks like {"name": "terminal_operations", "arguments": {"command": "ls"}} in general.',
    ),
    (
        "python fence holding call-like JSON",
        '```python\ncall = {"name": "terminal_operations", "arguments": {"command": "ls"}}\n'
        '{"name": "terminal_operations", "arguments": {"command": "ls"}}\n```',
    ),
    (
        "bash fence",
        "```bash\nterminal_operations --command ls\n```",
    ),
    ("json data block", '```json\n{"name": "clio", "version": "0.1.0", "dependencies": ["rich"]}\n```'),
    (
        "unknown tool",
        '```json\n{"name": "delete_everything", "arguments": {"path": "/"}}\n```',
    ),
    ("unknown tool in tags", '<tool_call>{"name": "web_search", "arguments": {"q": "x"}}</tool_call>'),
    ("unknown function tag", '<function=web_search>{"q": "x"}</function>'),
    (
        "malformed JSON",
        '```json\n{"name": "terminal_operations", "arguments": {"command": "ls"}\n```',
    ),
    (
        "single quotes are not JSON",
        "```json\n{'name': 'terminal_operations', 'arguments': {'command': 'ls'}}\n```",
    ),
    ("mentions name only", '```json\n{"name": "terminal_operations"}\n```'),
    (
        "extra keys mean data",
        '```json\n{"name": "terminal_operations", "arguments": {"command": "ls"}, "result": "ok"}\n```',
    ),
    (
        "echoed tool definition",
        '```json\n{"name": "terminal_operations", "parameters": {"type": "object", '
        '"properties": {"command": {"type": "string"}}}}\n```',
    ),
    (
        "arguments not an object",
        '```json\n{"name": "terminal_operations", "arguments": ["ls"]}\n```',
    ),
    (
        "arguments string that is not JSON",
        '{"name": "terminal_operations", "arguments": "ls -la"}',
    ),
    (
        "list mixing a call and data",
        '```json\n[{"name": "terminal_operations", "arguments": {"command": "ls"}}, {"x": 1}]\n```',
    ),
    (
        "JSON followed by prose on the same line",
        '{"name": "terminal_operations", "arguments": {"command": "ls"}} is what I would run.',
    ),
    ("empty fence", "```json\n```"),
]


@pytest.mark.parametrize("text", [n[1] for n in NEGATIVE], ids=[n[0] for n in NEGATIVE])
def test_no_call(text: str) -> None:
    remaining, calls = recover(text)
    assert calls == []
    assert remaining == text.strip()


def test_only_offered_tools_count() -> None:
    text = '```json\n{"name": "terminal_operations", "arguments": {"command": "ls"}}\n```'
    assert recover(text, {"file_operations"})[1] == []
    assert recover(text, set())[1] == []
    assert simple(recover(text, {"terminal_operations"})[1]) == [("terminal_operations", {"command": "ls"})]


def test_standard_openai_form() -> None:
    text = '```json\n{"name": "terminal_operations", "arguments": {"command": "echo é", "timeout": 5}}\n```'
    _, calls = recover_tool_calls(text, TOOLS)
    assert len(calls) == 1
    call = calls[0]
    assert set(call) == {"id", "type", "function"}
    assert call["type"] == "function"
    assert call["id"].startswith("call_") and len(call["id"]) > len("call_")
    assert call["function"] == {
        "name": "terminal_operations",
        "arguments": '{"command":"echo é","timeout":5}',
    }


def test_default_ids_are_unique() -> None:
    text = (
        '<tool_call>{"name": "terminal_operations", "arguments": {"command": "ls"}}</tool_call>\n'
        '<tool_call>{"name": "terminal_operations", "arguments": {"command": "pwd"}}</tool_call>'
    )
    _, first = recover_tool_calls(text, TOOLS)
    _, second = recover_tool_calls(text, TOOLS)
    ids = [c["id"] for c in first + second]
    assert len(set(ids)) == 4


def test_mixed_known_and_unknown_blocks() -> None:
    text = (
        '```json\n{"name": "web_search", "arguments": {"q": "x"}}\n```\n'
        '```json\n{"name": "terminal_operations", "arguments": {"command": "ls"}}\n```'
    )
    remaining, calls = recover(text)
    assert simple(calls) == [("terminal_operations", {"command": "ls"})]
    assert remaining == '```json\n{"name": "web_search", "arguments": {"q": "x"}}\n```'


def test_same_call_in_different_shapes_is_kept_once() -> None:
    call = '{"name": "terminal_operations", "arguments": {"command": "ls"}}'
    text = f"```json\n{call}\n```\n<tool_call>{call}</tool_call>"
    remaining, calls = recover(text)
    assert simple(calls) == [("terminal_operations", {"command": "ls"})]
    assert remaining == ""


def test_different_calls_to_same_tool_are_all_kept() -> None:
    text = (
        '{"name": "terminal_operations", "arguments": {"command": "ls"}}\n'
        '{"name": "terminal_operations", "arguments": {"command": "pwd"}}'
    )
    _, calls = recover(text)
    assert simple(calls) == [
        ("terminal_operations", {"command": "ls"}),
        ("terminal_operations", {"command": "pwd"}),
    ]


def test_backslashes_and_escaped_quotes_in_bare_call() -> None:
    args = {"command": 'echo "a}" C:\\dir\\ {x', "timeout": 3}
    text = "Running:\n" + json.dumps({"name": "terminal_operations", "arguments": args}) + "\nok"
    remaining, calls = recover(text)
    assert simple(calls) == [("terminal_operations", args)]
    assert remaining == "Running:\n\nok"


def test_call_after_many_unclosed_call_like_lines() -> None:
    noise = "\n".join('{"name": "x", ' + "y" * 40 for _ in range(500))
    text = noise + '\n{"name": "version_control", "arguments": {"operation": "status"}}'
    remaining, calls = recover(text)
    assert simple(calls) == [("version_control", {"operation": "status"})]
    assert remaining == noise


# Exactly what llama-server + Qwen2.5-Coder-0.5B returned under tool_choice="required" with clio's
# lean tools (2026-11-22): the call, then a made-up answer repeated until max_tokens.
LLAMA_REQUIRED_PROSE = (
    '{"name": "file_operations", "arguments": {"operation": "read_file", "path": "hello.txt", '
    '"content": ""}}. The mascot\'s name is "Mickey". The mascot\'s name is "Mickey". The masc'
)


def test_a_leading_call_with_prose_after_it_counts_only_when_a_call_was_required() -> None:
    remaining, calls = recover(LLAMA_REQUIRED_PROSE)
    assert calls == [] and remaining == LLAMA_REQUIRED_PROSE  # as any reply: prose on the line
    counter = itertools.count(1)
    remaining, calls = recover_tool_calls(
        LLAMA_REQUIRED_PROSE, TOOLS, make_id=lambda: f"call_{next(counter)}", call_required=True
    )
    assert simple(calls) == [
        ("file_operations", {"operation": "read_file", "path": "hello.txt", "content": ""})
    ]
    assert remaining.startswith("The mascot's name is") and '"arguments"' not in remaining
    # only a call that opens the reply: prose before it, an unoffered tool or a non-call stay text
    for text in (
        'Run {"name": "terminal_operations", "arguments": {"command": "ls"}}. Then read.',
        '{"name": "web_search", "arguments": {"q": "x"}}. The answer is 4.',
        '{"name": "terminal_operations", "arguments": "ls -la"}. Done.',
    ):
        assert recover_tool_calls(text, TOOLS, call_required=True) == (text, []), text
