"""Consolidation ("sleep"): what a finished session established, read back by the model once.

Pure (messages in, prompt out; reply in, entries out; no I/O, no model): the app
(``clio.app.consolidate``) sends the prompt through ``Orchestrator.ask`` and stores
what comes back through the long-term memory store (dedup, provenance, redaction).

- :func:`new_part` is what the session said since its last consolidation;
- :func:`established` is what the user stated in the part (decisions, constraints, conventions,
  agreed proposals), read without the model by :mod:`clio.context.decisions`: stored as rules
  in the user's own words whatever the model makes of the session (a small local model often
  makes little of it), and listed in the prompt so the model does not repeat them;
- :func:`worth_it` is the gate: a part with no finished exchange, or one that is only a
  question and its answer, teaches nothing durable and costs no request;
- :func:`build_prompt` renders the part compactly (user and assistant text, tool calls by name
  and path, tool results only as their first line when they failed), within a character budget,
  with the thread summary first and the ambiguous pairs the store queued for a decision;
- :func:`parse_reply` reads the model's JSON: new entries (validated by type), decisions on
  the pairs (merge, keep_both, replace), and the session's digest (what it settled, then in
  other words), which recall indexes as one more unit of the session (docs/memory.md,
  "Digests").
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clio.context import decisions
from clio.context.yarn import cut, is_error
from clio.lazy_re import lazy
from clio.memory import ltm
from clio.memory.json_reply import first_json_object
from clio.messages import KIND_PROMPT, KIND_USER_SHELL, NOT_TYPED, NOTES, Message, meta, typed_words
from clio.store.session_info import DIGEST_CHARS

MAX_ENTRIES = 6  # what one session may add: the durable few, not a transcript
MAX_PAIRS = 5  # ambiguous pairs decided per request
MIN_USER_MESSAGES = 2
MIN_TOOL_CALLS = 3
LINE_CHARS = 600  # one message's share of the transcript
REPLY_TOKENS = 850  # six entries, the pair decisions and a digest of about 70 words
PAIR_DECISIONS = ("merge", "keep_both", "replace")
MIN_DIGEST_CHARS = 12  # shorter says nothing a search could find
_NOTHING = lazy(r"(?i)\(?(none|nothing( (was )?settled)?|n/?a|-)\)?\.?")


@dataclass
class Learned:
    """What the model's reply says: entries to store and decisions on queued pairs."""

    entries: list[tuple[str, dict[str, Any], float]] = field(default_factory=list)
    decisions: list[tuple[str, str, str]] = field(default_factory=list)
    rejected: int = 0  # entries dropped as malformed
    digest: str = ""  # what the session settled, and in other words (clio.store.session_info.Digest)


def new_part(messages: Sequence[Message], since: int) -> list[Message]:
    """The messages after the first ``since`` (what the last consolidation already read)."""
    return list(messages[max(0, since) :])


def _tool_calls(part: Sequence[Message]) -> int:
    return sum(len(m.get("tool_calls") or []) for m in part if m.get("role") == "assistant")


def _answered(part: Sequence[Message]) -> bool:
    """At least one user message followed later by an assistant message."""
    seen_user = False
    for m in part:
        if m.get("role") == "user":
            seen_user = True
        elif m.get("role") == "assistant" and seen_user:
            return True
    return False


def established(part: Sequence[Message]) -> list[decisions.Item]:
    """What the user established in the part, in order: each user message's decisions,
    constraints and conventions, and a proposal of the assistant the user then agreed to; a
    later statement about the same subject replaces the earlier (as in the thread summary)."""
    items: list[decisions.Item] = []
    proposed: str | None = None
    for m in part:
        role = m.get("role")
        text = typed_words(m).strip() if role == "user" else str(m.get("content") or "").strip()
        if role == "user" and text:
            found = [item for item in (standalone(item, text) for item in decisions.from_user(text)) if item]
            agreed = decisions.agreed(proposed) if proposed and decisions.agrees(text) else None
            items = decisions.merge(items, [agreed, *found] if agreed else found)
            proposed = None
        elif role == "assistant" and text and not m.get("tool_calls"):
            proposed = decisions.proposal(text)
    return items


# a word that points outside its sentence ("raise it to 120", "we will use X instead", "stick with
# that"): "that" only where it is no conjunction, "it" not as in "it is important to"
_POINTS = lazy(
    r"\b(?:it|its|they|them|their|this|these|those|instead(?! of\b)|that(?! (?:we|the|a|an|you|i|it|all|"
    r"every|no|our|there|this|they|is|are|was|will|should|must)\b))\b",
    re.I,
)
_DUMMY_IT = lazy(r"\bit(?:'s| is) \w+ (?:to|that)\b", re.I)
_LABEL = lazy(r"^[\w ]{1,24}:\s+")  # "Note for later: ..."
STANDALONE_CHARS = 400


def points_outside(sentence: str) -> bool:
    """Whether ``sentence`` names something only the text around it says (a pronoun, "instead")."""
    return bool(_POINTS.search(_DUMMY_IT.sub("", sentence)))


def standalone(item: decisions.Item, text: str) -> decisions.Item | None:
    """``item`` as an entry that reads correctly with nothing around it: as stated when it names
    what it is about; with the sentence before it in the same message when it points outside
    itself ("we decided to raise it to 120" after "the Redis TTL is set to 37 seconds"); None
    when the message has no such sentence (a question is none: it decides nothing)."""
    kind, key, statement = item
    if not points_outside(statement):
        return item
    said = decisions.sentences(text)
    whole = _with_before(said, next((i for i, sentence in enumerate(said) if decisions.cut(sentence) == statement), -1))
    return [kind, key, whole] if whole else None


def _with_before(said: list[str], at: int) -> str | None:
    """Sentence ``at`` of ``said`` led by the one before it (the referent), or None: no such
    sentence (the first, or a question before it), or too long together."""
    if at <= 0 or said[at - 1].rstrip().endswith("?"):
        return None
    before = _LABEL.sub("", said[at - 1]).rstrip(" ;,.")
    whole = f"{before}; {said[at]}"
    return whole if len(whole) <= STANDALONE_CHARS else None


_MAIN_FIELD = {"rule": "rule", "discovery": "fact"}  # what a rule or a fact says, read alone


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def anchored(learned: Learned, part: Sequence[Message]) -> Learned:
    """The model's rules and facts held to what :func:`standalone` asks of the user's words: one
    that points outside itself ("We decided to raise it to 120.", copied from the session) is
    kept only as a copy of a sentence the user wrote, led by the sentence before it in the same
    message; otherwise it is dropped (counted in ``rejected``): read later with nothing around
    it, it would say nothing true. Other types and self-contained entries pass as they are."""
    said = [decisions.sentences(typed_words(m)) for m in part if m.get("role") == "user"]
    kept: list[tuple[str, dict[str, Any], float]] = []
    for type_, fields, confidence in learned.entries:
        key = _MAIN_FIELD.get(type_)
        text = str(fields.get(key) or "") if key else ""
        if not key or not points_outside(text):
            kept.append((type_, fields, confidence))
            continue
        want = _words(text)
        whole = next(
            (_with_before(sentences, i) for sentences in said for i, s in enumerate(sentences) if _words(s) == want), None
        )
        if whole is None:
            learned.rejected += 1
            continue
        kept.append((type_, {**fields, key: whole}, confidence))
    learned.entries = kept
    return learned


def stated(part: Sequence[Message]) -> int:
    """How many decisions, constraints and conventions the user stated in the part
    (:func:`clio.context.decisions.from_user`, the same reading the thread summary uses)."""
    return sum(len(decisions.from_user(typed_words(m))) for m in part if m.get("role") == "user")


def worth_it(part: Sequence[Message]) -> bool:
    """Consolidate only a part with a finished exchange and some substance: a stated decision,
    a conversation (``MIN_USER_MESSAGES`` user messages), or work (``MIN_TOOL_CALLS`` tool calls)."""
    if not _answered(part):
        return False
    users = sum(1 for m in part if m.get("role") == "user")
    return stated(part) > 0 or users >= MIN_USER_MESSAGES or _tool_calls(part) >= MIN_TOOL_CALLS


def _call_line(call: dict[str, Any]) -> str:
    fn = call.get("function") or {}
    name = str(fn.get("name") or "?")
    try:
        args = json.loads(fn.get("arguments") or "{}")
    except (TypeError, ValueError):
        args = {}
    bits = [str(args[k]) for k in ("operation", "path", "command", "query") if isinstance(args, dict) and args.get(k)]
    return f"[tool call] {name} {cut(' '.join(bits), 160)}".rstrip()


def _user_line(m: Message) -> str:
    """A user-role message's line: the user's words as ``[user]``; what clio sent in their role
    (a built-in command's prompt, notes put before the user's words) as ``[clio]``, never as theirs."""
    said = typed_words(m).strip()
    kind = meta(m).get("kind")
    if kind == KIND_PROMPT:
        return f"[user] {said}\n[clio, not the user: the built-in prompt of {said}, left out]"
    if kind == KIND_USER_SHELL:
        return f"[user] ran {said}\n[its output, not the user's words, left out]"
    if kind in NOT_TYPED:
        return ""
    notes = meta(m).get(NOTES)
    head = f"[clio, not the user] {cut(notes, 200)}\n" if isinstance(notes, str) and notes else ""
    attached = meta(m).get("attached")
    if isinstance(attached, list) and attached:  # the files' content is not the user's words
        said = f"{said} (attached: {', '.join(map(str, attached))})".strip()
    return f"{head}[user] {cut(said, LINE_CHARS)}" if said else head.rstrip("\n")


def transcript(part: Sequence[Message], max_chars: int) -> str:
    """The part as compact lines, newest kept when it does not fit (they hold the outcome)."""
    lines: list[str] = []
    for m in part:
        role, text = m.get("role"), str(m.get("content") or "").strip()
        if role == "user" and text:
            lines += [line] if (line := _user_line(m)) else []
        elif role == "assistant":
            if text:
                lines.append(f"[assistant] {cut(text, LINE_CHARS)}")
            lines += [_call_line(c) for c in m.get("tool_calls") or []]
        elif role == "tool" and text and is_error(text):
            lines.append(f"[tool error] {cut(text.splitlines()[0], 200)}")
    out: list[str] = []
    used = 0
    for line in reversed(lines):
        if used + len(line) + 1 > max_chars:
            out.append("[earlier messages left out]")
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(reversed(out))


def _pair_lines(pairs: Sequence[tuple[ltm.Entry, ltm.Entry, float]]) -> str:
    rows = []
    for a, b, _score in pairs[:MAX_PAIRS]:
        rows.append(f'- "{a.id}" ({a.type}): {cut(a.text(), 240)}\n  "{b.id}" ({b.type}): {cut(b.text(), 240)}')
    return "\n".join(rows)


def _type_lines() -> str:
    return "\n".join(f"- {name}: {', '.join((*spec.text, *spec.lists))}" for name, spec in ltm.TYPES.items())


def build_prompt(
    template: str,
    part: Sequence[Message],
    summary: str,
    pairs: Sequence[tuple[ltm.Entry, ltm.Entry, float]],
    max_chars: int,
    recorded: Sequence[decisions.Item] = (),
) -> str:
    """The one consolidation request's text, at most about ``max_chars`` characters.
    ``recorded``: what :func:`established` already stores, listed so it is not repeated."""
    summary = cut(summary, max_chars // 4) if summary else ""
    pair_text = _pair_lines(pairs)
    known = "\n".join(f"- {item[2]}" for item in recorded)
    room = max(400, max_chars - len(template) - len(summary) - len(pair_text) - len(known))
    return template.format(
        max_entries=MAX_ENTRIES,
        types=_type_lines(),
        summary=summary or "(none)",
        recorded=known or "(none)",
        transcript=transcript(part, room),
        pairs=pair_text or "(none)",
    )


def _entry(item: Any) -> tuple[str, dict[str, Any], float] | None:
    if not isinstance(item, dict):
        return None
    type_ = item.get("type")
    if not isinstance(type_, str) or type_ not in ltm.TYPES:
        return None
    spec = ltm.TYPES[type_]
    fields: dict[str, Any] = {}
    for k in spec.text:
        if isinstance(item.get(k), str) and item[k].strip():
            fields[k] = item[k].strip()
    for k in spec.lists:
        v = item.get(k)
        if isinstance(v, list) and all(isinstance(x, str) for x in v) and v:
            fields[k] = v
    if not all(fields.get(k) for k in spec.required):
        return None
    try:
        confidence = float(item.get("confidence", ltm.DEFAULT_CONFIDENCE))
    except (TypeError, ValueError):
        confidence = ltm.DEFAULT_CONFIDENCE
    return type_, fields, min(1.0, max(0.0, confidence))


def digest_text(value: Any) -> str:
    """The reply's digest as one line, at most :data:`DIGEST_CHARS` characters (cut at a word);
    "" when there is none, or it says only that nothing was settled."""
    if not isinstance(value, str):
        return ""
    flat = " ".join(value.split())
    if len(flat) > DIGEST_CHARS:
        flat = flat[:DIGEST_CHARS].rsplit(" ", 1)[0] + "…"
    return "" if len(flat) < MIN_DIGEST_CHARS or _NOTHING.fullmatch(flat) else flat


def parse_reply(text: str, pairs: Sequence[tuple[ltm.Entry, ltm.Entry, float]]) -> Learned:
    """Entries and pair decisions from the model's reply; anything malformed is dropped, and a
    decision counts only for a pair that was asked about."""
    out = Learned()
    reply = first_json_object(text)
    if reply is None:
        return out
    items = reply.get("entries")
    for item in items[: MAX_ENTRIES * 2] if isinstance(items, list) else []:
        parsed = _entry(item)
        if parsed is None:
            out.rejected += 1
        elif len(out.entries) < MAX_ENTRIES:
            out.entries.append(parsed)
    out.digest = digest_text(reply.get("digest"))
    asked = {(a.id, b.id) for a, b, _ in pairs[:MAX_PAIRS]}
    for d in reply.get("pairs") or [] if isinstance(reply.get("pairs"), list) else []:
        if not isinstance(d, dict):
            continue
        a, b, what = d.get("a"), d.get("b"), d.get("decision")
        if what in PAIR_DECISIONS and ((a, b) in asked or (b, a) in asked):
            out.decisions.append((str(a), str(b), str(what)))
    return out
