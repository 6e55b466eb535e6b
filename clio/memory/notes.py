"""Session-level notes: one JSON file per key, ``.clio/memory/<key>.json``.

Each file is ``{"key", "value", "created", "updated"}`` (plus ``provenance`` when the model
wrote it, see :mod:`clio.memory.provenance`; older notes have none), written atomically under the
file's lock. Other files in the folder (``session_progress.md``, lock files, quarantined
copies ``<key>.damaged-<time>.json``) are ignored. ``NoteStore(None)`` (incognito) keeps notes in memory for the
session and writes nothing. With a ``redact`` function (the secret redactor) keys and values are
redacted before they are kept, whoever calls :meth:`NoteStore.store`; a key's placeholder becomes
``REDACTED-<label>`` so it stays a valid file name, and lookups redact the key the same way.
"""

from __future__ import annotations

import builtins
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clio.memory.similarity import tokenize
from clio.store.json_doc import JsonDocument

KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
MAX_KEY = 100
_PLACEHOLDER = re.compile(r"\[REDACTED:([a-z0-9_]+)\]")


class NoteError(ValueError):
    """A bad note key (the message says what is allowed)."""


@dataclass
class Note:
    key: str
    value: str
    created: float
    updated: float
    provenance: dict[str, Any] | None = None  # who wrote the current value (None: unknown)

    def to_dict(self) -> dict[str, Any]:
        out = {"key": self.key, "value": self.value, "created": self.created, "updated": self.updated}
        if self.provenance is not None:
            out["provenance"] = self.provenance
        return out


def check_key(key: Any) -> str:
    """The key if it is a safe file name stem; NoteError otherwise."""
    if not isinstance(key, str) or not key.strip():
        raise NoteError("a note key must be a non-empty string")
    if "/" in key or "\\" in key or "\0" in key:
        raise NoteError(f"note key {key!r} must not contain path separators")
    if ".." in key:
        raise NoteError(f"note key {key!r} must not contain '..'")
    if len(key) > MAX_KEY:
        raise NoteError(f"note key is too long ({len(key)} characters; at most {MAX_KEY})")
    if not KEY_RE.match(key):
        raise NoteError(
            f"note key {key!r} may only use letters, digits, '.', '_' and '-', starting with a letter or digit"
        )
    return key


def _none() -> dict[str, Any] | None:
    return None


def _valid(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("key"), str)
        and isinstance(data.get("value"), str)
        and isinstance(data.get("created"), (int, float))
        and isinstance(data.get("updated"), (int, float))
    )


def _note(data: dict[str, Any]) -> Note:
    prov = data.get("provenance")
    return Note(
        data["key"],
        data["value"],
        float(data["created"]),
        float(data["updated"]),
        prov if isinstance(prov, dict) else None,
    )


def _score(note: Note, phrase: str, words: list[str]) -> int:
    """Hits of the query in a note: the whole phrase counts most, the key more than the value."""
    key, value = note.key.lower(), note.value.lower()
    score = 6 * (phrase in key) + 4 * (phrase in value)
    key_words, value_words = set(tokenize(key)), tokenize(value)
    for w in words:
        score += 2 * (w in key_words) + min(value_words.count(w), 5)
    return score


class NoteStore:
    def __init__(
        self,
        folder: Path | None,
        *,
        clock: Callable[[], float] = time.time,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.folder = Path(folder) if folder is not None else None
        self.clock = clock
        self.redact = redact  # the secret redactor (None: kept as given)
        self._memory: dict[str, Note] = {}  # incognito only

    def _key(self, key: str) -> str:
        """The key as stored: checked, and with any secret in it replaced by REDACTED-<label>."""
        check_key(key)
        if self.redact is None:
            return key
        return check_key(_PLACEHOLDER.sub(r"REDACTED-\1", self.redact(key)))

    @property
    def persistent(self) -> bool:
        return self.folder is not None

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / f"{check_key(key)}.json"

    def _doc(self, key: str) -> JsonDocument[dict[str, Any] | None]:
        """The note's own file (one document per key)."""
        return JsonDocument(self._path(key), _none, validate=_valid)

    def store(self, key: str, value: str, provenance: dict[str, Any] | None = None) -> tuple[Note, bool]:
        """Create or replace a note (``provenance``: who wrote this value); returns (note, created)."""
        key = self._key(key)
        if not isinstance(value, str):
            raise NoteError("a note value must be a string")
        if self.redact is not None:
            value = self.redact(value)
        now = self.clock()
        if self.folder is None:
            old = self._memory.get(key)
            self._memory[key] = Note(key, value, old.created if old else now, now, provenance)
            return self._memory[key], old is None
        created: list[bool] = []

        def update(current: dict[str, Any] | None) -> dict[str, Any]:
            created.append(current is None)
            first = current["created"] if current else now
            return Note(key, value, first, now, provenance).to_dict()

        data = self._doc(key).replace(update)
        assert data is not None
        return _note(data), created[-1]

    def retrieve(self, key: str) -> Note | None:
        key = self._key(key)
        if self.folder is None:
            return self._memory.get(key)
        data = self._doc(key).read()
        return _note(data) if data else None

    def delete(self, key: str) -> bool:
        key = self._key(key)
        if self.folder is None:
            return self._memory.pop(key, None) is not None
        path = self._path(key)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True

    def list(self) -> builtins.list[Note]:
        """All notes, most recently updated first."""
        if self.folder is None:
            notes = list(self._memory.values())
        else:
            notes = []
            for path in self.folder.glob("*.json") if self.folder.is_dir() else []:
                if path.name.startswith(".") or ".damaged-" in path.stem or not KEY_RE.match(path.stem):
                    continue
                data = JsonDocument(path, _none, validate=_valid).read()
                if data:
                    notes.append(_note(data))
        notes.sort(key=lambda n: (-n.updated, n.key))
        return notes

    def search(self, query: str, limit: int = 20) -> builtins.list[tuple[int, Note]]:
        """(hits, note) for notes matching the query as a substring or by words, best first."""
        phrase = query.strip().lower()
        if not phrase:
            return []
        words = list(dict.fromkeys(tokenize(phrase)))
        hits = [(s, n) for n in self.list() if (s := _score(n, phrase, words)) > 0]
        hits.sort(key=lambda t: (-t[0], -t[1].updated))
        return hits[:limit]
