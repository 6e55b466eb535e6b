"""The first JSON object or list in a model's reply (models wrap JSON in prose or code fences)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["first_json_list", "first_json_object"]


def _first(text: str, opener: str) -> Any:
    decoder = json.JSONDecoder()
    i = text.find(opener)
    while i != -1:
        try:
            value, _end = decoder.raw_decode(text, i)
            return value
        except ValueError:
            i = text.find(opener, i + 1)
    return None


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first ``{...}`` that parses as JSON, or None."""
    value = _first(text or "", "{")
    return value if isinstance(value, dict) else None


def first_json_list(text: str) -> list[Any] | None:
    """The first ``[...]`` that parses as JSON, or None."""
    value = _first(text or "", "[")
    return value if isinstance(value, list) else None
