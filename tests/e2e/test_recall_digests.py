"""End to end, issue 32: a session's digest, written by its read-back, brings back in other words
what the session settled; through the installed clio and the fake server.

A one-shot run settles a fact; its consolidation child asks the model to read the session back,
and the reply's digest (what was settled, then how someone might ask about it in other words) is
kept in the session's ``session.json``, redacted. A later run's message worded only as the digest
words it gets a block quoting the digest, as the model's summary; without a digest the same
message gets nothing from that session.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.clio_run import RECALL_MARK, run_clio, wait_background
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import ScriptedModel, call, turn_requests

SETTLED = "the staging deploy can't connect to postgres; we decided to point it at PgBouncer on port 6432"
FIXED = "Done: deploy/staging/values.yaml now uses port 6432 (PgBouncer on pg-staging.internal)."
TOKEN = "ghp_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8"
DIGEST = (
    "Staging deploy used port 5432 but Postgres sits behind PgBouncer on pg-staging.internal port 6432; "
    "deploy/staging/values.yaml fixed. Symptoms / other words: test environment cannot reach its "
    f"database after a release. Deployed with {TOKEN}."
)
ASKED = "why can't the test environment reach its database after a release?"


def scripted(digest: str | None) -> ScriptedModel:
    m = ScriptedModel()
    m.on("we decided to point it at PgBouncer", Reply(text=FIXED))
    reply: dict[str, object] = {"entries": [], "pairs": []}
    if digest is not None:
        reply["digest"] = digest
    m.consolidation = Reply(text=json.dumps(reply))
    return m


@pytest.fixture
def server() -> Iterator[FakeServer]:
    s = FakeServer(scripted(DIGEST)).start()
    try:
        yield s
    finally:
        s.stop()


def run(server: FakeServer, project: Path, home: Path, text: str, *flags: str) -> None:
    r = run_clio(["--model", "fake-model", *flags, "-p", text], server=server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    wait_background(project)


def block_for(server: FakeServer, text: str) -> str:
    (first, *_) = turn_requests(server, text)
    users = [str(m.get("content")) for m in first["messages"] if m.get("role") == "user"]
    return users[-1].partition(RECALL_MARK)[2]


def test_a_digest_brings_back_what_was_settled_asked_in_other_words(server: FakeServer, project: Path, home: Path) -> None:
    run(server, project, home, SETTLED)
    (meta,) = [json.loads(p.read_text(encoding="utf-8")) for p in (project / ".clio" / "sessions").glob("*/session.json")]
    (kept,) = meta["digests"]
    assert kept["through"] == meta["consolidated"] == meta["message_count"]
    assert "port 6432" in kept["text"] and TOKEN not in kept["text"]  # redacted before it is kept
    shown = run_clio(["--resume", meta["id"], "-p", "/session show"], server=server, project=project, home=home)
    assert shown.returncode == 0 and "digest" in shown.stdout and "PgBouncer" in shown.stdout, shown.stdout

    run(server, project, home, ASKED)
    block = block_for(server, ASKED)
    assert "the session's digest (the model's summary):" in block, block
    assert "6432" in block and "test environment cannot reach" in block
    assert TOKEN not in json.dumps(server.chat_requests)

    # the user drops the digest (a wrong one, say): from then on nothing quotes it
    listed = run_clio(["--resume", meta["id"], "-p", "/session digests"], server=server, project=project, home=home)
    assert listed.returncode == 0 and listed.stdout.startswith("1. ") and "PgBouncer" in listed.stdout, listed.stdout
    kept_yet = run_clio(["--resume", meta["id"], "-p", "/session digests drop 1"], server=server, project=project, home=home)
    assert kept_yet.returncode == 4 and "Kept." in kept_yet.stdout  # one-shot: nobody said yes
    dropped = run_clio(["--resume", meta["id"], "--yes", "-p", "/session digests drop 1"], server=server, project=project, home=home)
    assert dropped.returncode == 0 and "Dropped digest 1" in dropped.stdout, dropped.stderr
    after = json.loads((project / ".clio" / "sessions" / meta["id"] / "session.json").read_text(encoding="utf-8"))
    assert "digests" not in after
    again = "so why can't the test environment reach its database after a release, again?"
    run(server, project, home, again)
    assert "the session's digest" not in block_for(server, again) and "test environment cannot reach" not in block_for(server, again)


def test_without_a_digest_the_same_question_gets_nothing_from_that_session(project: Path, home: Path) -> None:
    server = FakeServer(scripted(None)).start()
    try:
        run(server, project, home, SETTLED)
        (meta,) = [json.loads(p.read_text(encoding="utf-8")) for p in (project / ".clio" / "sessions").glob("*/session.json")]
        assert "digests" not in meta and meta["consolidated"] == meta["message_count"]  # read back, no digest
        run(server, project, home, ASKED)
        assert "6432" not in block_for(server, ASKED)
    finally:
        server.stop()


def test_a_digest_of_a_session_that_read_a_file_is_quoted_as_from_file_content(project: Path, home: Path) -> None:
    """In a project the user trusts, a read-back of a session that read a file keeps its digest,
    marked as the model's entries are; recall then quotes it as the model's summary drawn from
    file content, never as a clean one."""
    (project / "NOTES.md").write_text("staging: PgBouncer listens on 6432\n", encoding="utf-8")
    (project / ".clio").mkdir(exist_ok=True)
    (project / ".clio" / "config.yaml").write_text("approvals:\n  shell: allow\n", encoding="utf-8")  # what --trust trusts
    model = scripted(DIGEST)
    ask = "Read NOTES.md. " + SETTLED
    model.turns.clear()  # the plain SETTLED trigger would match first
    model.on(
        ask,
        Reply(tool_calls=[call("file_operations", operation="read_file", path="NOTES.md")]),
        Reply(text=FIXED),
    )
    server = FakeServer(model).start()
    try:
        run(server, project, home, ask, "--trust")
        (meta,) = [json.loads(p.read_text(encoding="utf-8")) for p in (project / ".clio" / "sessions").glob("*/session.json")]
        (kept,) = meta["digests"]
        assert kept["tainted"] is True and "port 6432" in kept["text"]
        run(server, project, home, ASKED)
        block = block_for(server, ASKED)
        assert "the session's digest (the model's summary, from file content):" in block, block
        assert "the session's digest (the model's summary):" not in block
    finally:
        server.stop()
