"""The lexical half of :class:`clio.recall.index.RecallIndex`: bm25 over the FTS5 index
with a bound on the work one query may cause.

The query words are chosen rarest first while the rows they match stay within
``postings_budget`` (:func:`clio.recall.query.choose_terms`). When every word is more common
than that, bm25 is not run: FTS5's bm25 reads each phrase's whole posting list for its idf and
scores every matching row (0.5 s for a word in all of 200,000 messages), and such words weigh
little anyway; the newest rows holding the first :data:`COMMON_AND_TERMS` words (else any of
them) come back unscored, by an ``ORDER BY rowid DESC LIMIT`` that stops early (row ids follow
time: sessions are indexed oldest first).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import Counter
from typing import Any

from clio.recall.query import and_query, choose_terms, or_query, quote_term
from clio.recall.terms import fts_words

COMMON_AND_TERMS = 4  # when every query word is common: rows holding the first this many words
REPLY_CHARS = 400  # a reply longer than this is never looked for word for word elsewhere
REPLY_PHRASE = 16  # the words of a reply the index looks it up by (then the whole text is compared)
REPLY_ROWS = 50  # rows of a reply's phrase read at most
REPLY_BUDGET_S = 0.005  # a lookup that takes longer is given up (the reply then counts as an answer)


class LexicalSide:
    """bm25 search (a mixin: it uses the index's ``_conn``, ``_lock``, ``_guarded``, ``stats``
    and ``postings_budget``)."""

    _conn: sqlite3.Connection
    _lock: threading.RLock
    stats: Counter[str]
    postings_budget: int

    def _guarded(self, fn: Any, *args: Any) -> Any:
        raise NotImplementedError

    def document_frequencies(
        self,
        words: list[str],
        cap: int | None = None,
        exclude: tuple[str, int] | None = None,
        *,
        own_text: bool = False,
    ) -> dict[str, int]:
        """How many indexed messages contain each word (stemmed as the index does), counting
        no further than ``cap``: knowing that a word is too common is enough, and cheap.
        ``exclude`` (session, seq): that session's messages from that one on do not count (what
        the running request carries, the message being asked among them). ``own_text``: in the
        message's own text only (not in the neighbours' context it is indexed with)."""
        if exclude is None:
            sql = "SELECT count(*) FROM (SELECT 1 FROM docs WHERE docs MATCH ? LIMIT ?)"
            params: tuple[Any, ...] = ()
        else:
            sql = (
                "SELECT count(*) FROM (SELECT 1 FROM docs JOIN msgs m ON m.id = docs.rowid "
                "WHERE docs MATCH ? AND NOT (m.session_id = ? AND m.seq >= ?) LIMIT ?)"
            )
            params = exclude
        with self._lock:
            return {
                w: int(
                    self._conn.execute(
                        sql,
                        (
                            f"body : {quote_term(w)}" if own_text else quote_term(w),
                            *params,
                            -1 if cap is None else cap,
                        ),
                    ).fetchone()[0]
                )
                for w in words
            }

    def said_to_other_questions(self, reply: str, asked: list[str]) -> bool:
        """Whether an assistant message with exactly the text ``reply`` answered a user message
        that is none of ``asked`` (compared with whitespace folded), in any session: a reply given
        word for word to different questions answers none of them (a canned reply, a refusal).
        The same question answered alike (a model at temperature 0) is not that. Only short
        replies are looked up, by their first words as one FTS5 phrase, at most
        :data:`REPLY_ROWS` rows and :data:`REPLY_BUDGET_S` (a phrase of words common in the
        archive can take tens of ms at 200,000 messages): past it, False, as if never said."""
        words = fts_words(reply)
        if not words or len(reply) > REPLY_CHARS:
            return False
        phrase = "body : " + quote_term(" ".join(words[:REPLY_PHRASE]))
        flat = {" ".join(a.split()) for a in asked}
        sql = (
            "SELECT m.body, (SELECT p.body FROM msgs p WHERE p.session_id = m.session_id "
            "AND p.id < m.id AND p.role = 'user' ORDER BY p.id DESC LIMIT 1) "
            "FROM (SELECT rowid FROM docs WHERE docs MATCH ? LIMIT ?) d JOIN msgs m ON m.id = d.rowid "
            "WHERE m.role = 'assistant'"
        )
        deadline = time.perf_counter() + REPLY_BUDGET_S
        with self._lock:
            self._conn.set_progress_handler(lambda: time.perf_counter() > deadline, 2_000)
            try:
                rows = self._conn.execute(sql, (phrase, REPLY_ROWS)).fetchall()
            except sqlite3.OperationalError:  # interrupted: past the budget
                self.stats["reply_lookups_given_up"] += 1
                return False
            finally:
                self._conn.set_progress_handler(None, 0)
        return any(body == reply and " ".join(str(before or "").split()) not in flat for body, before in rows)

    def _choose(self, terms: list[str]) -> tuple[list[str], bool]:
        """The query words to search with (see :func:`clio.recall.query.choose_terms`), and
        whether every one of them is common (each in more than ``postings_budget`` rows)."""
        budget = self.postings_budget
        dfs = self.document_frequencies(terms, budget + 1)
        found = [w for w in terms if dfs.get(w, 0) > 0]
        if found and min(dfs[w] for w in found) > budget:
            return found, True
        return choose_terms(dfs, budget), False

    def _lexical(self, terms: list[str], exclude: str | None, limit: int) -> list[tuple[Any, ...]]:
        """bm25 rows for the query words, at most about ``postings_budget`` postings read.

        When every word is common, bm25 would cost a read of each word's whole posting list (its
        idf alone) and a score for a large share of the index; those words weigh little anyway:
        the newest rows holding all of them (the first :data:`COMMON_AND_TERMS`; else any of
        them) come back, unscored (rank 0)."""
        kept, common = self._guarded(self._choose, terms)
        if not kept:
            return []
        if not common:
            rows: list[tuple[Any, ...]] = self._guarded(self._query, or_query(kept), exclude, limit)
            return rows
        self.stats["common_queries"] += 1
        first = kept[:COMMON_AND_TERMS]  # an AND of many common words walks all their postings
        for match in (and_query(first), or_query(kept)) if len(kept) > 1 else (or_query(kept),):
            rows = self._guarded(self._query, match, exclude, limit, False)
            if rows:
                return rows
        return []

    def _query(
        self, match: str, exclude: str | None, limit: int, ranked: bool = True
    ) -> list[tuple[Any, ...]]:
        """Rows (id, session_id, role, seq, ts, body, rank) matching, by bm25 or else newest first."""
        sql = (
            f"SELECT m.id, m.session_id, m.role, m.seq, m.ts, m.body, {'docs.rank' if ranked else '0.0'} "
            "FROM docs JOIN msgs m ON m.id = docs.rowid WHERE docs MATCH ?"
        )
        params: list[Any] = [match]
        if exclude is not None:
            sql += " AND m.session_id != ?"
            params.append(exclude)
        sql += f" ORDER BY {'docs.rank' if ranked else 'docs.rowid DESC'} LIMIT ?"
        params.append(limit)
        return self._conn.execute(sql, params).fetchall()
