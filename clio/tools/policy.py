"""Which tools a run offers, which run without asking, and what plan mode lets through.

- ``--deny-tools``: those tools are not offered to the model at all, and a call to one anyway
  (a model that guesses names, a tool call written as text) is refused.
- ``--allow-tools``: those tools run without asking (as ``claude -p --allowedTools``); a
  destructive command still needs ``--yes`` (clio.app.approvals).
- plan mode (``--plan``, ``/plan``): read-only. The file tool's reading operations, read-only git
  operations, todos, memory, questions to the user and shell commands that pass
  :func:`clio.safety.readonly.readonly_reason` run; everything else is refused with a tool error
  saying plan mode is on. MCP tools are refused: clio cannot tell what they change.

Names: a tool's own name, a glob (``mcp__docs__*``, ``docs__*``), or a short alias: ``shell``/
``bash`` (terminal_operations), ``files``, ``git``, ``memory``, ``todo``, ``prefs``, ``ask``.
Claude Code's ``mcp__server__tool`` names an MCP tool (clio's ``server__tool``).
"""

from __future__ import annotations

import difflib
import fnmatch
import json
from dataclasses import dataclass
from typing import Any

from clio.safety.readonly import readonly_reason

ALIASES = {
    "shell": "terminal_operations",
    "bash": "terminal_operations",
    "files": "file_operations",
    "git": "version_control",
    "memory": "memory_operations",
    "todo": "todo_operations",
    "prefs": "preferences",
    "ask": "user_collaboration",
}
READ_OPS = {
    "file_operations": frozenset(
        {"read_file", "list_dir", "file_exists", "get_file_info", "file_search", "grep_search", "read_tool_result"}
    ),
    "version_control": frozenset({"status", "diff", "log", "blame"}),
}
LISTINGS = {"branch": "name", "tag": "name"}  # version_control operations that only list without it
ALWAYS = frozenset({"todo_operations", "memory_operations", "user_collaboration", "preferences"})
PLAN_OFF = "The user turns plan mode off with /plan (or runs clio without --plan) to let you make it."


class PolicyError(ValueError):
    """A --allow-tools/--deny-tools name that names no tool (the message says which and why)."""


def parse_names(spec: str | None, known: list[str], flag: str) -> tuple[str, ...]:
    """``"shell, files, mcp__docs__*"`` -> patterns over clio's tool names; PolicyError for a name
    that is neither a tool, an alias, a glob nor an MCP tool (``server__tool``)."""
    out: list[str] = []
    for raw in (spec or "").split(","):
        name = raw.strip()
        if not name:
            continue
        name = ALIASES.get(name.lower(), name)
        if name.startswith("mcp__"):
            name = name[len("mcp__") :]
        if name not in known and "__" not in name and not any(c in name for c in "*?["):
            words = sorted([*known, *ALIASES])
            close = difflib.get_close_matches(raw.strip(), words, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]}? " if close else ""
            raise PolicyError(f"{flag}: no tool named {raw.strip()!r}; {hint}tools: {', '.join(words)}")
        out.append(name)
    return tuple(out)


@dataclass
class ToolPolicy:
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    plan: bool = False

    def denied(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in self.deny)

    def allowed(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in self.allow)

    def refusal(self, name: str, args: dict[str, Any]) -> str | None:
        """Why a call may not run now (a tool error's text), or None."""
        if self.denied(name):
            return f"the tool {name} is turned off for this run (--deny-tools); do without it."
        if self.plan:
            return plan_refusal(name, args)
        return None


def plan_refusal(name: str, args: dict[str, Any]) -> str | None:
    op = str(args.get("operation") or "")
    if name in ALWAYS or op in READ_OPS.get(name, ()):
        return None
    if name == "version_control" and (
        (op in LISTINGS and not args.get(LISTINGS[op])) or (op == "stash" and args.get("action") in (None, "list"))
    ):
        return None
    if name == "terminal_operations":
        command = str(args.get("command") or "")
        why = readonly_reason(command)
        if why is None:
            return None
        return (
            f"plan mode is on (read-only): `{command}` was not run, {why}. Use read-only commands (ls, cat, "
            "grep, find, git status/diff/log/show...) to look, and put what you would run in your plan. " + PLAN_OFF
        )
    what = f"{name} {op}".strip()
    if name in READ_OPS:
        detail = json.dumps({k: v for k, v in args.items() if k in ("path", "name", "message")}, ensure_ascii=False)
        return (
            f"plan mode is on (read-only): {what} {detail} would change the project, so it was not done. "
            "Propose the change in your answer instead (file, what to change, why). " + PLAN_OFF
        )
    return (
        f"plan mode is on (read-only): {what} was not run; clio cannot tell whether it changes anything. "
        "Propose it in your plan. " + PLAN_OFF
    )
