"""Notes shared by every checkout of a project: a :class:`~clio.memory.notes.NoteStore` whose
notes live in PostgreSQL (``clio_notes``), written through to the usual ``.clio/memory/`` files,
which are the local copy while the server is away (writes then wait in the queue)."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

from clio.memory.notes import Note, NoteStore
from clio.team.link import TeamLink
from clio.team.queue import new_op
from clio.team.store import Redact


def _notes(conn: Any, project: str, key: str | None = None) -> builtins.list[Note]:
    sql = "SELECT key, value, created, updated, provenance, author FROM clio_notes WHERE project = %s"
    params: list[Any] = [project]
    if key is not None:
        sql += " AND key = %s"
        params.append(key)
    out = []
    for k, value, created, updated, prov, author in conn.execute(sql, params).fetchall():
        prov = dict(prov) if isinstance(prov, dict) else {}
        prov.setdefault("author", author)
        out.append(Note(k, value, float(created), float(updated), prov))
    return out


class SharedNoteStore(NoteStore):
    def __init__(self, link: TeamLink, folder: Path, *, redact: Redact) -> None:
        super().__init__(folder, redact=redact)
        self.link = link

    def store(self, key: str, value: str, provenance: dict[str, Any] | None = None) -> tuple[Note, bool]:
        note, created = super().store(key, value, provenance)  # checked, redacted, kept locally
        self.link.submit(
            new_op(
                "note_put", note.updated, key=note.key, value=note.value,
                provenance=provenance, author=self.link.author,
            )  # fmt: skip
        )
        return note, created

    def retrieve(self, key: str) -> Note | None:
        key = self._key(key)
        found = self.link.read(lambda conn: _notes(conn, self.link.project, key))
        if found is None:
            return super().retrieve(key)
        return found[0] if found else None

    def delete(self, key: str) -> bool:
        key = self._key(key)
        local = super().delete(key)
        sent, result = self.link.submit(new_op("note_delete", self.clock(), key=key))
        return bool(result) if sent else local

    def list(self) -> builtins.list[Note]:
        found = self.link.read(lambda conn: _notes(conn, self.link.project))
        if found is None:
            return super().list()
        found.sort(key=lambda n: (-n.updated, n.key))
        return found
