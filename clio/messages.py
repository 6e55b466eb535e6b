"""The one message shape every tier shares.

A message is a plain dict in the OpenAI chat format (``role``, ``content``,
``tool_calls``, ``tool_call_id``, ``name``) plus an optional ``meta`` dict that
never leaves the machine (sequence number, timestamp, interrupted flag, kind).
Plain dicts keep the memory tiers pure and the storage format obvious JSON.
"""

from __future__ import annotations

import json
import time
from typing import Any

Message = dict[str, Any]

API_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")

# meta["kind"] values with special meaning
KIND_SUMMARY = "thread_summary"
KIND_RECOVERY = "recovery"
KIND_MEMORY = "memory"
# the automatic recall of archived messages for a user message: a system message in the window,
# sent merged into that user message (clio.agent.prompt.to_api); never indexed, never summarised
KIND_RECALL = "recall"
# text clio wrote and sent in the user's role on its own: a built-in command's prompt (/init's, the
# request /compact sends); ``meta["command"]`` names the command the user typed. Never the user's words.
KIND_PROMPT = "clio_prompt"
KIND_CONTEXT = "context"  # clio's notes block (clio.context.notes), sent in the user's role
# a shell command the user ran with ``!command`` in the REPL, and its output: the user's action, sent in
# their role; ``meta["command"]`` is what they typed. The output is the command's, never the user's words.
KIND_USER_SHELL = "user_shell"
NOT_TYPED = frozenset({KIND_PROMPT, KIND_CONTEXT, KIND_RECALL, KIND_USER_SHELL})  # kinds whose text the user never typed
NOTES = "clio_notes"  # meta key: clio's notes put before the user's words (an /undo, plan mode off)
# put after an answer the user cut off with Ctrl-C (meta "interrupted") in every request that carries it
INTERRUPTED_NOTE = "[interrupted by the user]"


def make(role: str, content: str | None, **extra: Any) -> Message:
    """A new message with a timestamp in its meta."""
    msg: Message = {"role": role, "content": content}
    meta = extra.pop("meta", None) or {}
    msg.update(extra)
    meta.setdefault("ts", time.time())
    msg["meta"] = meta
    return msg


def api_view(msg: Message) -> Message:
    """The part of a message that is sent to the endpoint."""
    out: Message = {k: msg[k] for k in API_KEYS if k in msg and msg[k] is not None}
    if out.get("role") == "assistant" and "content" not in out:
        out["content"] = None if out.get("tool_calls") else ""
    if "content" not in out and out.get("role") != "assistant":
        out["content"] = ""
    return out


def meta(msg: Message) -> dict[str, Any]:
    m = msg.get("meta")
    return m if isinstance(m, dict) else {}


def text_of(msg: Message) -> str:
    """All text a message carries (content and tool-call arguments), for counting and search."""
    parts: list[str] = []
    content = msg.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):  # multimodal parts
        for p in content:
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                parts.append(p["text"])
    for call in msg.get("tool_calls") or []:
        fn = call.get("function") or {}
        parts.append(str(fn.get("name", "")))
        parts.append(str(fn.get("arguments", "")))
    return "\n".join(parts)


def tool_call_args(call: dict[str, Any]) -> dict[str, Any]:
    """Parsed arguments of a tool call; {} when they are not a JSON object."""
    raw = (call.get("function") or {}).get("arguments") or "{}"
    if isinstance(raw, dict):
        return raw
    try:
        val = json.loads(raw)
    except (ValueError, TypeError):
        return {}
    return val if isinstance(val, dict) else {}


ATTACHMENT_MARK = '\n\n<file path="'  # where the files a message attached (@path) begin


def prompt_meta(command: str) -> dict[str, Any]:
    """The meta of a message clio sends in the user's role for the built-in ``/command``."""
    return {"kind": KIND_PROMPT, "command": command}


def with_notes(text: str, notes: list[str], msg_meta: dict[str, Any]) -> str:
    """``text`` (the user's words) with clio's ``notes`` put before it, the notes recorded in
    ``msg_meta`` (:data:`NOTES`) so that :func:`typed_words` leaves them out."""
    if not notes:
        return text
    head = "\n".join(notes)
    msg_meta[NOTES] = head
    return head + "\n\n" + text


def notes_of(msg: Message) -> list[str]:
    """clio's notes put before the user's words in a user message (:func:`with_notes`), one a line."""
    notes = meta(msg).get(NOTES)
    return [ln for ln in notes.splitlines() if ln.strip()] if isinstance(notes, str) else []


def note_text(note: str) -> str:
    """One of clio's notes as a screen shows it beside "clio:" (without its ``[clio: …]`` frame)."""
    note = note.strip()
    if note.startswith("[clio:") and note.endswith("]"):
        note = note[len("[clio:") : -1].strip()
    return note


def without_notes(msg: Message, text: str) -> str:
    """``text`` (a user message's content) without clio's notes put before the user's words."""
    notes = meta(msg).get(NOTES)
    if not isinstance(notes, str) or not notes:
        return text
    if text.startswith(notes + "\n\n"):
        return text[len(notes) + 2 :]
    # changed on the way (redaction): the notes are single lines, the user's words follow a blank line
    return text.split("\n\n", 1)[1] if "\n\n" in text else ""


def interrupted(msg: Message) -> bool:
    """An answer the user cut off (Ctrl-C) before it was complete."""
    return msg.get("role") == "assistant" and bool(meta(msg).get("interrupted"))


def typed_words(msg: Message) -> str:
    """What the user said in a message, the one reading of it everywhere (consolidation, the thread
    summary, behaviour feedback, session names, recall): '' for a message that is not the user's
    (another role, clio's notes block, a recall block); the command the user typed (``/init``) for
    a built-in command's prompt clio sent for it, and ``!ls`` for a shell command the user ran (not its output); otherwise the content without clio's notes put
    before it (``meta["clio_notes"]``) and without the files it attached with @path
    (``meta["attached"]``), so what the user established is never read from clio's own text or an
    attached file."""
    m = meta(msg)
    if msg.get("role") != "user" or m.get("kind") in NOT_TYPED:
        if m.get("kind") == KIND_PROMPT and isinstance(m.get("command"), str):
            return "/" + m["command"]
        if m.get("kind") == KIND_USER_SHELL and isinstance(m.get("command"), str):
            return "!" + m["command"]  # what the user typed; the output is the command's
        return ""
    content = msg.get("content")
    text = without_notes(msg, content if isinstance(content, str) else text_of(msg))
    if m.get("attached"):
        return text.split(ATTACHMENT_MARK, 1)[0]
    return text
