"""A session's name: taken from the words the user typed in its first request, redacted before it
is cut (no secret is ever cut in half), one line of at most :data:`NAME_CHARS` characters."""

from __future__ import annotations

import re
from collections.abc import Callable

from clio.messages import Message, typed_words

NAME_CHARS = 80
Redact = Callable[[str], str]
_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


def _identity(text: str) -> str:
    return text


def clean_name(name: str, redact: Redact | None) -> str:
    """A session name as stored: redacted first (so no secret is cut in half), then one line of at
    most NAME_CHARS characters, never ending inside a placeholder."""
    text = " ".join((redact or _identity)(name).split())
    if len(text) <= NAME_CHARS:
        return text
    end = NAME_CHARS
    for m in _PLACEHOLDER.finditer(text, max(0, end - 64), end + 64):
        if m.start() < end < m.end():
            end = m.start()
    cut = text[:end]
    return cut.rstrip()


def _head(text: str, redact: Redact | None) -> str:
    """The start of a message, redacted whole enough that a secret near the name's end is seen."""
    return (redact or _identity)(text[:4096])


def name_from(msg: Message, redact: Redact | None) -> str:
    """A session's name from its first request: the words the user typed, never the content of
    a file the message attached (@path)."""
    return auto_name(_head(typed_words(msg), redact))


def auto_name(text: str) -> str:
    line = " ".join(text.split())
    if len(line) <= 48:
        return line
    cut = line[:48].rsplit(" ", 1)[0]
    return (cut or line[:48]) + "…"
