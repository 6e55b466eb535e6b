"""The progress checkpoint written before each trim (``.clio/memory/session_progress.md``): the
task, the todos and the last tool calls, so a person (or the next session) can see where a long
session stood. Pure: the app redacts and writes it."""

from __future__ import annotations

import time
from typing import Any

from clio.messages import tool_call_args
from clio.store.sessions import Session
from clio.tools.describe import summarize_args
from clio.tools.todos import format_todos


def checkpoint_text(session: Session, iteration: int, task: str, todos: list[dict[str, Any]]) -> str:
    lines = [
        "# Session progress checkpoint",
        f"Session: {session.id} ({session.info.name})",
        f"Written: {time.strftime('%Y-%m-%d %H:%M:%S')} (iteration {iteration})",
        "",
        "## Task",
        task[:2000] or "(none yet)",
        "",
        "## Todos",
        format_todos(todos) or "(none)",
        "",
        "## Recent tool calls",
    ]
    recent: list[str] = []
    for m in reversed(session.messages):
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            recent.append(f"- {fn.get('name')} {summarize_args(fn.get('name', ''), tool_call_args(call))}")
        if len(recent) >= 10:
            break
    lines += list(reversed(recent[:10])) or ["(none)"]
    return "\n".join(lines) + "\n"
