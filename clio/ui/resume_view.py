"""Where the conversation was, shown when a session is resumed: the last few exchanges, compactly.

Pure: messages in, lines out (the REPL prints them after the banner). Each exchange is the
user's message (its first line), the tool calls that followed (counted, the first few named) and
the last answer (its first lines); older messages are counted, not shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clio.messages import Message, meta, tool_call_args, typed_words
from clio.tools.describe import summarize_args
from clio.ui.text import cut_words

EXCHANGES = 3
USER_CHARS = 160
ANSWER_LINES = 3
ANSWER_CHARS = 320
NAMED_CALLS = 3


def _typed(msg: Message) -> str:
    """What the user typed, the files it attached named (their content is not the user's words)."""
    attached = meta(msg).get("attached")
    named = f" (attached: {', '.join(map(str, attached))})" if isinstance(attached, list) and attached else ""
    return typed_words(msg).strip() + named


def _one_line(text: str, limit: int) -> str:
    return cut_words(" ".join(text.split()), limit)


def _answer(text: str) -> list[str]:
    lines = [ln.rstrip() for ln in text.strip().splitlines() if ln.strip()]
    shown = lines[:ANSWER_LINES]
    out, used = [], 0
    for ln in shown:
        if used + len(ln) > ANSWER_CHARS:
            out.append(_one_line(ln, max(ANSWER_CHARS - used, 20)))
            break
        out.append(ln)
        used += len(ln)
    if len(lines) > len(out):
        out.append("…")
    return out


def exchanges(messages: Sequence[Message], count: int = EXCHANGES) -> tuple[list[dict[str, Any]], int]:
    """The last ``count`` exchanges (user text, tool-call labels, answer) and how many messages
    came before them."""
    starts = [
        i for i, m in enumerate(messages) if m.get("role") == "user" and str(m.get("content") or "").strip()
    ]
    picked = starts[-count:]
    out = []
    for n, start in enumerate(picked):
        end = picked[n + 1] if n + 1 < len(picked) else len(messages)
        part = messages[start:end]
        calls = [
            f"{c['function']['name']} {summarize_args(c['function']['name'], tool_call_args(c), 40)}".strip()
            for m in part
            if m.get("role") == "assistant"
            for c in m.get("tool_calls") or []
            if isinstance(c, dict) and isinstance(c.get("function"), dict)
        ]
        answers = [
            str(m.get("content") or "")
            for m in part
            if m.get("role") == "assistant" and str(m.get("content") or "").strip()
        ]
        out.append(
            {
                "user": _typed(messages[start]),
                "calls": calls,
                "answer": answers[-1] if answers else "",
            }
        )
    return out, (picked[0] if picked else len(messages))


def render(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """(text, style) lines: the resume view; empty for a session without messages."""
    shown, earlier = exchanges(messages)
    if not shown:
        return []
    lines: list[tuple[str, str]] = [
        (
            "where you were"
            + (f" ({earlier} earlier messages not shown; /session export has them all)" if earlier else "")
            + ":",
            "dim",
        )
    ]
    for ex in shown:
        lines.append((f"› {_one_line(ex['user'], USER_CHARS)}", "bold"))
        calls = ex["calls"]
        if calls:
            named = ", ".join(calls[:NAMED_CALLS]) + (
                f", +{len(calls) - NAMED_CALLS} more" if len(calls) > NAMED_CALLS else ""
            )
            lines.append((f"  ({len(calls)} tool call{'s' if len(calls) != 1 else ''}: {named})", "dim"))
        for ln in _answer(ex["answer"]) or ["(no answer)"]:
            lines.append((f"  {ln}", ""))
    return lines
