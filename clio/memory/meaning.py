"""Long-term memory by meaning in a run (issue 14, part 3): the task's similarity to each entry
for the ranking, and the dedup candidates the words miss.

The embedding model (:mod:`clio.recall.embedder`) loads lazily and never on the way to the
prompt: memory ranked while a session is attached (before anything is typed) stays lexical;
the app calls :meth:`Meaning.arm` when the first message of a session is about to be sent, and
from then on each ranking (that one, and the re-ranks after trims) fuses the meaning in. The
REPL may load the table earlier, in a background thread once its prompt is up
(:meth:`Meaning.start_preload`), so the first request does not wait for it. Dedup
candidates are computed only where a consolidation request is about to be sent.

Entry vectors are cached per run by text (an edited entry is embedded again); embedding a few
hundred entries costs tens of milliseconds (``benches/bench_ltm_semantic.py``), so nothing is
stored on disk. Where the model cannot load, clio says so once (:func:`say_once`, shared with
``recall_sessions``) and stays lexical; ``CLIO_SEMANTIC=0`` is the user's choice and is not
reported.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from clio import threads
from clio.memory.dedup import SEMANTIC_MAX, SEMANTIC_MIN
from clio.memory.ltm import Entry

if TYPE_CHECKING:
    import numpy as np

    from clio.recall.embedder import Embedder

Notice = Callable[[str], None]
MIN_SIMILARITY = 0.3  # weaker matches do not count as relevant by meaning (bench: unrelated ~0.1-0.3)
TOP = 8  # the nearest entries by meaning that count (the tail of a static model's ranking is noise)
CACHE_MAX = 5000  # cached entry vectors in a run; past it the cache starts again

_said: set[str] = set()
_said_lock = threading.Lock()


def say_once(note: str | None, say: Notice) -> None:
    """Tell ``note`` (why semantic search is off) once per process, whoever asks first."""
    if not note:
        return
    with _said_lock:
        if note in _said:
            return
        _said.add(note)
    say(note)


def forget_said() -> None:
    """Forget which notes were told (tests)."""
    with _said_lock:
        _said.clear()


class Meaning:
    """The semantic side of long-term memory for one app: entry vectors cached by text."""

    def __init__(self, notice: Notice | None = None) -> None:
        self.notice = notice
        self.armed = False  # set at a session's first message: the model may load from then on
        self._vectors: dict[str, np.ndarray] = {}

    def arm(self) -> None:
        self.armed = True

    def start_preload(self) -> threading.Thread | None:
        """Load the table in a background thread (the REPL starts it once its prompt is up), so
        the first ranking finds it loaded; None when semantic search is switched off. Says
        nothing: a failure is told where the ranking asks for the model."""
        from clio.recall.embedder import get_embedder, semantic_enabled

        if not semantic_enabled():
            return None
        return threads.start(get_embedder, "clio-embedder")

    def embedder(self) -> Embedder | None:
        """The process's embedder (loaded now if need be), None when it cannot load; the reason
        is told once unless the user switched semantic search off."""
        from clio.recall.embedder import get_embedder, semantic_enabled, unavailable_reason

        embedder = get_embedder()
        if embedder is None and semantic_enabled() and self.notice is not None:
            say_once(unavailable_reason() or "semantic recall off", self.notice)
        return embedder

    def vectors(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        """One unit row per text (float32), embedding only the texts not seen in this run."""
        import numpy as np

        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            if len(self._vectors) + len(missing) > CACHE_MAX:
                self._vectors.clear()
            for text, row in zip(missing, embedder.embed(missing), strict=True):
                self._vectors[text] = row
        if not texts:
            return np.zeros((0, embedder.dim), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])

    def similarities(self, entries: Sequence[Entry], task: str) -> dict[str, float] | None:
        """Entry id -> cosine with ``task`` for the :data:`TOP` nearest entries at least
        :data:`MIN_SIMILARITY` alike; None when the ranking stays lexical (not armed yet, no
        task, no entries, no model)."""
        if not self.armed or not task.strip() or not entries:
            return None
        embedder = self.embedder()
        if embedder is None:
            return None
        query = embedder.embed([task])[0]
        sims = self.vectors(embedder, [e.full_text() for e in entries]) @ query
        near = sorted(range(len(entries)), key=lambda i: -float(sims[i]))[:TOP]
        return {entries[i].id: float(sims[i]) for i in near if sims[i] >= MIN_SIMILARITY}

    def dedup_candidates(self, entries: Sequence[Entry]) -> list[tuple[str, str, float]]:
        """(id, id, cosine) of same-type entries at least :data:`clio.memory.dedup.SEMANTIC_MIN`
        alike, for :func:`clio.memory.dedup.ambiguous_pairs` to filter (anchors, decisions); []
        without the model. Loads the model: call it only where a request is about to be sent."""
        by_type: dict[str, list[Entry]] = {}
        for e in entries:
            by_type.setdefault(e.type, []).append(e)
        groups = [g for g in by_type.values() if 1 < len(g) <= SEMANTIC_MAX]
        if not groups:
            return []
        embedder = self.embedder()
        if embedder is None:
            return []
        import numpy as np

        out: list[tuple[str, str, float]] = []
        for group in groups:
            m = self.vectors(embedder, [e.text() for e in group])
            sims = np.triu(m @ m.T, k=1)
            for i, k in zip(*np.nonzero(sims >= SEMANTIC_MIN), strict=True):
                out.append((group[int(i)].id, group[int(k)].id, float(sims[i, k])))
        return out
