"""``terminal_operations`` declared: its spec, registered at import; its code (clio.tools.terminal,
with the sandbox, the command launcher and the undo scan) loads at the tool's first call."""

from __future__ import annotations

from clio import actions as A
from clio.tools.registry import register
from clio.tools.spec import Later, Lean, Op, ToolSpec

__all__ = ["SPEC"]

SPEC = register(ToolSpec(
    "terminal_operations",
    "Run a bash command in the project root (stdin closed; no interactive programs). Output capped.",
    {"execute": Op(Later("clio.tools.terminal", "_execute"), Later("clio.tools.terminal", "_plan_check"), outside=True, action=A.RUN_COMMAND)},  # its output: outside content
    {
        "command": {"type": "string"},
        "timeout": {"type": "integer", "description": "seconds, default 120, max 600"},
    },
    required=("command",),
    label=("command",),
    aliases=("shell", "bash"),
    lean=Lean("Run a bash command in the project root.", ("execute",), ("command",)),
))  # fmt: skip
