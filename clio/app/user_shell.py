"""``!command`` in the REPL: the user runs a shell command themselves, and the model sees it.

The command takes the shell tool's path (``clio.tools.terminal.run_typed``: scrubbed environment,
the OS sandbox under ``--sandbox``, plan mode's read-only sandbox, /undo of what it changed) without
a question: the user typed it. Its output, clipped like a tool result, goes into the session as a
user-role message marked :data:`clio.messages.KIND_USER_SHELL` (archived, redacted, sent with the
next request; joined to the next user message when sent, ``clio.agent.prompt.to_api``), so
memory reads ``!command`` as what the user did and never the output as what they said.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clio.messages import KIND_USER_SHELL, make
from clio.tools.context import ToolError
from clio.tools.results import maybe_store
from clio.tools.terminal import run_typed

if TYPE_CHECKING:
    from clio.app.app import App

LEAD = "[the user ran `{command}` in the shell themselves; its output follows, for you to see, not a request]"


def run_bang(app: App, command: str) -> tuple[bool, str]:
    """Run what the user typed after ``!``; (ran, what to show: the redacted output or why not)."""
    ctx, agent = app.tool_ctx, app.orchestrator
    if ctx is None or agent is None or app.session is None:
        return False, "no session to run it in"
    command = command.strip()
    start = len(app.session.messages)
    snapshots = app.services.snapshots
    if snapshots is not None:
        snapshots.begin(start)  # what it changes is one step for /undo, like a turn
    try:
        result = run_typed(ctx, command)
    except ToolError as exc:
        return False, str(exc)
    shown = app.redactor.text(result)
    body = maybe_store(ctx, "terminal_operations", result)  # clipped like the model's own command
    agent.add(make("user", LEAD.format(command=command) + "\n" + body, meta={"kind": KIND_USER_SHELL, "command": command}))
    agent.save_state()
    return True, shown
