"""The shared store in-process against a real PostgreSQL server (testkit/pgserver.py, skipped with
the reason where none can start): two checkouts' stores, concurrent writers, an outage, a slow
server, redaction, authors, notes, the schema version."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clio.memory import ltm
from clio.safety.redact import Redactor
from clio.team import db as dbmod
from clio.team import search
from clio.team.db import Db, Unreachable
from clio.team.link import TeamLink
from clio.team.notes import SharedNoteStore
from clio.team.open import Ignored
from clio.team.store import TEAM_HEADER, SharedLtmStore
from testkit.pgserver import PgServer, why_not

PROJECT = "github.com/acme/shop"
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


class Checkout:
    def __init__(self, url: str, root: Path, author: str, project: str = PROJECT) -> None:
        self.root, self.said = root, []
        self.link = TeamLink(
            Db(url), project, root / ".clio", author=author, origin=f"test:{root.name}", notice=self.said.append,
            vectorize=search.entry_vector,
        )
        self.ignored = Ignored(root / "home" / "team.json")
        self.ltm = SharedLtmStore(
            self.link, root / ".clio" / "team", redact=Redactor("standard").text, ignored=self.ignored
        )
        self.notes = SharedNoteStore(self.link, root / ".clio" / "memory", redact=Redactor("standard").text)
        self.link.db.connect_in_background()

    def close(self) -> None:
        self.link.db.close()


@pytest.fixture
def checkouts(pg_url: str, tmp_path: Path) -> Iterator[tuple[Checkout, Checkout]]:
    a, b = Checkout(pg_url, tmp_path / "a", "alice@one"), Checkout(pg_url, tmp_path / "b", "bob@two")
    yield a, b
    a.close()
    b.close()


def test_an_entry_one_checkout_writes_is_read_by_the_other_and_a_duplicate_merges(
    checkouts: tuple[Checkout, Checkout],
) -> None:
    a, b = checkouts
    first, created = a.ltm.add("discovery", fact="the invoices table is partitioned by month in db/schema.sql")
    assert created
    assert [e.id for e in b.ltm.all()] == [first.id]
    again, created = b.ltm.add("discovery", fact="The invoices table is partitioned by month in db/schema.sql.")
    assert not created and again.id == first.id and again.confidence > first.confidence
    assert b.ltm.describe_author(first.id).startswith("alice@one, confirmed by you")
    other, created = b.ltm.add("discovery", fact="the invoices table is partitioned by week in db/schema.sql")
    assert created and other.id != first.id  # another fact (a replaced word): kept apart, as locally
    assert len(a.ltm.all()) == 2


def test_teammates_entries_get_their_own_heading_and_an_ignored_author_disappears(
    checkouts: tuple[Checkout, Checkout],
) -> None:
    a, b = checkouts
    a.ltm.add("rule", rule="run make lint before every commit in the shop repository")
    b.ltm.add("discovery", fact="the shop repository deploys from the release branch only")
    chosen = b.ltm.select("how do I commit and deploy the shop repository", [], 800, lambda t: len(t) // 4)
    block = b.ltm.render_block(chosen)
    own, _, team = block.partition(TEAM_HEADER)
    assert "deploys from the release branch" in own and "make lint" not in own
    assert "run make lint before every commit in the shop repository (from alice@one)" in team
    assert b.ignored.set("alice@one", True)
    assert [e.type for e in b.ltm.all()] == ["discovery"]
    assert "make lint" not in b.ltm.render_block(b.ltm.select("commit", [], 800, lambda t: len(t) // 4))


def test_nothing_leaves_unredacted_and_notes_are_shared(checkouts: tuple[Checkout, Checkout], pg_url: str) -> None:
    a, b = checkouts
    a.ltm.add("solution", error=f"push rejected with token {SECRET}", solution="use the deploy key instead")
    a.notes.store("ci", f"the CI token is {SECRET}, rotate monthly")
    rows = PgServer.query(pg_url, "SELECT body::text FROM clio_entries UNION ALL SELECT value FROM clio_notes")
    assert len(rows) == 2 and all(SECRET not in r[0] for r in rows), rows
    note = b.notes.retrieve("ci")
    assert note is not None and "rotate monthly" in note.value and SECRET not in note.value
    assert [n.key for n in b.notes.list()] == ["ci"]
    assert b.notes.delete("ci") and a.notes.retrieve("ci") is None


def test_an_unrelated_project_sees_nothing(pg_url: str, tmp_path: Path, checkouts: tuple[Checkout, Checkout]) -> None:
    a, _ = checkouts
    a.ltm.add("discovery", fact="payments retry three times with exponential backoff")
    a.notes.store("owner", "team payments")
    other = Checkout(pg_url, tmp_path / "c", "carol@three", project="github.com/acme/other")
    try:
        assert other.ltm.all() == [] and other.notes.list() == []
        assert other.ltm.select("payments retry backoff", [], 800, lambda t: len(t) // 4) == []
    finally:
        other.close()


def test_many_writers_at_once_lose_nothing(pg_url: str, tmp_path: Path) -> None:
    writers = [Checkout(pg_url, tmp_path / f"w{i}", f"dev{i}@m{i % 2}") for i in range(8)]
    errors: list[BaseException] = []

    def write(i: int, c: Checkout) -> None:
        try:
            for k in range(15):
                c.ltm.add("discovery", fact=f"service s{i}x{k} listens on port {9000 + i * 100 + k}")
                c.ltm.add("rule", rule="every service logs in JSON to stdout")  # one fact, 120 writes
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i, c)) for i, c in enumerate(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    try:
        assert not errors, errors
        entries = writers[0].ltm.all()
        assert sum(e.type == "discovery" for e in entries) == 8 * 15
        rules = [e for e in entries if e.type == "rule"]
        assert len(rules) == 1 and rules[0].confidence == 1.0
        confirmed = writers[0].ltm.meta[rules[0].id].confirmed_by
        assert len(confirmed) == 7  # every other writer confirmed the first one's rule
    finally:
        for w in writers:
            w.close()


def test_an_outage_queues_writes_and_delivers_them_exactly_once(tmp_path: Path) -> None:
    if why_not():
        pytest.skip(f"team memory needs PostgreSQL: {why_not()}")
    server = PgServer().start()
    try:
        url = server.new_database()
        a = Checkout(url, tmp_path / "a", "alice@one")
        a.ltm.add("discovery", fact="the cache warms up from the nightly dump")
        server.stop()
        entry, created = a.ltm.add("discovery", fact="the nightly dump lands in s3 bucket shop-dumps")
        a.ltm.pin(entry.id)
        a.notes.store("dump", "s3://shop-dumps")
        queued = sorted((tmp_path / "a" / ".clio" / "team" / "queue").glob("*.json"))
        assert created and len(queued) == 3
        assert len(a.said) == 1 and "unreachable" in a.said[0] and "local copy" in a.said[0]
        assert {e.id for e in a.ltm.all()} >= {entry.id}  # the local copy, with what was written offline
        keep = tmp_path / "replayed.json"
        shutil.copy(queued[0], keep)
        server.start()
        a.close()
        b = Checkout(url, tmp_path / "a", "alice@one")  # the next start of the same checkout
        assert b.link.db.ready(10)
        assert "reachable again; 3 queued change(s) delivered" in " ".join(b.said)
        shutil.copy(keep, queued[0])  # a crash after the commit, before the file went: sent again
        b.link._connected()
        rows = server.query(url, "SELECT id, pinned FROM clio_entries ORDER BY id")
        assert len(rows) == 2 and (entry.id, True) in rows
        assert server.query(url, "SELECT value FROM clio_notes") == [("s3://shop-dumps",)]
        assert not list((tmp_path / "a" / ".clio" / "team" / "queue").glob("*.json"))
        b.close()
    finally:
        server.close()


def test_a_slow_server_falls_back_to_the_local_copy_within_the_time_box(
    checkouts: tuple[Checkout, Checkout], pg_url: str
) -> None:
    import psycopg

    a, _ = checkouts
    a.ltm.add("discovery", fact="the search index is rebuilt by bin/reindex")
    with psycopg.connect(pg_url) as blocker:
        blocker.execute("LOCK TABLE clio_entries IN ACCESS EXCLUSIVE MODE")  # held: every read waits
        start = time.monotonic()
        found = a.ltm.select("rebuild the search index", [], 800, lambda t: len(t) // 4)
        took = time.monotonic() - start
        blocker.rollback()
    assert [e.fields["fact"] for e in found] == ["the search index is rebuilt by bin/reindex"]  # local copy
    assert took < dbmod.READ_MS / 1000 + 2.0, took
    assert any("unreachable" in s for s in a.said)


def test_the_schema_has_a_version_and_a_newer_one_is_refused(pg_url: str, tmp_path: Path) -> None:
    c = Checkout(pg_url, tmp_path / "a", "alice@one")
    assert c.link.db.ready(10)
    c.close()
    assert PgServer.query(pg_url, "SELECT max(version) FROM clio_schema") == [(dbmod.VERSION,)]
    PgServer.query(pg_url, "INSERT INTO clio_schema VALUES (%s)", dbmod.VERSION + 1)
    newer = Db(pg_url)
    with pytest.raises(Unreachable, match="newer clio"):
        newer.run(lambda conn: None)
    assert "newer clio" in (newer.down or "")


def test_bad_fields_are_refused_before_anything_is_sent(checkouts: tuple[Checkout, Checkout], pg_url: str) -> None:
    a, _ = checkouts
    assert a.link.db.ready(10)
    with pytest.raises(ltm.LtmError, match="needs 'fact'"):
        a.ltm.add("discovery", fact="  ")
    assert PgServer.query(pg_url, "SELECT count(*) FROM clio_entries") == [(0,)]
    assert not list((a.root / ".clio" / "team" / "queue").glob("*.json"))


def test_clio_mcp_serves_the_shared_store(pg_url: str, tmp_path: Path) -> None:
    import subprocess

    from clio.config import Settings
    from clio.mcp.memory_ops import open_memory
    from clio.paths import Paths

    ops = []
    for name in ("one", "two"):
        root = tmp_path / name
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        subprocess.run(["git", "-C", str(root), "remote", "add", "origin", "git@github.com:acme/shop.git"], check=True)
        settings = Settings(shared_memory=pg_url, team_author=f"{name}@host")
        ops.append(open_memory(Paths(root, root, tmp_path / f"{name}-home"), settings, read_only=False, no_ltm=False))
    assert isinstance(ops[0].ltm, SharedLtmStore)
    assert ops[0].remember("discovery", {"fact": "the admin panel lives under /staff, not /admin"}).startswith("stored")
    assert "the admin panel lives under /staff" in ops[1].recall("where is the admin panel")
    block = ops[1].memory_block("where is the admin panel")
    assert TEAM_HEADER in block and "(from one@host)" in block
    ops[1].note_write("owner", "the staff panel belongs to team ops")
    assert "team ops" in ops[0].note_read("owner")


def test_an_older_schema_is_migrated_once_by_the_first_clio_that_connects(pg_url: str, tmp_path: Path) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:  # a store made by a clio of schema 1
        conn.execute("CREATE TABLE clio_schema (version int NOT NULL)")
        for statement in dbmod.MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("INSERT INTO clio_schema VALUES (1)")
    starting = [Db(pg_url) for _ in range(4)]  # four clios start at once
    for d in starting:
        d.connect_in_background()
    assert all(d.ready(15) for d in starting), [d.down for d in starting]
    versions = PgServer.query(pg_url, "SELECT version FROM clio_schema ORDER BY version")
    assert versions == [(v,) for v in range(1, dbmod.VERSION + 1)]
    assert PgServer.query(pg_url, "SELECT count(*) FROM pg_indexes WHERE indexname = 'clio_entries_pinned'") == [(1,)]
    for d in starting:
        d.close()


def test_pgvector_finds_by_meaning_what_shares_no_word_with_the_task(pg_url: str, tmp_path: Path) -> None:
    c = Checkout(pg_url, tmp_path / "a", "alice@one")
    assert c.link.db.ready(10)
    if not c.link.db.has_vector:
        c.close()
        pytest.skip("this PostgreSQL server has no pgvector: meaning is scored in clio (the other tests)")
    try:
        target, _ = c.ltm.add("discovery", fact="database backups are copied to cold storage every night")
        for i in range(search.RECENT + 5):  # newer, so the target is not among the freshest
            c.ltm.add("discovery", fact=f"the button number {i} on the settings page is blue")
        assert PgServer.query(pg_url, "SELECT count(*) FROM clio_entries WHERE emb IS NULL") == [(0,)]
        task = "where do our postgres dumps go after the snapshot"
        qvec = search.task_vector(task)
        assert qvec is not None
        near = c.link.read(lambda conn: search.candidates(conn, PROJECT, task, [], qvec))
        plain = c.link.read(lambda conn: search.candidates(conn, PROJECT, task, [], None))
        assert target.id in {e.id for e, _ in near or []}
        assert target.id not in {e.id for e, _ in plain or []}
    finally:
        c.close()


def test_the_models_dedup_decision_applies_to_the_shared_pair(checkouts: tuple[Checkout, Checkout]) -> None:
    a, b = checkouts
    old, _ = a.ltm.add("discovery", fact="the staging database is refreshed from production every sunday")
    new, _ = b.ltm.add("discovery", fact="staging data gets copied over from prod each weekend")
    b.ltm.decide(old.id, new.id, "merge")
    kept = a.ltm.all()
    assert [e.id for e in kept] == [old.id]
    assert kept[0].fields["fact"] == "staging data gets copied over from prod each weekend"
    assert kept[0].history[-1]["fact"] == "the staging database is refreshed from production every sunday"
    with pytest.raises(ltm.LtmError, match="unknown decision"):
        a.ltm.decide(old.id, new.id, "maybe")
