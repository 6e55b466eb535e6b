"""Make invisible and control characters visible before text reaches a screen or a page.

A bidi override turns ``file_\\u202etxt.exe`` into what looks like ``file_exe.txt``; a zero-width
space hides a difference between two names; an escape character drives the terminal. Text from
the model, a tool or a file is shown with each such character replaced by its escape
(``\\u202e``, ``\\x1b``), which the terminal and the HTML export draw in a distinct style.

Escaped: bidi embeddings, overrides and isolates (U+202A-202E, U+2066-2069, U+061C, U+200E-200F),
zero-width and other invisible format characters (U+200B-200D, U+2060-2064, U+206A-206F, U+FEFF,
U+180E, U+00AD), line and paragraph separators (U+2028-2029), interlinear annotation marks
(U+FFF9-FFFB), noncharacters U+FDD0-FDEF, Unicode tag characters (U+E0000-E007F, which can
smuggle invisible ASCII), C0 controls except ``\\n`` and ``\\t``, DEL and C1 controls. Kept: a
carriage return directly before a line feed (Windows line ends are not a disguise) and a
zero-width joiner between two emoji (it draws a family or profession emoji as one picture).
"""

from __future__ import annotations

import re
from collections.abc import Callable

_RANGES = (
    "\x00-\x08",
    "\x0b\x0c\x0e-\x1f",  # C0 except \t (09), \n (0a) and \r (0d, below)
    "\x7f-\x9f",  # DEL and C1
    "\u00ad",  # soft hyphen
    "\u061c",  # arabic letter mark
    "\u180e",  # mongolian vowel separator
    "\u200b\u200c\u200e\u200f",  # zero-width space and non-joiner, LRM, RLM (joiner below)
    "\u2028-\u202e",  # line/paragraph separators, bidi embeddings and overrides
    "\u2060-\u2064",  # word joiner, invisible operators
    "\u2066-\u206f",  # bidi isolates, deprecated format characters
    "\ufdd0-\ufdef",  # noncharacters
    "\ufeff",  # zero-width no-break space (BOM)
    "\ufff9-\ufffb",  # interlinear annotation
    "\U000e0000-\U000e007f",  # tag characters
)
_EMOJI = "[\u2600-\u27bf\ufe0f\U0001f000-\U0001faff]"
# \r is a control only when it is not part of a \r\n line end; the zero-width joiner is one only
# when it does not join two emoji (a family or a profession emoji is drawn as one picture)
_PATTERN = re.compile(f"\r(?!\n)|(?<!{_EMOJI})\u200d|\u200d(?!{_EMOJI})|[{''.join(_RANGES)}]")


def char_escape(ch: str) -> str:
    """``\\x1b`` for code points below 0x100, ``\\u202e`` up to 0xFFFF, ``\\U000e0041`` above."""
    n = ord(ch)
    if n < 0x100:
        return f"\\x{n:02x}"
    if n <= 0xFFFF:
        return f"\\u{n:04x}"
    return f"\\U{n:08x}"


def has_invisible(text: str) -> bool:
    return _PATTERN.search(text) is not None


def escape_invisible(text: str, mark: Callable[[str], str] | None = None) -> str:
    """``text`` with every invisible or control character replaced by its escape.

    ``mark`` wraps each escape (e.g. in markup); by default the escape goes in as is.
    """
    if mark is None:
        return _PATTERN.sub(lambda m: char_escape(m.group()), text)
    wrap = mark
    return _PATTERN.sub(lambda m: wrap(char_escape(m.group())), text)


def split_invisible(text: str) -> list[tuple[str, bool]]:
    """``text`` cut into (piece, is_escape) runs: escapes already written out, in order.

    For renderers that style the escapes (a rich Text, HTML spans).
    """
    out: list[tuple[str, bool]] = []
    pos = 0
    for m in _PATTERN.finditer(text):
        if m.start() > pos:
            out.append((text[pos : m.start()], False))
        out.append((char_escape(m.group()), True))
        pos = m.end()
    if pos < len(text):
        out.append((text[pos:], False))
    return out
