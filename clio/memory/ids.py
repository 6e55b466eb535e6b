"""Finding an item by its id or an unambiguous prefix of it (preferences, behaviours). Pure."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def find_by_id(
    items: Sequence[T],
    ident: str,
    id_of: Callable[[T], str],
    *,
    noun: str,
    nouns: str,
    hint: str,
    error: type[Exception],
) -> T:
    """The item whose id is ``ident``, else the one item whose id starts with it; ``error``
    names the matches or says none matched (``hint`` tells where the ids are listed)."""
    ident = str(ident).strip()
    exact = [i for i in items if id_of(i) == ident]
    if exact:
        return exact[0]
    hits = [i for i in items if ident and id_of(i).startswith(ident)]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise error(f"'{ident}' matches several {nouns}: {', '.join(id_of(i) for i in hits)}")
    raise error(f"no {noun} with id '{ident}' ({hint})")
