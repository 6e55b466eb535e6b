"""clio's side of the encoder helper (:mod:`clio.recall.encoder_service`): the standard library
only, so a run that asks for cosines imports nothing heavy.

:meth:`EncoderClient.score` asks the helper for each candidate unit's cosine with the user's
message, within :data:`TIMEOUT_S`; it returns None (the decision stays lexical) when the helper is
not running, still starting, too slow, or cannot run here. A run that finds no helper starts one,
detached, and does not wait for it: the next message (or run) has it. When a turn that searched
ends, the helper is asked to embed, in the background, whatever the project's index holds without
a vector yet, so the next search pays only for the query (and the run's own work never shares
the machine with that pass).

The helper is per user and per model (:mod:`clio.recall.encoder_models`: MiniLM, or the stronger
model the user installed): its socket is ``$CLIO_HOME/encoder.sock`` (``encoder-<model>.sock``
for another model), or, when that path is too long for a unix socket, one in a private
``clio-<uid>`` folder under the system's temp folder.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from clio import __version__
from clio.recall.encoder_models import ENV_SWITCH, MINILM, EncoderModel, Endpoint, chosen, endpoint_model
from clio.recall.encoder_readiness import fallback, installed, recent_failure, socket_path

if TYPE_CHECKING:
    import socket

    from clio.recall.encoder_models import Verdict
    from clio.recall.encoder_pending import Pending

# socket, tempfile, hashlib and importlib.util are imported where they are used, and starting the
# helper (subprocess with it) lives in clio.recall.encoder_start: a run in a project without
# history never asks the helper, and its start-up pays for none of them.

__all__ = ["ENV_SWITCH", "EncoderClient", "Recalled"]
TIMEOUT_S = 0.25  # a score the helper has not given by then is not waited for
# A one-shot run's recall done ahead (recalled): the run's one wait for its recall. Longer than a
# score's: the helper did the search too, and with mpnet during a project's first fill its recall
# competes with the run's own start (250 ms: reworded 15/36 in bench_recall_oneshot.py; 400: 21/36,
# as the in-process path read before stop 52). Answered in ~1 ms once the archive is embedded.
RECALLED_WAIT_S = 0.40
WORK_OPS = ("score", "ahead", "recall", "fill")  # requests that carry the user's idle time
START_AGAIN_S = 60.0  # a run starts the helper again (it left after its idle time) at most this often
FILL_EVERY_S = 60.0
AHEAD_CONNECT_S = 0.05  # a helper that does not take the typed line at once is not waited for
THRESHOLD_AGAIN_S = 10.0  # an endpoint's model not calibrated yet: its kept threshold looked up again


class Recalled(NamedTuple):
    """A recall the helper did ahead (:meth:`EncoderClient.recalled`)."""

    block: str  # '' for none
    last: dict[str, Any]  # what ``/context`` tells
    quoted: list[dict[str, Any]]  # the units quoted
    units: tuple[Any, Any] | None  # asked with ``pool``: the message's search and the judge model's units, as sent


class EncoderClient:
    """One per run: asks the user's encoder helper for cosines, starting it when needed."""

    def __init__(
        self, home: Path, clio_dir: Path, timeout_s: float = TIMEOUT_S, idle_s: float | None = None,
        endpoint: Endpoint | None = None, model: EncoderModel | None = None,
    ) -> None:  # fmt: skip
        """``idle_s``: how long the helper stays loaded without a request (the user's
        ``recall_encoder_idle_minutes``): one this run starts is started so, and a running one
        is told with each request that asks it to work (None: the helper's own default).
        ``endpoint``: the model of the user's endpoint that ``recall_embeddings`` names, used
        unless ``CLIO_RECALL_ENCODER`` names another or switches the helper off. ``model``: talk
        to that model's helper whatever the user chose and whether or not it could run here
        (``clio encoder stop`` asks each model's socket), with no fallback to MiniLM."""
        self.home = home
        self.idle_s = idle_s
        self.index = clio_dir / "recall.sqlite"
        self.timeout_s = timeout_s
        self.state = "not asked yet"
        self._started: float | None = None  # when this run last started the helper (monotonic)
        self._filled = 0.0  # when this client last asked for a fill (monotonic)
        self._fill_due = False  # a search asked the helper this turn: the fill is asked when it ends
        # A one-shot run (clio -p) that finds no helper decides its message by words and starts
        # the helper once that recall is decided (:meth:`recall_decided`), so that the helper's
        # loading (both cores for about 0.7 s) does not share them with the run's own search; it
        # loads while the model answers, for the turn's tool searches and the runs after. The
        # REPL starts it at once (the user types meanwhile).
        self.defer_start = False
        self._start_due = False
        self.endpoint = endpoint if endpoint is not None and not os.environ.get(ENV_SWITCH, "").strip() else None
        choice = model if model is not None else self.calibrated_model() if self.endpoint is not None else chosen(home)
        self.model: EncoderModel = choice if isinstance(choice, EncoderModel) else MINILM
        self.wanted = self.model  # the model chosen, before a failed helper's fallback to MiniLM
        self._why_not: str | None = choice if isinstance(choice, str) else None
        self._threshold_read = time.monotonic()
        # why the model the user installed is not the one used (none when the caller named it)
        self.fallback = fallback(home, self.model) if model is None else ""
        if self.fallback:
            self.model = MINILM
        self.cache = clio_dir / self.model.cache_name
        self._path: Path | None = None
        self._ahead = ""  # the text last sent to be embedded ahead
        self.timed_out = False  # the last ``recalled`` got no answer in time
        self.judge = False  # the user's recall_judge: the helper's judge reads the best units (verdict())

    @property
    def off_reason(self) -> str | None:
        """Why no helper is asked in this run (switched off, cannot run here), or None."""
        return self._why_not

    def calibrated_model(self) -> EncoderModel:
        """The endpoint's model, with the threshold its helper chose and kept, if it did."""
        from clio.recall.encoder_calibration import stored

        assert self.endpoint is not None
        base = endpoint_model(self.endpoint.base_url, self.endpoint.model)
        kept = stored(self.home, base.model_id)
        return base if kept is None else endpoint_model(self.endpoint.base_url, self.endpoint.model, *kept)

    def verdict(self) -> Verdict | None:
        """How the helper's judge joins the decision for the model in use
        (:class:`clio.recall.encoder_models.Verdict`), or None: not asked (the user's recall_judge
        is off, or the model has none, as an endpoint's)."""
        return self.model.verdict if self.judge else None

    def cosine_ask(self) -> float:
        """The cosine at which a unit bears on a question, for the model in use; an endpoint's
        model not calibrated yet is looked up again (its helper keeps the one it chooses) at most
        every :data:`THRESHOLD_AGAIN_S`."""
        if self.model.endpoint and math.isinf(self.model.cosine_ask) and not self.fallback:
            now = time.monotonic()
            if now - self._threshold_read >= THRESHOLD_AGAIN_S:
                self._threshold_read = now
                self.model = self.calibrated_model()
        return self.model.cosine_ask

    # -- the socket ------------------------------------------------------------------------------
    def path(self) -> Path:
        if self._path is None:
            self._path = socket_path(self.home, self.model)
        return self._path

    def _connect(self, timeout: float) -> socket.socket:
        import socket

        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.settimeout(timeout)
            conn.connect(str(self.path()))
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _reply(conn: socket.socket, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        data = b""
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the encoder helper did not answer in time")
            conn.settimeout(left)
            chunk = conn.recv(1 << 16)
            if not chunk:
                break
            data += chunk
        out = json.loads(data)
        if not isinstance(out, dict):
            raise ValueError("not an object")
        if "error" in out:
            raise ValueError(str(out["error"]))
        return out

    def _request(self, req: dict[str, Any], timeout: float, reply: bool = True) -> dict[str, Any]:
        with self._connect(timeout) as conn:
            conn.sendall(self._line(req))
            return self._reply(conn, timeout) if reply else {}

    def _line(self, req: dict[str, Any]) -> bytes:
        """A request as sent: what asks the helper to work carries the user's idle time."""
        if self.idle_s is not None and req.get("op") in WORK_OPS:
            req = dict(req, idle=self.idle_s)
        return json.dumps(req).encode() + b"\n"

    def ping(self, timeout: float = 1.0) -> int:
        """The running helper's pid (raises OSError or ValueError when none answers)."""
        return int(self._request({"op": "ping"}, timeout)["pid"])

    # -- what clio asks --------------------------------------------------------------------------
    def score(self, query: str, units: list[list[str]]) -> list[float | None] | None:
        """Each unit's best cosine with ``query``, or None (told in :attr:`state`)."""
        pending = self.begin(query)
        return pending.finish(query, units) if pending is not None else None

    def begin(self, query: str, near: int = 0) -> Pending | None:
        """Send the query now, so the helper embeds it while clio searches; the units follow with
        :meth:`Pending.finish`. With ``near``, the helper also finds that many indexed messages
        nearest to the query (:meth:`Pending.near`). None when the helper cannot be asked (told in
        :attr:`state`)."""
        if self._why_not is not None:
            self.state = f"off: {self._why_not}"
            return None
        try:
            conn = self._connect(self.timeout_s)
        except (FileNotFoundError, ConnectionRefusedError):
            self.start()
            return None
        except OSError as exc:
            self.state = f"failed: {exc}"[:200]
            return None
        try:
            req: dict[str, Any] = {"op": "score", "cache": str(self.cache), "q": query}
            if self.verdict() is not None:
                req["judge"] = True
            if near > 0 and self.index.exists():
                req["near"] = {"index": str(self.index), "k": near}
            conn.sendall(self._line(req))
        except OSError as exc:
            conn.close()
            self.state = f"failed: {exc}"[:200]
            return None
        from clio.recall.encoder_pending import Pending  # only a run that asks the helper

        return Pending(self, conn, asked_near="near" in req)

    def embed_ahead(self, text: str) -> None:
        """Have the running helper embed ``text`` now (the REPL's line while the user types: a
        pause), so that scoring the same text on Enter finds its vector ready. Never waits for
        its answer. When none runs (it left after its idle time while the REPL stayed open) it is
        started, detached, so it is up by the time the line is sent."""
        if self._why_not is not None or not text.strip() or text == self._ahead:
            return
        self._ahead = text
        try:
            self._request({"op": "ahead", "q": text}, AHEAD_CONNECT_S, reply=False)
        except (FileNotFoundError, ConnectionRefusedError):
            self._ahead = ""
            self.start()
        except OSError:
            pass

    def recall_ahead(
        self,
        text: str,
        task: str,
        current: str,
        redaction: str,
        skip: Mapping[str, Collection[int]] | None = None,
        since: int = 0,
        pool: bool = False,
    ) -> str | None:
        """Have the running helper do the whole automatic recall of ``text`` (a one-shot run's
        message in session ``current``) now, while the run starts: the search, the scores and
        the decision (:mod:`clio.recall.encoder_recall`). Never starts the helper, never waits for
        its answer; the token to fetch the block with (:meth:`recalled`), or None when not sent.
        ``redaction``: the run's level, through which the helper reads session names. ``skip``:
        what the request will carry, by session and sequence number (the window's messages, the
        message itself, what its recall blocks quote), left out of the search, and ``since`` the
        first of the running session's messages still in the window (its words' frequencies are
        counted before it); None: the whole running session is left out (a new one)."""
        if self._why_not is not None or not self.path().exists():
            return None
        token = os.urandom(8).hex()
        req: dict[str, Any] = {"op": "recall", "id": token, "index": str(self.index), "cache": str(self.cache), "q": text}
        req.update(task=task, current=current, redaction=redaction, v=__version__)
        if self.verdict() is not None:
            req["judge"] = True
        if skip is not None:
            req.update(skip={sid: sorted(seqs) for sid, seqs in skip.items()}, since=since)
        if pool:
            req["pool"] = True
        try:
            self._request(req, AHEAD_CONNECT_S, reply=False)
        except OSError:
            return None
        self._ahead = text  # embedded by that request
        return token

    def recalled(self, token: str, budget: int) -> Recalled | None:
        """The block of the recall :meth:`recall_ahead` asked for, within ``budget`` characters:
        (block, '' for none; what ``/context`` tells; the units quoted; with ``pool``, the
        message's scored units and the judge model's, as :mod:`clio.recall.hits_wire` reads
        them, else None), or None when the helper
        has none for it (told in :attr:`state`; :attr:`timed_out` when it did not answer within
        :data:`RECALLED_WAIT_S`,
        else it answered that it has none: an unknown token, a helper of another clio version)."""
        try:
            wait = max(self.timeout_s, RECALLED_WAIT_S)
            req = {"op": "recalled", "id": token, "budget": budget, "until": time.time() + wait}
            got = self._request(req, wait)
            block, last, quoted = got["block"], got["last"], got["quoted"]
            if not isinstance(block, str) or not isinstance(last, dict) or not isinstance(quoted, list):
                raise ValueError("a malformed answer")
        except (OSError, ValueError, KeyError) as exc:
            self.timed_out = self.gave_nothing(exc, wait)
            return None
        self.state = "ready"
        self.fill_after_turn()
        units = (got["searched"], got["pool"]) if "searched" in got and "pool" in got else None
        return Recalled(block, last, quoted, units)

    def gave_nothing(self, exc: Exception, waited: float | None = None) -> bool:
        """Say in :attr:`state` why the helper's answer is missing (``exc``, raised while asking
        or reading it, after ``waited`` seconds at most: the client's timeout unless said); True
        when it did not come in time."""
        timeout = isinstance(exc, TimeoutError)
        wait = self.timeout_s if waited is None else waited
        self.state = f"no answer in time ({wait * 1000:.0f} ms)" if timeout else f"failed: {exc}"[:200]
        return timeout

    def status(self, timeout: float = 1.0) -> dict[str, Any]:
        """The running helper's answer to a ping (its model, pid, scores served from texts
        embedded ahead); raises OSError or ValueError when none answers."""
        return self._request({"op": "ping"}, timeout)

    def fill(self) -> None:
        """Have the helper embed the index's messages that have no vector yet (at most once a
        minute: a one-shot run asks once, a long REPL session now and then; the helper's pass is
        incremental)."""
        now = time.monotonic()
        if (self._filled and now - self._filled < FILL_EVERY_S) or not self.index.exists():
            return
        self._filled = now
        with contextlib.suppress(OSError, ValueError):
            self._request({"op": "fill", "cache": str(self.cache), "index": str(self.index)}, self.timeout_s, reply=False)

    def asked_nothing(self) -> None:
        """A message the automatic recall did not search (an order of new work, a remark): as a search
        would have, a helper that is not running is started, and what the turn archives is
        embedded once it ends."""
        if self._why_not is not None:
            return
        try:
            self._connect(AHEAD_CONNECT_S).close()
        except (FileNotFoundError, ConnectionRefusedError):
            self.start()
            return
        except OSError:
            return
        self.fill_after_turn()

    def fill_after_turn(self) -> None:
        """A search of this turn asked the helper: its fill is asked when the turn ends."""
        self._fill_due = True

    def recall_decided(self) -> None:
        """The run's message has its recall (:attr:`defer_start`): a start left due happens now,
        and any later one at once."""
        self.defer_start = False
        if self._start_due:
            self._start_due = False
            self._start()

    def turn_ended(self) -> None:
        """Ask for the fill a search of this turn left due, now that the turn's own work is done:
        the helper's background pass never competes with the run's search, request or answer
        (nor, in a one-shot run, with anything measured of the run). A start still left due (a
        turn that never came to its recall) happens now."""
        if self._fill_due:
            self._fill_due = False
            self.fill()
        self.recall_decided()

    def warm_up(self) -> None:
        """Start the helper if it is not running (the REPL does this once its prompt is up)."""
        if self._why_not is not None:
            return
        try:
            self.ping()
            self.fill()
        except (FileNotFoundError, ConnectionRefusedError):
            self.start()
        except (OSError, ValueError):
            pass

    def start(self) -> None:
        """Start the helper, detached, unless one is starting, it cannot run here, or this run
        started one less than :data:`START_AGAIN_S` ago (a REPL open for hours outlives the
        helper's idle time: it starts it again). Never waits for it. In a one-shot run before its
        message's recall is decided (:attr:`defer_start`), the start is left due until then."""
        if self.defer_start:
            self._start_due = True
            if self._why_not is None:
                self.state = "starting once this message's recall is decided"
            return
        self._start()

    def _start(self) -> None:
        now = time.monotonic()
        if self._started is not None and now - self._started < START_AGAIN_S:
            self.state = "starting"
            return
        self._started = now
        why = installed(self.model)
        if why is not None:
            self._why_not = why
            self.state = f"off: {why}"
            return
        try:
            path = self.path()
        except OSError as exc:
            self._why_not = str(exc)
            self.state = f"off: {exc}"
            return
        failed = recent_failure(path, self.model)
        if failed:
            self._why_not = failed
            self.state = f"off: {failed}"
            return
        from clio.recall.encoder_start import spawn  # only a run that starts the helper

        fill = (self.cache, self.index) if self.cache.parent.is_dir() else None
        served = self.endpoint if self.model.endpoint and self.endpoint is not None else None
        self.state = spawn(path, self.model.name, self.home, self.idle_s, fill, served, judge=self.verdict() is not None)
