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
import re
from pathlib import Path

VOCAB_FILE = Path(__file__).resolve().parents[1] / "data" / "tokenizer.json"
_ENTRY = re.compile(r'"([a-z]{2,})":\d')


@functools.lru_cache(maxsize=1)
def words() -> frozenset[str]:
    """The vocabulary's whole lower-case words of two letters or more (empty when the file cannot
    be read: then no word counts as common, and recall decides as it did without this)."""
    try:
        text = VOCAB_FILE.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return frozenset()
    at = text.find('"vocab":')
    return frozenset(_ENTRY.findall(text, at if at >= 0 else 0))


def is_common(word: str) -> bool:
    """Whether ``word`` (as typed, any case) is an everyday English word."""
    return word.lower() in words()
