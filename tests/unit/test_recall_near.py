"""Candidates found by meaning (issue 32): the encoder helper's nearest-message scan
(clio.recall.encoder_scan, with hand-made vectors: no model) and the recall index taking the row
ids it names as units after the words' results (RecallIndex.search(nearby=...))."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from clio.recall import embedder as semantic
from clio.recall.encoder import DIM, pack
from clio.recall.encoder_cache import VectorCache, key
from clio.recall.encoder_models import MINILM, MPNET
from clio.recall.encoder_scan import MIN_COSINE, NearScan
from clio.recall.index import RecallIndex
from clio.recall.query import best_first
from clio.recall.schema import marks, note_removed
from clio.store.sessions import SessionStore
from tests.unit.conftest import add_session


def unit(*hot: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    for i in hot:
        v[i] = 1.0
    return v / np.linalg.norm(v)


def project(tmp_path: Path, bodies: list[str]) -> tuple[Path, VectorCache]:
    clio_dir = tmp_path / ".clio"
    clio_dir.mkdir(exist_ok=True)
    index = clio_dir / "recall.sqlite"
    with sqlite3.connect(index) as db:
        db.execute("CREATE TABLE IF NOT EXISTS msgs(id INTEGER PRIMARY KEY, body TEXT)")
        db.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.executemany("INSERT INTO msgs(body) VALUES (?)", [(b,) for b in bodies])
    return index, VectorCache(clio_dir / "recall-vectors.sqlite")


def store_vectors(cache: VectorCache, vecs: dict[str, np.ndarray]) -> None:
    cache.conn.executemany(
        "INSERT OR REPLACE INTO vecs(key, v) VALUES (?, ?)", [(key(t), pack(np.atleast_2d(v))) for t, v in vecs.items()]
    )


def test_the_scan_names_the_nearest_messages_best_first(tmp_path: Path) -> None:
    index, cache = project(tmp_path, ["alpha", "beta", "gamma"])
    store_vectors(cache, {"alpha": unit(0), "beta": np.vstack([unit(5), unit(1)]), "gamma": unit(0, 1)})
    scan = NearScan(index)
    scan.refresh(cache)
    near = scan.nearest(unit(1), 5)
    assert [rid for rid, _ in near] == [2, 3]  # beta's second chunk is the query; gamma half of it; alpha under the floor
    assert near[0][1] == pytest.approx(1.0, abs=0.02) and near[1][1] == pytest.approx(0.707, abs=0.02)
    assert all(cos >= MIN_COSINE for _, cos in near)
    assert [rid for rid, _ in scan.nearest(unit(1), 1)] == [2]


def test_the_scan_follows_the_index_and_the_fill(tmp_path: Path) -> None:
    index, cache = project(tmp_path, ["alpha", "beta"])
    store_vectors(cache, {"alpha": unit(0)})  # beta not embedded yet
    scan = NearScan(index)
    scan.refresh(cache)
    assert [r for r, _ in scan.nearest(unit(1), 5)] == []
    store_vectors(cache, {"beta": unit(1)})  # the fill writes it
    scan.checked = 0.0
    scan.refresh(cache)
    assert [r for r, _ in scan.nearest(unit(1), 5)] == [2]
    with sqlite3.connect(index) as db:  # a message added to the index since
        db.execute("INSERT INTO msgs(body) VALUES ('delta')")
    store_vectors(cache, {"delta": unit(1, 2)})
    scan.refresh(cache)
    assert [r for r, _ in scan.nearest(unit(1), 5)] == [2, 3]
    with sqlite3.connect(index) as db:  # a session deleted: its ids may come back as other messages
        db.execute("DELETE FROM msgs WHERE id = 3")
        note_removed(db, 1)  # as the index's remove_session notes it
        db.execute("INSERT INTO msgs(body) VALUES ('epsilon')")  # takes id 3 again
    store_vectors(cache, {"epsilon": unit(7)})
    scan.refresh(cache)
    assert [r for r, _ in scan.nearest(unit(1), 5)] == [2]  # delta's vector is not epsilon's
    assert [r for r, _ in scan.nearest(unit(7), 5)] == [3]
    index.unlink()  # the index rebuilt: a new file (another mark), ids from 1 again
    project(tmp_path, ["zeta", "beta", "epsilon"])
    with sqlite3.connect(index) as db:
        db.execute("INSERT INTO meta VALUES ('made', 'another')")
    store_vectors(cache, {"zeta": unit(7, 8)})
    scan.refresh(cache)
    assert [r for r, _ in scan.nearest(unit(8), 5)] == [1]
    assert [r for r, _ in scan.nearest(unit(7), 5)] == [3, 1]


def test_the_scan_takes_what_the_fill_just_embedded_at_once(tmp_path: Path) -> None:
    """A search a moment before the fill (the turn's own, or the previous one-shot run's) finds
    the newest messages without vectors; the helper warms the scan right after the fill wrote
    theirs, and the next search, however soon, finds them (not only once RECHECK_S has passed)."""
    index, cache = project(tmp_path, ["alpha", "beta"])
    store_vectors(cache, {"alpha": unit(0)})
    scan = NearScan(index)
    scan.refresh(cache)  # the search: beta has no vector yet
    store_vectors(cache, {"beta": unit(1)})  # the fill, a moment later
    scan.refresh(cache)  # a plain search this soon does not look again
    assert [r for r, _ in scan.nearest(unit(1), 5)] == []
    scan.warm(cache)  # what the helper does once the fill is done
    assert [r for r, _ in scan.nearest(unit(1), 5)] == [2]


def test_the_index_marks_what_it_removes_and_each_file_it_makes(store: SessionStore) -> None:
    add_session(store, ["alpha one", "beta two"])
    gone = add_session(store, ["gamma three", "delta four", "ok"])
    index = RecallIndex(store.dir.parent / "r.sqlite", store, embedder=None)
    index.refresh()
    made, removed = marks(index._conn)
    assert len(made) == 16 and removed == 0
    store.delete(gone)
    index.refresh()
    assert marks(index._conn) == (made, 3)
    assert index.counts()["messages"] == 2
    index.rebuild()
    assert marks(index._conn)[0] not in ("", made)


def test_the_scan_covers_only_the_newest_messages(tmp_path: Path) -> None:
    bodies = [f"message {i}" for i in range(10)]
    index, cache = project(tmp_path, bodies)
    store_vectors(cache, {b: unit(1) for b in bodies})
    scan = NearScan(index, cap=4)
    scan.refresh(cache)
    assert sorted(r for r, _ in scan.nearest(unit(1), 10)) == [7, 8, 9, 10]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SessionStore:
    monkeypatch.setenv(semantic.ENV_SWITCH, "0")
    semantic.reset_embedder()
    return SessionStore(tmp_path / "sessions")


def row_id(index: RecallIndex, text: str) -> int:
    return int(index._conn.execute("SELECT id FROM msgs WHERE body = ?", (text,)).fetchone()[0])


def test_units_found_by_meaning_follow_the_words_results(store: SessionStore) -> None:
    words = add_session(store, ["which port does the staging database use?", "The staging database listens on 6543."])
    asked = "where do the events that fail validation end up?"
    fact = "Invalid events go to the dead-letter topic events.invalid.v2."
    meaning = add_session(store, [asked, fact])
    index = RecallIndex(None, store)
    index.refresh()
    asked_for: list[int] = []

    def nearby() -> list[int]:
        asked_for.append(1)
        return [row_id(index, fact), row_id(index, "The staging database listens on 6543."), 10_000]

    hits = best_first(index.search, "staging database port", 1, max_sessions=5, with_text=True, mode="lexical", nearby=nearby)
    assert asked_for == [1]
    assert [h["session_id"] for h in hits] == [words, meaning]  # the words' result, then the one by meaning
    assert "found" not in hits[0] and hits[1]["found"] == "meaning"
    assert fact in hits[1]["text"] and asked in hits[1]["text"]  # the unit: the question and its answer
    assert hits[1]["seqs"] == [0, 1]
    # what the request carries already never comes back, found by meaning or not
    skipped = index.search("staging database port", with_text=True, mode="lexical", nearby=nearby, skip={meaning: {0, 1}})
    assert all(h["session_id"] != meaning for h in skipped)
    # at most nearby_results units, and none when the scan found nothing
    assert not [h for h in index.search("staging", mode="lexical", nearby=lambda: []) if h.get("found")]
    none = index.search("staging", mode="lexical", nearby=nearby, nearby_results=0)
    assert not [h for h in none if h.get("found")]


def test_the_memory_tool_fuses_what_is_found_by_meaning_into_its_ranking(store: SessionStore) -> None:
    near_misses = [add_session(store, [f"the staging database port {i} is documented in the wiki", "ok"]) for i in range(6)]
    fact = "Invalid events go to the dead-letter topic events.invalid.v2."
    meaning = add_session(store, ["where do the events that fail validation end up?", fact])
    index = RecallIndex(None, store)
    index.refresh()
    alone = index.search("staging database port", max_sessions=10, max_results=8, mode="lexical")
    assert meaning not in {h["session_id"] for h in alone}  # no word in common: bm25 cannot find it
    fused = index.search(
        "staging database port", max_sessions=10, max_results=8, mode="lexical",
        nearby=lambda: [row_id(index, fact)], fuse_nearby=True,
    )
    assert meaning in {h["session_id"] for h in fused}  # ranked in by reciprocal rank fusion
    assert not [h for h in fused if h.get("found")]  # not appended as a unit found by meaning
    assert {h["session_id"] for h in fused} <= {meaning, *near_misses}


FACT = "Invalid events go to the dead-letter topic events.invalid.v2."


def near_misses_and_a_fact(store: SessionStore) -> tuple[RecallIndex, str]:
    """Six sessions that share the words "staging database port", and one whose answer (FACT)
    shares none of them: the index, and the fact's session."""
    for i in range(6):
        add_session(store, [f"the staging database port {i} is documented in the wiki", "ok"])
    meaning = add_session(store, ["where do the events that fail validation end up?", FACT])
    index = RecallIndex(None, store)
    index.refresh()
    return index, meaning


def place_of_fact(index: RecallIndex, meaning: str, query: str, **weights: float) -> int:
    """Where the fact's session ranks when the meaning list names the fact alone."""
    hits = index.search(
        query, max_sessions=10, max_results=8, mode="lexical",
        nearby=lambda: [row_id(index, FACT)], fuse_nearby=True, **weights,  # type: ignore[arg-type]
    )  # fmt: skip
    return [h["session_id"] for h in hits].index(meaning)


def test_the_meaning_list_weighs_as_much_as_its_model_is_trusted(store: SessionStore) -> None:
    """Each encoder's nearest list is fused at its own weight (encoder_models): the stronger
    model's list can lift a fact no word finds past the words' results; a weak one cannot."""
    index, meaning = near_misses_and_a_fact(store)

    def place(weight: float) -> int:
        return place_of_fact(index, meaning, "staging database port", meaning_weight=weight)

    assert place(MINILM.meaning_weight) > 0  # after the words' best
    assert place(4.0) == 0
    assert place(MINILM.meaning_weight) >= place(MPNET.meaning_weight) >= place(4.0)


def test_what_is_found_by_meaning_counts_more_when_the_words_barely_match(store: SessionStore) -> None:
    """The meaning list is fused at the model's weak_words_weight when none of bm25's best rows
    holds half of the query's terms (a reworded question), at its usual weight otherwise."""
    index, meaning = near_misses_and_a_fact(store)

    def place(query: str, usual: float, weak: float) -> int:
        return place_of_fact(index, meaning, query, meaning_weight=usual, weak_words_weight=weak)

    matched = "staging database port"  # every term in the words' best rows
    barely = "staging rollout postmortem timeline owner"  # one term of five (0.2) in any of them
    assert place(matched, 0.5, 4.0) > 0  # the usual weight: after the words' best
    assert place(barely, 0.5, 4.0) == 0  # the weak-words weight lifts it first
    assert place(barely, 0.5, 0.5) > 0  # and it is that weight that does it
    assert MINILM.weak_words_weight > MINILM.meaning_weight  # MiniLM's list counts more then
    assert MPNET.weak_words_weight >= MPNET.meaning_weight  # never less
