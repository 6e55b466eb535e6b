"""clio.safety.readonly (plan mode's read-only shell commands) and clio.tools.policy (--allow-tools,
--deny-tools, plan mode's refusals), and the registry enforcing them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import clio.tools.builtin  # noqa: F401  (registers the tools)
from clio.safety.readonly import readonly_reason
from clio.tools import policy
from clio.tools.context import ToolContext
from clio.tools.policy import PolicyError, ToolPolicy, parse_names
from clio.tools.registry import REGISTRY
from clio.tools.spec import ToolSpec


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "cat README.md | head -20",
        "grep -rn 'def main' src 2>/dev/null | wc -l",
        "find . -name '*.py' -newer setup.py",
        "git status && git diff HEAD~1 -- src",
        "git --no-pager log --oneline -5",
        "git branch -a",
        "git stash list",
        "cd src && ls",
        "rg -n TODO > /dev/null; echo $?",
        "sort < names.txt | uniq -c",
        "diff -u a.txt b.txt 2>&1",
    ],
)
def test_read_only_commands_pass(command: str) -> None:
    assert readonly_reason(command) is None


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("rm -rf build", "`rm` is not on plan mode's list"),
        ("echo hi > notes.txt", "redirects output into a file"),
        ("cat a >> b", "redirects output into a file"),
        ("ls\nrm x", "`rm` is not"),
        ("ls; (touch x)", "`touch` is not"),
        ("echo $(rm x)", "substitution"),
        ("echo `rm x`", "substitution"),
        ("find . -name '*.pyc' -delete", "`find -delete` writes files"),
        ("find . -exec rm {} +", "`find -exec`"),
        ("sort -o out.txt in.txt", "`sort -o`"),
        ("./ls", "`./ls` is not"),
        ("FOO=1 ls", "`FOO=1` is not"),
        ("git commit -m x", "`git commit` is not a read-only git subcommand"),
        ("git -c core.pager=evil log", "git options before the subcommand"),
        ("git diff --output=patch.diff", "`git --output`"),
        ("git branch -D main", "only as a listing"),
        ("sed -i s/a/b/ f", "`sed` is not"),
        ("python -c 'print(1)'", "`python` is not"),
        ("xargs rm < list", "`xargs` is not"),
        ("cat 'unbalanced", "unbalanced quotes"),
        ("sort -uo out.txt in.txt", "`sort -o`"),
        ("sort --compress-program=sh big", "`sort --compress-program`"),
        ("uniq in.txt out.txt", "second operand"),
        ("xxd -r dump.hex bin", "second operand"),
        ("file -C -m magic", "`file -C`"),
        ("git grep -nO foo", "`git -O`"),
        ("ag --pager sh x", "`ag` is not"),
    ],
)
def test_other_commands_are_refused_with_a_reason(command: str, why: str) -> None:
    reason = readonly_reason(command)
    assert reason is not None and why in reason


def test_names_aliases_globs_and_typos() -> None:
    known, aliases = REGISTRY.names(), REGISTRY.aliases()
    assert parse_names("shell, files,mcp__docs__search, docs__*", known, "--allow-tools", aliases) == (
        "terminal_operations", "file_operations", "docs__search", "docs__*",
    )  # fmt: skip
    policy = ToolPolicy(allow=parse_names("mcp__docs__*", known, "--allow-tools", aliases), deny=("time__*",))
    assert policy.allowed("docs__search") and not policy.allowed("time__now") and policy.denied("time__now")
    with pytest.raises(PolicyError, match=r"--deny-tools: no tool named 'shel'; did you mean shell\?"):
        parse_names("shel", known, "--deny-tools", aliases)


def plan_refusal(name: str, args: dict[str, Any]) -> str | None:
    """Plan mode's answer for a call of the registered tool ``name`` (a tool clio has no spec of
    declares no operations, as an MCP server's)."""
    return policy.plan_refusal(REGISTRY.get(name) or ToolSpec(name, "an MCP tool", {}), args)


def test_plan_refusals() -> None:
    assert plan_refusal("file_operations", {"operation": "read_file", "path": "a"}) is None
    assert plan_refusal("version_control", {"operation": "branch"}) is None
    assert plan_refusal("todo_operations", {"operation": "add"}) is None
    write = plan_refusal("file_operations", {"operation": "write_file", "path": "a.py", "content": "x"})
    assert write is not None and write.startswith("plan mode is on (read-only): file_operations write_file {\"path\": \"a.py\"}")
    assert "/plan" in write
    branch = plan_refusal("version_control", {"operation": "branch", "name": "x"})
    assert branch is not None and "would change the project" in branch
    assert "cannot tell" in (plan_refusal("docs__search", {"q": "x"}) or "")


def test_registry_hides_denied_tools_and_refuses_calls(tmp_path: Path) -> None:
    registry = REGISTRY.copy()
    policy = ToolPolicy(deny=("terminal_operations",), plan=True)
    registry.hidden, registry.gate = policy.denied, policy.refusal
    assert "terminal_operations" not in registry.offered() and "terminal_operations" in REGISTRY.offered()
    assert all(s["function"]["name"] != "terminal_operations" for s in registry.schemas())
    ctx = ToolContext(root=tmp_path)
    text, ok = registry.run(ctx, "terminal_operations", {"operation": "execute", "command": "ls"})
    assert not ok and "turned off for this run (--deny-tools)" in text
    text, ok = registry.run(ctx, "file_operations", {"operation": "create_file", "path": "x", "content": "y"})
    assert not ok and "plan mode is on" in text and not (tmp_path / "x").exists()
    (tmp_path / "r.txt").write_text("hello\n")
    text, ok = registry.run(ctx, "file_operations", {"operation": "read_file", "path": "r.txt"})
    assert ok and "hello" in text
