"""Which tools a run offers, which run without asking, and what plan mode lets through.

- ``--deny-tools``: those tools are not offered to the model at all, and a call to one anyway
  (a model that guesses names, a tool call written as text) is refused.
- ``--allow-tools``: those tools run without asking (as ``claude -p --allowedTools``); a
  destructive command still needs ``--yes`` (clio.app.approvals).
- plan mode (``--plan``, ``/plan``): read-only. The file tool's reading operations, read-only git
  operations, todos, memory, questions to the user and shell commands that pass
  :func:`clio.safety.readonly.readonly_reason` run, in the read-only kernel sandbox (clio.tools.terminal); everything else is refused with a tool error
  saying plan mode is on. MCP tools are refused: clio cannot tell what they change.

What runs in plan mode is read from each operation's declared effect (:class:`clio.tools.spec.Op`).

Names: a tool's own name, a glob (``mcp__docs__*``, ``docs__*``), or a short alias each tool
declares in its spec (``shell``/``bash``, ``files``, ``git``, ``memory``, ``todo``, ``prefs``,
``ask``). Claude Code's ``mcp__server__tool`` names an MCP tool (clio's ``server__tool``).
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from typing import Any

from clio.tools.spec import ToolSpec

PLAN_OFF = "The user turns plan mode off with /plan (or runs clio without --plan) to let you make it."


class PolicyError(ValueError):
    """A --allow-tools/--deny-tools name that names no tool (the message says which and why)."""


def parse_names(spec: str | None, known: list[str], flag: str, aliases: dict[str, str]) -> tuple[str, ...]:
    """``"shell, files, mcp__docs__*"`` -> patterns over clio's tool names; PolicyError for a name
    that is neither a tool, an alias (short name -> tool, ``Registry.aliases``), a glob nor an MCP
    tool (``server__tool``)."""
    out: list[str] = []
    for raw in (spec or "").split(","):
        name = raw.strip()
        if not name:
            continue
        name = aliases.get(name.lower(), name)
        if name.startswith("mcp__"):
            name = name[len("mcp__") :]
        if name not in known and "__" not in name and not any(c in name for c in "*?["):
            words = sorted([*known, *aliases])
            import difflib  # only for a typo: off the start-up path

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

    def refusal(self, tool: ToolSpec, args: dict[str, Any]) -> str | None:
        """Why a call may not run now (a tool error's text), or None."""
        if self.denied(tool.name):
            return f"the tool {tool.name} is turned off for this run (--deny-tools); do without it."
        if self.plan:
            return plan_refusal(tool, args)
        return None


def plan_refusal(tool: ToolSpec, args: dict[str, Any]) -> str | None:
    """Why plan mode does not run this call (None: it runs), from the operation's declared effect;
    a tool that declares no operations (an MCP server's) is refused: clio cannot tell what it does."""
    op_name = str(args.get("operation") or "")
    what = f"{tool.name} {op_name}".strip()
    if not tool.ops:
        return (
            f"plan mode is on (read-only): {what} was not run; clio cannot tell whether it changes anything. "
            "Propose it in your plan. " + PLAN_OFF
        )
    op = tool.op(args)
    why = op.check(args) if op is not None else ""
    if why is None:
        return None
    if why:
        return f"plan mode is on (read-only): {why} " + PLAN_OFF
    detail = json.dumps({k: v for k, v in args.items() if k in ("path", "name", "message")}, ensure_ascii=False)
    return (
        f"plan mode is on (read-only): {what} {detail} would change the project, so it was not done. "
        "Propose the change in your answer instead (file, what to change, why). " + PLAN_OFF
    )
