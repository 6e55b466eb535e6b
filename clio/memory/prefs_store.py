"""PrefStore: the user's preferences in ``$CLIO_HOME/preferences.json``.

Every change is a read-modify-write under the inter-process lock
(:class:`clio.store.json_doc.JsonDocument`), applied to what is on disk at that moment, so
several clio processes adding preferences at once keep every one. Entries this version
cannot read are carried through untouched. ``PrefStore(None)`` (incognito) reads and
writes nothing: preferences then live in memory for the session only.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from clio.memory import prefs as P
from clio.memory.ids import find_by_id
from clio.memory.prefs import Preference, PrefError
from clio.store.json_doc import JsonDocument

T = TypeVar("T")
Data = dict[str, Any]
VERSION = 1


class Added(NamedTuple):
    pref: Preference
    merged: bool  # True when it re-added an existing (near-)duplicate
    previous_score: float | None  # the score before smoothing, when merged


def _empty() -> Data:
    return {"version": VERSION, "preferences": []}


def _valid(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("preferences"), list)


class PrefStore:
    def __init__(
        self,
        path: Path | None,
        *,
        clock: Callable[[], float] = time.time,
        half_life: float = P.HALF_LIFE_DAYS,
        floor: float = P.FLOOR,
        redact: Callable[[str], str] = lambda t: t,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.clock = clock
        self.redact = redact  # every text added or changed, whoever adds it (/prefs add, the tool)
        self.half_life = half_life
        self.floor = floor
        self._doc = JsonDocument(self.path, _empty, validate=_valid)  # in memory only in incognito

    # -- plumbing --------------------------------------------------------------------------------
    def _redacted(self, text: Any) -> Any:
        return self.redact(text) if isinstance(text, str) else text

    def _read(self) -> Data:
        return self._doc.read()

    def _change(self, fn: Callable[[list[Preference]], T]) -> T:
        """Apply ``fn`` to the current preferences (on disk, under the lock) and save the result."""

        def edit(data: Data) -> T:
            parsed, raw_kept = _parse(data["preferences"])
            result = fn(parsed)
            data["preferences"] = [p.to_dict() for p in parsed] + raw_kept
            data["version"] = VERSION
            return result

        return self._doc.edit(edit)

    def weight(self, p: Preference, now: float | None = None) -> float:
        return P.pref_weight(p, self.clock() if now is None else now, self.half_life, self.floor)

    # -- reading ---------------------------------------------------------------------------------
    def all(self) -> list[Preference]:
        return _parse(self._read()["preferences"])[0]

    def get(self, pid: str) -> Preference:
        return _find(self.all(), pid)

    def recall(
        self, query: str | None = None, scenario: str | None = None, type: str | None = None, limit: int = 10
    ) -> list[Preference]:
        """Preferences matching a query (words), a scenario and/or a type; best first."""
        kind = P.check_kind(type)
        return P.recall(self.all(), self.clock(), query or None, scenario or None, kind, limit)

    def top(self, n: int = 10) -> list[Preference]:
        now = self.clock()
        return sorted(self.all(), key=lambda p: -self.weight(p, now))[: max(0, n)]

    def select_for_prompt(
        self, scenario: str | None, budget_tokens: int, count_tokens: Callable[[str], int]
    ) -> list[Preference]:
        return P.select_for_prompt(self.all(), self.clock(), scenario, budget_tokens, count_tokens)

    def prompt_block(
        self, scenario: str | None, budget_tokens: int, count_tokens: Callable[[str], int]
    ) -> str:
        """The rendered block for the system prompt ('' when there is nothing to say)."""
        return P.render(self.select_for_prompt(scenario, budget_tokens, count_tokens))

    # -- writing ---------------------------------------------------------------------------------
    def add(
        self, text: str, score: float | str, kind: str | None = None, scenarios: list[str] | None = None
    ) -> Added:
        """Record a preference; a (near-)duplicate of an existing one smooths its score instead."""
        text = P.check_text(self._redacted(text))
        value = P.check_score(score)
        kind = P.check_kind(kind)
        scen = P.check_scenarios(scenarios)
        now = self.clock()

        def fn(prefs: list[Preference]) -> Added:
            dup = P.find_duplicate(prefs, text)
            if dup is not None:
                before = dup.score
                P.readd(dup, value, kind, scen, now)
                return Added(dup, True, before)
            taken = {p.id for p in prefs}
            pid = _new_id(taken)
            p = P.new_preference(pid, text, value, kind, scen, now)
            prefs.append(p)
            return Added(p, False, None)

        return self._change(fn)

    def update(
        self,
        pid: str,
        text: str | None = None,
        score: float | str | None = None,
        kind: str | None = None,
        scenarios: list[str] | None = None,
    ) -> Preference:
        """Correct a preference (set, not smoothed); it counts as seen now."""
        new_text = P.check_text(self._redacted(text)) if text is not None else None
        value = P.check_score(score) if score is not None else None
        kind = P.check_kind(kind)
        scen = P.check_scenarios(scenarios) if scenarios is not None else None
        if new_text is None and value is None and kind is None and scen is None:
            raise PrefError("nothing to update: give text, score, type or scenarios")
        now = self.clock()

        def fn(prefs: list[Preference]) -> Preference:
            p = _find(prefs, pid)
            if new_text is not None:
                p.text = new_text
            if value is not None:
                p.score = value
            p.type = P.band_for(p.score, kind or p.type)
            if scen is not None:
                p.scenarios = scen
            p.last_seen = now
            return p

        return self._change(fn)

    def remove(self, pid: str) -> Preference:
        def fn(prefs: list[Preference]) -> Preference:
            p = _find(prefs, pid)
            prefs.remove(p)
            return p

        return self._change(fn)

    def apply(self, pid: str) -> tuple[Preference, bool]:
        """The agent followed this preference: refresh its clock (at most once per 12 hours).

        Returns the preference and whether it was refreshed; nothing is written when not.
        """
        now = self.clock()
        current = self.get(pid)
        if current.last_applied is not None and now - current.last_applied < P.COOLDOWN_SECONDS:
            return current, False

        def fn(prefs: list[Preference]) -> tuple[Preference, bool]:
            p = _find(prefs, current.id)
            return p, P.touch(p, now)

        return self._change(fn)


def _parse(entries: list[Any]) -> tuple[list[Preference], list[Any]]:
    """(readable preferences, entries kept as they are because they could not be read)."""
    good: list[Preference] = []
    kept: list[Any] = []
    for e in entries:
        try:
            good.append(Preference.from_dict(e))
        except PrefError:
            kept.append(e)
    return good, kept


def _find(prefs: list[Preference], pid: str) -> Preference:
    return find_by_id(
        prefs, pid, lambda p: p.id, noun="preference", nouns="preferences", hint="recall lists the ids", error=PrefError
    )


def _new_id(taken: set[str]) -> str:
    while True:
        pid = "p" + secrets.token_hex(3)
        if pid not in taken:
            return pid
