"""The encoder helper: one process per user that keeps the sentence encoder
(:mod:`clio.recall.encoder`) loaded, so that a clio run asks it for a few cosines over a unix
socket instead of loading the model itself (~0.4 s and ~265 MB a run).

clio starts it when a search first wants it (:mod:`clio.recall.encoder_client`), detached, with an
environment that holds none of clio's keys; it listens on ``$CLIO_HOME/encoder.sock`` (mode 0600,
in a folder only the user can enter; no command clio runs can reach ``$CLIO_HOME``), answers one
JSON line per connection, and exits after :data:`IDLE_S` without a request, or as soon as its
socket file is removed or replaced. It writes a project's ``.clio/recall-vectors.sqlite`` (its
model's: ``recall-vectors-mpnet.sqlite`` for mpnet; :mod:`clio.recall.encoder_cache`), and the
project's recall index only as a clio run does, to bring it up to date for a one-shot run's
recall done here (:mod:`clio.recall.encoder_recall`: new sessions' messages indexed).

Requests (one JSON object per line):
- ``{"op": "ping"}`` -> ``{"ok": true, "model": NAME, "judge": LOADED, "judged": N, "judge_ms": MEDIAN,
  "pid": ...}`` (``judged``: the messages its judge read since it started; ``judge_ms``: the median
  time of its latest reads, or null before any: ``clio encoder`` tells them)
- ``{"op": "score", "cache": PATH, "q": TEXT, "units": [[TEXT, ...], ...]}`` -> ``{"cos": [...]}``:
  per unit, the best cosine between the query and any chunk of any of its texts (``"ahead":
  true`` when the query had been embedded ahead; ``null`` for a unit none of whose texts it had
  vectors for or could embed within :data:`SPOT_BUDGET_S`: a project's first fill under way). Without
  ``units``, they come as a second line ``{"units": [...]}``: the helper embeds the query while
  clio is still searching for the units. With ``"near": {"index": PATH, "k": N}`` the helper
  first answers ``{"near": [[row id, cosine], ...]}``: the project's indexed messages nearest to
  the query (:mod:`clio.recall.encoder_scan`), which clio adds to bm25's candidates before it
  sends the units. With ``"judge": true`` (the user's ``recall_judge``), the helper loads its judge
  (:mod:`clio.recall.judge`, for a model with a :class:`clio.recall.encoder_models.Verdict`; in a
  thread, the first time, unless it started with ``--judge`` and loads it then); once it is
  loaded, the cosines come with ``"judge": true`` and the helper waits up to
  :data:`JUDGE_WAIT_S` on the same connection for ``{"judge": [TEXT, ...]}``
  (the units clio's decision hands it, at most 8; none when no reading could quote them), answered
  ``{"logits": [...]}``; a connection closed instead gets no reply.
- ``{"op": "ahead", "q": TEXT}`` -> ``{"ok": true}``: ``TEXT`` embedded now and kept (the last
  :data:`AHEAD_KEEP`), so a score of the same text finds its vector ready: the REPL sends its line
  while the user types (a pause), and only the scan and the cosines are left for Enter.
- ``{"op": "recall", ...}`` and ``{"op": "recalled", "id": TOKEN, "budget": CHARS}``: a one-shot
  run's whole automatic recall (or the REPL's line once the user paused typing), done here ahead
  while the run starts, judged here too, then its block handed back within the run's room
  (:mod:`clio.recall.encoder_recall` has the fields).
- ``{"op": "fill", "cache": PATH, "index": PATH}`` -> ``{"ok": true}`` at once; the indexed
  messages without a vector are embedded in the background, newest first, pausing while a score
  request is served (:mod:`clio.recall.encoder_fill`).

    python -m clio.recall.encoder_service --socket PATH [--idle SECONDS] [--fill CACHE INDEX]
        [--model NAME --home CLIO_HOME]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import socket
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from clio.recall.encoder import Encoder
from clio.recall.encoder_cache import INDEX_NAME, VectorCache, allowed
from clio.recall.encoder_endpoint import calibrate_kept, opened
from clio.recall.encoder_fill import Filler
from clio.recall.encoder_models import MODELS
from clio.recall.encoder_readiness import failed_file
from clio.recall.encoder_recall import HelperRecall, LocalScores
from clio.recall.encoder_scan import NearScan
from clio.recall.judge import HostedJudge

IDLE_S = 1800.0  # without a request, the helper exits (and frees its ~265 MB)
IDLE_RANGE = (60.0, 86_400.0)  # what a run may set it to (recall_encoder_idle_minutes: 1 to 1,440)
MAX_REQUEST = 8 << 20
MAX_QUERY = 2000  # characters of a query embedded
AHEAD_KEEP = 8  # texts embedded ahead, kept for their score
# a score embeds the candidates' texts that the fill has not reached until this long after the
# units came (a group of chunks only if it would end by then), so its answer is in within the
# client's 250 ms (clio.recall.encoder_client.TIMEOUT_S) with room for the scoring and the socket
SPOT_BUDGET_S = 0.18
LOCK_SUFFIX = ".lock"  # beside the socket: a helper is starting (written by the client)
# after the cosines, how long the helper waits for the units to judge: the client sends them as soon
# as it has read its words' features (a few ms); the helper serves one connection at a time
JUDGE_WAIT_S = 0.25
RECALL_JUDGE_WAIT_S = 2.0  # a one-shot run's recall done here waits this long for the judge to load


def resident() -> int | None:
    """This process's resident memory in bytes (``clio encoder`` shows it), None where ``/proc``
    does not tell."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class Service:
    def __init__(self, encoder: Encoder, sock_path: Path, idle_s: float, home: Path | None = None) -> None:
        self.encoder = encoder
        self.home = home  # $CLIO_HOME, where an installed model's files are
        self.sock_path = sock_path
        self.idle_s = idle_s
        self.last = time.monotonic()
        self.caches: dict[Path, VectorCache] = {}
        self.scans: dict[Path, NearScan] = {}
        self.cache_lock = threading.Lock()
        self.busy = threading.Event()  # a score request is being served: the fill pauses
        self.fill = Filler(encoder, home, self.busy, self.cache_lock, self._warm, self._touched)
        self.ahead: OrderedDict[str, Any] = OrderedDict()  # text -> its vector, embedded ahead of its score
        self.ahead_used = 0  # scores that found their query embedded ahead
        self.recalls = HelperRecall()  # one-shot runs' recalls, done ahead (clio.recall.encoder_recall)
        self.judge = HostedJudge()  # loaded for a run that asks, if its model has a Verdict

    def want_judge(self) -> None:
        """A run with the user's ``recall_judge`` asked: the judge loads, once, if the model is one
        whose cosines it was fitted with (:attr:`clio.recall.encoder_models.EncoderModel.verdict`)."""
        if self.encoder.model.verdict is not None:
            self.judge.want()

    def cache(self, path: Path) -> VectorCache:
        path = path.resolve()
        if not allowed(path, self.encoder.model):
            raise ValueError(f"not a project's vector cache of {self.encoder.model.name}: {path}")
        found = self.caches.get(path)
        if found is None:
            found = self.caches[path] = VectorCache(path, self.encoder.model)
        return found

    def scan(self, cache_path: Path, index: Path) -> NearScan:
        index = index.resolve()
        if index.name != INDEX_NAME or index.parent != cache_path.resolve().parent:
            raise ValueError("the index must sit beside the cache")
        found = self.scans.get(index)
        if found is None:
            found = self.scans[index] = NearScan(index)
        return found

    def nearest(self, cache: VectorCache, cache_path: Path, near: dict[str, Any], q: Any) -> list[Any]:
        """The indexed messages nearest to ``q`` (none when the index cannot be read: the words
        still find their candidates)."""
        try:
            scan = self.scan(cache_path, Path(str(near.get("index", ""))))
            with self.cache_lock:  # the fill thread warms scans under it too
                scan.refresh(cache)
                return [list(p) for p in scan.nearest(q, max(0, min(int(near.get("k", 0)), 50)))]
        except (ValueError, OSError, TypeError):
            return []

    def handle(self, req: dict[str, Any], more: Any = None, send: Any = None) -> dict[str, Any] | None:
        """One request; ``more(timeout=None)`` reads the next line of the same connection (a
        score whose units follow: the query is embedded while clio still searches; the units to
        judge), ``send(obj)`` writes a line before the reply (the nearest messages, which clio
        searches with; the cosines, when the judge's units may follow). None: no reply (clio
        closed the connection without asking the judge)."""
        op = req.get("op")
        idle = req.get("idle")  # the asking run's user's setting (recall_encoder_idle_minutes)
        if isinstance(idle, (int, float)) and not isinstance(idle, bool) and IDLE_RANGE[0] <= idle <= IDLE_RANGE[1]:
            self.idle_s = float(idle)
        if op == "ping":
            return {"ok": True, "model": self.encoder.model.name, "judge": self.judge.loaded, "judged": self.judge.reads, "judge_ms": self.judge.median_ms(), "pid": os.getpid(), "ahead_kept": len(self.ahead), "ahead_used": self.ahead_used, "recalls_ahead": self.recalls.served, "idle_s": self.idle_s, "rss": resident()}
        if op == "ahead":
            text = str(req.get("q", ""))[:MAX_QUERY]
            if text.strip() and text not in self.ahead:
                self.busy.set()  # the user's: the fill pauses
                try:
                    self.ahead[text] = self.encoder.embed([text])[0]
                finally:
                    self.busy.clear()
                while len(self.ahead) > AHEAD_KEEP:
                    self.ahead.popitem(last=False)
            return {"ok": True}
        if op == "score":
            cache = self.cache(Path(str(req["cache"])))
            self.busy.set()
            try:
                text = str(req.get("q", ""))[:MAX_QUERY]
                q = self.ahead.get(text)
                ahead = q is not None
                if q is None:
                    q = self.encoder.embed([text])[0]
                else:
                    self.ahead_used += 1
                near = req.get("near")
                if isinstance(near, dict) and send is not None:
                    send({"near": self.nearest(cache, Path(str(req["cache"])), near, q)})
                units = req["units"] if "units" in req else (more() if more is not None else {}).get("units")
                if not isinstance(units, list):
                    raise ValueError("no units to score")
                deadline = time.monotonic() + SPOT_BUDGET_S  # what the fill has not reached yet: what fits in time
                cos = {"cos": self.score(cache, q, units, deadline), "ahead": ahead}
                if req.get("judge") is True:
                    self.want_judge()
                if req.get("judge") is not True or not self.judge.loaded or send is None or more is None:
                    return cos
                send(dict(cos, judge=True))  # then the units to judge, or the connection closed
                try:
                    asked = more(JUDGE_WAIT_S)
                except (OSError, ValueError):
                    return None  # not asked (closed, or nothing within the wait): no reply
                return {"logits": self.judge.scores(text, asked.get("judge") if isinstance(asked, dict) else None)}
            finally:
                self.busy.clear()
        if op == "recall":
            self.cache(Path(str(req["cache"])))  # a project's own cache of this model, beside the index
            self.busy.set()
            try:
                judged = req.get("judge") is True and self.encoder.model.verdict is not None
                if judged:
                    self.want_judge()
                return self.recalls.recall(
                    req, self.encoder.model.cosine_ask, lambda q: self._scores(req, q),
                    self.encoder.model.verdict if judged else None, self.encoder.model,
                )  # fmt: skip
            finally:
                self.busy.clear()
        if op == "recalled":  # units left without a cosine are scored once more: the fill pauses
            self.busy.set()
            try:
                return self.recalls.recalled(req)
            finally:
                self.busy.clear()
        if op == "fill":
            self.fill.put(Path(str(req["cache"])), Path(str(req["index"])))
            return {"ok": True}
        raise ValueError(f"unknown op {op!r}")

    def _query(self, text: str) -> Any:
        """The query's vector: embedded ahead, else now (and kept, as if ahead)."""
        text = text[:MAX_QUERY]
        q = self.ahead.get(text)
        if q is not None:
            self.ahead_used += 1
            return q
        q = self.ahead[text] = self.encoder.embed([text])[0]
        while len(self.ahead) > AHEAD_KEEP:
            self.ahead.popitem(last=False)
        return q

    def _scores(self, req: dict[str, Any], text: str) -> LocalScores:
        """A recall's scores here (:mod:`clio.recall.encoder_recall`): the nearest messages and
        each unit's cosine, as a ``score`` request would give them."""
        cache_path = Path(str(req["cache"]))
        cache, q = self.cache(cache_path), self._query(text)

        def finish(units: list[list[str]], deadline: float | None) -> list[float | None]:
            spot = time.monotonic() + SPOT_BUDGET_S  # never longer than a score's on-the-spot budget
            return self.score(cache, q, units, spot if deadline is None else min(deadline, spot))

        return LocalScores(
            lambda k: [int(p[0]) for p in self.nearest(cache, cache_path, {"index": str(req["index"]), "k": k}, q)],
            finish,
            lambda query, texts: self.judge.scores(query[:MAX_QUERY], texts, RECALL_JUDGE_WAIT_S),
        )

    def score(self, cache: VectorCache, q: Any, units: list[list[str]], deadline: float | None = None) -> list[float | None]:
        """Per unit, the best cosine of the query vector ``q`` with a chunk of one of its texts.
        With a ``deadline``, texts the cache lacks are embedded only while it has not passed
        (units in their order: the search's best first); a unit none of whose texts has a vector
        then is None, and the words decide it (a project's first fill, not done yet, would
        otherwise make the whole answer late: ~12 ms a chunk with MiniLM on one core)."""
        texts = [str(t) for unit in units for t in unit]
        with self.cache_lock:
            vecs = cache.vectors(self.encoder, texts, deadline) if texts else []
        out: list[float | None] = []
        at = 0
        for unit in units:
            rows = [v for v in vecs[at : at + len(unit)] if v is not None]  # the texts embedded in time
            at += len(unit)
            best = max((float((v @ q).max()) for v in rows if len(v)), default=-1.0)
            out.append(round(best, 4) if rows else None)
        return out

    def _warm(self, cache_path: Path, index: Path, cache: VectorCache) -> None:
        self.scan(cache_path, index).warm(cache)

    def _touched(self) -> None:
        self.last = time.monotonic()

    def serve(self, server: socket.socket, inode: int) -> None:
        server.settimeout(1.0)
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                if not self._still_ours(inode):
                    return
                if self.fill.idle() and time.monotonic() - self.last > self.idle_s:
                    return
                continue
            with conn:
                self.last = time.monotonic()
                self._one(conn)
                self.last = time.monotonic()

    def _still_ours(self, inode: int) -> bool:
        try:
            return os.stat(self.sock_path).st_ino == inode
        except OSError:
            return False

    def _one(self, conn: socket.socket) -> None:
        conn.settimeout(10.0)
        buffer = b""

        def line(timeout: float | None = None) -> Any:
            nonlocal buffer
            if timeout is not None:
                conn.settimeout(timeout)
            while b"\n" not in buffer and len(buffer) < MAX_REQUEST:
                chunk = conn.recv(1 << 16)
                if not chunk:
                    break
                buffer += chunk
            head, _, buffer = buffer.partition(b"\n")
            return json.loads(head)

        try:
            try:
                req = line()
                if not isinstance(req, dict):
                    raise ValueError("a request is a JSON object")
                reply = self.handle(req, line, lambda obj: conn.sendall(json.dumps(obj).encode() + b"\n"))
            except Exception as exc:  # a bad request gets one line back, never kills the helper
                reply = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            if reply is not None:
                conn.sendall(json.dumps(reply).encode() + b"\n")
        except OSError:
            pass


def _bind(path: Path) -> socket.socket:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a dead helper's socket (the client's lock file keeps two from starting)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    server.listen(16)
    return server


def main(argv: list[str] | None = None) -> int:
    signal.pthread_sigmask(signal.SIG_SETMASK, ())  # clio may start it from a thread that blocks SIGINT (clio/threads.py)
    ap = argparse.ArgumentParser(prog="clio-encoder", description="clio's sentence-encoder helper")
    ap.add_argument("--socket", required=True, type=Path)
    ap.add_argument("--idle", type=float, default=IDLE_S)
    ap.add_argument("--fill", nargs=2, type=Path, metavar=("CACHE", "INDEX"))
    ap.add_argument("--model", choices=sorted(MODELS), default="minilm")
    ap.add_argument("--home", type=Path, help="$CLIO_HOME, where an installed model's files are")
    ap.add_argument("--endpoint", metavar="BASE_URL", help="a model the user's endpoint serves (its key on stdin)")
    ap.add_argument("--remote", metavar="NAME", help="... that model's name there")
    ap.add_argument("--judge", action="store_true", help="load the judge as it starts (the run that started it has recall_judge on)")
    args = ap.parse_args(argv)
    sock_path: Path = args.socket
    lock = Path(str(sock_path) + LOCK_SUFFIX)
    failed = failed_file(sock_path)  # why it could not start, read by the client
    try:
        encoder: Any = (
            opened(args.endpoint, args.remote or "", args.home, sys.stdin.readline().strip() or None)
            if args.endpoint
            else _local_encoder(args)
        )  # an endpoint's key: the first line on stdin, never in the environment or the arguments
    except Exception as exc:
        failed.write_text(f"{exc}\n"[:500], encoding="utf-8")
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
        return 1
    with contextlib.suppress(FileNotFoundError):
        failed.unlink()
    server = _bind(sock_path)
    with contextlib.suppress(FileNotFoundError):
        lock.unlink()  # ready: clients connect from now on
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # leave through the clean-up below
    service = Service(encoder, sock_path, args.idle, args.home)
    if args.judge:  # in its thread, beside the fill: the first message that asks finds it loaded
        service.want_judge()
    if args.endpoint and math.isinf(encoder.model.cosine_ask) and args.home is not None:
        threading.Thread(target=calibrate_kept, args=(encoder, args.home), daemon=True, name="clio-encoder-calibrate").start()
    threading.Thread(target=service.fill.run, daemon=True, name="clio-encoder-fill").start()
    if args.fill:
        with contextlib.suppress(Exception):
            service.handle({"op": "fill", "cache": str(args.fill[0]), "index": str(args.fill[1])})
    inode = os.stat(sock_path).st_ino
    try:
        service.serve(server, inode)
    finally:
        server.close()
        if service._still_ours(inode):  # not a newer helper's socket
            with contextlib.suppress(FileNotFoundError):
                sock_path.unlink()
    return 0


def _local_encoder(args: argparse.Namespace) -> Encoder:
    model = MODELS[args.model]
    return Encoder(threads=model.query_threads, model=model, home=args.home)


if __name__ == "__main__":
    sys.exit(main())
