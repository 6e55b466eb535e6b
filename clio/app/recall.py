"""The recall service of a running clio: one search over everything archived in the project that
the request does not carry (past sessions, and the running session's messages that left the
window), opened lazily so that starting clio never waits for a rebuild. The memory tool's
``recall_sessions`` and the automatic recall (:mod:`clio.app.auto_recall`) both search through it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from clio.memory.meaning import say_once
from clio.messages import Message, meta
from clio.recall.encoder_client import EncoderClient
from clio.recall.query import best_first
from clio.recall.tool_search import search_with_meaning
from clio.store.sessions import SessionStore
from clio.tools.context import Services


class LazyRecall:
    """Opens the recall index on first use, so starting clio never waits for a rebuild.

    One recall over everything archived: past sessions, and the running session's messages that
    are no longer in the window. ``carried(quoted)`` names what the request holds already, by
    session and sequence number: the window's messages (left out of every search) and, with
    ``quoted``, the messages its recall blocks quote (left out of the automatic recall, which would
    only repeat them; the tool still finds them). The app sets it once the window exists.

    The memory tool's search (hybrid) also fuses, as a third list beside bm25 and the static
    table's cosines, the messages the user's encoder helper finds nearest by meaning, when it
    answers in time (:mod:`clio.recall.encoder_scan`)."""

    def __init__(self, db_path: Path | None, sessions: SessionStore, services: Services) -> None:
        self.db_path = db_path
        self.sessions = sessions
        self.services = services  # its session is the running one
        self.carried: Callable[[bool], dict[str, set[int]]] = lambda quoted: {}
        self._index: Any = None
        self.encoder: EncoderClient | None = None  # the user's encoder helper (the app sets it)
        # the judge model the user names (recall_judge_model): the memory tool's first units in its
        # order (clio.app.model_judge.ModelJudge.order; the app sets it)
        self.order: Callable[[str, list[dict[str, Any]]], list[dict[str, Any]]] | None = None
        self._archive_seen = False  # some message outside the window exists (sticky)

    def has_archive(self) -> bool:
        """Whether anything archived lies outside what the request carries. Before the index is
        open, told from the session files alone (no index, no embedding model loaded): a project's
        first session has nothing to recall, and its turns stay as light as before."""
        if self._archive_seen or self._index is not None:
            return True
        session = self.services.session
        current = session.id if session is not None else None
        in_window = len(self.carried(False).get(current or "", ()))
        mine = len(session.messages) if session is not None else 0
        self._archive_seen = mine > in_window or self.sessions.holds_messages(other_than=current)
        return self._archive_seen

    def index(self) -> Any:
        if self._index is None:
            from clio.recall.index import RecallIndex

            self._index = RecallIndex(self.db_path, self.sessions)
        return self._index

    def search(
        self,
        query: str,
        max_sessions: int = 5,
        max_results: int = 10,
        *,
        with_text: bool = False,
        skip_quoted: bool = False,
        lexical: bool = False,
        nearby: Callable[[], Sequence[int]] | None = None,
    ) -> list[dict[str, Any]]:
        skip = self.carried(skip_quoted)
        if nearby is None and not lexical:  # the memory tool: the helper's nearest fused in
            wanted = max_results
            if self.order is not None:  # the judge model orders the first units, read with their texts
                from clio.recall.model_order import ORDER_UNITS

                wanted = max(max_results, ORDER_UNITS)
            hits = search_with_meaning(
                self.index().search, query, wanted, self.encoder,
                max_sessions=max_sessions, skip=skip, with_text=with_text, texts=self.order is not None,
            )  # fmt: skip
            if self.order is not None:
                hits = self.order(query, hits)[:max_results]
                for hit in hits:
                    hit.pop("texts", None)  # read for the judge model only
        else:
            hits = best_first(
                self.index().search,
                query,
                max_results,
                max_sessions=max_sessions,
                skip=skip,
                with_text=with_text,
                mode="lexical" if lexical else "hybrid",
                nearby=nearby,
            )
        self._say_semantic_note()
        return hits

    def _say_semantic_note(self) -> None:
        """Why recall is lexical only, said once (with the long-term memory ranking's too)."""
        say_once(self._index.take_semantic_note(), lambda text: print(text, file=sys.stderr))

    def pool(self, query: str) -> list[dict[str, Any]]:
        """The memory tool's first units for the automatic recall's judge model
        (:func:`clio.recall.model_judge.pool`): its search with the helper, in the search's order
        (the helper's judge does not re-read them: the model reads them all), never put to the
        model to be ordered, leaving out what the request carries and what its blocks quote."""
        from clio.recall.model_judge import POOL_SESSIONS, POOL_UNITS

        hits = search_with_meaning(
            self.index().search, query, POOL_UNITS, self.encoder, with_helper="lexical", reread=False,
            max_sessions=POOL_SESSIONS, skip=self.carried(True), with_text=True,
        )  # fmt: skip
        self._say_semantic_note()
        return hits

    def keep_in_step(self) -> None:
        """The index brought up to date without a search (a message the automatic recall does
        not search, an order of new work: what it finds now is not looked for again at the next
        question, and the encoder helper's fill embeds it meanwhile)."""
        self.index().refresh()

    def drop_digest(self, session_id: str, through: int) -> bool:
        """A digest the user dropped (``/session digests drop``), out of the index too."""
        return bool(self.index().drop_digest(session_id, through))

    def frequencies(self, words: list[str]) -> tuple[dict[str, int], int]:
        """The words' document frequencies for the automatic recall's decision, asked right after
        its search (which brought the index up to date)."""
        session = self.services.session
        if session is None:
            return self.index().frequencies(words, refresh=False)
        window = self.carried(False).get(session.id) or {len(session.messages)}
        return self.index().frequencies(words, (session.id, min(window)), refresh=False)

    def said_to_other_questions(self, reply: str, asked: list[str]) -> bool:
        """Whether ``reply`` answered other questions word for word (the automatic recall's
        decision: such a reply says nothing of its own)."""
        return bool(self.index().said_to_other_questions(reply, asked))


def carried(window: list[Message], session_id: str, quoted: bool) -> dict[str, set[int]]:
    """What a request carries, by session and sequence number (never recalled again): the window's
    messages, and with ``quoted`` the archived messages its recall blocks quote."""
    out: dict[str, set[int]] = {session_id: set()}
    for m in window:
        info = meta(m)
        if isinstance(seq := info.get("seq"), int):
            out[session_id].add(seq)
        for hit in (info.get("recalled") or ()) if quoted else ():
            if isinstance(hit, dict):
                listed = hit.get("seqs")
                seqs: list[Any] = listed if isinstance(listed, list) else [hit.get("seq")]
                out.setdefault(str(hit.get("session")), set()).update(s for s in seqs if isinstance(s, int))
    return out
