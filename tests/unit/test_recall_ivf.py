"""The IVF prefilter of the recall vectors (clio/recall/ivf.py) and bm25 beside the cosine scan:
the lists find the exact top-k, follow the index incrementally, survive an older or damaged
index, and parallel search returns what sequential search does."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from clio.recall import embedder as semantic
from clio.recall import ivf
from clio.recall.index import RecallIndex
from clio.recall.vectors import VectorIndex
from clio.store.sessions import SessionStore
from tests.unit.conftest import add_session

# -- the pure parts: k-means, probing, layout ---------------------------------------------------------


def planted(seed: int = 3, clusters: int = 30, per: int = 60, dim: int = 48) -> tuple[np.ndarray, np.ndarray]:
    """Unit rows around ``clusters`` random centres, and the centre of each row."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    owner = np.repeat(np.arange(clusters), per)
    rows = centres[owner] + 0.25 * rng.standard_normal((len(owner), dim)).astype(np.float32) / np.sqrt(dim)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype(np.float32), owner


def test_lists_find_the_exact_top_k_on_a_planted_set() -> None:
    rows, _ = planted()
    cent = ivf.kmeans(rows, 30)
    assert cent.shape == (30, rows.shape[1])
    assert np.allclose(np.linalg.norm(cent, axis=1), 1.0, atol=1e-4)
    labels = ivf.assign(rows, cent)
    order = ivf.Layout.order(labels)
    mat, ids = rows[order], np.arange(len(rows))[order]
    layout = ivf.Layout(labels[order], len(cent))
    rng = np.random.default_rng(5)
    for qi in rng.choice(len(rows), 25, replace=False):
        q = rows[qi] + 0.05 * rng.standard_normal(rows.shape[1]).astype(np.float32) / np.sqrt(rows.shape[1])
        q /= np.linalg.norm(q)
        exact = set(np.argsort(-(rows @ q))[:10].tolist())
        segs = layout.segments(ivf.probe(cent, q, 3), len(mat))
        scanned = np.concatenate([np.arange(s, e) for s, e in segs])
        assert len(scanned) < len(rows) / 4  # a small part of the matrix is read
        scores = mat[scanned] @ q
        found = set(ids[scanned[np.argsort(-scores)[:10]]].tolist())
        assert found == exact


def test_layout_scans_the_tail_and_skips_empty_lists() -> None:
    layout = ivf.Layout(np.array([0, 0, 2, 2, 2], dtype=np.int32), 4)
    assert layout.starts.tolist() == [0, 2, 2, 5, 5]
    assert layout.segments(np.array([3, 2, 1]), 5) == [(2, 5)]
    assert layout.segments(np.array([0]), 8) == [(0, 2), (5, 8)]  # rows added since the layout
    assert ivf.probe(np.eye(3, dtype=np.float32), np.array([0.0, 1.0, 0.0], np.float32), 1).tolist() == [1]
    assert sorted(ivf.probe(np.eye(3, dtype=np.float32), np.ones(3, np.float32), 9).tolist()) == [0, 1, 2]
    assert ivf.list_count(200_000) == 447 and ivf.list_count(1) == 1


def test_lists_are_written_only_for_the_current_training() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE vecs(id INTEGER PRIMARY KEY, v BLOB NOT NULL)")
    conn.executemany("INSERT INTO vecs VALUES (?, x'00')", [(i,) for i in range(1, 6)])
    conn.executescript(ivf.SCHEMA)
    cent = np.eye(2, 4, dtype=np.float32)
    gen = ivf.save_training(conn, cent, 3, np.array([1, 2, 3]), np.array([0, 1, 0]))
    assert gen == 1 and ivf.generation(conn) == 1
    found = ivf.read(conn, 4)
    assert found is not None and found[:2] == (1, 3) and np.array_equal(found[2], cent)
    assert ivf.read(conn, 3) is None  # centroids of another width: not ours
    assert not ivf.save_labels(conn, 0, np.array([4]), np.array([1]))  # trained again meanwhile
    assert ivf.save_labels(conn, 1, np.array([4, 99]), np.array([1, 0]))  # 99 has no vector
    assert dict(conn.execute("SELECT id, list FROM ivf_lists")) == {1: 0, 2: 1, 3: 0, 4: 1}
    conn.execute("DELETE FROM vecs WHERE id = 2")  # the trigger takes its list row
    assert 2 not in dict(conn.execute("SELECT id, list FROM ivf_lists"))
    assert ivf.save_training(conn, cent, 4, np.array([1]), np.array([1])) == 2
    assert dict(conn.execute("SELECT id, list FROM ivf_lists")) == {1: 1}


# -- in the recall index, with the real model ----------------------------------------------------------

TOPICS = [
    "the postgres database migration failed on the users table",
    "flexbox layout for the navbar and the footer in css",
    "the nightly backup cron job runs at three in the morning",
    "python unit tests fail on the ci runner with a fixture error",
    "docker image build is slow because of the pip cache",
    "rename the helper module and update every import",
    "the api returns a 500 error when the token expires",
    "write the release notes for version two of the app",
    "memory leak in the image resizing worker process",
    "translate the settings page into german and french",
]
NEEDLE = "Every server keeps its clocks on UTC now, so the cron jobs stop drifting."
QUESTION = "what time zone do our machines use?"


def fill(store: SessionStore, sessions: int, offset: int = 0) -> None:
    for n in range(offset, offset + sessions):
        texts = [f"{TOPICS[(n + i) % len(TOPICS)]} (note {n}-{i}, item {i * 7 + n})" for i in range(8)]
        add_session(store, texts)


def with_lists(index: RecallIndex, min_rows: int = 60, nprobe: int = 3) -> VectorIndex:
    vectors = index.vector_index()
    assert vectors is not None
    vectors.min_rows, vectors.nprobe = min_rows, nprobe
    return vectors


def count(index: RecallIndex, table: str) -> int:
    return int(index._conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


@pytest.fixture
def embedder() -> semantic.Embedder:
    found = semantic.get_embedder()
    assert found is not None, semantic.unavailable_reason()
    return found


@pytest.fixture
def needle(store: SessionStore) -> str:
    fill(store, 12)
    target = add_session(store, ["Scheduling bug again", NEEDLE])
    fill(store, 12, offset=12)
    return target


def test_ivf_search_equals_the_exact_scan(
    store: SessionStore, needle: str, embedder: semantic.Embedder, tmp_path: Path
) -> None:
    exact = RecallIndex(tmp_path / "exact.sqlite", store, embedder=embedder)
    lists = RecallIndex(tmp_path / "ivf.sqlite", store, embedder=embedder)
    vectors = with_lists(lists, nprobe=1_000)  # every list: must be the exact answer
    queries = [QUESTION, "database migration error", "css footer", "the token expired", "backup at night"]
    for q in queries:
        assert lists.search(q, mode="semantic") == exact.search(q, mode="semantic")
        assert lists.search(q) == exact.search(q)
    assert vectors.stats["ivf_trainings"] == 1
    assert count(lists, "ivf_lists") == count(lists, "vecs") == count(lists, "msgs")
    assert count(exact, "ivf") == 0  # below MIN_ROWS: no lists at all
    # probing a few lists reads part of the matrix and still finds the planted answer
    vectors.nprobe = 2
    before = vectors.stats["rows_scanned"]
    hits = lists.search(QUESTION)
    assert hits[0]["session_id"] == needle
    assert vectors.stats["rows_scanned"] - before < count(lists, "vecs")
    # another process reads the matrix already in list order: same lists, same answers
    reopened = RecallIndex(tmp_path / "ivf.sqlite", store, embedder=embedder)
    again = with_lists(reopened, nprobe=2)
    for q in queries:
        assert reopened.search(q, mode="semantic") == lists.search(q, mode="semantic")
    assert again.stats["ivf_trainings"] == again.stats["relayouts"] == 0 and again._layout is not None
    assert again._layout.starts.tolist() == vectors._layout.starts.tolist()  # type: ignore[union-attr]
    assert sorted(again._ids.tolist()) == sorted(vectors._ids.tolist())


def test_lists_follow_the_index_and_train_again_when_doubled(
    store: SessionStore, needle: str, embedder: semantic.Embedder, tmp_path: Path
) -> None:
    path = tmp_path / "recall.sqlite"
    index = RecallIndex(path, store, embedder=embedder)
    vectors = with_lists(index)
    index.search("anything")
    trained = count(index, "vecs")
    assert vectors.stats["ivf_trainings"] == 1
    gen = ivf.generation(index._conn)
    buf = vectors._buf
    fill(store, 3, offset=100)  # a few more sessions: assigned to the lists, no new training
    index.search("database")
    assert vectors._buf is buf  # appended in place: the matrix is not copied
    assert vectors.stats["ivf_trainings"] == 1 and ivf.generation(index._conn) == gen
    assert count(index, "ivf_lists") == count(index, "vecs") > trained
    store.delete(needle)  # a deleted session takes its list rows with it
    index.search("database")
    assert count(index, "ivf_lists") == count(index, "vecs") == count(index, "msgs")
    # another process reads the lists from the file instead of training
    again = RecallIndex(path, store, embedder=embedder)
    other = with_lists(again)
    again.search("database")
    assert other.stats["ivf_trainings"] == 0
    fill(store, 30, offset=200)  # the vectors more than doubled: the lists are trained again
    index.search("database")
    assert vectors.stats["ivf_trainings"] == 2 and ivf.generation(index._conn) == gen + 1
    assert count(index, "ivf_lists") == count(index, "vecs")
    again.search("database")  # the other process notices the new training and uses it
    assert other.stats["ivf_trainings"] == 0


def test_an_index_from_before_the_lists_is_extended_silently(
    store: SessionStore, needle: str, embedder: semantic.Embedder, tmp_path: Path
) -> None:
    path = tmp_path / "recall.sqlite"
    index = RecallIndex(path, store, embedder=embedder)
    index.refresh()
    index.sync_vectors()  # vectors, no lists yet (few rows)
    assert count(index, "vecs") == count(index, "msgs") > 0
    index.close()
    conn = sqlite3.connect(path)
    conn.executescript(
        "DROP TRIGGER vecs_ivf_gone; DROP TABLE ivf_lists; DROP TABLE ivf;"
    )  # an older clio's file
    conn.close()
    index = RecallIndex(path, store, embedder=embedder)
    vectors = with_lists(index)
    assert index.search(QUESTION)[0]["session_id"] == needle
    assert index.stats["vectors_written"] == 0 and index.stats["rebuilds"] == 0  # kept, only extended
    assert vectors.stats["ivf_trainings"] == 1
    assert count(index, "ivf_lists") == count(index, "vecs")
    assert index.take_semantic_note() is None


def test_damaged_lists_are_trained_again(
    store: SessionStore, needle: str, embedder: semantic.Embedder, tmp_path: Path
) -> None:
    path = tmp_path / "recall.sqlite"
    index = RecallIndex(path, store, embedder=embedder)
    with_lists(index)
    index.search(QUESTION)
    index.close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE ivf SET c = x'0102', gen = gen + 1")  # centroids that do not parse
    conn.execute("UPDATE ivf_lists SET list = 99999 WHERE id % 2 = 0")  # lists that do not exist
    conn.commit()
    conn.close()
    index = RecallIndex(path, store, embedder=embedder)
    vectors = with_lists(index, nprobe=1_000)
    assert index.search(QUESTION)[0]["session_id"] == needle
    assert vectors.stats["ivf_trainings"] == 1
    assert int(index._conn.execute("SELECT max(list) FROM ivf_lists").fetchone()[0]) < 99999


def test_parallel_search_returns_what_sequential_search_does(
    store: SessionStore, needle: str, embedder: semantic.Embedder, tmp_path: Path
) -> None:
    index = RecallIndex(tmp_path / "recall.sqlite", store, embedder=embedder)
    queries = [QUESTION, "database migration error", "css footer navbar", "release notes", "zzz"]
    for exclude in (None, needle):
        index.parallel = False
        sequential = [index.search(q, exclude_session=exclude) for q in queries]
        index.parallel = True
        assert [index.search(q, exclude_session=exclude) for q in queries] == sequential
    assert sequential[0] and all(h["session_id"] != needle for h in sequential[0])


def test_a_prepared_scan_survives_a_rebuild_beside_it(
    store: SessionStore, needle: str, embedder: semantic.Embedder, tmp_path: Path
) -> None:
    index = RecallIndex(tmp_path / "recall.sqlite", store, embedder=embedder)
    vectors = with_lists(index)
    index.search(QUESTION)
    view = vectors.prepare(index._conn)
    qvec = embedder.embed([QUESTION])[0]
    want = vectors.scan(qvec, 5, view=view)
    index.rebuild()  # what bm25 does beside the scan when it finds the file damaged
    assert vectors._mat is None
    assert vectors.scan(qvec, 5, view=view) == want and want
    assert vectors.scan(qvec, 5) == []  # the index itself starts over
    assert index.search(QUESTION)[0]["session_id"] == needle
