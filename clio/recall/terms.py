"""Pure: words as the recall index splits them, and which of a query's words a text holds.

The split is FTS5's ``unicode61`` (letters and digits; ``_`` and punctuation separate); the stems
are a light suffix stripper that agrees with the index's porter stemmer often enough to place an
excerpt and to tell how much of a query a text holds (:class:`TermMatch`, :func:`share_held`),
and :func:`excerpt` cuts a long text around its densest cluster of a query's words.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

from clio.lazy_re import lazy

# Same split as FTS5's unicode61 tokenizer: letters and digits; '_' and punctuation separate.
WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
# A camelCase or PascalCase identifier (a lower-case letter, then a capital), and its words
HUMPED_RE = re.compile(r"\w*[a-z]\w*?[A-Z]")
HUMP_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
# Where a sentence or a line ends (the encoder's chunks, the sentences of a message)
SENTENCE_END = lazy(r"(?<=[.!?;:])\s+|\n+")

_SUFFIXES = (
    "ational", "ization", "fulness", "iveness", "ations", "ation", "ments", "ement", "ness", "ment",
    "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "ly", "s", "e",
)  # fmt: skip


def fts_words(text: str) -> list[str]:
    """Lower-cased words, split like FTS5 ``unicode61`` (so 'snake_case' -> ['snake', 'case']).

    For FTS5 queries and excerpts only; long-term memory, notes, preferences and behaviours match
    words with :mod:`clio.memory.similarity` (``tokenize``, ``stem``, ``terms``).
    """
    return [w.lower() for w in WORD_RE.findall(text)]


@functools.lru_cache(maxsize=1 << 16)
def excerpt_stem(word: str) -> str:
    """A light suffix stripper (decided/deciding/decides -> 'decid').

    The index itself uses FTS5's porter stemmer; this only has to agree with it often enough to
    place an excerpt on the matching words and to tell how much of a query a text holds (and
    :mod:`clio.recall.relevance` compares a message's words with a unit's through it).
    """
    w = word.lower()
    for suf in _SUFFIXES:
        if len(w) - len(suf) >= 3 and w.endswith(suf):
            if suf == "s" and w.endswith("ss"):
                break  # "address" stays whole, as "addresses" leaves it (porter's SS -> SS)
            w = w[: -len(suf)]
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":  # planned -> plann -> plan
        w = w[:-1]
    return w


class TermMatch:
    """Which of a query's terms a word matches: their light stems agree, or the word starts with
    a term of at least four letters (where an excerpt is placed; how much of a query a text holds).
    Words are remembered once looked at: long texts repeat them."""

    def __init__(self, terms: Iterable[str]) -> None:
        words = [t.lower() for t in terms if t]
        self._stems = {excerpt_stem(t): t for t in words}
        self._prefixes = tuple(t for t in words if len(t) >= 4)
        self._seen: dict[str, str | None] = {}

    def __call__(self, word: str) -> str | None:
        if word in self._seen:
            return self._seen[word]
        w = word.lower()
        term = self._stems.get(excerpt_stem(w))
        if term is None and self._prefixes and w.startswith(self._prefixes):
            term = next(t for t in self._prefixes if w.startswith(t))
        self._seen[word] = term
        return term


def share_held(terms: Sequence[str], texts: Iterable[str]) -> float:
    """The largest share of ``terms`` (a query's, distinct) that any one of ``texts`` holds, as
    :class:`TermMatch` matches words: 0.0 with no terms or texts."""
    wanted = {t.lower() for t in terms if t}
    if not wanted:
        return 0.0
    match = TermMatch(wanted)
    best = 0
    for text in texts:
        held = {match(w) for w in WORD_RE.findall(text)}
        best = max(best, len(held & wanted))
    return best / len(wanted)


# A detail a reader of an excerpt needs: a code span, an identifier (snake_case, dotted.name, a
# path, CamelCase inside a word, CONSTANT_CASE, a ticket id like ASH-655), a flag, a number of two
# digits or more (a port, a time, a version). A decision's value is one of these far more often
# than it is one of the words of the question that finds it.
VALUE_RE = lazy(
    r"`[^`\n]{1,80}`"
    r"|--?[A-Za-z][\w-]*(?:=\S+)?"
    r"|\b\w+(?:[_./:]\w+)+"
    r"|\b[a-z]+[A-Z]\w*"
    r"|\b[A-Z][A-Z0-9]+(?:[-_][A-Z0-9]+)+\b|\b[A-Z]{2,}-\d+\b"
    r"|\b\d[\d,]*\d\b"
)
FENCE_RE = lazy(r"```.*?(?:```|$)")
# of a long text's excerpt, the share given to its details: chosen on the dev sets A, E and G in
# their four forms (0.2 to 0.4 measured; 0.25 quoted 4 more facts and showed the tool's reader 2
# more, losing none; docs/memory.md)
VALUE_SHARE = 0.25
Spot = tuple[int, int, str]  # (start, end, what): a query term's word, or a detail
VALUE_MIN_LEN = 1.5  # times the excerpt's width: a text only a little longer is cut around its words alone
# of a reply's text, the last part its details are first looked for in: where its conclusion (the fix,
# the value chosen) stands after the diagnosis (docs/memory.md, "The conclusion of a long reply")
CONCLUSION_PART = 1 / 3


def concludes(role: str) -> bool:
    """Whether a message of ``role`` is cut with its conclusion first among its details
    (:func:`excerpt`'s ``conclusion``): an assistant's reply, not a tool result (whose tail is a
    file's or a log's) nor a user's message (the question)."""
    return role == "assistant"


def excerpt(text: str, terms: Iterable[str], width: int = 300, conclusion: bool = False) -> str:
    """About ``width`` characters of ``text`` around the densest cluster of query terms; of a text
    much longer than ``width`` (:data:`VALUE_MIN_LEN`), the cluster gets the larger part and the
    rest goes to the stretch densest in details (:data:`VALUE_RE`: code, identifiers, numbers)
    that the cluster leaves out, so a reply's value is shown where it sits apart from the words
    that found it ("... **Fix** ... set `pagination.maxTotalHits` to 5000"). ``conclusion`` (an
    assistant's reply): that stretch is looked for in the text's last part first
    (:data:`CONCLUSION_PART`), where a reply states what it found after the diagnosis whose
    measurements and timestamps share the message's words ("... the new time would be **03:05**").

    Words match a term as :class:`TermMatch` says. Cut at word boundaries, '…' marks a cut;
    whitespace is collapsed; at most ``width`` + 2 characters (the two marks of one window).
    """
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    hits = _term_hits(flat, terms)
    fenced = [(m.start(), m.end()) for m in FENCE_RE.finditer(flat)]
    if len(flat) >= width * VALUE_MIN_LEN:
        words_width = width - int(width * VALUE_SHARE)
        details = _details(flat, fenced)
        late = [d for d in details if d[0] >= len(flat) * (1 - CONCLUSION_PART)] if conclusion else []
        for _ in range(3):  # the two windows with their cuts' marks may run over: the words' give way
            near = _words_window(flat, hits, words_width, fenced)
            far = _values_window(flat, late, int(width * VALUE_SHARE) - 2, near) if late else None
            if far is None:
                far = _values_window(flat, details, int(width * VALUE_SHARE) - 2, near)
            if far is None:
                break
            (a, b), (c, d) = sorted([near, far])
            out = _cut(flat, [(a, d)] if c <= b else [(a, b), (c, d)])  # windows that touch: one
            if len(out) <= width + 2:
                return out
            words_width -= len(out) - width - 2
    return _cut(flat, [_words_window(flat, hits, width, fenced)])


def _term_hits(flat: str, terms: Iterable[str]) -> list[Spot]:
    """Where ``flat``'s words match a query term, in order, with the term each matches."""
    match = TermMatch(terms)
    hits: list[Spot] = []
    for m in WORD_RE.finditer(flat):
        term = match(m.group())
        if term is not None:
            hits.append((m.start(), m.end(), term))
        elif HUMPED_RE.match(m.group()):
            # the words of a camelCase identifier (PersistKeysToAzureBlobStorage: persist, keys ...)
            for part in HUMP_RE.finditer(m.group()):
                term = match(part.group()) if len(part.group()) >= 3 else None
                if term is not None:
                    hits.append((m.start() + part.start(), m.start() + part.end(), term))
    return hits


def _details(flat: str, fenced: list[tuple[int, int]], pos: int = 0, endpos: int | None = None) -> list[Spot]:
    """The details (:data:`VALUE_RE`) of ``flat[pos:endpos]``, none inside quoted code (``fenced``:
    a file's details, not the answer's)."""
    found = VALUE_RE.finditer(flat, pos, len(flat) if endpos is None else endpos)
    return [(m.start(), m.end(), m.group()) for m in found if not any(a <= m.start() < b for a, b in fenced)]


def _words_window(flat: str, hits: list[Spot], width: int, fenced: list[tuple[int, int]]) -> tuple[int, int]:
    """(start, end) of the ``width`` characters around the densest cluster of the query's term
    ``hits`` (:func:`_term_hits`)."""
    start = 0
    if hits:
        # sliding window: the run of hits within ``width`` chars with the most distinct terms
        best = (-1, -1)
        first, last_end = hits[0][0], hits[0][1]
        counts: dict[str, int] = {}
        j = 0
        for i, (h_start, h_end, _) in enumerate(hits):
            while j < len(hits) and (j == i or hits[j][1] <= h_start + width):
                counts[hits[j][2]] = counts.get(hits[j][2], 0) + 1
                j += 1
            key = (len(counts), j - i)
            if key > best:
                best, first, last_end = key, h_start, max(h_end, hits[j - 1][1])
            counts[hits[i][2]] -= 1
            if not counts[hits[i][2]]:
                del counts[hits[i][2]]
        start = _placed(flat, first, last_end, width, fenced)
    start = min(start, max(0, len(flat) - width))
    return start, min(len(flat), start + width)


def _placed(flat: str, first: int, last_end: int, width: int, fenced: list[tuple[int, int]]) -> int:
    """Where a window of ``width`` holding ``flat[first:last_end]`` (the words' cluster) begins: a
    third of the room left before the cluster, unless another place that still holds the whole
    cluster holds more distinct details (:data:`VALUE_RE`) outside quoted code ("Done in
    poll_controller: the 15 s reload ..." keeps its first words)."""
    slack = max(0, width - (last_end - first))
    default = max(0, first - slack // 3)
    if not slack:
        return default
    lo, hi = max(0, first - slack), first
    spots = _details(flat, fenced, lo, min(len(flat), hi + width))
    if not spots:
        return default

    def held(start: int) -> int:
        return len({g for a, b, g in spots if a >= start and b <= start + width})

    # a window that begins at a detail, or ends at one
    starts = {a - 1 for a, _, _ in spots if lo < a <= hi} | {b - width for _, b, _ in spots if lo <= b - width <= hi}
    best, most = default, held(default)
    for start in sorted(starts):
        n = held(start)
        if n > most or (n == most and abs(start - default) < abs(best - default)):
            best, most = start, n
    return best


def _values_window(flat: str, details: list[Spot], width: int, away: tuple[int, int]) -> tuple[int, int] | None:
    """(start, end) of the ``width`` characters outside ``away`` that hold the most distinct
    ``details`` (:func:`_details`), beginning a little before one; None when no detail lies
    wholly outside ``away``."""
    if width <= 0:
        return None
    spots = [d for d in details if (d[1] <= away[0] or d[0] >= away[1]) and d[1] - d[0] <= width]
    best: tuple[int, int] | None = None
    most = 0
    counts: dict[str, int] = {}
    j = 0
    for i, (a, _, _) in enumerate(spots):  # a window beginning at each detail, its end by two pointers
        end = min(len(flat), a + width)
        if a < away[0] < end:  # stop where the words' window begins
            end = away[0]
        j = max(j, i)
        while j < len(spots) and spots[j][1] <= end:
            counts[spots[j][2]] = counts.get(spots[j][2], 0) + 1
            j += 1
        if len(counts) > most:
            best, most = (max(0, a - 12), end), len(counts)
        if j > i:  # the detail at i leaves the window
            counts[spots[i][2]] -= 1
            if not counts[spots[i][2]]:
                del counts[spots[i][2]]
    return best


def _cut(flat: str, spans: list[tuple[int, int]]) -> str:
    """The spans of ``flat`` (in order, not overlapping), each cut at word boundaries, with '…'
    where text is left out."""
    out = []
    for n, (start, end) in enumerate(spans):
        width = end - start
        if start > 0 and flat[start - 1] != " ":  # do not begin mid-word
            space = flat.find(" ", start)
            if space != -1 and space - start < 30:
                start = space + 1
        end = min(len(flat), start + width, spans[n + 1][0] if n + 1 < len(spans) else len(flat))
        if end < len(flat) and flat[end] != " ":
            space = flat.rfind(" ", start, end)
            if space > start + width // 2:
                end = space
        out.append(("…" if start > 0 else "") + flat[start:end] + ("…" if end < len(flat) else ""))
    return " ".join(out).replace("… …", " … ")
