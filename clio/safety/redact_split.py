"""Keys split across string literals: adjacent ones (``"sk-abc" "def…"``, ``'AKIA' + 'XXXX…'``,
Python's implicit concatenation over lines) and the items of a ``.join([...])`` call
(``"".join(["sk-abc", "def…"])``). The literals are joined, the joined text is searched
(``crossing``: the hits that span a cut between two literals), and the first literal a hit
touches gets the placeholder while the others lose their part of the secret, so the code stays
valid and the value joins to a placeholder.
"""

from __future__ import annotations

from collections.abc import Callable

from clio.lazy_re import lazy
from clio.safety.redact_rules import placeholder

__all__ = ["redact_split"]

Hits = list[tuple[int, int, str]]

_LIT = r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'"
_CHAIN = lazy(r"(?:" + _LIT + r")(?:[ \t]*\+?\s*(?:" + _LIT + r"))+")
# where two literals meet: a quote, then spaces, a "+" or a line break (not "" nor ", "), then a quote
_ADJACENT = lazy(r"[\"'](?:[ \t]*\+\s*|[ \t]+|[ \t]*\n\s*)[\"']")
_ONE_LIT = lazy(_LIT)
# sep.join([ "a", "b" ]) or join(("a", "b")): the items, literals only, a comma between
_JOIN = lazy(r"\.join\(\s*[\[(]\s*(?:" + _LIT + r")(?:\s*,\s*(?:" + _LIT + r"))+\s*,?\s*[\])]")
_MAX_CHAIN = 4096  # characters of a chain looked at past a junction


def redact_split(text: str, labels: list[str], crossing: Callable[[str, set[int]], Hits]) -> str:
    """``text`` with the secrets that only appear once split literals are joined replaced."""
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
    contents = [m.group()[1:-1] for m in lits]
    hits = crossing("".join(contents), _cuts(contents))
    if not hits:
        return pos
    for m, content in zip(lits, _rebuild(contents, hits, labels), strict=True):
        out += [text[pos : m.start() + 1], content]
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


