"""Keys split across string literals: adjacent ones (``"sk-abc" "def…"``, ``'AKIA' + 'XXXX…'``,
Python's implicit concatenation over lines, with a comment between or a string prefix such as
``r"…"``) and the items of a ``.join([...])`` call (``"".join(["sk-abc", "def…"])``). The
literals are joined, the joined text is searched (``crossing``: the hits that span a cut between
two literals), and the first literal a hit touches gets the placeholder while the others lose
their part of the secret, so the code stays valid and the value joins to a placeholder.

Also a key split by a shell line continuation (``--token ghp_abc\\`` then ``def…`` on the next
line): the lines are joined as the shell joins them, and a secret that spans the join is
replaced whole (the continuation goes with it: the command reads the same).
"""

from __future__ import annotations

from collections.abc import Callable

from clio.lazy_re import lazy
from clio.safety.redact_rules import placeholder

__all__ = ["redact_split"]

Hits = list[tuple[int, int, str]]

_PREFIX = "rRbBuUfF"
_LIT = r"[" + _PREFIX + r"]{0,2}(?:\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*')"
_COMMENT = r"(?:[ \t]*#[^\n]*(?=\n))?"  # Python: a comment before the line break
_CHAIN = lazy(r"(?:" + _LIT + r")(?:[ \t]*\+?" + _COMMENT + r"\s*(?:" + _LIT + r"))+")
# where two literals meet: a quote, then spaces, a "+" or a line break (maybe after a comment; not
# "" nor ", "), then a quote (maybe after a string prefix)
_ADJACENT = lazy(r"[\"'](?:[ \t]*\+\s*|[ \t]+|" + _COMMENT + r"[ \t]*\n\s*)[" + _PREFIX + r"]{0,2}[\"']")
# a shell line continuation inside a word: a backslash at the end of a line, glued to the token
# before it and to the rest of the token at the start of the next line (a continuation after a
# space, or before an indented line, joins two words, never one token)
_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+/=.-~")
_BACKSLASH_EOL = lazy(r"\\\r?\n")
_ONE_LIT = lazy(_LIT)
# sep.join([ "a", "b" ]) or join(("a", "b")): the items, literals only, a comma between
_JOIN = lazy(r"\.join\(\s*[\[(]\s*(?:" + _LIT + r")(?:\s*,\s*(?:" + _LIT + r"))+\s*,?\s*[\])]")
_MAX_CHAIN = 4096  # characters of a chain looked at past a junction


def redact_split(text: str, labels: list[str], crossing: Callable[[str, set[int]], Hits]) -> str:
    """``text`` with the secrets that only appear once split literals are joined replaced."""
    if "\\\n" in text or "\\\r\n" in text:
        text = _redact_continuations(text, labels, crossing)
    if "join(" in text:
        text = _redact_joins(text, labels, crossing)
    if not _ADJACENT.search(text):
        return text
    out: list[str] = []
    pos = covered = 0
    for adj in _ADJACENT.finditer(text):
        if adj.start() < covered:
            continue
        # a chain's first literal ends at its first junction, on that junction's line
        start = max(covered, text.rfind("\n", 0, adj.start()) + 1)
        for chain in _CHAIN.finditer(text, start, adj.end() + _MAX_CHAIN):
            if chain.start() > adj.start():
                break
            covered = chain.end()
            pos = _replace_literals(text, chain.start(), chain.end(), out, pos, labels, crossing)
        covered = max(covered, adj.end())
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _redact_continuations(text: str, labels: list[str], crossing: Callable[[str, set[int]], Hits]) -> str:
    """Secrets that span a shell line continuation: each run of continued lines is joined as the
    shell joins it (the backslash and line break dropped) and searched; a hit across a join is
    replaced whole, in the original text."""
    out: list[str] = []
    pos = 0
    conts = _continuations(text)
    i = 0
    while i < len(conts):
        j = i  # continued lines run on while the next continuation ends the line after this one
        while j + 1 < len(conts) and text.find("\n", conts[j][1]) >= conts[j + 1][1] - 1:
            j += 1
        start = text.rfind("\n", 0, conts[i][0]) + 1
        end = text.find("\n", conts[j][1])
        end = len(text) if end < 0 else end
        joined: list[str] = []
        origin: list[int] = []  # joined index -> index in text
        cuts: set[int] = set()
        k = start
        for cont_at, cont_end in conts[i : j + 1]:
            joined.append(text[k:cont_at])
            origin += range(k, cont_at)
            cuts.add(len(origin))
            k = cont_end
        joined.append(text[k:end])
        origin += range(k, end)
        for a, b, label in crossing("".join(joined), cuts):
            oa, ob = origin[a], origin[b - 1] + 1
            if oa < pos:
                continue
            out += [text[pos:oa], placeholder(label)]
            pos = ob
            labels.append(label)
        i = j + 1
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _continuations(text: str) -> list[tuple[int, int]]:
    """(where the backslash is, where the next line starts) of each continuation inside a token."""
    out: list[tuple[int, int]] = []
    for m in _BACKSLASH_EOL.finditer(text):
        i, after = m.start(), m.end()
        if i > 0 and text[i - 1] in _TOKEN_CHARS and text[after : after + 1] in _TOKEN_CHARS:
            out.append((i, after))
    return out


def _redact_joins(text: str, labels: list[str], crossing: Callable[[str, set[int]], Hits]) -> str:
    out: list[str] = []
    pos = 0
    for m in _JOIN.finditer(text):
        sep_ok = text[max(0, m.start() - 2) : m.start()] in ('""', "''")  # "".join: no separator
        if sep_ok:
            pos = _replace_literals(text, m.start(), m.end(), out, pos, labels, crossing)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _replace_literals(
    text: str, start: int, end: int, out: list[str], pos: int, labels: list[str],
    crossing: Callable[[str, set[int]], Hits],
) -> int:  # fmt: skip
    """Append to ``out`` the literals of ``text[start:end]`` with crossing secrets removed (from
    ``pos`` on); returns the new ``pos`` (unchanged when nothing was found)."""
    lits = list(_ONE_LIT.finditer(text, start, end))
    leads = [len(m.group()) - len(m.group().lstrip(_PREFIX)) for m in lits]  # r"...", b'...'
    contents = [m.group()[lead + 1 : -1] for m, lead in zip(lits, leads, strict=True)]
    hits = crossing("".join(contents), _cuts(contents))
    if not hits:
        return pos
    for m, lead, content in zip(lits, leads, _rebuild(contents, hits, labels), strict=True):
        out += [text[pos : m.start() + lead + 1], content]
        pos = m.end() - 1
    return pos


def _cuts(contents: list[str]) -> set[int]:
    """Offsets in the joined text where one literal ends and the next begins."""
    cuts, n = set(), 0
    for c in contents[:-1]:
        n += len(c)
        cuts.add(n)
    return cuts


def _rebuild(contents: list[str], hits: list[tuple[int, int, str]], labels: list[str]) -> list[str]:
    """Each literal's new content: the secret's characters removed, the placeholder in the first."""
    labels.extend(label for _, _, label in hits)
    out: list[str] = []
    start = 0
    for c in contents:
        end = start + len(c)
        piece: list[str] = []
        i = start
        for a, b, label in hits:
            if b <= i or a >= end:
                continue
            piece.append(c[i - start : max(a, i) - start])
            if a >= start:
                piece.append(placeholder(label))
            i = min(b, end)
        piece.append(c[i - start :])
        out.append("".join(piece))
        start = end
    return out


