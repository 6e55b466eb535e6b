"""One checkout's link to the shared store: writes delivered now or queued, reads time-boxed.

:meth:`TeamLink.submit` applies a write operation (``add``, ``delete``, ``pin``, ``reinforce``,
``note_put``, ``note_delete``) in one transaction, or queues it on disk when the server cannot
be reached (:mod:`clio.team.queue`); :meth:`TeamLink.read` runs a read under the read time box
and gives None when the caller should use its local copy. Whenever a connection is (re)made,
the queue is delivered first, then the stores refresh their local copies. Being offline is said
in one line, once per outage; so is the delivery when the server is back.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from clio.memory import lifecycle
from clio.memory.ltm import Entry
from clio.team import sql
from clio.team.db import READ_MS, READ_WAIT, WRITE_MS, Db, Unreachable
from clio.team.queue import Op, OpQueue

T = TypeVar("T")
Notice = Callable[[str], None]


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class TeamLink:
    def __init__(
        self,
        db: Db,
        project: str,
        clio_dir: Path,
        *,
        author: str,
        origin: str,
        notice: Notice = _stderr,
        vectorize: sql.Vectorize | None = None,
    ) -> None:
        self.db, self.project, self.author, self.origin = db, project, author, origin
        self.queue = OpQueue(clio_dir / "team" / "queue")
        self.queue_label = ".clio/team/queue"
        self.notice = notice
        self.vectorize = vectorize
        self.on_online: list[Callable[[], None]] = []  # local copies refreshed after a delivery
        self._said_down = False
        self._stuck: str | None = None  # a queued operation the server refused (kept on disk)
        db.on_connect = self._connected

    # ------------------------------------------------------------------ state and notices
    def _connected(self) -> None:
        """A new connection: deliver the queue, then refresh the local copies."""
        try:
            sent = self.queue.deliver(self._deliver_one)
        except Unreachable:
            return
        except Exception as exc:  # noqa: BLE001 - a refused operation stays queued and is named once
            self._say_stuck(exc)
            return
        if sent or self._said_down:
            self.notice(f"clio: shared memory at {self.db.where} is reachable again; {sent} queued change(s) delivered.")
        self._said_down = False
        for refresh in self.on_online:
            try:
                refresh()
            except Unreachable:
                return

    def _say_stuck(self, exc: BaseException) -> None:
        reason = " ".join(str(exc).split())[:160]
        if reason != self._stuck:
            self._stuck = reason
            self.notice(
                f"clio: a queued memory change was refused by the shared store ({reason}); it stays in "
                f"{self.queue_label} and is tried again at the next start."
            )

    def _say_down(self) -> None:
        if not self._said_down:
            self._said_down = True
            self.notice(
                f"clio: shared memory at {self.db.where} is unreachable ({self.db.down or 'no answer'}): "
                f"working from the local copy; changes are queued in {self.queue_label} and sent when it is back "
                "(check the server, or unset shared_memory to stop sharing)."
            )

    @property
    def online(self) -> bool:
        return self.db.down is None and self.db.ready(0)

    # ------------------------------------------------------------------ operations
    def apply(self, conn: Any, op: Op) -> Any:
        """Apply one operation in the open transaction, at most once (its id is recorded)."""
        sql.lock(conn, self.project, shared=True)
        if not sql.claim(conn, self.project, op["op"]):
            return None
        kind = op["kind"]
        if kind == "add":
            return sql.add(conn, self.project, op, self.vectorize if self.db.has_vector else None)
        if kind == "delete":
            return sql.remove(conn, self.project, [op["id"]]) > 0
        if kind == "pin":
            pinned = bool(op["pinned"])
            sql.update(
                conn, self.project, lambda es: [dataclasses.replace(e, pinned=pinned) for e in es], [op["id"]]
            )
            return None
        if kind == "reinforce":
            at = float(op["at"])
            sql.update(conn, self.project, lambda es: [lifecycle.reinforce(e, at) for e in es], op["ids"])
            return None
        if kind == "note_put":
            conn.execute(
                """INSERT INTO clio_notes (project, key, value, created, updated, provenance, author)
                   VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s)
                   ON CONFLICT (project, key) DO UPDATE SET value = EXCLUDED.value,
                   updated = EXCLUDED.updated, provenance = EXCLUDED.provenance, author = EXCLUDED.author""",
                (self.project, op["key"], op["value"], op["at"], op["at"], _json(op.get("provenance")), op["author"]),
            )
            return None
        if kind == "note_delete":
            cur = conn.execute("DELETE FROM clio_notes WHERE project = %s AND key = %s", (self.project, op["key"]))
            return bool(cur.rowcount)
        raise ValueError(f"unknown queued operation {kind!r}")

    def _deliver_one(self, op: Op) -> None:
        self.db.run(lambda conn: self.apply(conn, op), timeout_ms=WRITE_MS, wait=READ_WAIT)

    def submit(self, op: Op) -> tuple[bool, Any]:
        """(True, result) when applied now; (False, None) when queued for later."""
        try:
            return True, self.db.run(lambda conn: self.apply(conn, op), timeout_ms=WRITE_MS, wait=READ_WAIT)
        except Unreachable:
            self.queue.put(op)
            self._say_down()
            return False, None

    def read(self, work: Callable[[Any], T], *, timeout_ms: int = READ_MS) -> T | None:
        """``work(connection)`` under the read time box; None (and one line) when offline."""
        try:
            return self.db.run(work, timeout_ms=timeout_ms, wait=READ_WAIT)
        except Unreachable:
            self._say_down()
            return None

    def change(self, change: Callable[[list[Entry]], list[Entry]], ids: list[str] | None = None) -> bool:
        """Apply an upkeep change (prune, compact, a dedup decision) to every entry of the project
        (under its exclusive lock), or to the entries ``ids`` only; False when offline (upkeep
        waits for the server)."""

        def work(conn: Any) -> None:
            sql.lock(conn, self.project, shared=ids is not None)
            sql.update(conn, self.project, change, ids, author=self.author)

        try:
            self.db.run(work, timeout_ms=WRITE_MS * 3)
        except Unreachable:
            self._say_down()
            return False
        return True


def _json(value: Any) -> str | None:
    import json

    return None if value is None else json.dumps(value)
