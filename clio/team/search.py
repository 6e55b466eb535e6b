"""Candidates for the prompt from the shared store, found by the server at team scale.

The task (and the paths of the files in play) become its rarest lexemes for PostgreSQL's
full-text search (over the entries' ``tsvector``, GIN-indexed): the rows holding each, bounded
per lexeme, scored by the summed inverse document frequency of the lexemes they hold, counted in
the same query (the common lexemes are chosen by the planner's own statistics); where the server has pgvector, the entries nearest the task by meaning join them
(``emb <=> query``, HNSW-indexed); the most recently confirmed and the pinned entries always do.
The few hundred candidates are then ranked by the same rules as a local memory
(:func:`clio.memory.ltm_rank.select_for_prompt`, meaning scored in clio by
:class:`clio.memory.meaning.Meaning` when pgvector is not there).
"""

from __future__ import annotations

import re
import time
from typing import Any

from clio.memory.ltm import Entry
from clio.team import sql

TEXT_HITS = 100  # full-text candidates (a prompt carries at most 15 of a type)
VECTOR_HITS = 50  # nearest by meaning (pgvector)
RECENT = 40  # freshest entries, whatever they say
PINNED = 50
MAX_WORDS = 40
MATCH_CAP = 1000  # rows the chosen words may match (estimated from the planner's statistics)
PER_TERM = 500  # rows of one lexeme scored at most (the worst case stays bounded)
STATS_TTL = 600.0  # seconds the lexeme statistics are reused in one process
_stats: tuple[dict[str, float], float] | None = None
_stats_at = 0.0
_WORD = re.compile(r"[a-z0-9]+")


def query_words(task: str, files: list[str]) -> list[str]:
    """Plain alphanumeric words of the task and paths (safe inside ``to_tsquery``), in order, once."""
    words = _WORD.findall(" ".join([task, *files]).lower())
    return list(dict.fromkeys(w for w in words if 2 <= len(w) <= 64))[:MAX_WORDS]


def task_vector(task: str) -> list[float] | None:
    """The task's embedding (:mod:`clio.recall.embedder`) for pgvector; None without the model."""
    from clio.recall.embedder import get_embedder

    embedder = get_embedder()
    if embedder is None or not task.strip():
        return None
    return [float(x) for x in embedder.embed([task])[0]]


def _lexemes(conn: Any, words: list[str]) -> list[str]:
    """The task's words as the server's English full-text configuration keeps them (stemmed,
    stop words out)."""
    row = conn.execute("SELECT array(SELECT lexeme FROM unnest(to_tsvector('english', %s)))", (" ".join(words),))
    return list(row.fetchone()[0] or [])


def _frequencies(conn: Any) -> tuple[dict[str, float], float]:
    """(lexeme -> share of rows holding it, rows) from the planner's own statistics of the
    ``tsv`` column (ANALYZE keeps its most common lexemes); cached a while per process."""
    global _stats, _stats_at
    if _stats is not None and time.monotonic() - _stats_at < STATS_TTL:
        return _stats
    row = conn.execute(
        """SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples
           FROM pg_class c LEFT JOIN pg_stats s ON s.tablename = c.relname AND s.attname = 'tsv'
           WHERE c.relname = 'clio_entries'"""
    ).fetchone()
    elems, freqs, total = row if row else (None, None, 0.0)
    _stats = (dict(zip(elems or [], freqs or [], strict=False)), max(float(total or 0.0), 0.0))
    _stats_at = time.monotonic()
    return _stats


def text_terms(conn: Any, words: list[str]) -> tuple[list[str], float]:
    """(the task's lexemes worth searching, rows in the table). Lexemes the planner's statistics
    list as common are kept rarest first while the rows they may match stay under
    :data:`MATCH_CAP` (a word half the entries hold says little and costs much); the others are
    rarer than all of those and always kept."""
    lexemes = _lexemes(conn, words)
    freq, rows = _frequencies(conn)
    rare = [lex for lex in lexemes if lex not in freq]
    common = sorted((lex for lex in lexemes if lex in freq), key=lambda x: (freq[x], x))
    expected, chosen = 0.0, list(rare)
    for lex in common:
        expected += freq[lex] * rows
        if chosen and expected > MATCH_CAP:
            break
        chosen.append(lex)
    return chosen, rows


def _quoted(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _text_part(project: str, lexemes: list[str], rows: float) -> tuple[str, list[Any]]:
    """The rows holding any of ``lexemes`` (each lexeme's rows bounded by :data:`PER_TERM`, so a
    rare word's rows are all there), best :data:`TEXT_HITS` by the summed inverse document
    frequency of the lexemes they hold, counted in the same pass (``ts_rank_cd`` knows no rarity)."""
    each = "(SELECT %s::text AS lex, id FROM clio_entries WHERE project = %s AND tsv @@ %s::tsquery LIMIT %s)"
    params: list[Any] = []
    for lex in lexemes:
        params += [lex, project, _quoted(lex), PER_TERM]
    text = (
        f"(WITH hits AS ({' UNION ALL '.join([each] * len(lexemes))}),"
        " df AS (SELECT lex, count(*) AS n FROM hits GROUP BY lex),"
        " best AS (SELECT h.id, sum(ln(1 + (%s + 1) / df.n)) AS s FROM hits h JOIN df USING (lex)"
        " GROUP BY h.id ORDER BY s DESC, h.id LIMIT %s)"
        f" SELECT {', '.join('e.' + c.strip() for c in sql.COLUMNS.split(','))}, e.id FROM clio_entries e"
        " JOIN best ON e.project = %s AND e.id = best.id)"
    )
    return text, [*params, max(rows, 1.0), TEXT_HITS, project]


def entry_vector(entry: Entry) -> list[float] | None:
    """An entry's embedding for pgvector's ``emb`` column; None without the model."""
    return task_vector(entry.full_text())


def candidates(
    conn: Any, project: str, task: str, files: list[str], qvec: list[float] | None = None
) -> list[sql.Row]:
    parts: list[str] = []
    params: list[Any] = []
    lexemes, rows = text_terms(conn, query_words(task, files))
    if lexemes:
        text_sql, text_params = _text_part(project, lexemes, rows)
        parts.append(text_sql)
        params += text_params
    if qvec is not None:
        parts.append(
            f"(SELECT {sql.COLUMNS}, id FROM clio_entries WHERE project = %s AND emb IS NOT NULL"
            " ORDER BY emb <=> %s::vector LIMIT %s)"
        )
        params += [project, "[" + ",".join(f"{x:.6f}" for x in qvec) + "]", VECTOR_HITS]
    parts.append(
        f"(SELECT {sql.COLUMNS}, id FROM clio_entries WHERE project = %s ORDER BY last_confirmed DESC LIMIT %s)"
    )
    parts.append(f"(SELECT {sql.COLUMNS}, id FROM clio_entries WHERE project = %s AND pinned LIMIT %s)")
    params += [project, RECENT, project, PINNED]
    union = " UNION ".join(parts)
    return sql.rows(conn, f"SELECT {sql.COLUMNS} FROM ({union}) AS c", params)
