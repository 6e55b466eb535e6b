"""Cross-session recall: pure helpers and the SQLite FTS5 index over real session archives."""

from __future__ import annotations

import multiprocessing
import random
import sqlite3
from pathlib import Path

import pytest

from clio.messages import KIND_SUMMARY, make
from clio.recall import embedder as semantic
from clio.recall import query as recall
from clio.recall import terms
from clio.recall.index import RecallIndex
from clio.store.sessions import SessionStore
from tests.unit.conftest import add_session


@pytest.fixture(autouse=True)
def lexical_only(monkeypatch: pytest.MonkeyPatch) -> object:
    """These tests pin the bm25 side: the shared embedder is switched off (tests/unit/test_semantic.py
    covers vectors and hybrid ranking with the real model)."""
    monkeypatch.setenv(semantic.ENV_SWITCH, "0")
    semantic.reset_embedder()
    yield None
    semantic.reset_embedder()


# -- pure helpers ------------------------------------------------------------------------------


def test_tokenize_splits_like_unicode61() -> None:
    assert terms.fts_words("Fix snake_case in Café-Bar (v2.1)") == [
        "fix",
        "snake",
        "case",
        "in",
        "café",
        "bar",
        "v2",
        "1",
    ]


def test_query_terms_drop_stopwords_and_duplicates() -> None:
    assert recall.query_terms("What did we decide about the Postgres postgres migration?") == [
        "decide",
        "postgres",
        "migration",
    ]
    assert recall.query_terms("what was it") == ["what", "was", "it"]  # all stopwords: keep them
    assert recall.query_terms("  ...  ") == []


def test_build_fts_query_quotes_every_term() -> None:
    assert (
        recall.build_fts_query('use "NEAR" (x* OR -y)') == '"use" OR "near" OR "x" OR "y"'
    )  # 'or' is a stopword
    assert recall.build_fts_query("postgres db", prefix_min=5) == '("postgres" OR "postgres"*) OR "db"'
    assert recall.quote_term('a"b') == '"a""b"'


HOSTILE = [
    '"',
    'foo" OR 1',
    "(",
    ")",
    "NEAR(a b)",
    "*",
    "-x",
    "body:x",
    "AND OR NOT",
    "a AND",
    "^x",
    "'; DROP",
    "{}",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_built_queries_are_valid_fts5(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")
    conn.execute("INSERT INTO t VALUES ('foo near and or not x drop body')")
    q = recall.build_fts_query(text)
    if q:
        conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (q,)).fetchall()


def test_choose_terms_keeps_rarest_and_respects_budget() -> None:
    dfs = {"common": 900, "rare": 3, "missing": 0, "mid": 40}
    assert recall.choose_terms(dfs, budget=1000) == ["common", "rare", "mid"]  # original order
    assert recall.choose_terms(dfs, budget=100) == ["rare", "mid"]
    assert recall.choose_terms({"huge": 5000, "bigger": 9000}, budget=10) == ["huge"]
    assert recall.choose_terms({"nowhere": 0}) == []


def test_excerpt_centres_on_the_match() -> None:
    filler = "lorem ipsum dolor sit amet " * 40
    text = filler + "finally we decided to use PostgreSQL for the queue " + filler
    out = terms.excerpt(text, ["deciding", "postgresql"], width=120)
    assert "decided to use PostgreSQL" in out
    assert out.startswith("…") and out.endswith("…")
    assert len(out) <= 122
    assert terms.excerpt("short text", ["x"]) == "short text"
    assert terms.excerpt(filler, ["absent"], width=50).startswith("lorem")


def test_document_text_choices() -> None:
    assert recall.document_text(make("system", "You are clio")) is None
    assert recall.document_text(make("user", "   ")) is None
    assert recall.document_text(make("user", "old", meta={"kind": KIND_SUMMARY})) is None
    assert recall.document_text(make("user", "hello")) == "hello"
    big = recall.document_text(make("tool", "x" * 50_000, tool_call_id="c1"))
    assert big is not None and len(big) < recall.TOOL_RESULT_LIMIT + 10
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "file_operations", "arguments": '{"path": "a.py"}'},
    }
    text = recall.document_text(make("assistant", None, tool_calls=[call]))
    assert text == recall.CALL_MARK + "file a.py"  # the call in words, never its JSON


# -- the index over real session archives ----------------------------------------------------


def append(store: SessionStore, sid: str, texts: list[str]) -> None:
    s = store.open(sid)
    for text in texts:
        s.append(make("user", text))
    s.close()


TOPICS = [
    ("Style the navbar with flexbox", "I changed the CSS grid to flexbox in nav.css"),
    ("The unit tests fail on CI", "The fixture leaked a temp dir; I fixed conftest.py"),
    ("Add a logo to the README", "Added logo.png and a badge line"),
    ("Rename the helper module", "Moved helpers.py to utils/text.py and updated imports"),
    ("Bump the version", "Version is now 0.3.1 in pyproject.toml"),
    ("Profile the slow endpoint", "The N+1 query in views.py was the culprit; added select_related"),
]


def integrity(index: RecallIndex) -> None:
    """The incrementally kept index answers exactly like one built afresh from its messages."""
    conn = index._conn
    conn.execute("INSERT INTO docs(docs, rank) VALUES ('integrity-check', 0)")
    fresh = sqlite3.connect(":memory:")
    fresh.execute("CREATE VIRTUAL TABLE f USING fts5(body, ctx, tokenize='porter unicode61')")
    fresh.executemany(
        "INSERT INTO f(rowid, body, ctx) VALUES (?, ?, ?)", conn.execute("SELECT id, body, ctx FROM docview")
    )
    fresh.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'col')")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.check_v USING fts5vocab(main, docs, 'col')")
    counts = "SELECT term, col, doc, cnt FROM {} ORDER BY term, col"
    assert (
        conn.execute(counts.format("temp.check_v")).fetchall() == fresh.execute(counts.format("v")).fetchall()
    )
    terms = [t for (t,) in fresh.execute("SELECT DISTINCT term FROM v")]
    assert terms
    for term in terms:
        for col in ("body", "ctx"):
            q = f'{col}: "{term}"'
            want = {r for (r,) in fresh.execute("SELECT rowid FROM f WHERE f MATCH ?", (q,))}
            got = {r for (r,) in conn.execute("SELECT rowid FROM docs WHERE docs MATCH ?", (q,))}
            assert got == want, (term, col)
    stale = index.search("zzzunusedzzz")
    assert stale == []


def test_reworded_query_finds_older_decision(store: SessionStore, tmp_path: Path) -> None:
    for i in range(12):
        add_session(store, list(TOPICS[i % len(TOPICS)]))
    target = add_session(
        store,
        [
            "Which database should back the job queue?",
            "We decided to use PostgreSQL for the job queue: it gives us transactions.",
        ],
    )
    for i in range(12):
        add_session(store, list(TOPICS[(i + 3) % len(TOPICS)]))
    index = RecallIndex(tmp_path / "recall.sqlite", store)
    hits = index.search("deciding to use postgres")
    assert hits, "nothing found"
    top = hits[0]
    assert top["session_id"] == target
    assert top["role"] == "assistant" and top["seq"] == 1
    assert "PostgreSQL" in top["excerpt"]
    assert top["session_name"] == "Which database should back the job queue?"
    assert len(top["date"]) == 16 and top["date"][4] == "-" and top["date"][13] == ":"
    assert top["score"] > 0
    integrity(index)


def test_ranking_limits_and_exclusion(store: SessionStore, tmp_path: Path) -> None:
    ids = [add_session(store, [f"note {i}: we talked about caching layers", "ok"]) for i in range(8)]
    strong = add_session(store, ["caching layers: the redis caching layer caches rendered pages", "yes"])
    index = RecallIndex(None, store)
    hits = index.search("redis caching", max_sessions=3, max_results=10)
    assert hits[0]["session_id"] == strong
    assert len({h["session_id"] for h in hits}) <= 3
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert all(h["session_id"] != strong for h in index.search("redis caching", exclude_session=strong))
    assert len(index.search("caching", max_sessions=20, max_results=4)) == 4
    assert index.search("caching", max_results=0) == []
    assert {h["session_id"] for h in index.search("caching layers", max_sessions=50, max_results=50)} == {
        *ids,
        strong,
    }


def test_all_common_words_return_the_newest_rows_holding_every_word(store: SessionStore) -> None:
    old_both = add_session(store, ["the build broke the test run"])
    for i in range(6):
        add_session(store, [f"build step {i} finished"])
        add_session(store, [f"test case {i} passed"])
        add_session(store, [f"lemon {i}"])
    new_both = add_session(store, ["a test of the nightly build"])
    zebra = add_session(store, ["the build of the zebra crossing"])
    index = RecallIndex(None, store, embedder=None, postings_budget=5)
    hits = index.search("build test", max_sessions=10)  # both words in more than 5 rows
    assert [h["session_id"] for h in hits] == [new_both, old_both]  # every word, newest first
    assert all(h["score"] == 0 for h in hits)  # unscored: bm25 is what the budget avoids
    assert index.stats["common_queries"] == 1
    hits = index.search(
        "lemon build", max_sessions=50, max_results=50
    )  # no row holds both: the newest holding either
    assert hits[0]["session_id"] == zebra and len(hits) == 6 + 6 + 3
    assert index.stats["common_queries"] == 2
    hits = index.search("zebra build")  # one rare word: bm25 over it, the common one left out
    assert [h["session_id"] for h in hits] == [zebra] and hits[0]["score"] > 0
    assert index.stats["common_queries"] == 2


def test_many_common_words_need_only_the_first_four_together(store: SessionStore) -> None:
    words = ["alpha", "bravo", "charlie", "delta", "echo"]
    four = add_session(store, ["alpha bravo charlie delta"])  # the only row with the first four
    for i in range(3):
        for w in words:
            add_session(store, [f"{w} number {i}"])
    index = RecallIndex(None, store, embedder=None, postings_budget=2)
    hits = index.search(" ".join(words), max_sessions=50, max_results=50)
    assert hits[0]["session_id"] == four  # no row holds all five: AND of five would find nothing
    assert len(hits) == 1 and index.stats["common_queries"] == 1


def test_answer_found_through_neighbour_context(store: SessionStore) -> None:
    add_session(store, ["unrelated chatter about lunch", "sure"])
    sid = add_session(store, ["What port should the dev server listen on?", "Use 8123."])
    index = RecallIndex(None, store)
    hits = index.search("dev server port", max_results=5)
    assert (sid, 1) in {(h["session_id"], h["seq"]) for h in hits}  # 'Use 8123.' has none of the words


@pytest.mark.parametrize("text", HOSTILE)
def test_search_is_injection_safe(store: SessionStore, text: str) -> None:
    add_session(store, ["foo near and or not x drop body", "fine"])
    index = RecallIndex(None, store)
    assert isinstance(index.search(text), list)


def test_incremental_reindex_touches_only_changed_sessions(store: SessionStore, tmp_path: Path) -> None:
    ids = [add_session(store, [f"topic {i} alpha", f"reply {i} beta", f"more {i} gamma"]) for i in range(5)]
    db = tmp_path / "recall.sqlite"
    index = RecallIndex(db, store)
    assert index.refresh() == {"sessions_indexed": 5, "messages_indexed": 15}
    assert index.refresh() == {}
    before = dict(index._conn.execute("SELECT id, session_id FROM msgs").fetchall())

    append(store, ids[2], ["the zeppelin landed", "and took off again"])
    assert index.refresh() == {"sessions_appended": 1, "messages_indexed": 2}
    after = dict(index._conn.execute("SELECT id, session_id FROM msgs").fetchall())
    assert {k: v for k, v in after.items() if k in before} == before  # old rows untouched
    assert sorted(v for k, v in after.items() if k not in before) == [ids[2], ids[2]]
    assert index.counts() == {"sessions": 5, "messages": 17}
    assert index.search("zeppelin")[0]["session_id"] == ids[2]
    # the old last message now has the new one as its next-neighbour context
    assert (ids[2], 2) in {(h["session_id"], h["seq"]) for h in index.search("zeppelin", max_results=5)}
    integrity(index)

    s = store.open(ids[0])
    s.rename("renamed only")
    s.close()
    assert index.refresh() == {}  # a new name is not a reindex
    assert index.search("alpha 0")[0]["session_name"] == "renamed only"

    store.delete(ids[4])
    assert index.refresh() == {"sessions_removed": 1}
    assert index.counts() == {"sessions": 4, "messages": 14}
    integrity(index)

    reopened = RecallIndex(db, store)  # a new process sees the same index and has nothing to do
    assert reopened.refresh() == {}
    assert reopened.stats["rebuilds"] == 0


def rewrite_third(store: SessionStore, sid: str) -> None:
    """Rewrite the session's third message in place (a redaction applied afterwards)."""
    s = store.open(sid)
    msg = s.messages[2]
    msg["content"] = "secret [REDACTED]"
    s.replace(msg)
    s.info.updated += 1
    s.save_meta()
    s.close()


def test_rewritten_session_is_reindexed_whole(store: SessionStore) -> None:
    sid = add_session(store, ["keep this", "and this", "secret sk-123"])
    index = RecallIndex(None, store)
    index.refresh()
    rewrite_third(store, sid)
    assert index.refresh() == {"sessions_indexed": 1, "messages_indexed": 3}
    assert index.search("sk") == []
    assert index.search("redacted")[0]["seq"] == 2
    integrity(index)


def test_damaged_index_is_rebuilt(store: SessionStore, tmp_path: Path) -> None:
    sid = add_session(store, ["where do the fixtures live?", "in tests/fixtures"])
    db = tmp_path / "recall.sqlite"
    db.write_bytes(b"this is not a database" * 100)
    index = RecallIndex(db, store)
    assert index.stats["rebuilds"] == 1
    assert index.search("fixtures")[0]["session_id"] == sid
    index.close()

    conn = sqlite3.connect(db)  # an index from another schema version
    conn.execute("UPDATE meta SET value = 'old' WHERE key = 'schema'")
    conn.commit()
    conn.close()
    index = RecallIndex(db, store)
    assert index.stats["rebuilds"] == 1
    assert index.search("fixtures")[0]["session_id"] == sid
    index.close()

    conn = sqlite3.connect(db)  # tables of something else
    conn.execute("DROP TABLE docs")
    conn.commit()
    conn.close()
    index = RecallIndex(db, store)
    assert index.stats["rebuilds"] == 1
    assert index.search("fixtures")[0]["session_id"] == sid


def test_damage_found_mid_use_rebuilds(store: SessionStore, tmp_path: Path) -> None:
    sid = add_session(store, ["the deploy script lives in ops/", "noted"])
    db = tmp_path / "recall.sqlite"
    index = RecallIndex(db, store)
    index.refresh()
    index._conn.execute("DROP TABLE msgs")  # the file loses a table under a live index
    assert index.search("deploy script")[0]["session_id"] == sid
    assert index.stats["rebuilds"] == 1


def test_incognito_index_writes_nothing(store: SessionStore, tmp_path: Path) -> None:
    add_session(store, ["in memory only", "yes"])
    before = set(tmp_path.rglob("*"))
    index = RecallIndex(None, store)
    assert index.search("memory")[0]["seq"] == 0
    assert set(tmp_path.rglob("*")) == before


def _refresh_in_process(db: str, sessions_dir: str) -> None:
    RecallIndex(Path(db), SessionStore(Path(sessions_dir))).refresh()


def test_concurrent_processes_index_once(store: SessionStore, tmp_path: Path) -> None:
    for i in range(6):
        add_session(store, [f"shared topic {i}", "answer", "follow-up"])
    db = tmp_path / "recall.sqlite"
    assert store.dir is not None
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_refresh_in_process, args=(str(db), str(store.dir))) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    index = RecallIndex(db, store)
    assert index.refresh() == {}
    assert index.counts() == {"sessions": 6, "messages": 18}
    integrity(index)


def test_excerpt_prefers_the_window_with_most_distinct_terms() -> None:
    pad = "filler words here " * 30
    text = pad + "queue queue queue " + pad + "the queue runs on postgres now " + pad
    out = terms.excerpt(text, ["queue", "postgres"], width=100)
    assert "queue runs on postgres" in out
    huge = "error " * 20_000  # many hits stay linear
    assert terms.excerpt(huge, ["error"], width=60).startswith("error error")


def test_a_long_replys_excerpt_also_shows_its_details_away_from_the_words() -> None:
    talk = "that is how the paging behaves with the settings as they are now, nothing else to it. " * 6
    reply = (
        "The empty category pages come from the pagination cap of the index. " + talk
        + "**Fix** raise it: set `pagination.maxTotalHits` to 5000 in config/scout.php, then sync."
    )
    out = terms.excerpt(reply, ["category", "pages", "pagination"], width=300)
    assert "empty category pages" in out  # the words that found it
    assert "`pagination.maxTotalHits` to 5000" in out  # and the value, far from them
    assert " … " in out and len(out) <= 306
    only_words = terms.excerpt(reply.replace("`pagination.maxTotalHits` to 5000 in config/scout.php", "it up"),
                               ["category", "pages", "pagination"], width=300)  # fmt: skip
    assert " … " not in only_words and "empty category pages" in only_words  # no details: one window
    short = "The cap is `maxTotalHits`, " + talk[:150]  # a little longer than the width: the words alone
    assert " … " not in terms.excerpt(short, ["cap"], width=200)


# a long reply whose diagnosis repeats the question's words and is dense in timestamps, and whose
# conclusion (the value chosen) stands at its end (stop 100, from the seventy-fourth set)
DIAGNOSIS = (
    "The stock import fails when today's file lands after it starts. That happens on some nights and not "
    "on others, and nothing retries it. "
    + "The export on their side takes as long as it takes, and we only ever see the result. " * 2
    + "The mtimes of the last five exports were 02:44, 02:41, 02:24, 02:26 and 02:49 (runs 4411-4415). "
)
CONCLUDED = DIAGNOSIS + "Three ways out, and the simplest of them is to run later. " * 3 + (
    "With a margin after the latest export we've seen, the new time would be **03:05** Europe/London."
)


def test_a_replys_details_are_looked_for_in_its_conclusion_first() -> None:
    words = ["stock", "import", "fails", "file"]
    before = terms.excerpt(CONCLUDED, words, width=300)
    assert "02:44" in before and "03:05" not in before  # the diagnosis's timestamps took the details' share
    after = terms.excerpt(CONCLUDED, words, width=300, conclusion=True)
    assert "03:05" in after and "stock import fails" in after  # the value at the end, and the words
    assert len(after) <= 302 and " … " in after
    # no detail in the last third: cut as before
    plain = DIAGNOSIS + "Three ways out, and the simplest is to run later. " * 6
    assert terms.excerpt(plain, words, width=300, conclusion=True) == terms.excerpt(plain, words, width=300)
    # a text only a little longer than its room is cut around its words alone, either way
    short = CONCLUDED[-340:]
    assert terms.excerpt(short, words, width=300, conclusion=True) == terms.excerpt(short, words, width=300)


def test_a_window_a_little_short_of_its_text_is_placed_to_keep_the_details() -> None:
    # a reply a little longer than its room (one window), its value before the words that find it:
    # the words' window keeps the whole cluster and moves to hold the value too, rather than
    # leaving a third of the room before the cluster
    reply = (
        "Done in poll_controller: the 15 s reload now skips a tick while a dialog is open, so "
        "reception does not lose what it typed. Still plain polling, no cable. The next tick after the modal "
        "closes refreshes as usual and nothing else in the frame changes for anyone at the desk."
    )
    words = ["reception", "typed", "polling", "cable"]
    out = terms.excerpt(reply, words, width=200)
    assert out.startswith("Done in poll_controller") and "plain polling, no cable" in out
    assert len(out) <= 202 and " … " not in out
    # shorter, the details' window and the words' touch: one passage, no word dropped between them
    touching = terms.excerpt(reply, words, width=170)
    assert " … " not in touching and "the 15 s reload now skips a tick" in touching
    # without details before the words, a third of the room is still left before them
    plain = reply.replace("Done in poll_controller: the 15 s reload now skips", "It skips")
    assert terms.excerpt(plain, words, width=150).startswith("…")
    # the whole cluster is never given up for a detail out of its reach
    far = "see ABC-101 and ABC-102 and ABC-103 first. " + "x " * 60 + "reception typed polling cable, done."
    assert "reception typed polling cable" in terms.excerpt(far, words, width=120)


def test_an_identifiers_words_count_where_the_excerpt_is_placed() -> None:
    talk = "the ring lived in the slot folder before, which is why every swap signed everyone out. " * 4
    reply = (
        "The data protection keys were lost on every swap. " + talk
        + "services.AddDataProtection().PersistKeysToAzureBlobStorage(new Uri(blobBase + \"/ring.xml\")) "
        + talk.replace("ring", "thing")
    )
    out = terms.excerpt(reply, ["persisting", "protection", "data", "keys"], width=200)
    # persist, keys, data, protection: more of the question's words than the opening's three
    assert "ring.xml" in out and "data protection keys were lost" not in out


def test_an_excerpt_keeps_to_its_width_with_both_windows() -> None:
    # the details' window begins a little before its first detail, and each window may bring two
    # marks: the words' window gives way, so the excerpt (and the block it goes into) keeps its room
    rng = random.Random(7)
    vocab = ["port", "6543", "the", "staging", "db-01.internal", "`PGBOUNCER_POOL`", "listens", "ASH-655",
             "behind", "pool_size=40", "and", "then", "v2.3.1", "--max-conn", "we", "moved", "it"]  # fmt: skip
    for _ in range(300):
        text = " ".join(rng.choice(vocab) for _ in range(rng.randint(40, 300)))
        width = rng.randint(60, 600)
        assert len(terms.excerpt(text, ["staging", "port"], width)) <= width + 2


def test_quoted_code_does_not_count_as_the_answers_details() -> None:
    talk = "the upload goes through the storage helper as before and nothing changes for small files. " * 5
    reply = (
        "Uploads fail above 100 MB. " + talk
        + "```python\nMULTIPART_THRESHOLD = 100 * 1024 * 1024\nPART_SIZE = 16 * 1024 * 1024\n"
        + "MAX_PARTS = 10_000\nRETRY_DELAYS = (1, 5, 30)\n```\n" + talk
    )
    out = terms.excerpt(reply, ["uploads", "fail"], width=300)
    assert "MULTIPART_THRESHOLD" not in out and " … " not in out  # a file's constants: not the answer's value
    lots = ("port 5432 and host db-01.internal, " * 3000) + "uploads fail"
    assert "uploads fail" in terms.excerpt(lots, ["uploads"], width=300)  # linear in the details too


def test_a_term_matches_its_stem_or_a_longer_word_it_starts() -> None:
    match = terms.TermMatch(["deciding", "postgres", "db"])
    assert match("decided") == "deciding" and match("Decides") == "deciding"  # light stems agree
    assert match("PostgreSQL") == "postgres"  # starts with a term of four letters or more
    assert match("dbs") is None and match("db") == "db"  # a short term only as itself (or its stem)
    assert match("queue") is None


def test_a_word_ending_in_ss_and_its_plural_share_a_stem() -> None:
    """As the index's porter stemmer has it (SS stays SS): "address" and "addresses" are one word,
    so "what I2C address is the BME280 on?" holds the word of a unit that says "addresses"."""
    for one, many in (("address", "addresses"), ("class", "classes"), ("process", "processes"), ("access", "accesses")):
        assert terms.excerpt_stem(one) == terms.excerpt_stem(many) == one
    assert terms.excerpt_stem("passed") == terms.excerpt_stem("passes") == terms.excerpt_stem("pass")
    assert terms.excerpt_stem("ports") == terms.excerpt_stem("port") == "port"  # a plain plural still loses its s
    assert terms.TermMatch(["address"])("addresses") == "address"


def test_the_share_of_a_query_a_text_holds_is_the_best_texts() -> None:
    asked = ["staging", "database", "port", "outage"]
    texts = ["the staging database listens on 6543", "the port is taken", "Staging databases and ports"]
    assert terms.share_held(asked, texts) == 0.75  # the third: staging, database, port (not outage)
    assert terms.share_held(asked, ["nothing in common"]) == 0.0
    assert terms.share_held(asked, []) == 0.0 and terms.share_held([], texts) == 0.0
    assert terms.share_held(["port", "port"], ["port 80"]) == 1.0  # terms counted once


def test_unchanged_session_files_are_not_read_again(store: SessionStore, tmp_path: Path) -> None:
    """A refresh reads only the sessions whose session.json changed since they were indexed: in
    one process (the files' fingerprint) and in the next run's (the marks the index keeps)."""
    sid = add_session(store, ["first words", "second words"])
    for _ in range(3):
        add_session(store, ["other work", "done"])
    db = tmp_path / "recall.sqlite"
    index = RecallIndex(db, store)
    assert index.search("first")
    assert index.stats["sessions_read"] == 4  # the first refresh reads them all
    assert index.search("second")
    assert index.stats["sessions_read"] == 4 and index.stats["refreshes_skipped"] == 1
    append(store, sid, ["kangaroo sighting"])
    assert index.search("kangaroo")[0]["seq"] == 2
    assert index.stats["sessions_read"] == 5  # only the session that grew
    index.close()

    later = RecallIndex(db, store)  # the next run: nothing changed, nothing is read
    assert later.search("kangaroo")[0]["seq"] == 2
    assert later.stats["sessions_read"] == 0
    new = add_session(store, ["wombat burrow", "ok"])
    append(store, sid, ["platypus"])
    assert later.search("wombat")[0]["session_id"] == new
    assert later.search("platypus")[0]["session_id"] == sid
    assert later.stats["sessions_read"] == 2
    store.delete(new)
    assert later.search("wombat") == []  # a removed session leaves the index, marks and all
    assert later.stats["sessions_read"] == 2
    later.close()

    old = sqlite3.connect(db)  # an index made before the marks: read whole once, then marked
    old.execute("DROP TABLE files")
    old.close()
    again = RecallIndex(db, store)
    assert again.search("platypus") and again.stats["sessions_read"] == 4
    again.close()
    last = RecallIndex(db, store)
    assert last.search("platypus") and last.stats["sessions_read"] == 0


def test_holds_messages_tells_an_archive_from_a_first_session(store: SessionStore) -> None:
    """What the automatic recall asks before it opens the index: is there a session, other than
    the running one, with a message? Answered newest first, without listing every session."""
    assert not store.holds_messages()
    running = store.create("m")
    running.append(make("user", "hello"))
    running.close()
    assert not store.holds_messages(other_than=running.id)  # only the running session speaks
    assert store.holds_messages()
    empty = store.create("m")
    empty.close()
    assert not store.holds_messages(other_than=running.id)  # an empty session holds nothing
    sid = add_session(store, ["the port is 6543", "noted"])
    (store.dir / sid / "session.json").unlink()  # lost: its archive still holds its messages
    assert store.holds_messages(other_than=running.id)
