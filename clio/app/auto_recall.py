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
import threading
import time
from typing import TYPE_CHECKING, Any

from clio import threads
from clio.messages import KIND_RECALL, Message, make, meta, typed_words
from clio.recall.encoder_client import EncoderClient

if TYPE_CHECKING:
    from clio.agent.window import Window
    from clio.config import Settings
    from clio.tools.context import Services

SEARCH_RESULTS = 8  # candidate units scored per message
AHEAD_MIN_WORDS = 3  # a line this long is embedded while the user types (embed_ahead)
SEARCH_SESSIONS = 5
NEAR_ASKED = 8  # messages nearest by meaning asked of the encoder helper (their units: after the words')
SHORT_QUERY_WORDS = 3  # a message with fewer own words is searched together with the task


class AutoRecall:
    def __init__(
        self, services: Services, window: Window, settings: Settings, encoder: EncoderClient | None = None
    ) -> None:
        """``encoder``: the user's encoder helper (cosines for the decision), or None: words only."""
        self.services = services
        self.window = window
        self.settings = settings
        self.enabled = settings.auto_recall and not (settings.no_ltm or settings.incognito)
        self.encoder = encoder if self.enabled else None
        self.last: dict[str, Any] = {"state": "on" if self.enabled else "off"}

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

    def embed_ahead(self, line: str) -> None:
        """The prompt's line while the user types (the REPL hands it on after a pause:
        :mod:`clio.ui.typing_ahead`): the encoder helper, when it runs, embeds it now, so that
        if it is sent as typed its recall finds the query's vector ready. Commands, shell lines,
        memory lines and lines of a word or two (embedded on Enter in a moment) are not sent. The
        line is redacted as the message will be when it is archived (the recall's query is the
        archived text): a secret typed is never sent, and the text is the query to come."""
        if self.encoder is None or not self.enabled:
            return
        text = line.strip()
        if len(text.split()) < AHEAD_MIN_WORDS or text[:1] in "/!#":
            return
        has_archive = getattr(getattr(self.services, "recall", None), "has_archive", None)
        if has_archive is not None and not has_archive():
            return  # a project's first session: nothing to recall, no helper asked (nor socket imported)
        redactor = getattr(self.services, "redactor", None)
        self.encoder.embed_ahead(redactor.text(text).strip() if redactor is not None else text)

    def chars(self) -> int:
        return self.window.shares.recall_chars(self.settings.auto_recall_tokens)

    def __call__(self, user: Message, task: str) -> Message | None:
        """The recall block for the user message just archived, or None (told in ``last``).

        The search is lexical (bm25 over the index, no embedding model: nothing heavy is loaded
        on a run's path for it) and the decision is :mod:`clio.recall.relevance`'s, with the
        encoder helper's cosines when it answers in time (:mod:`clio.recall.encoder_client`)."""
        if not self.enabled or self.services.recall is None:
            return None
        recall = self.services.recall
        has_archive = getattr(recall, "has_archive", None)
        if has_archive is not None and not has_archive():
            self.last = {"state": "skipped", "why": "nothing archived outside the window yet"}
            return None  # a project's first session: the decision's modules are not even imported
        from clio.recall import auto
        from clio.recall.common_words import is_common
        from clio.recall.relevance import asks_something, only_work_at_hand, own_words

        text = typed_words(user).strip()
        own = own_words(text)
        query = text
        at_hand = only_work_at_hand(text, own)  # "run the linter", "CI is failing": the task in front of the user
        follow_up = bool(own) and not at_hand and len(own) < SHORT_QUERY_WORDS and bool(task) and task.strip() != text
        if follow_up:
            query = f"{text}\n{task}"  # a short follow-up, read with the task it belongs to
        # alone (a one-shot run, or the task's first message) a message must ask something itself:
        # "wait" or "same error again" would match some archived message by their one common word
        asks = follow_up or asks_something(text, is_common, own)
        budget = self.chars()
        if not asks or budget < auto.MIN_BLOCK_CHARS:
            why = (
                ("no words of its own" if not own else "nothing it asks: only the work at hand" if at_hand else "nothing it asks: one everyday word")
                if budget
                else "no room in the window"
            )
            self.last = {"state": "skipped", "why": why}
            return None
        started = time.perf_counter()
        pending = self.encoder.begin(query, near=NEAR_ASKED) if self.encoder is not None else None  # embedded while we search
        try:
            results = recall.search(
                query,
                max_sessions=SEARCH_SESSIONS,
                max_results=SEARCH_RESULTS,
                with_text=True,
                skip_quoted=True,
                lexical=True,
                nearby=pending.near if pending is not None else None,
            )
            current = self.services.session.id if self.services.session is not None else None
            similarity = pending.finish if pending is not None else None
            cut = self.encoder.model.cosine_ask if self.encoder is not None else auto.R.COSINE_ASK
            hits = (
                auto.score_hits(query, results, current, recall.frequencies, similarity, cut, recall.said_to_other_questions)
                if results
                else []
            )
        except Exception as exc:  # recall is an aid: a broken index never stops the turn
            self.last = {"state": "failed", "why": f"{type(exc).__name__}: {exc}"[:200]}
            return None
        finally:
            if pending is not None:
                pending.close()  # when nothing was scored
        chosen = auto.choose(hits)
        block = auto.render(chosen, query, budget)
        ms = round((time.perf_counter() - started) * 1000, 1)
        self.last = {
            "state": "recalled" if block else "nothing relevant",
            "query": query[:200],
            "ms": ms,
            "candidates": len(hits),
            "encoder": f"{self.encoder.model.name}: {self.encoder.state}" + (f" ({self.encoder.fallback})" if self.encoder.fallback else "")
            if self.encoder is not None
            else "off",
            "recalled": [dict(h.to_dict(), why=h.why()) for h in chosen] if block else [],
            "best_rejected": next((dict(h.to_dict(), why=h.why()) for h in hits if not h.relevant), None),
        }
        if not block:
            return None
        quoted = [dict(h.to_dict(), why=h.why()) for h in chosen]
        return make("system", block, meta={"kind": KIND_RECALL, "recalled": quoted, "ms": ms})

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
