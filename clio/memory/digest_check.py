"""Whether a digest a read-back wrote says something of its session (pure): a small local model
asked for one often answers with a pleasantry ("Thank you for your help! I'm glad I could
assist you."), with the prompt's own instruction ("How do I ask about this later in different
words?"), or with nothing the session said. Such a digest would be indexed and quoted as the
session's summary, and would take a place in the automatic recall's block; it is not kept
(clio.app.consolidate). A digest is kept when it repeats no run of :data:`ECHO_WORDS` words of
the prompt, and names at least :data:`MIN_SHARED` of the words its part of the session used, one
of them the project's own (a word everyday English does not have, or one with a digit: a name, a
path, a port). Measured in docs/memory.md ("Digests: what a session settled").
"""

from __future__ import annotations

from collections.abc import Sequence

from clio.memory.similarity import STOPWORDS, tokenize
from clio.messages import Message, text_of
from clio.recall.common_words import is_common

ECHO_WORDS = 5  # a run this long, word for word from the prompt: the digest copies its instructions
MIN_SHARED = 2  # the session's own words a digest names at the least
MIN_WORD = 3  # shorter words say nothing of a session ("a", "to", "db" as often in any)


def grounded(digest: str, part: Sequence[Message], prompt: str) -> bool:
    """Whether ``digest`` speaks of ``part`` (the messages it covers) in the session's own words,
    without copying ``prompt`` (the read-back's template, its instructions)."""
    words = tokenize(digest)
    if _runs(words) & _runs(tokenize(prompt)):
        return False
    said = set(tokenize("\n".join(text_of(m) for m in part)))  # messages, tool calls and results
    shared = {w for w in words if len(w) >= MIN_WORD and w not in STOPWORDS and w in said}
    return len(shared) >= MIN_SHARED and any(_own(w) for w in shared)


def _runs(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + ECHO_WORDS]) for i in range(len(words) - ECHO_WORDS + 1)}


def _own(word: str) -> bool:
    """A word of the project's rather than of everyday English: a name, a path's part, a number."""
    return any(c.isdigit() for c in word) or not is_common(word)
