"""The cross-session recall index: a derived SQLite FTS5 index over every session's archive.

The JSON archives stay the source of truth. ``.clio/recall.sqlite`` only mirrors them, and
every search first brings it up to date (:mod:`clio.recall.refresh`). The file's layout, its
opening and its repair are :mod:`clio.recall.schema`'s: a missing, damaged or older-schema
index file is deleted and rebuilt, never trusted and never fatal. ``RecallIndex(None,
sessions)`` keeps the index in memory (incognito).

Ranking is FTS5's bm25 with the porter stemmer; queries are built from the user's words
by :mod:`clio.recall.query`, never passed through as syntax. The most common query words
are dropped when together they would make bm25 score too many rows (they weigh least); when
every word is that common, the newest rows holding all of them (else any) are returned
unscored: bm25 would read each word's whole posting list. No query reads much more than
``postings_budget`` postings (:mod:`clio.recall.lexical`).

Hybrid retrieval: when the embedding model loads (:mod:`clio.recall.embedder`, lazily, at
the first search), every message also gets a vector (:mod:`clio.recall.vectors`, table
``vecs`` in the same file) and a search fuses the bm25 ranking with the cosine ranking by
reciprocal rank fusion. Without the model the index stays lexical and says why, once.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from clio.recall.hybrid import AUTO, SemanticSide, fuse_rows, rows_by_id, run_beside
from clio.recall.lexical import LexicalSide
from clio.recall.query import (
    MEANING_WEIGHT,
    NEAR_RESULTS,
    POSTINGS_BUDGET,
    RRF_K,
    SYNC_BUDGET_S,
    VECTOR_WEIGHT,
    WEAK_WORDS,
    WEAK_WORDS_HITS,
    WEAK_WORDS_WEIGHT,
    passage_key,
    query_terms,
    shape_results,
)
from clio.recall.refine import refine_rows
from clio.recall.refresh import RefreshSide, SessionSource
from clio.recall.relevance import says_something
from clio.recall.schema import open_index, remove_db_files
from clio.recall.terms import share_held
from clio.recall.units import Exchanges, Part, Shown, compose, shape_units
from clio.store.atomic import FileLock
from clio.store.changes import ChangeWatch

if TYPE_CHECKING:
    from clio.recall.embedder import Embedder
    from clio.recall.vectors import VectorIndex


class RecallIndex(RefreshSide, LexicalSide, SemanticSide):
    """Search every archived message of every session, ranked by bm25."""

    def __init__(
        self,
        db_path: Path | None,
        sessions: SessionSource,
        *,
        postings_budget: int = POSTINGS_BUDGET,
        embedder: Embedder | str | None = AUTO,
        sync_budget_s: float | None = SYNC_BUDGET_S,
    ) -> None:
        """``embedder``: an Embedder, None (lexical only) or AUTO (the shared one, loaded at the
        first search, never here). ``sync_budget_s``: time one search may spend embedding
        messages that have no vector yet (None: all of them)."""
        self.db_path = Path(db_path) if db_path is not None else None
        self.sessions = sessions
        self.postings_budget = postings_budget
        self._embedder = embedder
        self._vectors: VectorIndex | None = None
        self._note: str | None = None  # why search is lexical only, until taken
        self.sync_budget_s = sync_budget_s
        self.parallel = True  # bm25 and the cosine scan at once (benches compare with False)
        self.stats: Counter[str] = Counter()  # what the index did: for tests and benches
        self._lock = threading.RLock()
        self._seen: object = None  # fingerprint of the session files at the last refresh
        self._watch = ChangeWatch()  # which sessions clio wrote since (clio.store.changes)
        self._looked: tuple[dict[str, tuple[int, int, int]], list[str]] | None = None
        self._hashed: tuple[object, int] | None = None
        self._conn = self._open()

    # -- opening and rebuilding ----------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        return open_index(self.db_path, self.stats)

    def rebuild(self) -> None:
        """Drop the index and start from nothing (the next refresh indexes everything)."""
        with self._lock:
            self._seen = None
            self._conn.close()
            if self.db_path is not None:
                with FileLock(self.db_path):
                    remove_db_files(self.db_path)
            self._conn = self._open()
            if self._vectors is not None:
                self._vectors.forget()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _guarded(self, fn: Any, *args: Any) -> Any:
        """Run ``fn``; if the file turns out damaged, rebuild once from the archives and retry."""
        try:
            return fn(*args)
        except sqlite3.DatabaseError:
            self.stats["rebuilds"] += 1
            self.rebuild()
            self._refresh()
            return fn(*args)

    # -- searching -------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        max_sessions: int = 5,
        max_results: int = 10,
        exclude_session: str | None = None,
        *,
        refresh: bool = True,
        mode: Literal["hybrid", "lexical", "semantic"] = "hybrid",
        skip: Mapping[str, Collection[int]] | None = None,
        with_text: bool = False,
        texts: bool = False,
        refine: bool = True,
        nearby: Callable[[], Sequence[int]] | None = None,
        nearby_results: int = NEAR_RESULTS,
        fuse_nearby: bool = False,
        meaning_weight: float = MEANING_WEIGHT,
        weak_words_weight: float = WEAK_WORDS_WEIGHT,
        whole_units: int | None = None,
    ) -> list[dict[str, Any]]:
        """The best-matching archived messages for ``query`` (plain words, any characters).

        Results come from at most ``max_sessions`` sessions (the best-ranked ones), best first:
        {session_id, session_name, date 'YYYY-MM-DD HH:MM', role, seq, excerpt, score}. The
        score is bm25's (lexical) or, when vectors take part, the fused RRF score, raised by
        the stages of :mod:`clio.recall.refine` (``refine=False``: the fused ranking alone).
        ``skip`` leaves out messages by session and sequence number: those a request already
        carries (the running session's window), so only what left it can come back (neighbour
        expansion included). ``with_text``: each result also carries the message's indexed text.
        ``texts``: each result carries its messages' texts (``texts``) beside its excerpts.
        ``nearby()``: row ids of messages found by meaning elsewhere (the encoder helper's scan),
        asked once the words' search is done; up to ``nearby_results`` units of them that the
        words did not find follow the words' results (``"found": "meaning"``); with
        ``fuse_nearby``, they are fused into the ranking instead, as a third list beside bm25 and
        the static table's cosines, at ``meaning_weight`` (the memory tool: its model's weight), or
        at ``weak_words_weight`` when the words barely match: none of bm25's ``WEAK_WORDS_HITS``
        best rows holds ``WEAK_WORDS`` of the query's terms (a reworded question).
        ``whole_units``: the units after that many are compact (:func:`~clio.recall.units.compose`:
        the match, with the answer to a step or to a user's message it answers; the memory tool's
        results after its best), one per exchange; None: every unit whole.
        """
        terms = query_terms(query)
        if not terms or max_sessions < 1 or max_results < 1:
            return []
        skipped = {(sid, int(seq)) for sid, seqs in (skip or {}).items() for seq in seqs}
        limit = max(max_results * 20, 200) + len(skipped)
        with self._lock:
            if refresh:
                self.refresh()
            scan = (
                None
                if mode == "lexical"
                else self._guarded(self._prepare_scan, query, exclude_session, limit)
            )
            lexical: list[tuple[Any, ...]] = []
            near: list[int] = []
            if mode == "semantic":
                near = scan() if scan is not None else []
            elif scan is not None and self.parallel:  # the cosine scan runs beside bm25
                near, lexical = run_beside(scan, lambda: self._lexical(terms, exclude_session, limit))
            else:
                lexical = self._lexical(terms, exclude_session, limit)
                near = scan() if scan is not None else []
            meaning = list(nearby())[:50] if nearby is not None and fuse_nearby else []
            if meaning and share_held(terms, (r[5] for r in lexical[:WEAK_WORDS_HITS])) < WEAK_WORDS:
                meaning_weight = weak_words_weight  # the words barely match: what is found by meaning counts more
            fused = (
                fuse_rows(self._conn, lexical, near, RRF_K, VECTOR_WEIGHT, [(meaning, meaning_weight)])
                if near or meaning
                else lexical
            )

            def keep(sid: str, seq: int) -> bool:
                return sid != exclude_session and (sid, int(seq)) not in skipped

            rows = (
                refine_rows(self._conn, query, fused, keep, time.time()) if refine else [r[1:] for r in fused]
            )
            if skipped:
                rows = [r for r in rows if (r[0], r[2]) not in skipped]
            units = self._guarded(self._units, rows, keep, max_sessions, max_results, (), whole_units)
            extra = (
                self._guarded(self._near_units, nearby, keep, nearby_results, units)
                if nearby is not None and not fuse_nearby
                else []
            )
            names = self._names({row[0] for row, _ in (*units, *extra)})
        return shape_units(units, names, terms, with_text, texts) + [
            dict(r, found="meaning") for r in shape_units(extra, names, terms, with_text, texts)
        ]

    def _names(self, sessions: set[str]) -> dict[str, str]:
        """The names of ``sessions`` (those a search's units come from: 0.36 ms for every name of
        1,200 sessions on each search, growing with the archive; a few ids cost 0.01)."""
        if not sessions:
            return {}
        ids = sorted(sessions)
        sql = f"SELECT session_id, name FROM sessions WHERE session_id IN ({','.join('?' * len(ids))})"
        return dict(self._conn.execute(sql, ids).fetchall())

    def _near_units(
        self, near: Callable[[], Sequence[int]], keep: Any, count: int, taken: Sequence[tuple[tuple[Any, ...], list[Part]]]
    ) -> list[tuple[tuple[Any, ...], list[Part]]]:
        """Units of the messages ``near()`` names, best first, that the words' results ``taken``
        do not hold already; at most ``count``."""
        ids = [int(i) for i in near()][:50]
        if not ids or count < 1:
            return []
        found = rows_by_id(self._conn, ids)
        rows = [(*found[i], 0.0) for i in ids if i in found and keep(found[i][0], int(found[i][2]))]
        return self._units(rows, keep, len(rows) + 1, count, taken)

    def _units(
        self,
        rows: list[tuple[Any, ...]],
        keep: Any,
        max_sessions: int,
        max_results: int,
        taken: Sequence[tuple[tuple[Any, ...], list[Part]]] = (),
        whole_units: int | None = None,
    ) -> list[tuple[tuple[Any, ...], list[Part]]]:
        """Ranked rows -> (row, its unit) best first (:mod:`clio.recall.units`): a row without
        content of its own is no hit; one unit per exchange, at its best-ranked row; each message
        once in the results (:class:`~clio.recall.units.Shown`: a unit joins a better one it
        overlaps, or leaves out what that one shows), and a message shown already is no hit;
        units from the ``max_sessions`` best sessions, at most ``max_results``, those after the
        first ``whole_units`` compact (None: none); the parts the request carries already left out."""
        shown = Shown(taken)
        sessions: set[str] = set()
        seen: set[tuple[str, int]] = {(row[0], parts[0].seq) for row, parts in taken}
        passages: set[str] = {passage_key(row[4]) for row, _ in taken}
        read = Exchanges(self._conn)
        for row in rows:
            sid, _role, seq, _ts, body, _rank = row
            if sid not in sessions and len(sessions) >= max_sessions:
                continue  # a session past the best ones: nothing of it is read
            key = passage_key(body)
            if key in passages or shown.holds(sid, int(seq)) or not says_something(body):
                continue  # the same text, or this very message, is in a better unit already
            exchange_rows = read(sid, int(seq))
            whole = whole_units is None or len(shown.units) < whole_units
            parts = [
                p
                for p in compose(int(seq), exchange_rows, whole)
                if p.seq == seq or keep(sid, p.seq)
            ]
            if not parts:
                continue
            # one unit per exchange: a whole one keyed at its first message, a compact one at its
            # exchange's (so an exchange's other matches never come back as singles of their own)
            first = parts[0].seq if whole else exchange_rows[0].seq
            if (sid, first) in seen:
                continue
            seen.add((sid, first))
            passages.add(key)
            if shown.add(row, parts):
                sessions.add(sid)
                if len(shown.units) >= max_results:
                    break
        return shown.units

    def search_match(
        self,
        match: str,
        terms: list[str],
        max_sessions: int = 5,
        max_results: int = 10,
        exclude_session: str | None = None,
        *,
        refresh: bool = True,
    ) -> list[dict[str, Any]]:
        """Lexical search with a ready FTS5 expression (trusted callers only: benches)."""
        if max_sessions < 1 or max_results < 1 or not match:
            return []
        limit = max(max_results * 20, 200)
        with self._lock:
            if refresh:
                self.refresh()
            rows: list[tuple[Any, ...]] = self._guarded(self._query, match, exclude_session, limit)
            names = self._names({r[1] for r in rows})
        return shape_results([r[1:] for r in rows], names, terms, max_sessions, max_results)

    def frequencies(
        self, words: list[str], carried: tuple[str, int] | None = None, *, refresh: bool = True
    ) -> tuple[dict[str, int], int]:
        """How many indexed messages hold each of ``words`` (stemmed as the index does; counted no
        further than the postings budget; ``carried`` (session, seq): what the request carries, from
        that message of the running session on, does not count), and about how many messages are
        indexed. ``refresh=False``: in the index as the last search left it (the automatic recall
        asks right after its search, which brought it up to date: no second look at every
        session file)."""
        with self._lock:
            if refresh:
                self.refresh()
            top = self._conn.execute("SELECT coalesce(max(id), 0) FROM msgs").fetchone()[0]
            return self.document_frequencies(words, self.postings_budget, carried, own_text=True), int(top)

    def counts(self) -> dict[str, int]:
        """Rows in the index: sessions and messages."""
        with self._lock:
            s = self._conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
            m = self._conn.execute("SELECT count(*) FROM msgs").fetchone()[0]
        return {"sessions": int(s), "messages": int(m)}
