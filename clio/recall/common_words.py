"""The everyday English words: the whole, lower-case words of the sentence encoder's WordPiece
vocabulary (``clio/data/tokenizer.json``, shipped with clio), about 21,700 of them.

A vocabulary built for general English keeps a word whole when it is common; a project's own
names ("pgbouncer", "dunning", "kafka", "terraform") and most jargon are split into pieces, so a
word it does not hold is, as a rule, a word of the project. :func:`clio.recall.relevance.asks_something`
uses this to tell a one-word message that names something ("pgbouncer?") from one that only
talks ("wait", "same error"). Read on first use (about 9 ms), never on a run that does not ask.
"""

from __future__ import annotations

import functools
import os

from clio.lazy_re import lazy

# beside this package's folder, as shipped (never the project's: a repository cannot choose it)
VOCAB_FILE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "tokenizer.json")
_ENTRY = lazy(r'"([a-z]{2,})":\d')


@functools.lru_cache(maxsize=1)
def words() -> frozenset[str]:
    """The vocabulary's whole lower-case words of two letters or more (empty when the file cannot
    be read: then no word counts as common, and recall decides as it did without this)."""
    try:
        with open(VOCAB_FILE, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return frozenset()
    at = text.find('"vocab":')
    return frozenset(_ENTRY.findall(text, at if at >= 0 else 0))


def is_common(word: str) -> bool:
    """Whether ``word`` (as typed, any case) is an everyday English word."""
    return word.lower() in words()
