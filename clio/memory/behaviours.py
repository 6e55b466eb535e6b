"""Behaviours in a running clio: which are in the prompt, which turn each signal judges.

``Behaviours`` is ``Services.skills``. It draws the behaviours for the prompt (a memory block
after the request's head) once per session, or again when the user changes them (/skills pin,
ban...), remembers which were active in each turn, and turns feedback into signals:

- explicit: ``/good`` and ``/bad`` about the last turn;
- implicit, weighted lower: the user approving or denying the turn's tool actions (one signal
  per turn, a denial wins), the next message opening with a correction, ``/undo`` of the turn's
  changes (the /undo command calls :meth:`Behaviours.record_signal` with kind ``"undo"``).

Off (``enabled`` False) under ``--no-ltm`` and ``--incognito``: nothing drawn, nothing recorded.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from clio.actions import NONE, Actions
from clio.memory import skills as S
from clio.memory.prefs_store import PrefStore
from clio.memory.shown import judged
from clio.memory.skills import Signal, Skill, SkillError
from clio.memory.skills_store import SkillStore


class Behaviours:
    def __init__(
        self,
        store: SkillStore,
        prefs: PrefStore | None,
        rng: random.Random,
        *,
        enabled: bool = True,
        actions: Actions = NONE,
    ) -> None:
        self.store = store
        self.prefs = prefs
        self.actions = actions  # what each tool operation does (clio.actions): which behaviours a turn showed
        self.rng = rng
        self.enabled = enabled
        self.active: list[str] = []  # in the system prompt now
        self.session = ""
        self.turn = 0  # the number of the last turn begun in this session
        self.turns: dict[int, set[str]] = {}  # turn -> behaviours active in it (this run)
        self.starts: dict[int, int] = {}  # the user message's position in the session -> turn
        self._open = False
        self._approvals: list[bool] = []
        self._fixed: list[str] | None = None  # sent: the session's behaviours
        self._rewarded: set[str] | None = None  # which of them were sent as chosen or rewarded
        self._between_turns = False  # the pending draw was asked for outside any turn

    # -- selection ---------------------------------------------------------------------------------
    def stated(self) -> list[tuple[str, str]]:
        return [(p.type, p.text) for p in self.prefs.all()] if self.prefs is not None else []

    def block(self, budget_tokens: int, count_tokens: Callable[[str], int]) -> str:
        """The behaviours for the prompt: drawn at the session's first request (or after
        :meth:`redraw`), the same ones from then on (this run and a run resuming the session)."""
        if not self.enabled:
            return ""
        skills = self.store.all()
        if self._fixed is None:  # a new session, or after a trim: draw
            chosen = S.select(skills, budget_tokens, count_tokens, self.rng, self.stated())
            self._rewarded = {s.id for s in chosen if s.rewarded}
            if self._between_turns:  # /compact, /session trim: no turn will record this draw
                self._between_turns = False
                self._fixed = [s.id for s in chosen]
                self.store.remember_chosen(self.session, self._fixed, sorted(self._rewarded))
        else:  # the same ones as before (this run or the run that left the session): they fitted
            # when drawn, and re-checking the budget with a token estimate that has since learned a
            # new ratio could drop one and change the prompt's prefix
            by_id = {s.id: s for s in skills}
            chosen = [by_id[sid] for sid in self._fixed if sid in by_id]
        self.active = [s.id for s in chosen]
        if self._open:  # a trim in the middle of a turn: the turn saw both sets
            self.turns.setdefault(self.turn, set()).update(self.active)
        return S.render(chosen, self._rewarded)

    # -- turns -------------------------------------------------------------------------------------
    def attach(self, session: str) -> None:
        self.session, self.turns, self.starts, self._open = session, {}, {}, False
        self._between_turns = False
        last = self.store.last_turn(session) if self.enabled else None
        self.turn = last[0] if last else 0
        self._fixed = self.store.chosen(session) if self.enabled else None
        rewarded = self.store.chosen(session, "rewarded") if self.enabled else None
        self._rewarded = set(rewarded) if rewarded is not None else None

    def redraw(self) -> None:
        """The user changed the behaviours (/skills pin, ban...): the next prompt draws them again.
        Nothing else draws again within a session (not a trim: the block is part of what follows
        the request's head, and a new draw there would cost the prompt cache its prefix). A draw
        outside a turn (a slash command) has no turn to record it: it is fixed and stored at once,
        so the figure a command reports and the next run's prompt carry the same behaviours."""
        drawn = self._fixed is not None  # before the session's first request the draw is still open
        self._fixed = None
        self._between_turns = drawn and self.enabled and bool(self.session) and not self._open

    def begin_turn(self, text: str, start: int = -1) -> Signal | None:
        """A user message (at position ``start`` in the session): a correction judges the
        previous turn; then a new turn opens."""
        sig = None
        if self.enabled and self.turn > 0 and S.is_correction(text):
            sig = self._record("correction", self.turn, None, "")
        self.turn += 1
        self._open, self._approvals = True, []
        self.turns[self.turn] = set(self.active)
        self.starts[start] = self.turn
        return sig

    def turn_sent(self) -> None:
        """The first request of the turn is about to go out with the behaviours active now: they
        stay for the session (also for a later run resuming it)."""
        self._fixed = list(self.active)
        if self._open:
            self.turns[self.turn] = set(self.active)

    def approval(self, granted: bool) -> None:
        if self._open:
            self._approvals.append(granted)

    def end_turn(self, messages: list[dict[str, Any]] | None = None) -> Signal | None:
        """The turn is over; ``messages`` (what followed the user's message) tell which of its
        behaviours it showed: feedback about it judges those (clio.memory.shown)."""
        if not self._open:
            return None
        self._open = False
        if not self.enabled:
            return None
        active = sorted(self.turns.get(self.turn, set()))
        skills = judged(active, messages, self.actions) if messages is not None else active
        self.turns[self.turn] = set(skills)
        self.store.remember_turn(self.session, self.turn, skills, self.active, sorted(self._rewarded or ()))
        if not self._approvals:
            return None
        return self._record("approve" if all(self._approvals) else "deny", self.turn, None, "")

    # -- signals -----------------------------------------------------------------------------------
    def skills_of(self, turn: int) -> list[str] | None:
        if turn in self.turns:
            return sorted(self.turns[turn])
        last = self.store.last_turn(self.session)
        return last[1] if last and last[0] == turn else None

    def record_signal(
        self, kind: str, turn: int | None = None, weight: float | None = None, note: str = ""
    ) -> Signal:
        """Feedback about ``turn`` of the current session (None: the last finished or open turn):
        the posteriors of the behaviours active in it move. Raises SkillError when behaviours are
        off or the turn is unknown. ``/undo`` calls this with kind "undo"."""
        if not self.enabled:
            raise SkillError("learned behaviours are off in this run (--no-ltm or --incognito)")
        if turn is None:
            turn = self.turn
        if turn <= 0:
            raise SkillError("no turn to judge yet in this session")
        return self._record(kind, turn, weight, note)

    def undone(self, starts: list[int]) -> list[Signal]:
        """/undo put back the changes of the turns whose user messages are at ``starts``: an
        "undo" signal for each turn of this run among them (earlier runs' turns are unknown)."""
        if not self.enabled:
            return []
        return [self._record("undo", self.starts[s], None, "") for s in starts if s in self.starts]

    def _record(self, kind: str, turn: int, weight: float | None, note: str) -> Signal:
        skills = self.skills_of(turn)
        if skills is None:
            raise SkillError(f"turn {turn} of this session is not known")
        return self.store.record(kind, skills, weight=weight, session=self.session, turn=turn, note=note)

    def all(self) -> list[Skill]:
        return self.store.all()
