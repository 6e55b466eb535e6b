"""Consolidation wiring: when a session ends, one bounded request reads back what it established.

When it runs (never while the user waits, :mod:`clio.app.background`):
- after a run has answered (one-shot) or the user has left (REPL exit), in a detached child, for
  that session, then for the most recent earlier session whose end was never consolidated (a
  killed REPL, a child that did not finish);
- on ``/memory consolidate``, for the running session, in the foreground (the user asked).

Never in ``--incognito`` or with ``--no-ltm``; off with ``consolidate: false``. Skipped when
nothing new happened (:func:`clio.memory.consolidate.worth_it`). What comes back passes through
the same store as the memory tools: dedup, redaction, and provenance ``by: consolidation``
naming the session; the model's entries are tainted when the session had read outside content.
What the user stated (:func:`clio.memory.consolidate.established`) is stored as rules in the
user's words, untainted, alongside.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clio.context import decisions, yarn
from clio.memory import consolidate as cons
from clio.memory import ltm, provenance
from clio.memory.ltm import Entry
from clio.messages import Message
from clio.prompts import load_prompt
from clio.store.session_info import MAX_DIGESTS, Digest
from clio.store.session_lock import SessionBusy
from clio.store.sessions import Session, SessionNotFound, SessionStore
from clio.tools.registry import REGISTRY

if TYPE_CHECKING:
    from clio.memory.ltm_store import LtmStore
    from clio.safety.redact import Redactor

Ask = Callable[[str, int], str]
LOOK_BACK = 5  # earlier sessions a new run looks at for one never consolidated
SAID_CONFIDENCE = 0.9  # a rule the user stated in so many words
NO_ANSWER = "the model gave no answer (tried again next time)"
REOPENED = "the session was opened again meanwhile (read back later)"


@dataclass
class Outcome:
    """What one consolidation did: the session it read, the entries stored (and whether each was
    new), and the pair decisions applied. ``skipped`` says why nothing was asked."""

    session_id: str
    stored: list[tuple[Entry, bool]] = field(default_factory=list)
    decided: int = 0
    skipped: str = ""
    withheld: int = 0  # the model's entries (and digest) not kept: the session read outside content, nobody to confirm
    digest: bool = False  # a digest of the session was kept (clio.store.session_info.Digest)
    digest_aside: bool = False  # the reply's digest said nothing of the session (clio.memory.digest_check)

    def describe(self) -> str:
        if self.skipped:
            return f"nothing consolidated from session {self.session_id}: {self.skipped}"
        new = sum(1 for _, created in self.stored if created)
        ids = ", ".join(e.id for e, _ in self.stored)
        same = len(self.stored) - new
        what = f"learned {new} new" + (f", confirmed {same}" if same else "") + (f" ({ids})" if ids else "")
        if self.digest:
            what += ", wrote its digest"
        elif self.digest_aside:
            what += ", set its digest aside (it said nothing of the session)"
        if self.withheld:
            what += f"; withheld {self.withheld} the model drew from outside content (untrusted project, nobody to confirm)"
        return f"{what} from session {self.session_id}" + (f"; {self.decided} pair(s) decided" if self.decided else "")


def checked(session: Session) -> None:
    """Note that the session's unconsolidated part was judged not worth a read-back
    (``session.json`` ``checked``): the session is not read back again until more messages come,
    and then from ``consolidated``, so the read-back sees this part too (two questions together
    are a conversation). ``consolidated`` is not moved: nothing was read into memory."""
    session.info.checked = len(session.messages)
    session.save_meta()


def _summary_text(session: Session, max_chars: int) -> str:
    state = session.load_state()
    summary = state.get("summary") if isinstance(state, dict) else None
    return yarn.render(yarn.from_dict(summary), max_chars) if isinstance(summary, dict) else ""


def _clean_fields(fields: dict[str, Any], redact: Callable[[str], str]) -> dict[str, Any]:
    return {k: redact(v) if isinstance(v, str) else [redact(x) for x in v] for k, v in fields.items()}


class Consolidator:
    """Reads sessions back into long-term memory through ``ask`` (``Orchestrator.ask``)."""

    def __init__(
        self,
        store: LtmStore,
        sessions: SessionStore,
        redactor: Redactor,
        *,
        max_chars: Callable[[], int],
        clock: Callable[[], float] = time.time,
        semantic: Callable[[list[Entry]], Iterable[tuple[str, str, float]]] | None = None,
        keep_tainted: Callable[[], bool] = lambda: True,
    ) -> None:
        self.store = store
        # False in a one-shot run of an untrusted project: what the model drew from a session
        # that read outside content has nobody to confirm it, so it is withheld, not kept marked
        self.keep_tainted = keep_tainted
        self.semantic = semantic  # dedup candidates by meaning (clio.memory.meaning), for the pairs asked
        self.sessions = sessions
        self.redactor = redactor
        self.max_chars = max_chars
        self.clock = clock

    def run(
        self, session: Session, ask: Ask, *, force: bool = False, commit: Callable[[], bool] = lambda: True
    ) -> Outcome:
        """Consolidate what ``session`` said since its last consolidation and move its marker.
        ``force`` (``/memory consolidate``) skips the substance gate, not the emptiness check.
        ``commit`` is asked before anything is written (a session read without its lock, in
        clio.app.background: it takes the lock and checks nobody changed the session meanwhile);
        False leaves memory and the marker as they were."""
        out = Outcome(session.id)
        part = cons.new_part(session.messages, session.info.consolidated)
        if not part or not any(m.get("role") == "user" for m in part):
            out.skipped = "no new messages since the last consolidation"
            return out
        if not force and not cons.worth_it(part):
            out.skipped = "only a question and its answer"
            if session.info.checked != len(session.messages) and commit():
                checked(session)  # not read again until more comes, then from the marker: this part too
            return out
        limit = self.max_chars()
        summary = _summary_text(session, limit // 4) if session.info.consolidated == 0 else ""
        pairs = self.store.ambiguous_pairs(self.semantic)[: cons.MAX_PAIRS]
        said = cons.established(part)
        template = load_prompt("consolidate.md")
        prompt = cons.build_prompt(template, part, summary, pairs, limit, said)
        reply = ask(prompt, cons.REPLY_TOKENS)
        if not reply:
            out.skipped = NO_ANSWER
            return out
        if not commit():
            out.skipped = REOPENED
            return out
        self._store_said(out, session.id, said)
        learned = cons.parse_reply(reply, pairs)
        from clio.memory.digest_check import grounded  # reads the vocabulary: never at a run's start

        if learned.digest and not grounded(learned.digest, part, template):
            learned.digest, out.digest_aside = "", True  # a pleasantry, the prompt's words, or nothing of the session
        origin = self._store(out, session.id, part, cons.anchored(learned, part))
        if origin is not None and learned.digest:
            kept = Digest(len(session.messages), self.redactor.text(learned.digest), self.clock(), origin.tainted)
            session.info.digests = [*session.info.digests, kept][-MAX_DIGESTS:]
            out.digest = True
        self._mark(session)  # the digest is saved with the marker: one write of session.json
        return out

    @staticmethod
    def _mark(session: Session) -> None:
        session.info.consolidated = len(session.messages)
        session.save_meta()

    def _store_said(self, out: Outcome, session_id: str, said: list[decisions.Item]) -> None:
        """What the user stated, as rules in their own words: the user's, so never tainted."""
        origin = provenance.Provenance(session_id, self.clock(), False, (), by="consolidation")
        for _kind, _key, statement in said:
            try:
                out.stored.append(
                    self.store.add("rule", confidence=SAID_CONFIDENCE, provenance=origin, rule=self.redactor.text(statement))
                )
            except ltm.LtmError:
                continue

    def _store(
        self, out: Outcome, session_id: str, part: list[Message], learned: cons.Learned
    ) -> provenance.Provenance | None:
        """Store the model's entries and apply its pair decisions; their provenance (its digest's
        too), or None when they are withheld (its digest with them)."""
        sources = provenance.sources_in(part, REGISTRY.brings_outside)
        origin = provenance.Provenance(
            session_id, self.clock(), bool(sources), tuple(sources[: provenance.MAX_SOURCES]), by="consolidation"
        )
        if origin.tainted and not self.keep_tainted():
            out.withheld = len(learned.entries) + bool(learned.digest)  # and its pair decisions are not applied either
            return None
        for type_, fields, confidence in learned.entries:
            try:
                out.stored.append(
                    self.store.add(type_, confidence=confidence, provenance=origin, **_clean_fields(fields, self.redactor.text))
                )
            except ltm.LtmError:
                continue
        for a, b, decision in learned.decisions:
            try:
                self.store.decide(a, b, decision)
                out.decided += 1
            except ltm.LtmError:
                continue
        return origin

    def previous(self, current_id: str, ask: Ask) -> Outcome | None:
        """Consolidate the most recent earlier session whose end was never consolidated, looking
        at up to :data:`LOOK_BACK` of them (sessions open in another process are left alone;
        trivial ones are marked checked). At most one request; None when nothing was asked."""
        recent = self.sessions.recent(LOOK_BACK + 1)
        for info in [i for i in recent if i.id != current_id and i.unread()]:
            try:
                session = self.sessions.open(info.id)
            except (SessionBusy, SessionNotFound, OSError):
                continue
            try:
                outcome = self.run(session, ask)
            finally:
                session.close()
            if not outcome.skipped or outcome.skipped == NO_ANSWER:
                return outcome
        return None
