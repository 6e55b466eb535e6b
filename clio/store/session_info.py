"""A session's meta as ``session.json`` holds it (:class:`SessionInfo`), how a readable one is
told from a damaged one (:func:`is_meta`), and how a new session's id is made. Pure: no I/O."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DIGEST_CHARS = 700  # one digest at the most (the prompt asks for about 70 words)
MAX_DIGESTS = 50  # a session kept open for months, read back as often: its newest digests (recall keeps all it indexed)


@dataclass(frozen=True)
class Digest:
    """What a consolidation's read-back said the session settled, in the model's words and in
    other words a later question might use (clio.app.consolidate): indexed for recall as one unit
    of the session (clio.recall.refresh), quoted as the model's summary, never as the user's.
    ``through``: the session's message count it covers; ``at``: when it was written;
    ``tainted``: the part it covers read outside content (clio.memory.provenance), so recall
    quotes it as drawn from file content."""

    through: int
    text: str
    at: float
    tainted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"through": self.through, "text": self.text, "at": self.at, "tainted": self.tainted}


def _digests(v: Any) -> list[Digest]:
    """The readable digests of ``session.json`` (a malformed one is left out, never fatal).
    Anything but an explicit ``tainted: false`` reads as tainted, as a memory's provenance does:
    a damaged or older record never makes a digest look drawn from clean turns only."""
    out = []
    for d in v if isinstance(v, list) else []:
        if isinstance(d, dict) and isinstance(d.get("text"), str) and d["text"].strip():
            at = d.get("at")
            when = float(at) if isinstance(at, (int, float)) else 0.0
            out.append(Digest(_count(d.get("through")), d["text"][:DIGEST_CHARS], when, d.get("tainted") is not False))
    return out[-MAX_DIGESTS:]


@dataclass
class SessionInfo:
    id: str
    name: str = ""
    model: str = ""
    created: float = 0.0
    updated: float = 0.0
    message_count: int = 0
    path: Path | None = None
    usage: dict[str, int] = field(default_factory=dict)
    # the part of ``usage`` the judge model's requests spent (recall_judge_model), by the model's
    # name: /cost and the usage line price it at that model's price (clio.llm.prices.Bill)
    judged: dict[str, dict[str, int]] = field(default_factory=dict)
    consolidated: int = 0  # messages already read back into long-term memory (clio.memory.consolidate)
    # the message count at which the part after ``consolidated`` was judged not worth a read-back
    # (clio.memory.consolidate.worth_it): not read back again until more messages come, and then
    # read from ``consolidated`` (a second question makes the first part of a conversation)
    checked: int = 0
    digests: list[Digest] = field(default_factory=list)  # what its read-backs said it settled, oldest first

    def unread(self) -> bool:
        """Whether messages came since the session was read back or judged not worth it."""
        return self.message_count > max(self.consolidated, self.checked)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "model": self.model,
            "created": self.created,
            "updated": self.updated,
            "message_count": self.message_count,
            "usage": self.usage,
            **({"judged": self.judged} if self.judged else {}),
            "consolidated": self.consolidated,
            "checked": self.checked,
            **({"digests": [d.to_dict() for d in self.digests]} if self.digests else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: Path | None) -> SessionInfo:
        return cls(
            id=str(d.get("id", path.name if path else "")),
            name=str(d.get("name") or ""),
            model=str(d.get("model") or ""),
            created=float(d.get("created") or 0),
            updated=float(d.get("updated") or 0),
            message_count=int(d.get("message_count") or 0),
            path=path,
            usage=_counts(d.get("usage")),
            judged={str(m): _counts(u) for m, u in (d.get("judged") or {}).items()} if isinstance(d.get("judged"), dict) else {},
            consolidated=_count(d.get("consolidated")),
            checked=_count(d.get("checked")),  # absent before it existed: 0
            digests=_digests(d.get("digests")),
        )


def _counts(d: Any) -> dict[str, int]:
    """A usage record's numbers (a damaged one: what of it reads)."""
    return {str(k): int(v) for k, v in d.items() if isinstance(v, (int, float))} if isinstance(d, dict) else {}


def _count(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def new_session_id(now: float | None = None) -> str:
    t = time.localtime(now if now is not None else time.time())
    return time.strftime("%Y%m%d-%H%M%S", t) + "-" + secrets.token_hex(2)


def is_meta(v: Any) -> bool:
    """A session.json clio can read: a dict whose fields convert (else it is damaged)."""
    if not isinstance(v, dict):
        return False
    try:
        SessionInfo.from_dict(v, None)
    except (TypeError, ValueError, AttributeError):
        return False
    return True
