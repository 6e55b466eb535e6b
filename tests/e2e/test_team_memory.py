"""Team memory (issue 26) through the installed clio, the fake chat server and a real PostgreSQL.

Two checkouts are clones of one repository whose origin is then spelled two ways (SSH in one,
HTTPS in the other), each with its own CLIO_HOME naming the shared store and the author. The
PostgreSQL server is started by testkit/pgserver.py on 127.0.0.1 (the tests skip, saying why,
where none can start: scripts/install-postgres.sh installs Debian's).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from clio.team.store import TEAM_HEADER
from testkit.clio_run import run_clio, run_parallel, system_text
from testkit.fakeserver import FakeServer, Reply
from testkit.mcp_client import call as mcp_call
from testkit.mcp_client import clio_mcp
from testkit.pgserver import PgServer, why_not
from testkit.scripted import ScriptedModel, call, turn_requests

FACT = "the payment webhooks are verified with the HMAC secret from vault path shop/webhooks"
TASK = "Why are payment webhooks rejected with 401? Check how the webhooks are verified."
WIDE = {"COLUMNS": "250"}


@dataclass
class Team:
    url: str
    alice: Path  # checkout 1 (origin spelled with SSH)
    bob: Path  # checkout 2 (origin spelled with HTTPS)
    alice_home: Path
    bob_home: Path

    def run(self, who: str, args: list[str], server: FakeServer | None, **kw: Any) -> subprocess.CompletedProcess[str]:
        project, home = (self.alice, self.alice_home) if who == "alice" else (self.bob, self.bob_home)
        return run_clio(args, server=server, project=project, home=home, **kw)


def _git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, capture_output=True)


def make_team(base: Path, url: str) -> Team:
    origin = base / "origin"
    _git("init", "-q", str(origin))
    (origin / "README.md").write_text("shop\n")
    _git("-C", str(origin), "add", ".")
    _git("-C", str(origin), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    homes = []
    for name, remote in (("alice", "git@github.com:acme/shop.git"), ("bob", "https://github.com/acme/shop")):
        _git("clone", "-q", str(origin), str(base / name))
        _git("-C", str(base / name), "remote", "set-url", "origin", remote)
        home = base / f"{name}-home"
        home.mkdir()
        (home / "config.yaml").write_text(f"shared_memory: {url}\nteam_author: {name}@{name}-laptop\n")
        homes.append(home)
    return Team(url, base / "alice", base / "bob", homes[0], homes[1])


@pytest.fixture
def team(pg_url: str, tmp_path: Path) -> Team:
    return make_team(tmp_path, pg_url)


def remember(server: FakeServer, trigger: str, *facts: str) -> None:
    model = server.responder if isinstance(server.responder, ScriptedModel) else ScriptedModel()
    model.on(
        trigger,
        Reply(tool_calls=[call("memory_operations", operation="add_discovery", fact=f, confidence=0.9) for f in facts]),
        Reply(text="Noted."),
    )
    server.responder = model


def test_a_discovery_made_in_one_checkout_reaches_the_others_first_request(team: Team, fake_server: FakeServer) -> None:
    remember(fake_server, "remember how webhooks work", FACT)
    done = team.run("alice", ["--yes", "-p", "remember how webhooks work"], fake_server)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Noted.\n"
    assert not (team.alice / ".clio" / "ltm.json").exists()  # the knowledge went to the team's store

    done = team.run("bob", ["-p", TASK], fake_server)
    assert done.returncode == 0, done.stderr
    first = turn_requests(fake_server, TASK)[0]
    system = system_text(first)
    head, _, team_block = system.partition(TEAM_HEADER)
    assert FACT not in head  # never among bob's own notes
    assert f"{FACT} (from alice@alice-laptop)" in team_block, system[-2000:]

    listing = team.run("bob", ["-p", "/memory list"], fake_server, env_extra=WIDE)
    assert listing.returncode == 0, listing.stderr
    assert "by alice@alice-laptop" in listing.stdout

    ignore = team.run("bob", ["-p", "/memory team ignore alice@alice-laptop"], fake_server)
    assert "alice@alice-laptop is ignored" in ignore.stdout
    again = team.run("bob", ["-p", TASK + " (again)"], fake_server)
    assert again.returncode == 0, again.stderr
    assert FACT not in system_text(turn_requests(fake_server, TASK + " (again)")[0])
    status = team.run("bob", ["-p", "/memory team"], fake_server)
    assert "alice@alice-laptop (ignored): 1 entry" in status.stdout, status.stdout
    assert "github.com/acme/shop" in status.stdout and "reachable" in status.stdout


def test_six_clio_processes_across_both_checkouts_write_at_once_and_every_entry_is_kept(
    team: Team, fake_server: FakeServer
) -> None:
    runs = []
    for n in range(6):
        facts = [f"worker {n} owns the queue q{n}-{k} on broker b{k}" for k in range(5)]
        remember(fake_server, f"session {n} findings", *facts, "deploys go through the release pipeline")
        who = "alice" if n % 2 else "bob"
        project, home = (team.alice, team.alice_home) if who == "alice" else (team.bob, team.bob_home)
        runs.append({"args": ["--yes", "-p", f"session {n} findings"], "server": fake_server,
                     "project": project, "home": home})  # fmt: skip
    results = run_parallel(*runs)
    assert [r.returncode for r in results] == [0] * 6, [r.stderr for r in results]
    rows = PgServer.query(team.url, "SELECT body->>'fact', author, confirmed_by FROM clio_entries")
    facts = sorted(r[0] for r in rows)
    assert len(facts) == 31 and len(set(facts)) == 31  # 30 distinct + the one all six found
    shared = next(r for r in rows if r[0] == "deploys go through the release pipeline")
    assert len({shared[1], *shared[2]}) == 2  # written by one author, confirmed by the other


@pytest.fixture
def own_server() -> Iterator[PgServer]:
    if why_not():
        pytest.skip(f"team memory needs PostgreSQL: {why_not()}")
    server = PgServer().start()
    try:
        yield server
    finally:
        server.close()


def test_the_database_stopped_mid_work_and_restarted_loses_nothing(
    own_server: PgServer, tmp_path: Path, fake_server: FakeServer
) -> None:
    team = make_team(tmp_path, own_server.new_database())
    remember(fake_server, "first finding", FACT)
    assert team.run("alice", ["--yes", "-p", "first finding"], fake_server).returncode == 0
    assert team.run("bob", ["-p", "hello"], fake_server).returncode == 0  # bob's local copy now has it

    model = fake_server.responder
    late = "the refunds job runs at 02:00 UTC from cron/refunds.yaml"

    def stop_then_answer(body: dict[str, Any]) -> Reply:
        if "second finding" in str(body["messages"][-1].get("content")) and own_server.running:
            own_server.stop()  # the database goes away while alice's clio is mid-turn
        return model(body)  # type: ignore[operator,no-any-return]

    remember(fake_server, "second finding", late)
    fake_server.responder = stop_then_answer
    mid = team.run("alice", ["--yes", "-p", "second finding"], fake_server)
    assert mid.returncode == 0, mid.stderr
    notices = [line for line in mid.stderr.splitlines() if "shared memory" in line]
    assert len(notices) == 1 and "unreachable" in notices[0] and "queued" in notices[0], mid.stderr
    queue = team.alice / ".clio" / "team" / "queue"
    assert len(list(queue.glob("*.json"))) == 1

    offline = team.run("bob", ["-p", TASK], fake_server)  # bob works from his local copy
    assert offline.returncode == 0, offline.stderr
    assert FACT in system_text(turn_requests(fake_server, TASK)[0])
    assert sum("unreachable" in line for line in offline.stderr.splitlines()) == 1

    own_server.start()
    back = team.run("alice", ["-p", "/memory stats"], fake_server)
    assert "1 queued change(s) delivered" in back.stderr, back.stderr
    assert not list(queue.glob("*.json"))
    again = team.run("alice", ["-p", "/memory stats"], fake_server)
    assert "delivered" not in again.stderr
    rows = PgServer.query(team.url, "SELECT body->>'fact' FROM clio_entries ORDER BY 1")
    assert rows == sorted([(FACT,), (late,)])  # each exactly once
    bob = team.run("bob", ["-p", "When does the refunds job run? see cron/refunds.yaml"], fake_server)
    assert late in system_text(fake_server.chat_requests[-1]), bob.stderr


def test_an_unrelated_repository_sees_nothing(team: Team, fake_server: FakeServer, tmp_path: Path) -> None:
    remember(fake_server, "remember how webhooks work", FACT)
    assert team.run("alice", ["--yes", "-p", "remember how webhooks work"], fake_server).returncode == 0
    other = tmp_path / "other"
    _git("init", "-q", str(other))
    _git("-C", str(other), "remote", "add", "origin", "git@github.com:acme/shop-admin.git")
    done = run_clio(["-p", TASK], server=fake_server, project=other, home=team.bob_home)
    assert done.returncode == 0, done.stderr
    system = system_text(fake_server.chat_requests[-1])
    assert TEAM_HEADER not in system and "HMAC" not in system
    assert PgServer.query(team.url, "SELECT count(*) FROM clio_entries WHERE project = 'github.com/acme/shop'") == [(1,)]

    lone = tmp_path / "lone"  # no remote at all: one line, and the project's own memory
    _git("init", "-q", str(lone))
    done = run_clio(["-p", TASK], server=fake_server, project=lone, home=team.bob_home)
    assert done.returncode == 0, done.stderr
    assert re.search(r"shared memory is off here: this project has no git remote", done.stderr), done.stderr
    assert "HMAC" not in system_text(fake_server.chat_requests[-1])


def test_a_database_that_never_answers_does_not_hold_up_the_request(
    tmp_path: Path, fake_server: FakeServer
) -> None:
    """A server that accepts the connection and then says nothing (a hung or overloaded host):
    the request goes out while clio's connection attempt is still waiting, with one line."""
    import socket
    import threading
    import time

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    events: dict[str, float] = {}

    def blackhole() -> None:
        conn, _ = listener.accept()
        events["accepted"] = time.monotonic()
        with conn:
            while conn.recv(4096):  # read the startup packet, answer nothing, until clio gives up
                pass
        events["given_up"] = time.monotonic()

    hole = threading.Thread(target=blackhole, daemon=True)
    hole.start()
    team = make_team(tmp_path, f"postgresql://clio@127.0.0.1:{port}/clio")

    def answer(body: dict[str, Any]) -> Reply:
        events.setdefault("request", time.monotonic())
        return Reply(text="ok")

    fake_server.responder = answer
    try:
        done = team.run("bob", ["-p", TASK], fake_server)
    finally:
        hole.join(15)  # clio gave up (connect_timeout) or exited: either closes the connection
        listener.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"
    lines = [line for line in done.stderr.splitlines() if "shared memory" in line]
    assert len(lines) == 1 and "unreachable" in lines[0] and "clio@" not in lines[0], done.stderr
    assert events["accepted"] < events["request"]
    assert events["request"] < events["given_up"]  # sent while clio still waited for the database


ALICE_RULE = "Releases are tagged from main only"
BOB_RULE = "Migrations are reviewed by two people"


def test_authorship_is_shown_right_in_a_teammates_checkout(team: Team, fake_server: FakeServer) -> None:
    """Issue 33 item 5: what alice typed is 'written by alice', never 'written by you', in bob's
    /memory list, /memory team and clio mcp; in alice's own checkout it is hers."""
    added = team.run("alice", ["-p", f"/memory add {ALICE_RULE}"], fake_server)
    assert added.returncode == 0, added.stderr

    mine = team.run("alice", ["-p", "/memory list"], fake_server, env_extra=WIDE)
    row = next(ln for ln in mine.stdout.splitlines() if ALICE_RULE in ln)
    assert "written by you" in row, mine.stdout

    listing = team.run("bob", ["-p", "/memory list"], fake_server, env_extra=WIDE)
    assert listing.returncode == 0, listing.stderr
    row = next(ln for ln in listing.stdout.splitlines() if ALICE_RULE in ln)
    assert "written by alice@alice-laptop" in row and "written by you" not in row, listing.stdout
    status = team.run("bob", ["-p", "/memory team"], fake_server)
    assert "alice@alice-laptop: 1 entry" in status.stdout and "(you)" not in status.stdout, status.stdout

    async def served() -> tuple[str, str]:
        async with clio_mcp(team.bob, team.bob_home) as s:
            return (await mcp_call(s, "list_entries"))[1], (await mcp_call(s, "recall", query="how are releases tagged"))[1]

    listed, recalled = anyio.run(served)
    line = next(ln for ln in listed.splitlines() if ALICE_RULE in ln)
    assert "written by alice@alice-laptop" in line and "by alice@alice-laptop" in line, listed
    assert "written by you" not in listed and "written by the user" not in line
    assert f"{ALICE_RULE} (from alice@alice-laptop)" in recalled, recalled


def test_turning_shared_memory_on_says_what_happens_to_local_entries_and_imports_them(
    team: Team, fake_server: FakeServer
) -> None:
    """Issue 33 item 5: bob's checkout had its own memory before sharing; one line says it is left
    out, once, and /memory team import brings it to the team's store without doubling what is there."""
    config = team.bob_home / "config.yaml"
    shared = config.read_text()
    config.write_text("team_author: bob@bob-laptop\n")  # no shared memory yet: bob's own memory
    for text in (BOB_RULE, ALICE_RULE):
        assert team.run("bob", ["-p", f"/memory add {text}"], fake_server).returncode == 0
    assert (team.bob / ".clio" / "ltm.json").exists()
    assert team.run("alice", ["-p", f"/memory add {ALICE_RULE}"], fake_server).returncode == 0
    config.write_text(shared)

    first = team.run("bob", ["-p", "/memory list"], fake_server, env_extra=WIDE)
    assert first.returncode == 0, first.stderr
    told = [ln for ln in first.stderr.splitlines() if "own entries (.clio/ltm.json) are left out" in ln]
    assert len(told) == 1 and "2 own entries" in told[0] and "/memory team import" in told[0], first.stderr
    assert BOB_RULE not in first.stdout  # left out while shared
    again = team.run("bob", ["-p", "/memory list"], fake_server, env_extra=WIDE)
    assert "are left out" not in again.stderr  # said once

    unasked = team.run("bob", ["-p", "/memory team import"], fake_server)
    assert "Nothing imported." in unasked.stdout, unasked.stdout + unasked.stderr
    done = team.run("bob", ["--yes", "-p", "/memory team import"], fake_server)
    assert done.returncode == 0, done.stderr
    assert "Imported 1 entry to the shared memory as bob@bob-laptop; 1 already there" in done.stdout, done.stdout

    seen = team.run("alice", ["-p", "/memory list"], fake_server, env_extra=WIDE)
    rows = [ln for ln in seen.stdout.splitlines() if BOB_RULE in ln]
    assert len(rows) == 1 and "written by bob@bob-laptop" in rows[0], seen.stdout
    assert sum(ALICE_RULE in ln for ln in seen.stdout.splitlines()) == 1  # deduplicated, not doubled
    status = team.run("alice", ["-p", "/memory team"], fake_server)
    assert "bob@bob-laptop: 1 entry" in status.stdout and "alice@alice-laptop (you): 1 entry" in status.stdout

    repeat = team.run("bob", ["--yes", "-p", "/memory team import"], fake_server)
    assert "Imported 0 entries to the shared memory as bob@bob-laptop; 2 already there" in repeat.stdout
