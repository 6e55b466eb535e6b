"""The plain ``key: value`` config files most users write, read without importing PyYAML.

``auto_recall: false`` alone made a run import and run PyYAML (~25 ms of a ~250 ms one-shot run).
:func:`parse_flat` reads a document whose every line is blank, a comment, or ``key: value`` at
the left margin with a value that is ``true``/``false``, a whole number without leading zeros, a
decimal like ``0.5``, or a word of letters, digits and ``_ . - /`` that YAML reads as a string
(not ``yes``, ``no``, ``on``, ``off``, ``null``, ``true``... in any case). Anything else (quotes,
lists, nesting, comments after a value, ``:`` in a value, non-ASCII text) gives None, and the
caller uses PyYAML: for what it accepts the result is what ``yaml.safe_load`` gives
(tests/unit/test_simple_yaml.py checks that against PyYAML itself).
"""

from __future__ import annotations

import re
from typing import Any

_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):[ ]+([A-Za-z0-9_./-]+)[ ]*")
_INT = re.compile(r"0|[1-9][0-9]*")
_FLOAT = re.compile(r"(0|[1-9][0-9]*)\.[0-9]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*")
_YAML_WORDS = frozenset({"yes", "no", "on", "off", "true", "false", "null", "y", "n"})  # YAML 1.1's, any case
_TEXT = re.compile(r"[\x20-\x7e\n]*")  # printable ASCII and newlines only


def parse_flat(text: str) -> dict[str, Any] | None:
    """The settings of a flat ``key: value`` document, or None when PyYAML must read it."""
    if not _TEXT.fullmatch(text):
        return None
    out: dict[str, Any] = {}
    for line in text.split("\n"):
        stripped = line.strip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        m = _LINE.fullmatch(line)
        if m is None:
            return None
        key, raw = m.group(1), m.group(2)
        if key.lower() in _YAML_WORDS:
            return None
        if raw in ("true", "false"):
            value: Any = raw == "true"
        elif _INT.fullmatch(raw):
            value = int(raw)
        elif _FLOAT.fullmatch(raw):
            value = float(raw)
        elif _WORD.fullmatch(raw) and raw.lower() not in _YAML_WORDS:
            value = raw
        else:
            return None
        out[key] = value
    return out
