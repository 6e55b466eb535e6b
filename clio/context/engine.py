"""The context engine: the one object the orchestrator asks for "the messages to send".

Pure: it holds the STM window and the thread summary in memory; the orchestrator
archives messages, persists ``state()`` and the estimator's state, and feeds usage
back through ``observe``.

The request is ``head + [notes] + window``: the head is the system message, the same for a
session; the notes are one message (clio.context.notes) with the memory the app ranked, the
thread summary and the recovery text. The summary message is rendered only when a trim changes
the summary, and nothing time-dependent is put in front, so between trims every request extends
the previous one byte for byte (the prefix a provider can cache), and a trim never changes the
head.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from clio.actions import NONE, Actions
from clio.context import trim as T
from clio.context.budget import Budget
from clio.context.notes import notes_message
from clio.context.stm import latest_user_index, repair
from clio.context.tokens import TokenEstimator
from clio.context.yarn import ThreadSummary, from_dict, summarize, summary_message, to_dict
from clio.messages import Message, meta

_MAX_ROUNDS = 6  # a trim grows the summary, which may need one more trim; this converges in 2-3


@dataclass
class Prepared:
    messages: list[Message]  # system + summary + recovery + window, ready to send (still with meta)
    trimmed: bool = False
    dropped: list[Message] = field(default_factory=list)
    tokens: int = 0  # estimated prompt tokens of ``messages`` with the tools
    truncated: int = 0  # messages whose content was cut to fit


class ContextEngine:
    def __init__(
        self,
        estimator: TokenEstimator,
        budget: Budget,
        *,
        window: list[Message] | None = None,
        summary: ThreadSummary | None = None,
        recovery: str | None = None,
        actions: Actions = NONE,
    ):
        self.estimator = estimator
        self.budget = budget
        self.actions = actions  # what each tool operation does (clio.actions), for the thread summary
        self.window: list[Message] = list(window or [])
        self._summary: ThreadSummary | None = None
        self._summary_msg: Message | None = None
        self._notes: tuple[tuple[str, ...], Message | None] | None = None  # the last notes message built
        self.recovery: Message | None = T.recovery_message(recovery) if recovery else None
        # what the last prepare() left: a valid, fully answered window and its summed size, so the
        # next prepare() only looks at the messages appended since (O(new), not O(window))
        self._ok: tuple[list[Message], int, Message | None, int, TokenEstimator] | None = None
        self.summary = summary

    # -- building blocks -----------------------------------------------------------------
    def summary_max_chars(self) -> int:
        """The rendered summary's budget (its share of the budget, ``clio.context.budget``)."""
        return self.budget.shares(self.estimator.chars_per_token).summary_chars()

    @property
    def summary(self) -> ThreadSummary | None:
        return self._summary

    @summary.setter
    def summary(self, value: ThreadSummary | None) -> None:
        """Setting the summary renders its message (once: the request prefix changes only here)."""
        self._summary = value
        self._summary_msg = summary_message(value, self.summary_max_chars()) if value is not None else None

    def fixed(self, system: list[Message]) -> list[Message]:
        """What goes in front of the window: the head (``system[0]``), then clio's notes in one
        message (the rest of ``system``, the summary, the recovery: clio.context.notes)."""
        notes = list(system[1:])
        if self._summary_msg is not None:
            notes.append(self._summary_msg)
        if self.recovery is not None:
            notes.append(self.recovery)
        if not notes:
            return list(system[:1])
        key = tuple(str(m.get("content") or "") for m in notes)
        if self._notes is None or self._notes[0] != key:
            self._notes = (key, notes_message(notes))
        msg = self._notes[1]
        return [*system[:1], msg] if msg is not None else list(system[:1])

    def _absorb(self, dropped: list[Message], window: list[Message]) -> None:
        i = latest_user_index(window)
        anchor = window[i].get("content") if i is not None else None
        self.summary = summarize(dropped, self.summary, anchor if isinstance(anchor, str) else None, self.actions)

    def _run(
        self,
        system: list[Message],
        tools: list[dict[str, Any]],
        stage: Callable[[list[Message], list[Message]], T.TrimResult],
    ) -> Prepared:
        """Apply ``stage`` until it drops nothing more (each drop grows the summary), then validate."""
        window = repair(self.window)
        dropped: list[Message] = []
        truncated = 0
        for _ in range(_MAX_ROUNDS):
            res = stage(window, self.fixed(system))
            window, truncated = res.window, truncated + res.truncated
            if not res.dropped:
                break
            dropped += res.dropped
            self._absorb(res.dropped, window)
        for _ in range(_MAX_ROUNDS):
            res = T.validate(window, self.estimator, self.budget, self.fixed(system), tools)
            window, truncated = res.window, truncated + res.truncated
            if not res.dropped:
                break
            dropped += res.dropped
            self._absorb(res.dropped, window)
        self._settle(window, sum(self.estimator.size_of(m) for m in window))
        messages = self.fixed(system) + window
        return Prepared(
            messages=messages,
            trimmed=bool(dropped) or truncated > 0,
            dropped=dropped,
            tokens=self.estimator.count_request(messages, tools),
            truncated=truncated,
        )

    def _settle(self, window: list[Message], size: int) -> None:
        self.window = window
        self._ok = (window, len(window), window[-1] if window else None, size, self.estimator)

    def _quick(self, system: list[Message], tools: list[dict[str, Any]]) -> Prepared | None:
        """The untrimmed request when only appends happened since the last prepare and all fits.

        The window left by the last prepare is valid and every call in it is answered, so
        repairing the appended tail alone equals repairing the whole window.
        """
        ok = self._ok
        w = self.window
        if ok is None or w is not ok[0] or ok[4] is not self.estimator or len(w) < ok[1]:
            return None
        n_ok, last, size = ok[1], ok[2], ok[3]
        if n_ok and w[n_ok - 1] is not last:
            return None
        tail = w[n_ok:]
        fixed_tail = repair(tail)
        est = self.estimator
        size += sum(est.size_of(m) for m in fixed_tail)
        fixed = self.fixed(system)
        total = est.tokens_from(
            size + sum(est.size_of(m) for m in fixed) + est.size_of_tools(tools),
            len(fixed) + n_ok + len(fixed_tail),
        )
        if total > self.budget.proactive_at * self.budget.limit or total > self.budget.limit:
            return None
        if len(fixed_tail) != len(tail) or any(a is not b for a, b in zip(fixed_tail, tail, strict=True)):
            w = w[:n_ok] + fixed_tail
        self._settle(w, size)
        return Prepared(messages=fixed + w, tokens=total)

    # -- the API the orchestrator uses -----------------------------------------------------
    def append(self, msg: Message) -> None:
        self.window.append(msg)

    def extend(self, msgs: Iterable[Message]) -> None:
        self.window.extend(msgs)

    def prepare(self, system: list[Message], tools: list[dict[str, Any]]) -> Prepared:
        """The request for this iteration: proactive trim, then validation against the limit."""
        quick = self._quick(system, tools)
        if quick is not None:
            return quick

        def stage(window: list[Message], fixed: list[Message]) -> T.TrimResult:
            res = T.proactive(window, self.estimator, self.budget, fixed, tools)
            if res.dropped:
                self.recovery = None  # stale after a new trim; the merged summary carries on
            return res

        return self._run(system, tools, stage)

    def force_trim(
        self, system: list[Message], tools: list[dict[str, Any]], target: float | None = None
    ) -> Prepared:
        """Trim now down to ``target`` of the limit (default the budget's target): /session trim."""
        goal = int((self.budget.target if target is None else target) * self.budget.limit)

        def stage(window: list[Message], fixed: list[Message]) -> T.TrimResult:
            return T.drop_units(window, self.estimator, fixed, tools, goal)

        return self._run(system, tools, stage)

    def reactive(
        self, level: int, system: list[Message], tools: list[dict[str, Any]], recovery_text: str
    ) -> Prepared:
        """After a context-length rejection: level 1 = 50%, 2 = 25%, 3 = minimal, with a recovery message."""
        self.recovery = T.recovery_message(recovery_text) if recovery_text.strip() else None

        def stage(window: list[Message], fixed: list[Message]) -> T.TrimResult:
            return T.reactive(level, window, self.estimator, self.budget, fixed, tools)

        return self._run(system, tools, stage)

    def observe(self, sent: list[Message], tools: list[dict[str, Any]], prompt_tokens: int) -> None:
        """Teach the estimator from the usage the endpoint reported for ``sent``."""
        self.estimator.observe(sent, tools, prompt_tokens)

    def used_tokens(self, system: list[Message], tools: list[dict[str, Any]]) -> int:
        """Estimated prompt tokens of the next request as things stand (no trimming)."""
        return self.estimator.count_request(self.fixed(system) + self.window, tools)

    def tokens_if_compacted(
        self, note: Message, task: str | None, system: list[Message], tools: list[dict[str, Any]]
    ) -> int:
        """``used_tokens`` as it would be after ``compacted(note, task)``; nothing changes."""
        summary = summary_message(
            summarize(list(self.window), self.summary, task, self.actions), self.summary_max_chars()
        )
        recovery = [self.recovery] if self.recovery is not None else []
        notes = notes_message([*system[1:], summary, *recovery])
        return self.estimator.count_request([*system[:1], *([notes] if notes else []), note], tools)

    def compacted(self, note: Message, task: str | None) -> None:
        """The window was summarised by the model into ``note``: fold it into the thread summary
        (so files, commits and errors stay named) and carry on from the note alone."""
        self.summary = summarize(list(self.window), self.summary, task, self.actions)
        self.window = [note]
        self._ok = None

    def clear(self) -> None:
        """Start over (/clear): empty window, no summary, no recovery."""
        self.window = []
        self._ok = None
        self.summary = None
        self.recovery = None

    # -- persistence -----------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """``{"window_seqs", "summary", "recovery"}``; window messages themselves live in the archive.

        Messages without an integer ``meta["seq"]`` (synthetic results) are left out;
        ``repair`` recreates them on the next ``prepare``.
        """
        seqs = [s for s in (meta(m).get("seq") for m in self.window) if isinstance(s, int)]
        return {
            "window_seqs": seqs,
            "summary": to_dict(self.summary) if self.summary is not None else None,
            "recovery": self.recovery.get("content") if self.recovery is not None else None,
        }

    @classmethod
    def from_state(
        cls,
        estimator: TokenEstimator,
        budget: Budget,
        state: Any,
        messages: Iterable[Message],
        actions: Actions = NONE,
    ) -> ContextEngine:
        """Rebuild from ``state()`` and the archived ``messages`` (any iterable, in order).

        With a missing or damaged state every given message goes into the window; the
        first ``prepare`` then trims it to fit and summarizes what it drops.
        """
        msgs = list(messages)
        if not isinstance(state, dict) or not isinstance(state.get("window_seqs"), list):
            return cls(estimator, budget, window=msgs, actions=actions)
        wanted = {s for s in state["window_seqs"] if isinstance(s, int)}
        window = [m for m in msgs if isinstance(meta(m).get("seq"), int) and meta(m)["seq"] in wanted]
        summary = from_dict(state["summary"]) if isinstance(state.get("summary"), dict) else None
        recovery = state.get("recovery") if isinstance(state.get("recovery"), str) else None
        return cls(estimator, budget, window=window, summary=summary, recovery=recovery, actions=actions)
