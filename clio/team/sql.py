"""Operations on the shared store, each inside the caller's transaction (:meth:`clio.team.db.Db.run`).

Every write of a project first takes that project's advisory lock, so writers of one project
apply their changes one after the other, each seeing everything committed before it: dedup,
merge and history follow exactly the local rules (:func:`clio.memory.dedup.upsert`,
:mod:`clio.memory.lifecycle`), applied here to the rows that can be concerned (for an added
entry: same type, sharing a word, of a size that can reach the duplicate threshold).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clio.memory import dedup, ltm
from clio.memory.ltm import Entry
from clio.memory.provenance import Provenance
from clio.memory.similarity import DUPLICATE_MIN, STOPWORDS, word_set

COLUMNS = "body, author, confirmed_by, origin"
Vectorize = Callable[[Entry], "list[float] | None"]


@dataclass
class Meta:
    """Who wrote an entry (``user@machine``), who confirmed it since, and where it was written."""

    author: str
    confirmed_by: list[str] = field(default_factory=list)
    origin: str = ""

    def to_list(self) -> list[Any]:
        return [self.author, self.confirmed_by, self.origin]

    @classmethod
    def from_list(cls, data: Any) -> Meta | None:
        if isinstance(data, list) and len(data) == 3 and isinstance(data[0], str):
            return cls(data[0], [str(x) for x in data[1] or []], str(data[2]))
        return None


Row = tuple[Entry, Meta]


def lock(conn: Any, project: str, *, shared: bool = False) -> None:
    """The project's lock: shared by every write of entries or notes, exclusive for the upkeep
    that reads and rewrites all of them (prune, compact, clear, drop an author)."""
    fn = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
    conn.execute(f"SELECT {fn}(hashtextextended(%s, 0))", (project,))


def _key(*parts: str) -> int:
    return int.from_bytes(hashlib.blake2b("\0".join(parts).encode(), digest_size=8).digest(), "big", signed=True)


def first_words(project: str, type_: str, words: Iterable[str]) -> list[str]:
    """The floor((1-t)|words|) + 1 first of ``words`` in one fixed order (stop words last): any
    set the dedup rule could merge with this one holds at least one of them (see :func:`lock_words`)."""
    words = set(words)
    order = sorted(words, key=lambda w: (w in STOPWORDS, _key(project, type_, w)))
    return order[: math.floor((1 - DUPLICATE_MIN) * len(words)) + 1]


def lock_keys(project: str, type_: str, words: Iterable[str]) -> list[int]:
    """The advisory lock keys of an entry's word set, in the order they are taken."""
    first = first_words(project, type_, words) or [""]
    return sorted(_key(project, type_, w) for w in first)  # taken in key order: no deadlock


def lock_words(conn: Any, project: str, new: Entry) -> None:
    """Serialize the adds that could be duplicates of each other, and only those. Two word sets
    with Jaccard >= t share the first word of their intersection (in a fixed order of words), and
    in each set fewer than (1-t)|set| + 1 words come before it (they are all outside the
    intersection); so locking each set's floor((1-t)|set|) + 1 first words gives any two possible duplicates a
    common lock. Any fixed order of words will do: stop words come last, so that unrelated
    entries rarely wait for each other. Locks are taken in key order: no deadlock."""
    keys = lock_keys(project, new.type, word_set(new.text()))
    conn.execute(
        "SELECT pg_advisory_xact_lock(k) FROM unnest(%s::bigint[]) WITH ORDINALITY AS t(k, n) ORDER BY n", (keys,)
    )


def claim(conn: Any, project: str, op_id: str) -> bool:
    """Record ``op_id`` as applied; False when it was already (then do nothing again)."""
    cur = conn.execute(
        "INSERT INTO clio_applied (project, op) VALUES (%s, %s) ON CONFLICT DO NOTHING RETURNING op",
        (project, op_id),
    )
    return cur.fetchone() is not None


def rows(conn: Any, sql: str, params: Sequence[Any]) -> list[Row]:
    """Rows of ``SELECT {COLUMNS} ...`` as entries (a row that no longer parses is left out)."""
    out = []
    for body, author, confirmed, origin in conn.execute(sql, params).fetchall():
        try:
            out.append((Entry.from_dict(body), Meta(author, list(confirmed or []), origin)))
        except ltm.LtmError:
            continue
    return out


def fetch(conn: Any, project: str, ids: Iterable[str] | None = None, *, for_update: bool = False) -> list[Row]:
    tail = " ORDER BY id FOR UPDATE" if for_update else ""
    if ids is None:
        order = tail or " ORDER BY seq"
        return rows(conn, f"SELECT {COLUMNS} FROM clio_entries WHERE project = %s{order}", (project,))
    return rows(
        conn, f"SELECT {COLUMNS} FROM clio_entries WHERE project = %s AND id = ANY(%s){tail}", (project, list(ids))
    )


def write(
    conn: Any, project: str, e: Entry, meta: Meta, vector: list[float] | None = None, *, create: bool = False
) -> bool:
    """Insert or update the row of ``e``; with ``create``, only insert (False: the id is taken)."""
    words = sorted(word_set(e.text()))
    params: list[Any] = [
        project, e.id, e.type, json.dumps(e.to_dict()), words, len(words), e.full_text(),
        meta.author, meta.confirmed_by, meta.origin, e.last_confirmed, e.pinned,
    ]  # fmt: skip
    emb_col, emb_val, emb_set = "", "", ""
    if vector is not None:
        emb_col, emb_val, emb_set = ", emb", ", %s::vector", ", emb = EXCLUDED.emb"
        params.append("[" + ",".join(f"{x:.6f}" for x in vector) + "]")
    conflict = "DO NOTHING" if create else (
        """DO UPDATE SET type = EXCLUDED.type, body = EXCLUDED.body,
                words = EXCLUDED.words, nwords = EXCLUDED.nwords, tsv = EXCLUDED.tsv,
                confirmed_by = EXCLUDED.confirmed_by, last_confirmed = EXCLUDED.last_confirmed,
                pinned = EXCLUDED.pinned, seq = nextval('clio_entries_seq_seq')"""
        + emb_set
    )
    cur = conn.execute(
        f"""INSERT INTO clio_entries (project, id, type, body, words, nwords, tsv, author, confirmed_by,
                origin, last_confirmed, pinned{emb_col})
            VALUES (%s, %s, %s, %s::jsonb, %s, %s, to_tsvector('english', %s), %s, %s, %s, %s, %s{emb_val})
            ON CONFLICT (project, id) {conflict}""",
        params,
    )
    return bool(cur.rowcount)


def remove(conn: Any, project: str, ids: Iterable[str]) -> int:
    cur = conn.execute("DELETE FROM clio_entries WHERE project = %s AND id = ANY(%s)", (project, list(ids)))
    return int(cur.rowcount or 0)


def dedup_candidates(conn: Any, project: str, new: Entry) -> list[Row]:
    """The rows :func:`clio.memory.dedup.upsert` could merge ``new`` into: same type, holding one
    of its :func:`first_words` (every possible duplicate does; mostly rare words, so few rows),
    and a word count within the duplicate threshold's size bound."""
    words = sorted(word_set(new.text()))
    if not words:
        sql = f"SELECT {COLUMNS} FROM clio_entries WHERE project = %s AND type = %s AND nwords = 0 ORDER BY id FOR UPDATE"
        return rows(conn, sql, (project, new.type))
    lo, hi = math.floor(len(words) * DUPLICATE_MIN), math.ceil(len(words) / DUPLICATE_MIN)
    sql = (
        f"SELECT {COLUMNS} FROM clio_entries WHERE project = %s AND type = %s AND words && %s"
        " AND nwords BETWEEN %s AND %s ORDER BY id FOR UPDATE"
    )
    return rows(conn, sql, (project, new.type, first_words(project, new.type, words), lo, hi))




def add(
    conn: Any, project: str, op: dict[str, Any], vectorize: Vectorize | None = None
) -> tuple[Entry, bool, Meta]:
    """Apply an ``add`` operation: (the entry made from it or merged into its true duplicate,
    created, who wrote and confirmed it)."""
    new = ltm.make_entry(
        op["type"], dict(op["fields"]), confidence=op["confidence"], now=op["at"],
        provenance=Provenance.from_dict(op.get("provenance")),
    )  # fmt: skip
    lock_words(conn, project, new)
    found = dedup_candidates(conn, project, new)
    metas = {e.id: m for e, m in found}
    out, stored, created = dedup.upsert([e for e, _ in found], new)
    del out
    vector = vectorize(stored) if vectorize else None
    if created:  # a new id, salted (ltm.entry_id) while another entry of the project has it
        meta, taken = Meta(op["author"], [], op.get("origin", "")), set()
        while not write(conn, project, stored, meta, vector, create=True):
            taken.add(stored.id)
            stored.id = ltm.entry_id(stored.type, stored.text(), taken)
        return stored, created, meta
    meta = metas[stored.id]
    if op["author"] != meta.author and op["author"] not in meta.confirmed_by:
        meta.confirmed_by = [*meta.confirmed_by, op["author"]]
    write(conn, project, stored, meta, vector)
    return stored, created, meta


def update(
    conn: Any,
    project: str,
    change: Callable[[list[Entry]], list[Entry]],
    ids: Iterable[str] | None = None,
    author: str = "unknown",
) -> None:
    """Apply ``change`` (a pure function of :mod:`clio.memory.lifecycle` or :mod:`~clio.memory.dedup`)
    to the project's entries (only ``ids`` when given) and write what it changed."""
    before = fetch(conn, project, ids, for_update=True)
    metas = {e.id: m for e, m in before}
    old = {e.id: e.to_dict() for e, _ in before}
    after = change([e for e, _ in before])
    kept = {e.id for e in after}
    remove(conn, project, [i for i in old if i not in kept])
    for e in after:
        if old.get(e.id) != e.to_dict():
            write(conn, project, e, metas.get(e.id) or Meta(author))
