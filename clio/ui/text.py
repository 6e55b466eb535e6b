"""Text cut to fit a line: between words, never inside one (the tool-line hint, the resume view)."""

from __future__ import annotations


def cut_words(text: str, width: int) -> str:
    """``text`` at most ``width`` characters: cut at the last space in its second half (a single
    long word is cut where it must), trailing separators dropped, then "…"."""
    if len(text) <= width:
        return text
    head = text[: width - 1]
    space = head.rfind(" ")
    return (head[:space] if space >= width // 2 else head).rstrip(" ,;:") + "…"
