"""A score the encoder helper is working on (:meth:`clio.recall.encoder_client.EncoderClient.begin`):
the query sent, the nearest messages and the units' cosines read back within the client's timeout,
then, when its judge is loaded, the judge's logits for the units the decision hands it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import socket


class EncoderClient(Protocol):
    """What a score needs of :class:`clio.recall.encoder_client.EncoderClient`."""

    timeout_s: float
    state: str

    def _reply(self, conn: socket.socket, timeout: float) -> dict[str, Any]: ...

    def fill_after_turn(self) -> None: ...

    def gave_nothing(self, exc: Exception) -> bool: ...


class Pending:
    """A score whose query the helper is embedding; :meth:`finish` sends the units and waits for
    the cosines (at most the client's timeout), :meth:`close` drops it if it was not finished."""

    def __init__(self, client: EncoderClient, conn: socket.socket, asked_near: bool = False) -> None:
        self.client = client
        self.conn = conn
        self.done = False
        self.asked_near = asked_near
        self.judging = False  # the cosines are in and the helper's judge waits on this connection
        self.cosines: dict[int, float] = {}  # the nearest messages' cosines, by index row id

    def near(self) -> list[int]:
        """The index row ids of the messages nearest to the query, best first (empty when not
        asked, or not told within the client's timeout: the score is then dropped too)."""
        if not self.asked_near or self.done:
            return []
        self.asked_near = False
        client = self.client
        try:
            got = client._reply(self.conn, client.timeout_s)
            found = [(int(p[0]), float(p[1])) for p in got.get("near") or ()]
        except (OSError, ValueError, TypeError, IndexError) as exc:
            client.gave_nothing(exc)
            self.close()
            return []
        self.cosines = dict(found)
        return [rid for rid, _ in found]

    def finish(self, query: str, units: list[list[str]], wait: float | None = None) -> list[float | None] | None:
        """Each unit's best cosine, or None (the signature of a ``similarity`` for
        :func:`clio.recall.auto.score_hits`; ``query`` was sent already). A unit the helper could
        not embed in time (a project's first fill under way) is None in the list. ``wait``: how
        long to wait for the answer (the client's timeout without it)."""
        client = self.client
        if self.done:
            return None
        if self.asked_near:
            self.near()  # the line before the cosines (not read when the search asked for none)
            if self.done:
                return None
        self.done = True
        try:
            try:
                self.conn.sendall(json.dumps({"units": units}).encode() + b"\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the helper answered the query line already (an error) and closed: read it
            got = client._reply(self.conn, client.timeout_s if wait is None else wait)
        except (OSError, ValueError) as exc:
            self.conn.close()
            client.gave_nothing(exc)
            return None
        self.judging = got.get("judge") is True  # the helper waits for the units to judge, or the end
        if not self.judging:
            self.conn.close()
        cos = got.get("cos")
        if not isinstance(cos, list) or len(cos) != len(units):
            self.close()
            client.state = "failed: a malformed answer"
            return None
        scored = [None if c is None else float(c) for c in cos]
        client.state = "ready, the message embedded while typed" if got.get("ahead") is True else "ready"
        if None in scored:
            client.state += f" ({len(scored) - scored.count(None)} of {len(scored)} units scored in time: the archive is still being embedded)"
        client.fill_after_turn()
        return scored

    def judge(self, query: str, texts: list[str], wait: float | None = None) -> list[float] | None:
        """The helper's judge's logit for each text with the query (:mod:`clio.recall.judge`),
        once the cosines are in; None when it has no judge or gave no answer in time (the decision
        then goes without it; ``wait``: that time, the client's timeout without it). Once only:
        the connection closes."""
        if not self.judging:
            return None
        self.judging = False
        client = self.client
        wait = client.timeout_s if wait is None else wait
        try:
            with self.conn:
                self.conn.sendall(json.dumps({"judge": texts}).encode() + b"\n")
                got = client._reply(self.conn, wait)
        except TimeoutError:  # the cosines stand: the decision without the judge, as /context says
            client.state += f"; its judge gave no answer in time ({wait * 1000:.0f} ms)"
            return None
        except (OSError, ValueError) as exc:
            client.state += f"; its judge failed: {exc}"[:200]
            return None
        logits = got.get("logits")
        try:
            if isinstance(logits, list) and len(logits) == len(texts):
                return [float(x) for x in logits]
        except (TypeError, ValueError):
            pass
        client.state += "; its judge gave a malformed answer"
        return None

    def close(self) -> None:
        """Drop a score that was never finished (nothing to score, or the search failed), or the
        judge's turn when it was not asked; the helper still embeds what the search indexed,
        once the turn ends."""
        if self.judging:
            self.judging = False
            self.conn.close()
        if not self.done:
            self.done = True
            self.conn.close()
            self.client.fill_after_turn()
