"""Recall units: what recall ranks, returns and quotes is an exchange, not a lone message.

An exchange is a user message with the replies and tool results it led to, up to the next user
message (in a conversation between two people, as in LoCoMo, one speaker's turn with the other's
answer). A search still matches messages; each match brings back its exchange as one unit of at
most :data:`MAX_PARTS` messages, in order: the user's message (what was asked or said), the
message that matched, and the reply after it that says the most in prose (where an answer usually
is: an agent's findings, not the "Done." after its edits), each once. So a match on a question
brings back its answer, and a match on an answer says what it answered. A message with no
content of its own ("ok, thanks", "looks good") never carries a unit alone: matched by itself it
is no hit (:func:`clio.recall.relevance.own_words`). A session's digest (the model's summary of
what it settled, :data:`clio.recall.query.DIGEST_ROLE`) is a unit by itself. The memory tool
shows its later results compact (``compose(whole=False)``: the match and what answered it, :func:`answered`).

:func:`exchange` reads one exchange from the index (SQLite); the rest is pure.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clio.recall.query import CALL_MARK, UNIT_ROLES, format_date
from clio.recall.relevance import says_something
from clio.recall.terms import concludes, excerpt

MAX_PARTS = 3  # messages one unit quotes: the ask, the match, the answer
MATCH_CHARS = 300  # the excerpt of the message that matched
REPLY_CHARS = 300  # the excerpt of the unit's answer (:func:`answer`), when another message matched
OTHER_CHARS = 160  # the excerpt of a unit's other message (the ask, a tool step)
EXCHANGE_ROWS = 400  # messages read from one exchange at the most (a long run of tool steps)
ASK_TAIL = 80  # where a question mark makes a message a question
ANSWERS_MORE = 2.0  # a reply saying this many times as much as a user's statement answers it (compact units)


@dataclass(frozen=True)
class Part:
    seq: int
    role: str
    body: str


def asks(text: str) -> bool:
    """Whether a message asks something (a question mark near its end)."""
    return "?" in text[-ASK_TAIL:]


def is_prose(part: Part) -> bool:
    """An assistant message that says something in words (not only tool calls)."""
    return part.role == "assistant" and any(
        line.strip() and not line.startswith(CALL_MARK) for line in part.body.splitlines()
    )


def prose_chars(part: Part) -> int:
    """How much a message says in words: its characters less its tool-call lines."""
    return sum(len(line) for line in part.body.splitlines() if not line.startswith(CALL_MARK))


def answer(replies: Sequence[Part]) -> Part:
    """Of an exchange's prose replies (in order), the one that says the most, the later on a tie:
    an agent's diagnosis rather than the "Done." after its edits, its findings rather than the
    "let me check the config" before a step."""
    return max(replies, key=lambda p: (prose_chars(p), p.seq))


def answered(said: Part, reply: Part) -> bool:
    """Whether ``reply`` answers the user's message ``said`` in a compact unit: ``said`` asks, or
    the reply says at least :data:`ANSWERS_MORE` times as much (a report's diagnosis, an order's
    account of the work; not the partner's turn after a remark in a conversation)."""
    return asks(said.body) or prose_chars(reply) >= ANSWERS_MORE * len(said.body.strip())


def calls(part: Part) -> bool:
    """An assistant message that makes tool calls."""
    return part.role == "assistant" and any(line.startswith(CALL_MARK) for line in part.body.splitlines())


def pair(step: Part, rows: Sequence[Part]) -> Part | None:
    """The other half of a tool step in its exchange ``rows``: a result's call (the nearest
    message before it that makes calls), a call's result (the tool message right after it)."""
    at = next((i for i, p in enumerate(rows) if p.seq == step.seq), None)
    if at is None:
        return None
    if step.role == "tool":
        return next((p for p in reversed(rows[:at]) if calls(p)), None)
    after = rows[at + 1] if at + 1 < len(rows) else None
    return after if after is not None and after.role == "tool" else None


def compose(hit: int, rows: list[Part], whole: bool = True) -> list[Part]:
    """The unit of the message ``hit`` (a seq) in its exchange ``rows`` (in order, the hit among
    them): the exchange's user message, the hit, the prose reply after it that says the most
    (:func:`answer`; for a matched reply, a later one only when it says more: "let me check the
    config" brings the findings), and for a tool step where there is room, its other half
    (:func:`pair`: a commit's result without the call says nothing of what was run); each once,
    in order. Not ``whole`` (a compact unit, the memory tool's results after its best): the hit,
    with the answer when the hit is a step or a user's message it answers (:func:`answered`)."""
    by_seq = {p.seq: p for p in rows}
    if hit not in by_seq:
        return []
    matched = by_seq[hit]
    step = matched.role == "tool" or (matched.role == "assistant" and not is_prose(matched))
    chosen = [hit]  # by priority: the match, the ask, the answer, the step's other half
    after = [p for p in rows if p.seq > hit and is_prose(p)]
    if not whole:
        if after and (step or (matched.role == "user" and answered(matched, answer(after)))):
            chosen.append(answer(after).seq)  # what a question, a report or a step came to
        return [p for p in rows if p.seq in chosen]
    ask = rows[0] if rows[0].role == "user" and rows[0].seq != hit else None
    if ask is not None and (step or asks(ask.body)) and says_something(ask.body):
        chosen.append(ask.seq)  # what a step or an answer was for ("ok, go on" says nothing)
    if after and (step or matched.role == "user"):
        chosen.append(answer(after).seq)  # the reply to what the user asked or said, what a step came to
    elif after and is_prose(matched) and prose_chars(best := answer(after)) > prose_chars(matched):
        chosen.append(best.seq)  # a reply that says less than a later one ("let me check"): that one too
    if step:
        other = pair(matched, rows)
        if other is not None:
            chosen.append(other.seq)  # a step is a call and its result, where there is room
    kept = set(chosen[:MAX_PARTS])
    return [p for p in rows if p.seq in kept]


_OPENS = ", ".join(f"'{r}'" for r in UNIT_ROLES)
_BOUNDS = (  # the message's row, and the rows that open its exchange and the next one: a user's
    # message, or a digest (a unit by itself: clio.recall.query.DIGEST_ROLE)
    "SELECT h.id,"
    f" (SELECT max(id) FROM msgs WHERE session_id = h.session_id AND id <= h.id AND role IN ({_OPENS})),"
    f" (SELECT min(id) FROM msgs WHERE session_id = h.session_id AND id > h.id AND role IN ({_OPENS}))"
    " FROM msgs h WHERE h.session_id = ? AND h.seq = ? ORDER BY h.id LIMIT 1"
)


def exchange(conn: sqlite3.Connection, session_id: str, seq: int) -> tuple[list[Part], bool]:
    """The indexed messages of the exchange that holds message ``seq`` of ``session_id``, and
    whether they are the whole exchange (from its user message to the next one, within
    :data:`EXCHANGE_ROWS`): then any of its messages reads the same rows."""
    row = conn.execute(_BOUNDS, (session_id, seq)).fetchone()
    if row is None:
        return [], False
    hit_id, start, end = int(row[0]), row[1], row[2]
    first = hit_id if start is None else int(start)
    if hit_id - first > EXCHANGE_ROWS:
        first = hit_id  # a very long run of steps: the ask is too far back to read
    last = hit_id + EXCHANGE_ROWS if end is None else min(int(end) - 1, hit_id + EXCHANGE_ROWS)
    rows = conn.execute(
        "SELECT seq, role, body FROM msgs WHERE session_id = ? AND id BETWEEN ? AND ? ORDER BY id",
        (session_id, first, last),
    ).fetchall()
    whole = start is not None and end is not None and int(end) - 1 - int(start) <= EXCHANGE_ROWS
    return [Part(int(s), str(r), str(b)) for s, r, b in rows], whole


class Exchanges:
    """:func:`exchange` for one search: the search's rows often fall in the same exchange (a
    question, its tool steps, the answer), read once."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.read: dict[tuple[str, int], list[Part]] = {}

    def __call__(self, session_id: str, seq: int) -> list[Part]:
        rows = self.read.get((session_id, seq))
        if rows is None:
            rows, whole = exchange(self.conn, session_id, seq)
            if whole:
                self.read.update({(session_id, p.seq): rows for p in rows})
        return rows


class Shown:
    """The units of one search, best first, each message once (pure). A unit that shares
    messages with one better unit joins it, at its place, when the two fit in one unit
    (:data:`MAX_PARTS`: a reply matched alone, then its question; two steps that led to one
    answer), so a quoted unit keeps its ask and its answer; else it leaves out what the better
    units show already. ``taken``: units shown before this search's (never joined)."""

    def __init__(self, taken: Sequence[tuple[tuple[Any, ...], Sequence[Part]]] = ()) -> None:
        self.units: list[tuple[tuple[Any, ...], list[Part]]] = []
        self._at: dict[tuple[str, int], int] = {(row[0], p.seq): -1 for row, parts in taken for p in parts}

    def holds(self, session_id: str, seq: int) -> bool:
        return (session_id, seq) in self._at

    def add(self, row: tuple[Any, ...], parts: Sequence[Part]) -> bool:
        """Show the unit of ``row`` (its session first); False when it joined a better one."""
        sid = row[0]
        at = {self._at[(sid, p.seq)] for p in parts if (sid, p.seq) in self._at}
        if len(at) == 1 and (i := at.pop()) >= 0:
            better_row, better = self.units[i]
            union = {p.seq: p for p in [*better, *parts]}
            if len(union) <= MAX_PARTS:
                self.units[i] = (better_row, [union[q] for q in sorted(union)])
                self._at.update({(sid, q): i for q in union})
                return False
        kept = [p for p in parts if (sid, p.seq) not in self._at]
        self._at.update({(sid, p.seq): len(self.units) for p in kept})
        self.units.append((row, kept))
        return True


def unit_text(parts: Sequence[Part]) -> str:
    """A unit's messages as one text (what the relevance decision reads)."""
    return "\n".join(p.body for p in parts)


def shape_units(
    units: Sequence[tuple[tuple[Any, ...], Sequence[Part]]],
    names: dict[str, str],
    terms: list[str],
    with_text: bool = False,
    texts: bool = False,
) -> list[dict[str, Any]]:
    """(ranked row (session_id, role, seq, ts, body, rank), its unit) -> search results: where the
    match is (``seq``, ``role``, ``date``, ``excerpt``) and the unit's messages (``seqs``, and
    ``parts``: each one's seq, role and excerpt). ``with_text``: ``text``, the unit's text, and
    ``texts``, each message's, in place of the excerpts (the caller cuts its own: automatic
    recall quotes a few of the units it reads, and cutting excerpts of long tool results is most
    of a search's time). ``texts``: ``texts`` beside the excerpts (the memory tool's judge reads
    them)."""
    out: list[dict[str, Any]] = []
    for (sid, role, seq, ts, body, rank), parts in units:
        hit: dict[str, Any] = {
            "session_id": sid,
            "session_name": names.get(sid, ""),
            "date": format_date(ts),
            "role": role,
            "seq": seq,
            "seqs": [p.seq for p in parts],
            "parts": [{"seq": p.seq, "role": p.role} for p in parts],
            "score": round(-rank, 4),
        }
        if with_text:
            hit["text"] = unit_text(parts)
            hit["texts"] = [p.body for p in parts]
        else:
            hit["excerpt"] = cut = excerpt(body, terms, MATCH_CHARS, conclusion=concludes(role))
            prose = [p for p in parts if is_prose(p)]
            reply = answer(prose).seq if prose else None  # where the fact usually is: as much room as the match
            for part, p in zip(hit["parts"], parts, strict=True):
                width = MATCH_CHARS if p.seq == seq else REPLY_CHARS if p.seq == reply else OTHER_CHARS
                part["excerpt"] = cut if p.seq == seq and p.body == body else excerpt(p.body, terms, width, conclusion=concludes(p.role))
            if texts:
                hit["texts"] = [p.body for p in parts]
        out.append(hit)
    return out
