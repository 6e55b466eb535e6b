"""SkillStore: the behaviours' posteriors and the signals that made them, user-wide, in
``$CLIO_HOME/skills.json`` next to the preferences.

The catalogue (clio/prompts/skills.md) gives the texts; the file keeps each behaviour's state (a, b,
count, pinned, banned), the behaviours the user added, every signal with the session and turn
it judged (so the history can be inspected and replayed), and the last turn of each session
with the behaviours active in it (so ``/bad`` works after ``--resume`` too). Every change is
a read-modify-write under the inter-process lock (:class:`clio.store.json_doc.JsonDocument`),
applied to what is on disk at that moment: concurrent processes lose no signal.
``SkillStore(None, ...)`` (incognito) reads and writes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from clio.memory import skills as S
from clio.memory.skills import Signal, Skill, SkillError
from clio.store.json_doc import JsonDocument

T = TypeVar("T")
Data = dict[str, Any]
VERSION = 1
MAX_SIGNALS = 5000  # the oldest go first; posteriors keep what they taught
MAX_SESSIONS = 200  # last turns remembered


def _empty() -> Data:
    return {"version": VERSION, "skills": [], "signals": [], "turns": {}}


def _valid(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("skills"), list)


def _merge(catalogue: list[Skill], stored: list[Any]) -> tuple[list[Skill], list[Any]]:
    """(the behaviours: catalogue with its stored state, then the user's; stored entries kept as
    they are: unreadable ones and catalogue ones the catalogue no longer has)."""
    by_id: dict[str, Skill] = {}
    kept: list[Any] = []
    for raw in stored:
        try:
            sk = Skill.from_dict(raw)
        except SkillError:
            kept.append(raw)
            continue
        by_id[sk.id] = sk
    out: list[Skill] = []
    for c in catalogue:
        s = by_id.pop(c.id, None)
        merged = Skill(c.id, c.text, list(c.contradicts), "catalogue", opt_in=c.opt_in)
        if s is not None:
            merged.a, merged.b, merged.n, merged.pinned, merged.banned = s.a, s.b, s.n, s.pinned, s.banned
        out.append(merged)
    for s in by_id.values():
        if s.source == "user":
            out.append(s)
        else:
            kept.append(s.to_dict())
    return out, kept


class SkillStore:
    def __init__(
        self,
        path: Path | None,
        catalogue: list[Skill],
        *,
        clock: Callable[[], float] = time.time,
        redact: Callable[[str], str] = lambda t: t,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.catalogue = catalogue
        self.clock = clock
        self.redact = redact  # notes and added texts are persisted: through the one redactor
        self._doc = JsonDocument(self.path, _empty, validate=_valid)

    def _read(self) -> Data:
        return self._doc.read()

    def _change(self, fn: Callable[[list[Skill], Data], T]) -> T:
        def edit(data: Data) -> T:
            skills, kept = _merge(self.catalogue, data["skills"])
            result = fn(skills, data)
            data["skills"] = [s.to_dict() for s in skills] + kept
            data["version"] = VERSION
            return result

        return self._doc.edit(edit)

    # -- reading ---------------------------------------------------------------------------------
    def all(self) -> list[Skill]:
        return _merge(self.catalogue, self._read()["skills"])[0]

    def get(self, sid: str) -> Skill:
        return S.find(self.all(), sid)

    def signals(self) -> list[Signal]:
        out: list[Signal] = []
        for raw in self._read().get("signals") or []:
            try:
                out.append(Signal.from_dict(raw))
            except SkillError:
                continue
        return out

    def chosen(self, session: str, which: str = "active") -> list[str] | None:
        """The behaviours ``session``'s prompt carries until its next trim (None: not drawn yet);
        ``which="rewarded"``: those of them it carries as chosen or rewarded."""
        entry = (self._read().get("turns") or {}).get(session)
        active = entry.get(which) if isinstance(entry, dict) else None
        return [str(s) for s in active] if isinstance(active, list) else None

    def last_turn(self, session: str) -> tuple[int, list[str]] | None:
        """The last turn of ``session`` this store heard of, with the behaviours active in it."""
        entry = (self._read().get("turns") or {}).get(session)
        if not isinstance(entry, dict):
            return None
        try:
            return int(entry["turn"]), [str(s) for s in entry.get("skills") or []]
        except (KeyError, TypeError, ValueError):
            return None

    # -- writing ---------------------------------------------------------------------------------
    def add(self, text: str) -> Skill:
        clean = S.check_text(self.redact(text))

        def fn(skills: list[Skill], data: Data) -> Skill:
            for s in skills:
                if s.text.lower() == clean.lower():
                    raise SkillError(f"already there as {s.id}")
            sk = Skill(S.new_user_id(clean, {s.id for s in skills}), clean, source="user")
            skills.append(sk)
            return sk

        return self._change(fn)

    def set_flags(self, sid: str, *, pinned: bool | None = None, banned: bool | None = None) -> Skill:
        def fn(skills: list[Skill], data: Data) -> Skill:
            sk = S.find(skills, sid)
            if pinned is not None:
                sk.pinned = pinned
                sk.banned = sk.banned and not pinned
            if banned is not None:
                sk.banned = banned
                sk.pinned = sk.pinned and not banned
            return sk

        return self._change(fn)

    def record(
        self,
        kind: str,
        skill_ids: list[str],
        *,
        weight: float | None = None,
        session: str = "",
        turn: int = 0,
        note: str = "",
    ) -> Signal:
        """One signal about a turn: the posteriors of the behaviours it judges move, and the
        signal joins the history. A turn is judged once: a second ``/good`` or ``/bad`` of the same
        kind is refused (SkillError), one of the other kind replaces the first (its effect taken
        back)."""
        sig = Signal(
            S.check_kind(kind),
            S.signal_weight(kind, weight),
            tuple(skill_ids),
            session,
            turn,
            self.redact(note.strip())[:500],
            self.clock(),
        )

        def fn(skills: list[Skill], data: Data) -> Signal:
            signals = list(data.get("signals") or [])
            if sig.kind in S.EXPLICIT and session and turn > 0:
                for i, raw in enumerate(signals):
                    if not (isinstance(raw, dict) and raw.get("session") == session and raw.get("turn") == turn):
                        continue
                    if raw.get("kind") == sig.kind:
                        raise SkillError(f"turn {turn} is already judged {sig.kind}; a turn is judged once")
                    if raw.get("kind") in S.EXPLICIT:  # the user changed their mind: replace it
                        old = Signal.from_dict(raw)
                        for sk in skills:
                            if sk.id in old.skills:
                                S.unupdate(sk, old.kind, old.weight)
                        signals.pop(i)
                        break
            for sk in skills:
                if sk.id in sig.skills:
                    S.update(sk, sig.kind, sig.weight)
            signals.append(sig.to_dict())
            data["signals"] = signals[-MAX_SIGNALS:]
            return sig

        return self._change(fn)

    def remember_chosen(self, session: str, active: list[str], rewarded: list[str]) -> None:
        """The behaviours ``session``'s prompt carries after a draw made between turns (a trim by
        /compact or /session trim): the next run resuming it sends these, not the set of the
        session's last turn. The last turn's record is kept as it was."""
        self._record(session, {"active": list(active), "rewarded": list(rewarded)})

    def remember_turn(
        self, session: str, turn: int, skill_ids: list[str], active: list[str], rewarded: list[str] | None = None
    ) -> None:
        """The last turn of ``session`` (the behaviours it had) and the behaviours its prompt
        carries now (the next run resuming it keeps them until a trim: the prefix stays cached)."""
        self._record(
            session,
            {"turn": turn, "skills": list(skill_ids), "active": list(active), "rewarded": list(rewarded or [])},
        )

    def _record(self, session: str, fields: dict[str, Any]) -> None:
        """Update ``session``'s record with ``fields`` (a new record starts at turn 0); the
        newest :data:`MAX_SESSIONS` sessions are kept."""

        def fn(skills: list[Skill], data: Data) -> None:
            turns = data.get("turns") if isinstance(data.get("turns"), dict) else {}
            assert isinstance(turns, dict)
            old = turns.pop(session, None)
            entry = dict(old) if isinstance(old, dict) else {"turn": 0, "skills": []}
            entry.update(fields, at=self.clock())
            turns[session] = entry
            data["turns"] = dict(list(turns.items())[-MAX_SESSIONS:])

        self._change(fn)
