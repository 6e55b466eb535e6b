"""Automatic recall in a running clio: before the first request of a turn, the archive is searched
with the user's words and the units that clear the relevance decision join the request as a
quoted block.

The choice and the block are pure (:mod:`clio.recall.auto`, :mod:`clio.recall.relevance`); here
are the I/O and the wiring: the search (``Services.recall``, lexical, leaving out what the window
already carries), the words' frequencies in the index, the block's share of the window, and what
``/context`` tells of the last recall (``last``). Nothing here loads the embedding model: the
automatic recall costs a run an SQLite query, not numpy (docs/memory.md has the figures). The block is a system message of kind ``recall`` in the
window, archived with the session (never indexed: no echoes) and sent appended to the user's
message, so the front of every request stays the same (prefix caches).

Off with ``--no-ltm``, ``--incognito`` and ``auto_recall: false``.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from clio import threads
from clio.messages import KIND_RECALL, Message, make, meta, typed_words
from clio.recall.encoder_client import EncoderClient

if TYPE_CHECKING:
    from clio.agent.window import Window
    from clio.app.model_judge import ModelJudge
    from clio.config import Settings
    from clio.tools.context import Services

AHEAD_MIN_WORDS = 3  # a line this long is embedded while the user types (embed_ahead)


class Ahead(NamedTuple):
    """A one-shot run's recall the helper was asked to do (:meth:`AutoRecall.ahead`): what it was
    sent, to compare with what the run has when it comes to its recall."""

    text: str
    task: str
    session: str
    token: str
    carried: dict[str, set[int]]  # what the request carries, by session and sequence number


def worth_ahead(text: str, has_archive: Callable[[], bool]) -> bool:
    """Whether a typed line (stripped) is sent to the helper ahead of Enter, by its text: not a
    command, a shell or memory line, nor a line of a word or two (embedded on Enter in a moment),
    nor, where the project has an archive (``has_archive``, asked only then: in a first session
    nothing of the search is imported), what will not be searched
    (:func:`clio.recall.auto_turn.plan`: an order, a remark, a message that asks nothing)."""
    if len(text.split()) < AHEAD_MIN_WORDS or text[:1] in "/!#" or not has_archive():
        return False
    from clio.recall.auto_turn import plan

    return bool(plan(text, text)[0])


class AutoRecall:
    def __init__(
        self,
        services: Services,
        window: Window,
        settings: Settings,
        encoder: EncoderClient | None = None,
        judge: ModelJudge | None = None,
    ) -> None:
        """``encoder``: the user's encoder helper (cosines for the decision), or None: words only;
        ``judge``: the model the user named in ``recall_judge_model``, asked which of the memory
        tool's first units to quote (searched by the helper ahead with the message's own when it
        runs, :meth:`ahead`; else here)."""
        self.services = services
        self.window = window
        self.settings = settings
        self.enabled = settings.auto_recall and not (settings.no_ltm or settings.incognito)
        self.encoder = encoder if self.enabled else None
        self.judge = judge if self.enabled else None
        self.last: dict[str, Any] = {"state": "on" if self.enabled else "off"}
        self._ahead: Ahead | None = None  # recalled by the helper ahead
        self._ahead_lock = threading.Lock()  # the REPL's typing thread asks ahead (typed), the turn takes it
        self._helper_silent = False  # asked ahead, it did not answer: this message by words alone

    def start_warm_up(self) -> threading.Thread | None:
        """Open the recall index and bring it up to date in a background thread (the REPL starts
        it once its prompt is up), so the first message does not wait for new sessions to be
        indexed. Nothing when the archive holds nothing to recall."""
        recall = self.services.recall
        has_archive = getattr(recall, "has_archive", None)
        if not self.enabled or recall is None or has_archive is None or not has_archive():
            return None

        def warm() -> None:
            with contextlib.suppress(Exception):  # a failure is told where a search needs the index
                recall.search("warm up", max_sessions=1, max_results=1, lexical=True)
            if self.encoder is not None:
                self.encoder.warm_up()  # the helper, started now, is ready for the first message

        return threads.start(warm, "clio-recall-warm-up")

    def typed(self, line: str, task: str) -> None:
        """The prompt's line once the user pauses typing (the REPL hands it on:
        :mod:`clio.ui.typing_ahead`; ``task``: the session's current task): the encoder helper,
        when it runs, does the line's whole recall now, as for a one-shot run's message
        (:meth:`ahead`), so that if it is sent as typed, Enter finds the search, the cosines and the
        judge done and only fetches the block. Lines it would not search are not sent (as in
        :meth:`embed_ahead`), nor the same line again while the task and the window stay as they
        were; when no helper runs, the line starts one (:meth:`embed_ahead`)."""
        text = line.strip()
        if not self._worth_ahead(text):
            return
        with self._ahead_lock:
            sent, session = self._ahead, self.services.session
            same = sent is not None and session is not None and (self._redacted(text), task, session.id) == (sent.text, sent.task, sent.session)
            if same and sent is not None and self._skip(session)[0] == sent.carried:
                return  # asked already for this very line, task and window
            self.ahead(text, task)

    def embed_ahead(self, line: str) -> None:
        """A line the helper embeds now (a one-shot run's message the helper could not recall
        ahead; a typed line when no helper runs, which starts it), so that if it is sent as typed
        its recall finds the query's vector ready. Commands, shell lines,
        memory lines and lines of a word or two (embedded on Enter in a moment) are not sent. The
        line is redacted as the message will be when it is archived (the recall's query is the
        archived text): a secret typed is never sent, and the text is the query to come. What
        will not be searched is not sent (:func:`clio.recall.auto_turn.plan`: an order of new
        work, a remark, a message that asks nothing), and what is searched by a part of it is sent
        as that part (an order that asks after it: what it asks)."""
        text = line.strip()
        if self.encoder is not None and self._worth_ahead(text):
            from clio.recall.auto_turn import plan

            redacted = self._redacted(text)
            self.encoder.embed_ahead(plan(redacted, redacted)[0] or redacted)

    def _worth_ahead(self, text: str) -> bool:
        """Whether the helper is asked about a line ahead of Enter (:meth:`typed`,
        :meth:`embed_ahead`): not without a helper or with the recall off, else as
        :func:`worth_ahead` says (in a project's first session: nothing to recall, no helper asked,
        nor socket imported)."""
        if self.encoder is None or not self.enabled:
            return False
        return worth_ahead(text, self._has_archive)

    def chars(self) -> int:
        return self.window.shares.recall_chars(self.settings.auto_recall_tokens)

    def ahead(self, first: str, task: str = "") -> None:
        """A one-shot run's message, as its session opens (new or resumed; ``task``: the session's
        current task, which the message's recall reads a short follow-up with): the encoder
        helper, when it runs, is asked to do the message's whole recall now
        (:mod:`clio.recall.encoder_recall`: the search, the scores and the decision, in a process
        that has them loaded), so the run finds it done and imports none of it; else the message
        is embedded ahead (:meth:`embed_ahead`). What the request will carry is left out there as
        here: the window's messages, the message itself (its sequence number is the session's
        next) and what the window's recall blocks quote. When the run comes to its recall and any
        of that differs (another message, another task, a window trimmed meanwhile), it recalls
        in process. With a judge model named, the helper searches the units it reads too, and the
        run asks it over them (:meth:`_judged_ahead`)."""
        self._ahead = None
        if self.encoder is None or not self.enabled:
            return
        session = self.services.session
        text = self._redacted(first.strip())
        if (
            session is not None
            and text
            and text[:1] not in "/!#"
            and self._has_archive()
            and self.encoder.index.exists()
        ):
            skip, since = self._skip(session)
            pool = self.judge is not None  # the judge model's units searched there too
            token = self.encoder.recall_ahead(text, task, session.id, self.settings.redaction, skip, since, pool)
            if token is not None:
                self._ahead = Ahead(text, task, session.id, token, skip)
                return
        self.embed_ahead(first)

    def _skip(self, session: Any) -> tuple[dict[str, set[int]], int]:
        """What the request of the session's next message will carry (left out of its search):
        the window's, what its blocks quote and the message itself, once archived; and the first
        of the session's messages still in the window (its words' frequencies are counted before it)."""
        skip, nxt = self._carried(), len(session.messages)
        since = min(self._carried(quoted=False).get(session.id) or {nxt})  # as frequencies() counts
        skip.setdefault(session.id, set()).add(nxt)
        return skip, since

    def _carried(self, quoted: bool = True) -> dict[str, set[int]]:
        """What the request carries now, by session and sequence number (never recalled again):
        :meth:`clio.app.recall.LazyRecall.carried`."""
        carried = getattr(self.services.recall, "carried", None)
        return {sid: set(seqs) for sid, seqs in carried(quoted).items()} if carried is not None else {}

    def _redacted(self, text: str) -> str:
        redactor = getattr(self.services, "redactor", None)
        return redactor.text(text).strip() if redactor is not None else text

    def _has_archive(self) -> bool:
        has_archive = getattr(getattr(self.services, "recall", None), "has_archive", None)
        return has_archive is None or bool(has_archive())

    def _from_helper(self, text: str, task: str) -> tuple[bool, Message | None]:
        """The recall the helper did ahead for this message (:meth:`ahead`): (True, the block's
        message or None), or (False, None) when it has none for it (then recalled here, by words
        alone if the helper was asked and did not answer in time)."""
        with self._ahead_lock:
            sent, self._ahead = self._ahead, None
        session = self.services.session
        if sent is None or self.encoder is None or session is None:
            return False, None
        if (text, task, session.id) != (sent.text, sent.task, sent.session) or self._carried() != sent.carried:
            return False, None  # another message, task or window than the helper searched for
        started = time.perf_counter()
        budget = self.chars()
        got = self.encoder.recalled(sent.token, budget)
        if got is None:
            # silent: the words decide this message alone (one wait at most); it answered that it
            # has none (another clio version, an unknown token): recalled here with its cosines
            self._helper_silent = self.encoder.timed_out
            return False, None
        block, last, quoted = got.block, got.last, got.quoted
        if self.judge is not None:  # the judge model decides over the units the helper searched
            if got.units is None:
                return False, None  # a helper that did not search them: recalled here
            decided = self._judged_ahead(got.units, budget)
            if decided is None:
                return False, None
            block, last, quoted = decided
        ms = round((time.perf_counter() - started) * 1000, 1)
        ahead_ms = last.get("ms", 0)
        self.last = dict(last, ms=ms, encoder=f"{self._encoder_label()}, searched by the helper ahead ({ahead_ms} ms there)")
        if not block:
            return True, None
        return True, make("system", block, meta={"kind": KIND_RECALL, "recalled": quoted, "ms": ms})

    def _encoder_label(self) -> str:
        enc = self.encoder
        if enc is None:
            return "off"
        name = f"{enc.model.label} (recall_embeddings)" if enc.model.endpoint else enc.model.label
        if enc.model.endpoint and math.isinf(enc.cosine_ask()):
            name += ", not calibrated yet"
        return f"{name}: {enc.state}" + (f" ({enc.fallback})" if enc.fallback else "")

    def __call__(self, user: Message, task: str) -> Message | None:
        """The recall block for the user message just archived, or None (told in ``last``).

        The search is lexical (bm25 over the index, no embedding model: nothing heavy is loaded
        on a run's path for it) and the decision is :mod:`clio.recall.relevance`'s, with the
        encoder helper's cosines when it answers in time (:mod:`clio.recall.encoder_client`).
        A one-shot run whose message the helper recalled ahead takes its answer instead."""
        if not self.enabled or self.services.recall is None:
            return None
        recall = self.services.recall
        has_archive = getattr(recall, "has_archive", None)
        if has_archive is not None and not has_archive():
            self.last = {"state": "skipped", "why": "nothing archived outside the window yet"}
            return None  # a project's first session: the decision's modules are not even imported
        text = typed_words(user).strip()
        if self._ahead is not None:
            handled, message = self._from_helper(text, task)
            if handled:
                return message
        from clio.recall import auto_turn

        current = self.services.session.id if self.services.session is not None else None
        encoder = None if self._helper_silent else self.encoder
        self._helper_silent = False
        budget = self.chars()
        try:
            found = auto_turn.search_and_score(
                text,
                task,
                budget,
                search=lambda query, nearby: recall.search(
                    query,
                    max_sessions=auto_turn.SEARCH_SESSIONS,
                    max_results=auto_turn.SEARCH_RESULTS,
                    with_text=True,
                    skip_quoted=True,
                    lexical=True,
                    nearby=nearby,
                ),
                frequencies=recall.frequencies,
                said_elsewhere=recall.said_to_other_questions,
                begin=(lambda query: encoder.begin(query, near=auto_turn.NEAR_ASKED)) if encoder is not None else None,
                current=current,
                cosine_ask=encoder.cosine_ask() if encoder is not None else auto_turn.auto.R.COSINE_ASK,
                weights=encoder.verdict() if encoder is not None else None,
            )
        except Exception as exc:  # recall is an aid: a broken index never stops the turn
            self.last = {"state": "failed", "why": f"{type(exc).__name__}: {exc}"[:200]}
            return None
        block, last, quoted = self._decided(found, budget)
        if found.skipped:
            self.last = last
            if found.skipped in auto_turn.KEPT_IN_STEP:
                self._keep_in_step(recall, encoder)
            return None
        ms = round(found.ms, 1)
        self.last = dict(last, ms=ms, encoder=self._encoder_label())
        if not block:
            return None
        return make("system", block, meta={"kind": KIND_RECALL, "recalled": quoted, "ms": ms})

    def _judged_ahead(self, units: tuple[Any, Any], budget: int) -> tuple[str, dict[str, Any], list[dict[str, Any]]] | None:
        """The block of a message the helper searched ahead with the judge model's units
        (:func:`clio.recall.encoder_recall.pool_units`): the judge model asked here over them,
        the packaged decision over the message's own when it gives no answer to go by; None when
        the helper's units do not read (then recalled here)."""
        from clio.recall import hits_wire

        try:
            found, pool = hits_wire.searched_in(units[0]), hits_wire.hits_in(units[1])
        except ValueError:
            return None
        return self._decided(found, budget, pool)

    def _decided(self, found: Any, budget: int, pool: list[Any] | None = None) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
        """(the block, what ``/context`` tells, the units quoted) for the message's scored units:
        the units the judge model names when it is named and answers (over ``pool``, else over
        those searched now), else the packaged decision's."""
        from clio.recall import auto_turn

        named, said = self._named(found, pool) if self.judge is not None else (None, "")
        block, last, quoted = auto_turn.outcome(found, budget, named)
        if said:
            last["judge_model"] = said
        return block, last, quoted

    def _named(self, found: Any, pool: list[Any] | None = None) -> tuple[list[Any] | None, str]:
        """The units the judge model names for the message (None: it gave no answer to go by, or
        there was nothing to ask it), and what ``/context`` tells of it; ``pool``: those units,
        searched by the helper ahead (None: searched now)."""
        from clio.recall.verdict import hit_text

        if self.judge is None or found.skipped:
            return None, ""
        units = self._pool(found.query) if pool is None else pool
        if not units:
            return None, ""
        texts = [hit_text(h, found.query) for h in units]
        picks, said = self.judge(found.query, texts)
        return (None if picks is None else [units[i] for i in picks]), said

    def _pool(self, query: str) -> list[Any]:
        """The units the judge model reads for the message: the memory tool's first ones
        (:meth:`clio.app.recall.LazyRecall.pool`), scored as the automatic recall scores its own;
        none when the search fails (the packaged decision stands)."""
        from clio.recall import model_judge

        recall = self.services.recall
        search = getattr(recall, "pool", None)
        if recall is None or search is None:
            return []
        session = self.services.session
        try:
            results = search(query)
            current = session.id if session is not None else None
            return model_judge.pool(query, results, current, recall.frequencies, getattr(recall, "said_to_other_questions", None))
        except Exception:  # recall is an aid: the packaged decision stands
            return []

    @staticmethod
    def _keep_in_step(recall: Any, encoder: EncoderClient | None) -> None:
        """An order or a remark is not searched; the archive is still kept in step as a search would
        keep it: indexed now, embedded by the helper once the turn ends (started if it does not run)."""
        keep = getattr(recall, "keep_in_step", None)
        try:
            if keep is not None:
                keep()
        except Exception:  # recall is an aid: a broken index is told at the next search
            return
        if encoder is not None:
            encoder.asked_nothing()

    def describe(self, window: list[Message]) -> dict[str, Any]:
        """What ``/context`` tells: the last recall of this run, else the latest block the window
        carries (a resumed session)."""
        if self.last.get("state") not in ("on", "off") or not self.enabled:
            return self.last
        for m in reversed(window):
            info = meta(m)
            if info.get("kind") == KIND_RECALL:
                return {"state": "recalled (in an earlier run)", "ms": info.get("ms", 0), "recalled": info.get("recalled", [])}
        return self.last
