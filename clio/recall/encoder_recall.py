"""The encoder helper's side of a one-shot run's automatic recall: the run sends its message as it
starts (:meth:`clio.recall.encoder_client.EncoderClient.recall_ahead`), and the helper, which has
the index's modules loaded and its model at hand, does the whole recall while the run opens its
session: it brings the project's index up to date, searches it, scores the units with its own
encoder and applies the decision (:mod:`clio.recall.auto_turn`, the same code the run would run).
The run then asks only for the block within its room (``recalled``), and a one-shot answer pays a
socket's round trip instead of ~15 ms of imports, opening the index and searching it.

Requests (:mod:`clio.recall.encoder_service`):
- ``{"op": "recall", "id": TOKEN, "index": PATH, "cache": PATH, "q": TEXT, "task": TEXT,
  "current": SESSION, "redaction": LEVEL, "v": VERSION, "skip": {SESSION: [SEQ, ...]}, "since":
  SEQ}`` -> ``{"ok": true}``, once done: the recall of ``q`` kept under ``TOKEN`` (the last
  :data:`KEEP`), leaving out what the run's request will carry (``skip``: its window's messages,
  the message itself, what its recall blocks quote; ``since``: the running session's first
  message in the window, before which its words' frequencies are counted), or without ``skip``
  the whole running session ``current`` (a new one). ``v`` must be this helper's clio version (a helper left running across an
  upgrade says no, and the run recalls in process); the index must be a project's
  ``.clio/recall.sqlite`` beside the model's cache, its sessions in ``.clio/sessions``. With
  ``"pool": true`` (the run names a judge model, ``recall_judge_model``) the units that model
  reads are searched too, as the run would search them (:func:`pool_units`).
- ``{"op": "recalled", "id": TOKEN, "budget": CHARS}`` -> ``{"block": TEXT, "last": {...},
  "quoted": [...]}`` (the block '' when nothing clears the decision or fits), or an error when
  the token is unknown (the run then recalls in process, asking this helper for cosines). Asked
  with ``pool``, also ``"searched"`` (the message's scored units) and ``"pool"`` (the judge
  model's), as :mod:`clio.recall.hits_wire` writes them: the run asks its judge model over those
  and decides itself.

The index is written here as any clio run writes it (the refresh: new sessions' messages); the
session names it indexes are read through the redaction level the run sent.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clio import __version__
from clio.recall import auto_turn, hits_wire
from clio.recall.encoder_cache import INDEX_NAME
from clio.recall.encoder_client import TIMEOUT_S
from clio.recall.index import RecallIndex
from clio.recall.query import best_first
from clio.safety.redact import Redactor
from clio.store.sessions import SessionStore

if TYPE_CHECKING:
    from clio.recall.encoder_models import EncoderModel, Verdict

KEEP = 8  # recalls kept for their run's ``recalled``
OPEN_KEEP = 4  # projects' indexes kept open
MAX_SKIP_SESSIONS = 1000  # sessions a run's ``skip`` may name (its window's, and those its blocks quote)
# A fetch's second look at units without a vector ends this long before the run stops waiting
# (the decision, the reply and the socket); under MIN_AGAIN_S left, there is none (and never longer
# than the helper's on-the-spot budget). With mpnet during a project's first fill, that look took
# the helper past the run's 250 ms, and the message went to words alone (stop 53).
ANSWER_MARGIN_S = 0.04
MIN_AGAIN_S = 0.02


def carried(sent: Any) -> dict[str, set[int]] | None:
    """The ``skip`` a run sent (what its request carries, by session and sequence number), checked."""
    if sent is None:
        return None
    if not isinstance(sent, dict) or len(sent) > MAX_SKIP_SESSIONS:
        raise ValueError("skip: not a map of sessions to sequence numbers")
    out: dict[str, set[int]] = {}
    for sid, seqs in sent.items():
        if not isinstance(seqs, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in seqs):
            raise ValueError("skip: not a map of sessions to sequence numbers")
        out[str(sid)] = set(seqs)
    return out


class LocalScores:
    """:class:`clio.recall.auto_turn.Scores` in the helper: its own scan and cosines, no socket.
    ``nearest(k)``: the ``k`` messages nearest the query (the automatic recall asks
    :data:`~clio.recall.auto_turn.NEAR_ASKED`, the memory tool's search
    :data:`~clio.recall.tool_search.NEAR`); ``finish(units, deadline)``: each unit's cosine, texts
    without a vector embedded until the deadline, and never past the helper's on-the-spot budget
    from now (None: that budget)."""

    def __init__(
        self,
        nearest: Callable[[int], list[int]],
        finish: Callable[[list[list[str]], float | None], list[float | None]],
        judge: Callable[[str, list[str]], list[float] | None] | None = None,
    ) -> None:
        self.nearest = nearest
        self._finish = finish
        self._judge = judge

    def near(self) -> list[int]:
        return self.nearest(auto_turn.NEAR_ASKED)

    def finish(self, query: str, units: list[list[str]]) -> list[float | None] | None:
        return self._finish(units, None)

    def finish_by(self, deadline: float) -> Callable[[str, list[list[str]]], list[float | None]]:
        """:meth:`finish` with its embedding done by ``deadline`` (monotonic)."""
        return lambda query, units: self._finish(units, deadline)

    def judge(self, query: str, texts: list[str]) -> list[float] | None:
        return self._judge(query, texts) if self._judge is not None else None

    def close(self) -> None:
        pass


def pool_units(
    index: RecallIndex,
    query: str,
    current: str | None,
    scores: LocalScores,
    model: EncoderModel,
    options: dict[str, Any],
    frequencies: Callable[[list[str]], tuple[dict[str, int], int]],
) -> list[auto_turn.auto.Hit]:
    """The units the user's judge model reads for the message (the run's own search of them,
    :meth:`clio.app.recall.LazyRecall.pool`, done here: bm25 and the helper's nearest messages, in
    the search's order, the judge not re-reading them; ``options``: what the search leaves out),
    scored as the run scores them (:func:`clio.recall.model_judge.pool`)."""
    from clio.recall import model_judge, tool_search

    results = tool_search.ranked(
        index.search, query, model_judge.POOL_UNITS, lambda: scores.nearest(tool_search.NEAR), model, None,
        with_helper="lexical", max_sessions=model_judge.POOL_SESSIONS, with_text=True, **options,
    )  # fmt: skip
    return model_judge.pool(query, results, current, frequencies, index.said_to_other_questions)


class HelperRecall:
    """The recalls a helper did ahead, and the projects' indexes it keeps open for them."""

    def __init__(self) -> None:
        # token -> its recall, and the judge model's units when the run named one
        self.done: OrderedDict[str, tuple[Callable[[float], auto_turn.Searched], list[Any] | None]] = OrderedDict()
        self.indexes: OrderedDict[tuple[Path, str], tuple[RecallIndex, int]] = OrderedDict()  # with the file's inode
        self.served = 0  # blocks handed to the runs that asked (``recalled``): told by ``ping``

    def index(self, path: Path, redaction: str) -> RecallIndex:
        path = path.resolve()
        if path.name != INDEX_NAME or path.parent.name != ".clio" or not path.is_file():
            raise ValueError(f"not a project's recall index: {path}")
        key, inode = (path, redaction), path.stat().st_ino
        found = self.indexes.get(key)
        if found is not None and found[1] != inode:  # a run rebuilt it (a damaged file): the new one
            found[0].close()
            found = None
        if found is None:
            store = SessionStore(path.parent / "sessions", redact=Redactor(redaction).text)
            found = self.indexes[key] = (RecallIndex(path, store, embedder=None), inode)
            while len(self.indexes) > OPEN_KEEP:
                self.indexes.popitem(last=False)[1][0].close()
        self.indexes.move_to_end(key)
        return found[0]

    def recall(
        self,
        req: dict[str, Any],
        cosine_ask: float,
        scores: Callable[[str], LocalScores],
        weights: Verdict | None = None,
        model: EncoderModel | None = None,
    ) -> dict[str, Any]:
        """The ``recall`` request: done now, kept under its token. ``scores(query)``: the helper's
        nearest messages, cosines and judge for the query; ``weights``: its model's
        :class:`clio.recall.encoder_models.Verdict` (None: no judge); ``model``: its encoder
        model, whose weights the judge model's units are searched with (``"pool": true``: the
        run named a judge model)."""
        if req.get("v") != __version__:
            raise ValueError(f"this helper runs clio {__version__}, not {req.get('v')}")
        token = str(req["id"])
        index = self.index(Path(str(req["index"])), str(req.get("redaction") or "standard"))
        current = str(req.get("current") or "") or None
        text, task = str(req.get("q", "")), str(req.get("task", ""))
        skip = carried(req.get("skip"))  # None: the running session is new, left out whole
        since = req.get("since", 0)
        if not isinstance(since, int) or isinstance(since, bool) or since < 0:
            raise ValueError("since: not a sequence number")

        def search(query: str, nearby: Callable[[], Sequence[int]] | None) -> list[dict[str, Any]]:
            return best_first(
                index.search,
                query,
                auto_turn.SEARCH_RESULTS,
                max_sessions=auto_turn.SEARCH_SESSIONS,
                exclude_session=current if skip is None else None,
                skip=skip,
                with_text=True,
                mode="lexical",
                nearby=nearby,
            )

        def frequencies(words: list[str]) -> tuple[dict[str, int], int]:
            return index.frequencies(words, (current, since) if current else None, refresh=False)

        made: list[LocalScores] = []  # the query's scores, kept for a second look

        def begin(query: str) -> LocalScores:
            made.append(scores(query))
            return made[-1]

        found = auto_turn.search_and_score(
            text,
            task,
            None,  # the room is the run's, told with ``recalled``
            search=search,
            frequencies=frequencies,
            said_elsewhere=index.said_to_other_questions,
            begin=begin,
            current=current,
            cosine_ask=cosine_ask,
            weights=weights,
        )
        if found.skipped in auto_turn.KEPT_IN_STEP:
            index.refresh()  # not searched: the index kept in step as a search keeps it (the fill's)

        def again(deadline: float) -> auto_turn.Searched:
            """Scored once more when the run asks, for the units the encoder had no vector of in
            time (a project's first fill under way, which went on meanwhile), as late as the
            run's own scores would have been asked: what is embedded by ``deadline`` (monotonic;
            the run waits no longer for its answer), the rest decided by its words."""
            if not found.unscored() or not made or deadline - time.monotonic() < MIN_AGAIN_S:
                return found
            hits = auto_turn.auto.score_hits(
                found.query, found.results, current, frequencies, made[0].finish_by(deadline), cosine_ask,
                index.said_to_other_questions, task=False,  # searched: not an order (auto_turn.plan)
            )  # fmt: skip
            if weights is not None:
                hits = auto_turn.judged(hits, found.query, made[0], weights)
            return auto_turn.Searched(query=found.query, hits=hits, ms=found.ms, results=found.results)

        pooled: list[auto_turn.auto.Hit] | None = None  # not asked
        if req.get("pool") is True and model is not None:
            pooled = []  # nothing searched (small talk, an order): none to read either
            if made and not found.skipped:
                options = {"skip": skip} if skip is not None else {"exclude_session": current}
                pooled = pool_units(index, found.query, current, made[0], model, options, frequencies)
        self.done[token] = (again, pooled)
        while len(self.done) > KEEP:
            self.done.popitem(last=False)
        return {"ok": True}

    def recalled(self, req: dict[str, Any]) -> dict[str, Any]:
        """The ``recalled`` request: the block of a recall done ahead, within the run's room."""
        kept = self.done.pop(str(req.get("id")), None)
        if kept is None:
            raise ValueError("no recall done ahead under this token")
        again, pooled = kept
        until = req.get("until")  # when the run stops waiting (its clock: time.time())
        left = float(until) - time.time() if isinstance(until, (int, float)) and not isinstance(until, bool) else TIMEOUT_S
        deadline = time.monotonic() + left - ANSWER_MARGIN_S
        found = again(deadline)
        block, last, quoted = auto_turn.outcome(found, int(req.get("budget", 0)))
        self.served += 1
        out: dict[str, Any] = {"block": block, "last": last, "quoted": quoted}
        if pooled is not None:  # the run decides with its judge model over these
            out.update(searched=hits_wire.searched_out(found), pool=hits_wire.hits_out(pooled))
        return out
