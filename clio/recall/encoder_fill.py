"""The encoder helper's background fill (:mod:`clio.recall.encoder_service`): the indexed messages
of a project without a vector embedded, newest first, on one thread at the lowest CPU priority,
pausing while a request of the user's is served.

A fill request (``{"op": "fill", ...}``) only queues its project here; :meth:`Filler.run` is the
thread that works the queue. Which model session it embeds on follows the model's declaration
(:attr:`clio.recall.encoder_models.EncoderModel.own_fill_session`).
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

from clio.recall.encoder import Encoder
from clio.recall.encoder_cache import INDEX_NAME, VectorCache, allowed

FILL_LIMIT = 20_000  # messages embedded per fill request at the most
SHARED_FILL = 32  # a pass this small runs on the query's session (a model that keeps no fill session)
INDEX_WAIT_S = 60.0  # a fill for an index not made yet waits this long for it


def give_back(sessions: list[Encoder]) -> None:
    """After the fill's first pass and each big one, the memory the model sessions took (loading,
    then the pass's batches) goes back to the system: each session's arena gives its free memory
    to the C allocator (:meth:`Encoder.release`), which keeps it, in this and the other threads'
    heaps, until told to trim (glibc's ``malloc_trim``; elsewhere nothing). A session the pass
    dropped (mpnet's own) is trimmed with the rest. The helper then idles at about 330 MiB rather
    than 490 with MiniLM, 495 rather than 1,000 with mpnet (docs/memory.md, "What the helper
    holds")."""
    import ctypes

    for session in sessions:
        with contextlib.suppress(Exception):  # memory not given back is no error
            session.release()
    with contextlib.suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(None).malloc_trim(0)


class Filler:
    """The fill's queue and its worker. ``encoder``: the query's session (its model decides the
    rest); ``busy``: set while a request is served (the fill pauses); ``cache_lock``: held while
    the scan is warmed; ``warm(cache_path, index, cache)``: the project's scan made ready after a
    pass; ``done()``: told when a job ends (the helper's idle time starts again)."""

    def __init__(
        self,
        encoder: Encoder,
        home: Path | None,
        busy: threading.Event,
        cache_lock: threading.Lock,
        warm: Callable[[Path, Path, VectorCache], None],
        done: Callable[[], None],
    ) -> None:
        self.encoder = encoder
        self.home = home
        self.busy = busy
        self.cache_lock = cache_lock
        self.warm = warm
        self.done = done
        self.jobs: queue.Queue[tuple[Path, Path]] = queue.Queue()
        self.filling = False

    def put(self, cache: Path, index: Path) -> None:
        """Queues a project's fill (its cache and the index beside it)."""
        if index.name != INDEX_NAME or index.resolve().parent != cache.resolve().parent:
            raise ValueError("the index must sit beside the cache")
        self.jobs.put((cache, index))

    def idle(self) -> bool:
        return not self.filling and self.jobs.empty()

    def run(self) -> None:
        """Embeds archives in the background, at the lowest CPU priority (Linux keeps niceness
        per thread): a big archive's first fill uses one core that the user's own work always
        takes first. On a one-thread model session of its own: kept for MiniLM (small); for a
        model whose declaration says not to hold its weights twice (mpnet), a pass of a few
        messages (a turn's) runs on the query's session, and only a big one (a project's first)
        loads a session of its own, dropped when that pass is done."""
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        model = self.encoder.model
        kept: Encoder | None = None  # MiniLM's own fill session, loaded at the first fill
        given = False  # the first pass gives back what loading the sessions left in their arenas
        while True:
            cache_path, index = self.jobs.get()
            self.filling, big = True, False
            try:
                if model.own_fill_session and kept is None:
                    kept = self.session() or self.encoder
                while self.busy.is_set():
                    time.sleep(0.01)
                if not allowed(cache_path.resolve(), model):
                    continue
                waited = time.monotonic()
                while not index.exists() and time.monotonic() - waited < INDEX_WAIT_S:
                    time.sleep(0.25)  # the run that started the helper is building the index
                cache = VectorCache(cache_path.resolve(), model)  # its own connection: a search goes on beside it
                try:
                    big = self.fill(cache, index, kept) > SHARED_FILL
                    with self.cache_lock:  # the scan made ready now, not at the next search
                        self.warm(cache_path, index, cache)
                finally:
                    cache.close()
            except Exception:  # a damaged index or cache: the next search embeds what it needs
                pass
            finally:
                self.filling = False
                if big or not given:  # a turn's few messages grow the arena by little: kept for the next query
                    give_back([self.encoder] if kept is None or kept is self.encoder else [self.encoder, kept])
                    given = True
                self.done()

    def session(self) -> Encoder | None:
        """A one-thread session of the model for the fill (None if it cannot be made)."""
        try:  # its files were checked when the query's session loaded them
            return Encoder(threads=1, model=self.encoder.model, home=self.home, check=False)
        except Exception:
            return None

    def fill(self, cache: VectorCache, index: Path, kept: Encoder | None) -> int:
        """One pass; paused by a request, it carries on after it (the pass is incremental). How
        many messages it embedded."""
        encoder, limit, own = kept, FILL_LIMIT, None
        if encoder is None:  # first a turn's worth on the query's session
            encoder, limit = self.encoder, SHARED_FILL
        embedded = 0
        while True:
            done = cache.fill_from_index(index, encoder, limit, self.busy.is_set)
            embedded += done
            if done >= limit and own is None and encoder is self.encoder and limit == SHARED_FILL:
                own = self.session()  # more than a turn's: a session of its own for the rest
                encoder, limit = own or self.encoder, FILL_LIMIT
                continue
            if not self.busy.is_set():
                return embedded
            while self.busy.is_set():
                time.sleep(0.005)
