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

Untrusted text is also compared *as it looks* (:func:`as_seen`, :func:`defuse`) before clio
decides whether it imitates clio's own headings and tags: NFKC (fullwidth ``＃``, ``＜``, ``／``),
invisible format characters (Unicode category Cf: zero-width spaces, bidi marks, soft hyphens,
tag characters) dropped, every space-like character a plain space, and the brackets, slashes,
dashes and Cyrillic or Greek letters that pass for ASCII ones (``‹``, ``⁄``, ``‐``, ``р``) folded.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable

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


# What NFKC leaves alone but a reader takes for ASCII: brackets, slashes, dashes, and the Cyrillic
# and Greek letters drawn like Latin ones (a heading or tag spelt with them looks the same).
_LOOKALIKES = str.maketrans(
    {
        **dict.fromkeys("\u2039\u2329\u27e8\u3008\u276e\u02c2\u1438\u227a", "<"),
        **dict.fromkeys("\u203a\u232a\u27e9\u3009\u276f\u02c3\u1433\u227b", ">"),
        **dict.fromkeys("\u2044\u2215\u29f8\u2571", "/"),
        **dict.fromkeys("\u2010\u2012\u2013\u2014\u2015\u2212\u2043\u02d7\u2796", "-"),
        **dict.fromkeys("\u2017\u02cd", "_"),
        **dict.fromkeys("\u2018\u2019\u201b\u02bc\u2032", "'"),
        **dict(zip("аеорсухіјѕԁԛԝһӏАВЕКМНОРСТХІЈЅ", "aeopcyxijsdqwhlABEKMHOPCTXIJS", strict=True)),
        **dict(zip("αορνικυΑΒΕΗΙΚΜΝΟΡΤΥΧΖ", "aopvikuABEHIKMNOPTYXZ", strict=True)),
    }
)


def _seen_char(ch: str) -> str:
    """One character as it looks: '' for an invisible one, ' ' for any space, else NFKC and folded."""
    cat = unicodedata.category(ch)
    if cat == "Cf":
        return ""
    if cat in ("Zs", "Zl", "Zp"):
        return " "
    return unicodedata.normalize("NFKC", ch).translate(_LOOKALIKES)


def _seen_map(text: str) -> tuple[str, list[int]]:
    """``text`` as seen, and for each of its characters the index in ``text`` it comes from."""
    out: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        got = ch if ch.isascii() else _seen_char(ch)
        out.append(got)
        origin += [i] * len(got)
    return "".join(out), origin


def as_seen(text: str) -> str:
    """``text`` as a reader sees it (see the module's docstring): what clio compares with its own
    headings and tags when the text is untrusted."""
    return text if text.isascii() else _seen_map(text)[0]


def _bare(line: str) -> str:
    """A line as seen, lower-cased, spaces squeezed, without the markdown and ``<`` before its words."""
    seen = " ".join(as_seen(line).casefold().split())
    bare = seen.lstrip("#>*_ ").lstrip("<").strip()
    return re.sub(r"^/\s+", "/", bare)


def _shown_odd(line: str) -> str:
    """A line with its invisible characters and odd spaces (no-break, thin, ideographic...) escaped."""
    return "".join(char_escape(c) if not c.isascii() and _seen_char(c) in ("", " ") else c for c in escape_invisible(line))


def defuse(text: str, headings: Iterable[str] = (), tags: Iterable[str] = (), mark: str = "[in the file] ") -> str:
    """Untrusted ``text`` made unable to pass for clio's own markup, compared as it looks:

    - a line that starts (after ``#``, ``>``, ``*``, ``_``, ``<``) with one of ``headings``
      (lower case) is prefixed with ``mark``, its invisible characters and odd spaces escaped;
    - every closing tag ``</name`` of ``tags`` (``< / name``, ``‹/name``, ``＜／name`` ...)
      becomes ``<\\/name``, so it cannot end clio's block."""
    heads = tuple(h.casefold() for h in headings)
    flagged = {i for i, line in enumerate(text.split("\n")) if line and any(_bare(line).startswith(h) for h in heads)}
    names = [re.escape(t) for t in tags]
    if names:
        ascii_only = text.isascii()  # seen as it is: no map to build (the usual case, and fast)
        seen, origin = (text, []) if ascii_only else _seen_map(text)
        closer = re.compile(rf"<[ \t]*/[ \t]*({'|'.join(names)})", re.IGNORECASE)
        out, pos = [], 0
        for m in closer.finditer(seen):
            start, end = (m.start(), m.end()) if ascii_only else (origin[m.start()], origin[m.end() - 1] + 1)
            out += [text[pos:start], "<\\/" + m.group(1).lower()]
            pos = end
        text = "".join(out) + text[pos:]
    if not flagged:
        return text
    lines = text.split("\n")
    return "\n".join(mark + _shown_odd(line) if i in flagged else line for i, line in enumerate(lines))
