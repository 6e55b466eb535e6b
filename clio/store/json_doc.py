"""One JSON document that several clio processes share: read it, or change it under its lock.

The stores of clio's own files (long-term memory, notes, preferences, behaviours) each keep one
or more documents; this is the one read-modify-write they share. On disk every change runs under
the file's lock on what is there at that moment (:func:`clio.store.atomic.locked_update`: temp +
fsync + rename, a damaged file moved aside and named), so concurrent clio processes never lose
each other's updates. Without a path (``--incognito``) the document lives in this process only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from clio.store.atomic import locked_update, read_json

T = TypeVar("T")
R = TypeVar("R")


class JsonDocument(Generic[T]):
    def __init__(
        self, path: Path | None, default: Callable[[], T], *, validate: Callable[[Any], bool] | None = None
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.default = default
        self.validate = validate
        self._memory: T = default()  # the document when there is no path

    def read(self) -> T:
        """What the document holds now (the default when the file is missing or was damaged)."""
        if self.path is None:
            return self._memory
        return read_json(self.path, self.default, validate=self.validate)

    def edit(self, fn: Callable[[T], R]) -> R:
        """Apply ``fn`` to the current document, which it changes in place, and save it; returns
        what ``fn`` returned. On disk this happens under the lock, on what is there at that moment."""
        if self.path is None:
            return fn(self._memory)
        result: list[R] = []

        def update(current: T) -> T:
            result.append(fn(current))
            return current

        locked_update(self.path, update, self.default, validate=self.validate)
        return result[0]

    def replace(self, fn: Callable[[T], T]) -> T:
        """Replace the document by ``fn(current)`` (under the lock on disk); returns what was saved."""
        if self.path is None:
            self._memory = fn(self._memory)
            return self._memory
        return locked_update(self.path, fn, self.default, validate=self.validate)
