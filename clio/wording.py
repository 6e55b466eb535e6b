"""Words for counts shown to people and to the model: ``plural(1, "line")`` is "1 line"."""

from __future__ import annotations

__all__ = ["plural"]


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and the word in the number it takes (``many``: an irregular plural, "entries")."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"
