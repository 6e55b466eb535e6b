"""Automatic recall in a running clio: before the first request of a turn, the archive is searched
with the user's words and what clears the relevance threshold joins the request as a quoted block.

The choice and the block are pure (:mod:`clio.recall.auto`); here are the I/O and the wiring: the
search (``Services.recall``, which leaves out what the window already carries), the cosines
(the static embedding, when it is on), the block's share of the window, and what ``/context``
tells of the last recall (``last``). The block is a system message of kind ``recall`` in the
window, archived with the session (never indexed: no echoes) and sent appended to the user's
message, so the front of every request stays the same (prefix caches).

Off with ``--no-ltm``, ``--incognito`` and ``auto_recall: false``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from clio.messages import KIND_RECALL, Message, make, meta, typed_words
from clio.recall import auto
from clio.recall.query import content_words

if TYPE_CHECKING:
    from clio.agent.window import Window
    from clio.config import Settings
    from clio.tools.context import Services

SEARCH_RESULTS = 8  # candidates scored per message
SEARCH_SESSIONS = 5
SHORT_QUERY_WORDS = 3  # a message with fewer content words is searched together with the task


def similarity(query: str, texts: list[str]) -> list[float] | None:
    """Cosines of ``texts`` to ``query`` with the static embedding; None when it is off."""
    from clio.recall.embedder import get_embedder

    emb = get_embedder()
    if emb is None:
        return None
    vecs = emb.embed([query, *texts])
    return [float(x) for x in vecs[1:] @ vecs[0]]


class AutoRecall:
    def __init__(self, services: Services, window: Window, settings: Settings) -> None:
        self.services = services
        self.window = window
        self.settings = settings
        self.enabled = settings.auto_recall and not (settings.no_ltm or settings.incognito)
        self.last: dict[str, Any] = {"state": "on" if self.enabled else "off"}

    def start_warm_up(self) -> threading.Thread | None:
        """Open the recall index and load its vectors in a background thread (the REPL starts it
        once its prompt is up): with a large archive the first search reads hundreds of MB, and the
        first message should not wait for that. Nothing when the archive holds nothing to recall."""
        recall = self.services.recall
        has_archive = getattr(recall, "has_archive", None)
        if not self.enabled or recall is None or has_archive is None or not has_archive():
            return None

        def warm() -> None:
            with contextlib.suppress(Exception):  # a failure is told where a search needs the index
                recall.search("warm up", max_sessions=1, max_results=1)

        thread = threading.Thread(target=warm, daemon=True, name="clio-recall-warm-up")
        thread.start()
        return thread

    def chars(self) -> int:
        return self.window.shares.recall_chars(self.settings.auto_recall_tokens)

    def __call__(self, user: Message, task: str, scorer: Callable[..., Any] = similarity) -> Message | None:
        """The recall block for the user message just archived, or None (told in ``last``)."""
        if not self.enabled or self.services.recall is None:
            return None
        text = typed_words(user).strip()
        query = text
        if len(content_words(text)) < SHORT_QUERY_WORDS and task and task.strip() != text:
            query = f"{text}\n{task}"
        budget = self.chars()
        if not content_words(query) or budget < auto.MIN_BLOCK_CHARS:
            self.last = {"state": "skipped", "why": "no content words" if budget else "no room in the window"}
            return None
        started = time.perf_counter()
        has_archive = getattr(self.services.recall, "has_archive", None)
        if has_archive is not None and not has_archive():
            self.last = {"state": "skipped", "why": "nothing archived outside the window yet"}
            return None
        try:
            results = self.services.recall.search(
                query,
                max_sessions=SEARCH_SESSIONS,
                max_results=SEARCH_RESULTS,
                with_text=True,
                skip_quoted=True,
            )
        except Exception as exc:  # recall is an aid: a broken index never stops the turn
            self.last = {"state": "failed", "why": f"{type(exc).__name__}: {exc}"[:200]}
            return None
        current = self.services.session.id if self.services.session is not None else None
        hits = auto.score_hits(query, results, current, scorer) if results else []
        chosen = auto.choose(hits)
        block = auto.render(chosen, query, budget)
        ms = round((time.perf_counter() - started) * 1000, 1)
        self.last = {
            "state": "recalled" if block else "nothing relevant",
            "query": query[:200],
            "ms": ms,
            "candidates": len(hits),
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
