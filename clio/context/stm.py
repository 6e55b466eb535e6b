"""Short-term memory: message units and their repair.

A *unit* is the atom of trimming: an assistant message that calls tools together with
every tool result answering it (matched by ``tool_call_id``), or any other single
message.  Trimming whole units guarantees that no tool result loses its call and no
call loses its result, which every chat endpoint rejects.
"""

from __future__ import annotations

from clio.messages import KIND_RECALL, Message, meta

INTERRUPTED = "[no result: the call was interrupted]"
KIND_SYNTHETIC = "synthetic_result"


def call_ids(msg: Message) -> list[str]:
    """Ids of the tool calls an assistant message makes (in order, without duplicates)."""
    if msg.get("role") != "assistant":
        return []
    out: list[str] = []
    for call in msg.get("tool_calls") or ():
        cid = call.get("id") if isinstance(call, dict) else None
        if isinstance(cid, str) and cid not in out:
            out.append(cid)
    return out


def group_units(msgs: list[Message]) -> list[list[Message]]:
    """Split messages into units; a tool-calling assistant message gathers all its results.

    Results may arrive in any order and anywhere after their call; they are placed in
    their call's unit, so flattening the units yields a valid order. The recall block of a user
    message (``KIND_RECALL``) joins that message's unit.  A tool result with
    no earlier call (an orphan) is a unit of its own, which ``repair`` removes.
    """
    units: list[list[Message]] = []
    open_calls: dict[str, int] = {}  # tool_call_id -> index of its unit
    for msg in msgs:
        if msg.get("role") == "tool":
            idx = open_calls.get(msg.get("tool_call_id") or "")
            if idx is not None:
                units[idx].append(msg)
                continue
            units.append([msg])
            continue
        if meta(msg).get("kind") == KIND_RECALL and units and units[-1][0].get("role") == "user":
            units[-1].append(msg)  # recalled for that message: trimmed with it, never alone
            continue
        units.append([msg])
        for cid in call_ids(msg):
            open_calls[cid] = len(units) - 1
    return units


def flatten(units: list[list[Message]]) -> list[Message]:
    return [m for unit in units for m in unit]


def synthetic_result(call_id: str, name: str | None = None) -> Message:
    msg: Message = {
        "role": "tool",
        "tool_call_id": call_id,
        "content": INTERRUPTED,
        "meta": {"kind": KIND_SYNTHETIC},
    }
    if name:
        msg["name"] = name
    return msg


def _repair_unit(unit: list[Message]) -> list[Message] | None:
    """The unit made valid, None to drop it; the same list object when nothing changes."""
    head = unit[0]
    if head.get("role") == "tool":
        return None  # orphan: its call is not in the list
    ids = call_ids(head)
    if not ids:
        return unit
    seen: set[str] = set()
    results: list[Message] = []
    for msg in unit[1:]:
        cid = msg.get("tool_call_id") or ""
        if cid in seen:
            continue  # a second answer to one call: keep the first
        seen.add(cid)
        results.append(msg)
    missing = [cid for cid in ids if cid not in seen]
    if not missing and len(results) == len(unit) - 1:
        return unit
    names = {
        c.get("id"): (c.get("function") or {}).get("name")
        for c in head.get("tool_calls") or ()
        if isinstance(c, dict)
    }
    return [head, *results, *(synthetic_result(cid, names.get(cid)) for cid in missing)]


def repair(msgs: list[Message]) -> list[Message]:
    """Messages an endpoint accepts: no orphaned tool result, no unanswered tool call.

    Orphaned results are dropped (their call is gone; the summary or archive keeps it).
    An unanswered call gets a synthetic result ``[no result: the call was interrupted]``
    right after its unit rather than losing the call: the model then knows it tried and
    that the outcome is unknown (a write or a commit may have happened), instead of
    silently forgetting and possibly repeating a side effect; and an assistant message
    that only called tools does not become an empty message.
    Results are moved next to their call.  Message objects are reused, not copied, so a
    window that needs no repair comes back equal element by element (``is``).
    """
    out: list[Message] = []
    for unit in group_units(msgs):
        fixed = _repair_unit(unit)
        if fixed is not None:
            out.extend(fixed)
    return out


def is_valid(msgs: list[Message]) -> bool:
    """True when every tool result directly follows its call's unit and every call is answered."""
    pending: set[str] = set()
    for msg in msgs:
        role = msg.get("role")
        if role == "tool":
            cid = msg.get("tool_call_id") or ""
            if cid not in pending:
                return False
            pending.discard(cid)
            continue
        if pending:
            return False
        pending = set(call_ids(msg))
    return not pending


def latest_user_index(msgs: list[Message]) -> int | None:
    """Index of the latest user message (the task anchor), None when there is none."""
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i].get("role") == "user":
            return i
    return None
