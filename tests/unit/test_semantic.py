"""Semantic recall: the shipped embedding model, its hash check, vectors beside the FTS5 index,
hybrid (bm25 + cosine, RRF) ranking, and the lexical fallback when the model is unavailable."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from clio.messages import make
from clio.recall import embedder as semantic
from clio.recall.index import RecallIndex
from clio.store.sessions import SessionStore
from tests.unit.conftest import add_session

# -- pure helpers ------------------------------------------------------------------------------


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = semantic.rrf([["a", "b", "c"], ["c", "a", "d"]], k=60)
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["d"] == pytest.approx(1 / 63)
    order = sorted(fused, key=lambda i: -fused[i])
    assert order[:2] == ["a", "c"]  # found high by both beats found first by one
    assert semantic.rrf([]) == {}
    assert semantic.rrf([["x", "x", "y"]], k=1) == {"x": 1 / 2, "y": 1 / 4}  # first place counts


def test_cosine() -> None:
    assert semantic.cosine([1.0, 0.0], [1.0, 1.0]) == pytest.approx(2**-0.5)
    assert semantic.cosine([1.0, 2.0], [-1.0, -2.0]) == pytest.approx(-1.0)
    assert semantic.cosine([0.0, 0.0], [1.0, 1.0]) == 0.0
    assert semantic.cosine(np.array([3.0, 4.0]), [3.0, 4.0]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        semantic.cosine([1.0], [1.0, 2.0])


# -- the real model ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedder() -> semantic.Embedder:
    semantic.reset_embedder()
    found = semantic.get_embedder()
    assert found is not None, semantic.unavailable_reason()
    return found


def test_embeddings_are_unit_rows_that_rank_by_meaning(embedder: semantic.Embedder) -> None:
    vecs = embedder.embed(
        ["Which time zone are the servers in?", "We set the machines' clocks to UTC.", "", "I baked bread"]
    )
    assert vecs.shape == (4, embedder.dim) and vecs.dtype == np.float32
    assert np.linalg.norm(vecs[0]) == pytest.approx(1.0, abs=1e-5)
    assert not vecs[2].any()  # blank text: a zero row
    assert float(vecs[0] @ vecs[1]) > float(vecs[0] @ vecs[3]) + 0.2
    assert embedder.embed([]).shape == (0, embedder.dim)
    again = embedder.embed(["We set the machines' clocks to UTC."])
    assert np.allclose(again[0], vecs[1], atol=1e-5)  # deterministic, whatever the batch


def test_get_embedder_is_cached(embedder: semantic.Embedder) -> None:
    assert semantic.get_embedder() is semantic.get_embedder()
    assert semantic.unavailable_reason() is None


def test_similar_wordings_are_closer_than_unrelated_ones(embedder: semantic.Embedder) -> None:
    tz, tz1, db, database, bread = embedder.embed(["time zone", "timezone", "DB", "database", "I baked bread"])
    assert float(tz @ tz1) > float(tz @ bread) + 0.3
    assert float(tz @ tz1) > float(tz @ database) + 0.3
    assert float(db @ database) > float(db @ bread) + 0.3
    assert float(db @ database) > float(db @ tz1) + 0.3
    blank = embedder.embed(["", "   \n"])  # no token: zero rows, not NaN
    assert blank.shape == (2, embedder.dim) and not blank.any()


def test_a_tampered_table_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "static_minilm.npz"
    shutil.copyfile(semantic.TABLE_FILE, copy)
    semantic.load_embedder(copy)  # the intact copy loads
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0x01
    copy.write_bytes(bytes(data))
    with pytest.raises(semantic.EmbedderUnavailable) as info:
        semantic.load_embedder(copy)
    message = str(info.value)
    assert "sha256" in message and "\n" not in message
    tok_copy = tmp_path / "tokenizer.json"
    tok_copy.write_text(semantic.TOKENIZER_FILE.read_text(encoding="utf-8") + " ", encoding="utf-8")
    with pytest.raises(semantic.EmbedderUnavailable, match="tokenizer"):
        semantic.load_embedder(None, tok_copy)


def test_hash_mismatch_at_get_embedder_stays_lexical_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "TABLE_SHA256", "0" * 64)
    semantic.reset_embedder()
    try:
        assert semantic.get_embedder() is None
        reason = semantic.unavailable_reason()
        assert reason is not None and "sha256" in reason and "\n" not in reason
    finally:
        semantic.reset_embedder()


# -- vectors beside the index, hybrid search -----------------------------------------------------


TIMEZONE = "Every server keeps its clocks on UTC now, so the nightly cron jobs stop drifting twice a year."
OTHERS = [
    ("Style the navbar with flexbox", "I changed the CSS grid to flexbox in nav.css"),
    ("The unit tests fail on CI", "The fixture leaked a temp dir; I fixed conftest.py"),
    ("Add a logo to the README", "Added logo.png and a badge line"),
    ("Rename the helper module", "Moved helpers.py to utils/text.py and updated imports"),
    ("Bump the version", "Version is now 0.3.1 in pyproject.toml"),
]
QUESTION = "what time zone do our machines use?"


@pytest.fixture
def archive(store: SessionStore) -> Iterator[str]:
    for pair in OTHERS[:2]:
        add_session(store, list(pair))
    target = add_session(store, ["Scheduling bug again", TIMEZONE])
    for pair in OTHERS[2:]:
        add_session(store, list(pair))
    yield target


def vec_count(index: RecallIndex) -> int:
    return int(index._conn.execute("SELECT count(*) FROM vecs").fetchone()[0])


def msg_count(index: RecallIndex) -> int:
    return int(index._conn.execute("SELECT count(*) FROM msgs").fetchone()[0])


def test_reworded_question_found_by_meaning_where_lexical_misses(
    store: SessionStore, archive: str, embedder: semantic.Embedder, tmp_path: Path
) -> None:
    index = RecallIndex(tmp_path / "recall.sqlite", store, embedder=embedder)
    lexical = index.search(QUESTION, mode="lexical")
    assert archive not in {h["session_id"] for h in lexical}  # no shared word: bm25 cannot see it
    hits = index.search(QUESTION)
    assert hits and hits[0]["session_id"] == archive, hits
    assert any("UTC" in h["excerpt"] for h in hits if h["session_id"] == archive)
    semantic_only = index.search(QUESTION, mode="semantic")
    assert semantic_only[0]["session_id"] == archive
    # what bm25 does find still comes through the fusion
    found = index.search("flexbox navbar")
    assert "flexbox" in found[0]["excerpt"]
    assert index.take_semantic_note() is None


def test_vectors_follow_the_index_incrementally(store: SessionStore, archive: str, tmp_path: Path) -> None:
    index = RecallIndex(tmp_path / "recall.sqlite", store, embedder=semantic.get_embedder())
    index.search("anything at all")
    total = msg_count(index)
    assert vec_count(index) == total == 2 * (len(OTHERS) + 1)
    blobs = {len(b) for (b,) in index._conn.execute("SELECT v FROM vecs")}
    assert blobs == {2 * semantic.get_embedder().dim}  # type: ignore[union-attr]  (float16 on disk)
    written = index.stats["vectors_written"]
    assert written == total

    # a grown session: only its new messages are embedded
    s = store.open(archive)
    s.append(make("user", "Also the database backups now start at 03:00 UTC."))
    s.close()
    hits = index.search("when do the DB dumps run")
    assert index.stats["vectors_written"] == written + 1
    assert vec_count(index) == msg_count(index) == total + 1
    assert "backups" in hits[0]["excerpt"]

    # a deleted session takes its vectors with it (and the cached matrix notices)
    store.delete(archive)
    assert all(h["session_id"] != archive for h in index.search(QUESTION))
    assert vec_count(index) == msg_count(index) == total - 2
    assert index.stats["vectors_written"] == written + 1

    # a new process (a new RecallIndex) finds the vectors on disk and embeds nothing
    again = RecallIndex(tmp_path / "recall.sqlite", store, embedder=semantic.get_embedder())
    again.search(QUESTION)
    assert again.stats["vectors_written"] == 0


def test_missing_vectors_are_rebuilt(store: SessionStore, archive: str, tmp_path: Path) -> None:
    path = tmp_path / "recall.sqlite"
    index = RecallIndex(path, store, embedder=semantic.get_embedder())
    assert index.search(QUESTION)[0]["session_id"] == archive
    index.close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE vecs")  # the vector table lost (or an index made before vectors)
    conn.commit()
    conn.close()
    index = RecallIndex(path, store, embedder=semantic.get_embedder())
    assert index.search(QUESTION)[0]["session_id"] == archive
    assert index.stats["vectors_written"] == msg_count(index) == vec_count(index)
    index.close()
    for suffix in ("", "-wal", "-shm"):  # the whole file gone: FTS5 rows and vectors come back
        Path(str(path) + suffix).unlink(missing_ok=True)
    index = RecallIndex(path, store, embedder=semantic.get_embedder())
    assert index.search(QUESTION)[0]["session_id"] == archive
    assert vec_count(index) == msg_count(index) > 0


def test_another_model_name_empties_the_vectors(store: SessionStore, archive: str, tmp_path: Path) -> None:
    path = tmp_path / "recall.sqlite"
    index = RecallIndex(path, store, embedder=semantic.get_embedder())
    index.sync_vectors()
    index._conn.execute("UPDATE vecs SET v = zeroblob(length(v))")  # vectors of some other model
    index._conn.execute("UPDATE meta SET value = 'another-model' WHERE key = 'vec_model'")
    index.close()
    index = RecallIndex(path, store, embedder=semantic.get_embedder())
    assert index.search(QUESTION)[0]["session_id"] == archive
    assert index.stats["vectors_written"] == msg_count(index)


def test_sync_budget_leaves_the_rest_for_later(store: SessionStore, tmp_path: Path) -> None:
    for i in range(3):
        add_session(store, [f"note {i}: " + " ".join(["word"] * 20)] * 100)
    index = RecallIndex(
        tmp_path / "recall.sqlite", store, embedder=semantic.get_embedder(), sync_budget_s=0.0
    )
    index.search("word")
    first = vec_count(index)
    assert 0 < first < msg_count(index)  # one batch, then the budget stopped it
    index.search("word")
    assert vec_count(index) > first
    index.sync_vectors()
    assert vec_count(index) == msg_count(index)


def test_unavailable_model_stays_lexical_and_says_so_once(
    store: SessionStore, archive: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(semantic, "TABLE_FILE", tmp_path / "nowhere.npz")
    semantic.reset_embedder()
    try:
        assert semantic.get_embedder() is None
        reason = semantic.unavailable_reason()
        assert reason is not None and "not found" in reason and "\n" not in reason
        index = RecallIndex(tmp_path / "recall.sqlite", store)
        hits = index.search("flexbox navbar")
        assert hits and "flexbox" in hits[0]["excerpt"]  # lexical recall still works
        assert index.search(QUESTION) == [] or archive not in {
            h["session_id"] for h in index.search(QUESTION)
        }
        assert index.take_semantic_note() == reason
        assert index.take_semantic_note() is None  # said once
        assert "vecs" not in {r[0] for r in index._conn.execute("SELECT name FROM sqlite_master")}
    finally:
        semantic.reset_embedder()


def test_switched_off_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(semantic.ENV_SWITCH, "0")
    semantic.reset_embedder()
    try:
        assert semantic.get_embedder() is None
        assert semantic.ENV_SWITCH in (semantic.unavailable_reason() or "")
    finally:
        semantic.reset_embedder()


def test_model_is_not_loaded_before_the_first_search(
    store: SessionStore, archive: str, tmp_path: Path
) -> None:
    semantic.reset_embedder()
    index = RecallIndex(tmp_path / "recall.sqlite", store)
    index.refresh()
    assert semantic._tried is False  # opening and refreshing the index never touch the model
    assert index.search(QUESTION)[0]["session_id"] == archive
    assert semantic._tried is True
