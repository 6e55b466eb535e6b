"""Pure helpers for cross-session recall: what gets indexed, safe FTS5 queries, excerpts.

No disk and no SQLite here (``clio.recall.index`` does the I/O). Everything in
this module takes plain strings or message dicts and returns plain values, so it is
tested with lists.

Query safety: user words never reach FTS5 as syntax. :func:`build_fts_query` keeps
only word characters (the same split as FTS5's ``unicode61`` tokenizer), wraps every
term in double quotes and joins them with ``OR``; ``NEAR``, ``*``, ``-``, ``:``,
parentheses and quotes in the input are plain text (or dropped punctuation).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from clio.messages import (
    KIND_MEMORY,
    KIND_PROMPT,
    KIND_RECALL,
    KIND_SUMMARY,
    KIND_USER_SHELL,
    Message,
    meta,
    text_of,
    tool_call_args,
)
from clio.recall.encoder_models import MINILM
from clio.recall.terms import WORD_RE, concludes, excerpt, excerpt_stem, fts_words

STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each few for from further
    get got had has have having he her here hers herself him himself his how i if in into is it its
    itself just let me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them themselves
    then there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves ever
    s t d ll m re ve don doesn didn isn wasn aren weren won wouldn shouldn couldn
    """.split()  # noqa: SIM905
)

# How much of each kind of message is indexed (characters).
TEXT_LIMIT = 32_000
TOOL_RESULT_LIMIT = 4_000
TOOL_ARGS_LIMIT = 2_000
# a session's digest (clio.store.session_info.Digest), indexed as a row of its own after its
# messages: a unit by itself, quoted as the model's summary of the session (clio.recall.refresh)
DIGEST_ROLE = "digest"
DIGEST_FILES_ROLE = "digest-files"  # the same, of a part that read outside content (Digest.tainted)
DIGEST_ROLES = (DIGEST_ROLE, DIGEST_FILES_ROLE)
UNIT_ROLES = ("user", *DIGEST_ROLES)  # the rows that open a unit (clio.recall.units.exchange)


def digest_seq(through: int) -> int:
    """The ``seq`` of the row of a session's digest that covers its first ``through`` messages:
    minus that count, below every message's (a read-back covers more messages than the one
    before, so no two digests of a session share it)."""
    return -max(1, through)


CALL_MARK = "\u25b8 "  # begins the line of a tool call in an indexed assistant message (not a word)
SKIP_KINDS = frozenset({KIND_SUMMARY, KIND_MEMORY, KIND_RECALL, KIND_PROMPT})  # KIND_PROMPT: clio's own
# Results of the memory tool quote what clio already keeps (notes, long-term entries, excerpts of
# the archive): indexed, they would come back as new evidence, echoes crowding out the original.
ECHO_TOOLS = frozenset({"memory_operations"})
# Calls of the memory tool that only look things up: their arguments are a question, not evidence.
LOOKUP_OPS = frozenset({"recall_sessions", "search", "retrieve", "list", "ltm_stats"})
# A hit whose text adds fewer content words than this to the query's restates the question (an
# earlier ask of the same thing): ranked after the hits that say something about it.
MIN_NEW_WORDS = 2
# How a recall result begins (also in archives written before tool results carried their tool).
RECALL_HEADER_RE = re.compile(r"\d+ excerpt\(s\) from (?:earlier sessions|the archive)\b")

# bm25 scores every row that matches any query word; past this many (word, message) pairs the
# most common words are left out of the query (they weigh least), and when every word is that
# common only the newest matching rows are ranked: a bound on query latency. bm25 costs 2 to 7 us
# a posting on the shared 2-core machine (benches/recall_scale.py): 4,000 is ~10 to 30 ms.
POSTINGS_BUDGET = 4_000

# Hybrid recall: the k of reciprocal rank fusion (bm25 ranks with cosine ranks), and how long
# one search may spend embedding messages that have no vector yet (the rest wait for later).
# Tuned on the LoCoMo dev set (benches/recall_locomo.py, docs/memory.md) with the static table:
# R@10/MRR bm25 0.699/0.493; k=10 w=0.3 0.710/0.482; k=30 w=0.3 0.714/0.468; k=10 w=1.0 0.695/0.414.
RRF_K = 10
VECTOR_WEIGHT = 0.3
NEAR_RESULTS = 3  # units found by the encoder helper's scan alone, after the words' (automatic recall)
# The encoder helper's nearest messages as a list fused beside bm25 and the static table (the memory
# tool), at its model's weight (clio.recall.encoder_models): MiniLM's, unless the caller says. LoCoMo
# with MiniLM, hybrid R@10 by half (0 / 1): 0.752 / 0.693 without; 0.758 / 0.693 at 0.3; 0.761 /
# 0.694 at 0.5; 0.763 / 0.659 at 1.0: the largest weight that gains on both halves.
MEANING_WEIGHT = MINILM.meaning_weight
# ... and at the model's weak_words_weight when the words barely match: none of bm25's three best
# rows holds half of the query's terms (clio.recall.terms.share_held: a question asked in other
# words than its answer's). Chosen on the dev halves as the smallest share that takes set E's
# reworded question (its words 0.40 held by near misses) into the top 3 (docs/memory.md, "When the
# words barely match").
WEAK_WORDS = 0.5
WEAK_WORDS_HITS = 3
WEAK_WORDS_WEIGHT = MINILM.weak_words_weight
SYNC_BUDGET_S = 2.0


def query_terms(text: str, stopwords: Iterable[str] = STOPWORDS, max_terms: int = 32) -> list[str]:
    """The distinct content words of a query, in order; all words if every one is a stopword."""
    stop = stopwords if isinstance(stopwords, (set, frozenset)) else frozenset(stopwords)
    words = fts_words(text)
    kept = [w for w in words if w not in stop]
    if not kept:
        kept = words
    out: list[str] = []
    for w in kept:
        if w not in out:
            out.append(w)
    return out[:max_terms]


def quote_term(term: str) -> str:
    """One FTS5 string token: double quotes doubled inside, wrapped in quotes."""
    return '"' + term.replace('"', '""') + '"'


def or_query(terms: Iterable[str], *, prefix_min: int = 0) -> str:
    """Quoted terms joined by OR ('' if none); ``prefix_min`` > 0 also matches longer words
    starting with a term at least that long (``"postgres"*`` finds 'PostgreSQL')."""
    parts: list[str] = []
    for term in terms:
        q = quote_term(term)
        if prefix_min and len(term) >= prefix_min:
            q = f"({q} OR {q}*)"
        parts.append(q)
    return " OR ".join(parts)


def and_query(terms: Iterable[str]) -> str:
    """Quoted terms joined by AND: rows holding every one ('' if none)."""
    return " AND ".join(quote_term(t) for t in terms)


def build_fts_query(
    text: str,
    stopwords: Iterable[str] = STOPWORDS,
    *,
    prefix_min: int = 0,
    max_terms: int = 32,
) -> str:
    """A safe FTS5 MATCH expression for free text: its quoted content words joined by OR."""
    return or_query(query_terms(text, stopwords, max_terms), prefix_min=prefix_min)


def choose_terms(doc_freq: dict[str, int], budget: int = POSTINGS_BUDGET) -> list[str]:
    """The query words worth searching, in their original order.

    Words found nowhere are dropped. The rarest word is always kept; the others join,
    rarest first, while the matching rows they add stay within ``budget``.
    """
    found = sorted((df, i, w) for i, (w, df) in enumerate(doc_freq.items()) if df > 0)
    kept: list[tuple[int, str]] = []
    total = 0
    for df, i, w in found:
        if kept and total + df > budget:
            break
        kept.append((i, w))
        total += df
    return [w for _, w in sorted(kept)]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " …"


def readable_call(name: str, args: dict[str, Any]) -> str:
    """A tool call as words, never its JSON: the operation (else the tool's name) and the values
    of its arguments ("read file infra/deploy.txt", "terminal pytest -x tests/"), clipped."""
    op = str(args.get("operation") or "")
    verb = op.replace("_", " ") if op else name.removesuffix("_operations").replace("_", " ")
    values: list[str] = []
    for key, value in args.items():
        if key == "operation":
            continue
        items = value if isinstance(value, list) else [value]
        values += [" ".join(str(v).split()) for v in items if isinstance(v, (str, int, float)) and str(v).strip()]
    return _clip(" ".join([verb, *values]).strip(), TOOL_ARGS_LIMIT)


def document_text(msg: Message) -> str | None:
    """The text of one archived message that goes into the recall index, or None to skip it.

    User and assistant text is indexed (tool calls in words, :func:`readable_call`), tool results are
    clipped to a few KB (and so is a ``!command``'s output); system messages, thread summaries, injected memory and what clio itself
    brought back (recall blocks, the memory tool's results: :func:`is_echo`) are skipped.
    """
    role = msg.get("role")
    if role not in ("user", "assistant", "tool"):
        return None
    if meta(msg).get("kind") in SKIP_KINDS or is_echo(msg):
        return None
    if role == "tool" or meta(msg).get("kind") == KIND_USER_SHELL:  # a `!command`'s output: as a tool result
        text = _clip(text_of(msg), TOOL_RESULT_LIMIT)
    elif role == "assistant" and msg.get("tool_calls"):
        body = msg.get("content")
        parts = [body] if isinstance(body, str) and body.strip() else []
        for call in msg.get("tool_calls") or []:
            fn = call.get("function") or {}
            if fn.get("name") in ECHO_TOOLS and tool_call_args(call).get("operation") in LOOKUP_OPS:
                continue  # a look-up's arguments only repeat a question
            parts.append(CALL_MARK + readable_call(str(fn.get("name", "")), tool_call_args(call)))
        text = _clip("\n".join(parts), TEXT_LIMIT)
    else:
        text = _clip(text_of(msg), TEXT_LIMIT)
    return text if text.strip() else None


def iter_content_words(text: str, limit: int | None = None) -> Iterator[str]:
    """The content words of ``text`` (its first ``limit`` characters) one by one, in order, repeats
    included, stemmed as excerpts are (stopwords and 1-letter words out); read as they are asked
    for, so a caller that has its answer stops reading."""
    for m in WORD_RE.finditer(text, 0, len(text) if limit is None else limit):
        w = m.group().lower()
        if len(w) > 1 and w not in STOPWORDS:
            yield excerpt_stem(w)


def content_words(text: str) -> list[str]:
    """The distinct content words of ``text`` in order (as :func:`iter_content_words` reads them,
    eagerly: a third faster where the whole text is wanted, on every message's path): what a
    query asks, what a passage says."""
    out: dict[str, None] = {}
    for w in fts_words(text):
        if len(w) > 1 and w not in STOPWORDS:
            out.setdefault(excerpt_stem(w))
    return list(out)


def content_stems(text: str, limit: int = 6000) -> set[str]:
    """The distinct content words of ``text``'s first ``limit`` characters (:func:`content_words`)."""
    return set(iter_content_words(text, limit))


RESTATEMENT_ROOM = 5  # results searched beyond those shown, so restatements can make room


def best_first(
    search: Callable[..., list[dict[str, Any]]], query: str, limit: int, **options: Any
) -> list[dict[str, Any]]:
    """What a search shows: ``search(query, max_results=..., **options)`` (``RecallIndex.search``)
    asked for :data:`RESTATEMENT_ROOM` more than ``limit``, restatements moved after the answers,
    cut to ``limit``; the units found by meaning alone (``"found": "meaning"``) follow. The one
    ordering of clio's recall, for the memory tool, the automatic recall and ``clio mcp`` alike."""
    found = search(query, max_results=limit + RESTATEMENT_ROOM, **options)
    words = [h for h in found if h.get("found") != "meaning"]
    meaning = [h for h in found if h.get("found") == "meaning"]
    return answers_first(words, query)[:limit] + answers_first(meaning, query)


def answers_first(hits: list[dict[str, Any]], query: str) -> list[dict[str, Any]]:
    """Search results with the restatements moved after the results that add something: a
    message that only repeats the query's words (the same question asked before) is not what
    recall is for. Order is kept otherwise. Reads ``text`` where a result has it, else its
    excerpts: a unit's every part (the question it matched and the answer), else its one excerpt.
    (Read by its matched question alone, a unit that holds the answer was taken for a restatement
    and cut from the memory tool's results, which are searched without ``text``: stop 89.)"""
    asked = content_stems(query)
    says: list[dict[str, Any]] = []
    repeats: list[dict[str, Any]] = []
    for hit in hits:
        text = hit.get("text") or " ".join(str(p.get("excerpt") or "") for p in hit.get("parts") or () if isinstance(p, dict))
        text = str(text or hit.get("excerpt") or "")
        (says if adds_words(text, asked) else repeats).append(hit)
    return says + repeats


# a reply's words that say nothing of their own ("ok", "thanks"): a question asked again with such
# a reply is still a restatement (its unit read whole, stop 89)
ACKNOWLEDGEMENTS: frozenset[str] = frozenset(
    excerpt_stem(w) for w in "ok okay okey kk sure thanks thank thx yes yeah yep yup great nice cool fine lgtm alright".split()  # noqa: SIM905
)


def adds_words(text: str, asked: set[str], limit: int = 6000) -> bool:
    """Whether ``text``'s first ``limit`` characters say at least :data:`MIN_NEW_WORDS` content
    words (:func:`content_words`) that ``asked`` does not hold, acknowledgements aside
    (:data:`ACKNOWLEDGEMENTS`); reads no further than it must."""
    new: set[str] = set()
    for stem in iter_content_words(text, limit):
        if stem not in asked and stem not in ACKNOWLEDGEMENTS:
            new.add(stem)
            if len(new) >= MIN_NEW_WORDS:
                return True
    return False


def is_echo(msg: Message) -> bool:
    """Whether a tool result only quotes what clio keeps already (never new evidence)."""
    if msg.get("role") != "tool":
        return False
    if meta(msg).get("tool") in ECHO_TOOLS:
        return True
    content = msg.get("content")
    return isinstance(content, str) and RECALL_HEADER_RE.match(content) is not None


def passage_key(body: str) -> str:
    """What makes two archived passages the same passage: their words, case and spacing aside."""
    return " ".join(body.lower().split())[:4000]


def format_date(ts: float) -> str:
    """Local time as 'YYYY-MM-DD HH:MM'."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def shape_results(
    rows: Iterable[tuple[Any, ...]],
    names: dict[str, str],
    terms: list[str],
    max_sessions: int,
    max_results: int,
    with_text: bool = False,
) -> list[dict[str, Any]]:
    """Ranked index rows (session_id, role, seq, ts, body, bm25 rank) -> search results (with
    ``text``, the indexed text itself, when ``with_text``).

    Keeps rows from the ``max_sessions`` best-ranked sessions only, at most ``max_results``; a
    passage that comes back more than once (a file read twice, a message pasted again) counts once,
    at its best rank.
    """
    sessions: set[str] = set()
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for sid, role, seq, ts, body, rank in rows:
        key = passage_key(body)
        if key in seen:
            continue
        seen.add(key)
        if sid not in sessions:
            if len(sessions) >= max_sessions:
                continue
            sessions.add(sid)
        hit = {
            "session_id": sid,
            "session_name": names.get(sid, ""),
            "date": format_date(ts),
            "role": role,
            "seq": seq,
            "excerpt": excerpt(body, terms, conclusion=concludes(role)),
            "score": round(-rank, 4),
        }
        if with_text:
            hit["text"] = body
        out.append(hit)
        if len(out) >= max_results:
            break
    return out
