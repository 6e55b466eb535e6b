"""A session's digests (clio.store.session_info.Digest) in the recall index: indexed once each,
after the session's messages, as units by themselves; kept through appends, a rewrite and a new
process; the index stays what one built afresh would be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clio.messages import make
from clio.recall.index import RecallIndex
from clio.recall.query import DIGEST_FILES_ROLE, DIGEST_ROLE
from clio.store.session_info import DIGEST_CHARS, MAX_DIGESTS, Digest, SessionInfo
from clio.store.sessions import SessionStore
from tests.unit.conftest import add_session
from tests.unit.test_recall import append, integrity, rewrite_third

FIX = "Fixed: staging used port 5432 but Postgres sits behind PgBouncer on pg-staging.internal port 6432."
OTHER = "Symptoms / other words: the test environment cannot reach its database after a deploy."


pytestmark = pytest.mark.usefixtures("lexical_only")  # bm25 alone (tests/unit/conftest.py)


def digest(store: SessionStore, sid: str, text: str, tainted: bool = False) -> None:
    """What a read-back does (clio.app.consolidate): a digest added, saved with the session's meta."""
    s = store.open(sid)
    s.info.digests = [*s.info.digests, Digest(len(s.messages), text, 1_700_000_000.0, tainted)][-MAX_DIGESTS:]
    s.save_meta()
    s.close()


def test_a_digest_is_a_unit_of_its_own_found_by_its_other_words(store: SessionStore, tmp_path: Path) -> None:
    sid = add_session(store, ["staging deploy is broken", "Port was wrong, fixed values.yaml", "should we also check the cache host?", "Not needed."])
    other = add_session(store, ["style the navbar", "Done: flexbox in nav.css"])
    index = RecallIndex(tmp_path / "recall.sqlite", store)
    index.refresh()
    assert index.search("database environment reach") == []  # the session never says it so

    digest(store, sid, f"{FIX} {OTHER}")
    assert index.refresh() == {"digests_indexed": 1}
    hits = index.search("test environment cannot reach the database", whole_units=True)
    assert hits and hits[0]["session_id"] == sid
    assert hits[0]["role"] == DIGEST_ROLE and hits[0]["seq"] == -4  # minus the messages it covers
    assert [p["role"] for p in hits[0]["parts"]] == [DIGEST_ROLE]  # not joined to the question before it
    assert index.refresh() == {}  # indexed once
    integrity(index)

    append(store, sid, ["and the worker queue?"])  # the session goes on after its digest
    assert index.refresh() == {"sessions_appended": 1, "messages_indexed": 1}
    assert [p["role"] for p in index.search("environment reach database", whole_units=True)[0]["parts"]] == [DIGEST_ROLE]
    integrity(index)

    digest(store, sid, "Worker queue settled: Celery on Redis db 2. Symptoms / other words: background jobs broker.")
    assert index.refresh() == {"digests_indexed": 1}
    second = index.search("background jobs broker", whole_units=True)[0]
    assert (second["session_id"], second["seq"]) == (sid, -5)
    assert {h["session_id"] for h in index.search("navbar")} == {other}
    integrity(index)

    assert RecallIndex(tmp_path / "recall.sqlite", store).refresh() == {}  # a new process: nothing to do

    store.delete(sid)  # the session goes, its digests with it
    assert index.refresh() == {"sessions_removed": 1}
    assert index._conn.execute("SELECT count(*) FROM msgs WHERE role = ?", (DIGEST_ROLE,)).fetchone() == (0,)
    assert index._conn.execute("SELECT count(*) FROM meta WHERE key LIKE 'digests:%'").fetchone() == (0,)
    integrity(index)


def test_a_session_reindexed_whole_keeps_its_digests(store: SessionStore) -> None:
    sid = add_session(store, ["keep this", "and this", "secret sk-123"])
    digest(store, sid, f"{FIX} {OTHER}")
    index = RecallIndex(None, store)
    assert index.refresh() == {"sessions_indexed": 1, "messages_indexed": 3, "digests_indexed": 1}
    rewrite_third(store, sid)
    assert index.refresh() == {"sessions_indexed": 1, "messages_indexed": 3, "digests_indexed": 1}
    rows = index._conn.execute("SELECT seq, role FROM msgs WHERE session_id = ? ORDER BY id", (sid,)).fetchall()
    assert rows == [(0, "user"), (1, "assistant"), (2, "user"), (-3, DIGEST_ROLE)]
    integrity(index)


def test_the_newest_digest_is_indexed_when_the_oldest_are_no_longer_kept(store: SessionStore) -> None:
    """``session.json`` keeps a session's newest :data:`MAX_DIGESTS`; the index, which goes by how
    far its digests reach, still takes each new one (and keeps those it holds)."""
    sid = add_session(store, ["first question about the queue", "answer about the queue"])
    index = RecallIndex(None, store)
    index.refresh()
    for n in range(MAX_DIGESTS + 3):
        append(store, sid, [f"message number {n}"])
        digest(store, sid, f"digest number {n} settled value v{n}")
        assert len(store.info(sid).digests) == min(n + 1, MAX_DIGESTS)
        assert index.refresh().get("digests_indexed") == 1, n
    newest = MAX_DIGESTS + 2
    assert index.search(f"v{newest}")[0]["role"] == DIGEST_ROLE
    assert index.search("v0")[0]["role"] == DIGEST_ROLE  # no longer in session.json, still indexed
    integrity(index)


def test_a_tainted_digest_is_indexed_under_its_own_role_and_still_a_unit_alone(store: SessionStore) -> None:
    """A digest of a part that read outside content: the role that makes recall quote it as drawn
    from file content (clio.recall.auto.ROLE_NAMES), and a unit by itself like any digest."""
    sid = add_session(store, ["why does staging fail?", "The values file says 5432.", "and the cache?", "Fine."])
    digest(store, sid, f"{FIX} {OTHER}", tainted=True)
    digest(store, add_session(store, ["name the queue", "Celery on Redis."]), "Queue: Celery on Redis db 2.")
    index = RecallIndex(None, store)
    index.refresh()
    hits = index.search("test environment cannot reach the database", whole_units=True)
    assert hits[0]["session_id"] == sid and [p["role"] for p in hits[0]["parts"]] == [DIGEST_FILES_ROLE]
    roles = {r for (r,) in index._conn.execute("SELECT role FROM msgs WHERE seq < 0")}
    assert roles == {DIGEST_ROLE, DIGEST_FILES_ROLE}
    integrity(index)


def test_a_dropped_digest_leaves_the_index_as_a_fresh_build_would_be(store: SessionStore, tmp_path: Path) -> None:
    """``/session digests drop``: the digest out of ``session.json`` first, then out of the index,
    its neighbours' context written again; no refresh (nor a new process) brings it back."""
    sid = add_session(store, ["staging deploy is broken", "Port was wrong, fixed values.yaml"])
    digest(store, sid, f"{FIX} {OTHER}")
    append(store, sid, ["and the worker queue?", "Celery on Redis db 2."])
    digest(store, sid, "Worker queue settled: Celery on Redis db 2. Symptoms / other words: background jobs broker.")
    append(store, sid, ["thanks"])
    index = RecallIndex(tmp_path / "recall.sqlite", store)
    index.refresh()
    assert index.search("test environment cannot reach the database", whole_units=True)[0]["role"] == DIGEST_ROLE
    s = store.open(sid)
    s.info.digests = [d for d in s.info.digests if d.through != 2]  # what the command does first
    s.save_meta()
    s.close()
    assert index.drop_digest(sid, 2) and not index.drop_digest(sid, 2)
    assert all(h["role"] != DIGEST_ROLE for h in index.search("test environment cannot reach the database", whole_units=True))
    assert index.search("background jobs broker", whole_units=True)[0]["seq"] == -4  # the other one stays
    integrity(index)
    assert index.refresh() == {} and RecallIndex(tmp_path / "recall.sqlite", store).refresh() == {}
    index.rebuild()
    index.refresh()
    assert [seq for (seq,) in index._conn.execute("SELECT seq FROM msgs WHERE seq < 0")] == [-4]
    integrity(index)


def test_a_digest_dropped_from_a_damaged_index_is_not_rebuilt_back(store: SessionStore, tmp_path: Path) -> None:
    sid = add_session(store, ["staging deploy is broken", "Port was wrong, fixed values.yaml"])
    digest(store, sid, f"{FIX} {OTHER}")
    index = RecallIndex(tmp_path / "recall.sqlite", store)
    index.refresh()
    s = store.open(sid)
    s.info.digests = []
    s.save_meta()
    s.close()
    index._conn.execute("DROP TABLE msgs")  # the file loses a table under a live index
    assert not index.drop_digest(sid, 2)  # rebuilt from the archives, which no longer hold it
    assert index.stats["rebuilds"] == 1
    assert [r for (r,) in index._conn.execute("SELECT role FROM msgs")] == ["user", "assistant"]
    integrity(index)


def test_session_json_keeps_digests_and_sets_malformed_ones_aside() -> None:
    info = SessionInfo("s1", digests=[Digest(4, "Port 6432 through PgBouncer.", 12.5), Digest(6, "Read from a file.", 13.0, True)])
    back = SessionInfo.from_dict(json.loads(json.dumps(info.to_dict())), None)
    assert back.digests == info.digests and [d.tainted for d in back.digests] == [False, True]
    older = SessionInfo.from_dict({"id": "s0", "digests": [{"through": 3, "text": "Written before the flag.", "at": 1.0}]}, None)
    assert older.digests[0].tainted  # no explicit "tainted": false reads as tainted
    assert "digests" not in SessionInfo("s2").to_dict()  # a session without any: session.json as before
    odd = SessionInfo.from_dict(
        {"id": "s3", "digests": [{"text": ""}, "x", {"through": 2}, {"text": "y" * 5000, "through": True}]}, None
    )
    assert [(d.through, len(d.text)) for d in odd.digests] == [(0, DIGEST_CHARS)]


def test_a_new_session_without_digests_writes_no_digest_field(store: SessionStore) -> None:
    s = store.create("m")
    s.append(make("user", "hello there"))
    s.close()
    data = json.loads((store.dir / s.id / "session.json").read_text(encoding="utf-8"))  # type: ignore[operator]
    assert "digests" not in data
