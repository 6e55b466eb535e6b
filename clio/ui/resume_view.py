"""Where the conversation was, shown when a session is resumed: the last few exchanges, compactly.

Pure: messages in, lines out (the REPL prints them after the banner). Each exchange is the
user's message (its first line), the tool calls that followed (counted, the first few named) and
the last answer (its first lines, marked when the user cut it off); older messages are counted,
not shown. clio's notes put before the user's words (an /undo, plan mode turned off:
``meta["clio_notes"]``) are shown apart, as dim ``clio:`` lines, never as what the user typed.
Given the terminal's width, long lines are wrapped at spaces (never inside a word), each
continuation indented under its line.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from clio.messages import Message, interrupted, meta, note_text, notes_of, tool_call_args, typed_words
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
            m for m in part if m.get("role") == "assistant" and (str(m.get("content") or "").strip() or interrupted(m))
        ]
        out.append(
            {
                "notes": [note_text(n) for n in notes_of(messages[start])],
                "user": _typed(messages[start]),
                "calls": calls,
                "answer": str(answers[-1].get("content") or "") if answers else "",
                "interrupted": any(interrupted(m) for m in part),
            }
        )
    return out, (picked[0] if picked else len(messages))


def wrap(line: str, width: int) -> list[str]:
    """``line`` in lines of at most ``width`` characters, broken at spaces only (a word longer
    than a line stays whole), continuations indented under the line's text."""
    if len(line) <= width:
        return [line]
    body = line.lstrip(" ")
    lead = len(line) - len(body)
    if body.startswith(("› ", "clio: ")):
        lead += body.index(" ") + 1
    indent = " " * min(lead, width // 2)
    return textwrap.wrap(
        line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    ) or [line]


def render(messages: Sequence[Message], width: int | None = None) -> list[tuple[str, str]]:
    """(text, style) lines: the resume view; empty for a session without messages. With
    ``width``, no line is longer (but for a single word that is): wrapped at spaces."""
    lines = _lines(messages)
    if width is None or width < 20:
        return lines
    return [(part, style) for text, style in lines for part in wrap(text, width)]


def _lines(messages: Sequence[Message]) -> list[tuple[str, str]]:
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
        for note in ex["notes"]:
            lines.append((f"  clio: {_one_line(note, USER_CHARS)}", "dim"))
        lines.append((f"› {_one_line(ex['user'], USER_CHARS)}", "bold"))
        calls = ex["calls"]
        if calls:
            named = ", ".join(calls[:NAMED_CALLS]) + (
                f", +{len(calls) - NAMED_CALLS} more" if len(calls) > NAMED_CALLS else ""
            )
            lines.append((f"  ({len(calls)} tool call{'s' if len(calls) != 1 else ''}: {named})", "dim"))
        for ln in _answer(ex["answer"]) or ([] if ex["interrupted"] else ["(no answer)"]):
            lines.append((f"  {ln}", ""))
        if ex["interrupted"]:
            lines.append(("  ⏹ interrupted (cut off by the user)", "yellow"))
    return lines
