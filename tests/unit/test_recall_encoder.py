"""The automatic recall's encoder, in process and with its real helper process (issue 32).

Pure parts: chunks, the task/question tell, the decision with a cosine. The helper
(clio.recall.encoder_service) is started for real through the client, with the real model: one
helper per $CLIO_HOME however many clients ask, a socket only the user can open, no key in its
environment, cosines that rank a paraphrase above an unrelated text, vectors kept in the project's
``.clio/recall-vectors.sqlite``, and an exit when idle or when its socket is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clio import threads
from clio.recall import auto
from clio.recall import relevance as R
from clio.recall.encoder import CHUNK_CHARS, MAX_CHUNKS, chunks
from clio.recall.encoder_client import ENV_SWITCH, EncoderClient
from clio.recall.encoder_readiness import installed, socket_path
from testkit.helper_stand_in import stand_in_helper

ASKED = "session logins get dropped randomly in production"
FACT = (
    "The production Redis evicts with allkeys-lru, and sessions share that instance with the cache, so under "
    "memory pressure Django sessions get evicted."
)
ASK = "users keep getting logged out in prod"

needs_model = pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")


# -- pure --------------------------------------------------------------------------------------------
def test_chunks_cut_at_sentence_ends_within_the_limit() -> None:
    text = " ".join(f"Sentence number {i} says something about the deploy." for i in range(60))
    out = chunks(text)
    assert len(out) == MAX_CHUNKS
    assert all(len(c) <= CHUNK_CHARS for c in out)
    assert all(c.endswith(".") for c in out)  # whole sentences
    assert out[0].startswith("Sentence number 0 ")
    assert chunks("short fact.") == ["short fact."]
    assert chunks("   ") == []
    blob = "x" * (CHUNK_CHARS * 2 + 5)  # no sentence end at all: cut at the limit
    assert [len(c) for c in chunks(blob)] == [CHUNK_CHARS, CHUNK_CHARS, 5]


@pytest.mark.parametrize(
    "text",
    ["add a healthcheck endpoint", "Please write a unit test for slugify", "can you make the search case-insensitive",
     "let's rename the module", "ok, now set up dependabot", "send a push notification when a payment fails",
     "show the humidity with one decimal on the display", "export the admin users to CSV",
     "the FHIR mapper should also take the practitioner's prefix. add it with a spec",
     "invoices over 10k need a second approver\nplease add that check to the approval service",
     # asked politely: "please", "kindly", "just" ... after "can / could / would you"; "would you mind" + -ing
     "Could you please add a CSV export of a depot's shipments for a given day?", "can you pls write a migration for it",
     "Could you kindly add a flag for it?", "could you just bump react to 19?", "Would you mind adding a retry to the webhook sender?",
     "would you mind writing the changelog entry",
     "would you mind setting up dependabot?"],  # the consonant doubled before -ing
)
def test_orders_of_new_work_are_tasks(text: str) -> None:
    assert R.is_task(text)


@pytest.mark.parametrize(
    "text",
    ["users keep getting logged out in prod", "how do I build the web app?", "is it safe to upgrade postgres?",
     "who should review the VAT logic?", "the brokers reject our certificate", "adding more memory did not help",
     "show me how we deploy to staging", "log in fails with a 403 on staging",
     "why does the export fail on staging? add logging if you must", "the sync failed again. can you add a retry?",
     "the payment webhook returns 500. no idea why",
     "could you please remind me which port pgbouncer uses?", "would you mind explaining why we pinned numpy?",
     "can you just tell me which port it was?", "would you mind checking why the build is red?"],
)
def test_questions_and_problem_reports_are_not_tasks(text: str) -> None:
    assert not R.is_task(text)


def hit(cosine: float | None, *, score_words: int = 0, task: bool = False, asked: int = 4) -> auto.Hit:
    f = R.Features(asked=asked, matched=score_words, weighted=score_words / asked, rarest=1.0, cosine=cosine)
    return auto.Hit("s", "", "2026-01-01", "assistant", 3, FACT, f, R.score(f), False, task=task)


def test_a_cosine_over_the_threshold_quotes_a_unit_the_words_miss() -> None:
    assert not hit(None).relevant  # words alone: nothing shared
    assert not hit(R.COSINE_ASK - 0.01).relevant
    assert hit(R.COSINE_ASK).relevant
    assert not hit(0.95, task=True).relevant  # an order of new work: not by meaning,
    assert not hit(0.3, score_words=4, task=True).relevant  # nor by every one of its words
    assert hit(0.3, score_words=4, task=False).relevant  # which would quote it for a question
    assert hit(0.3, score_words=7, asked=10, task=False).relevant
    assert not hit(0.3, score_words=7, asked=10, task=True).relevant
    repeat = auto.Hit("s", "", "d", "user", 1, ASK, hit(0.9).features, 0.0, False, new_words=0)
    assert not repeat.relevant  # the same words again adds nothing, whatever the cosine


def test_the_words_do_not_quote_a_unit_whose_meaning_is_far_off() -> None:
    """Every word held, but the encoder finds the unit far from the message ("thanks, thats all"
    against a question holding "thats" and "all"): not quoted. Without an encoder the words decide."""
    floor = R.WORDS_FLOOR_SHARE * R.COSINE_ASK
    assert 0.2 < floor < R.COSINE_ASK
    assert hit(None, score_words=4).relevant
    assert hit(floor, score_words=4).relevant
    assert not hit(floor - 0.01, score_words=4).relevant
    assert not hit(0.12, score_words=4).relevant
    assert "cosine 0.12" in hit(0.12, score_words=4).why()
    # the floor follows the model's threshold: another encoder's scale keeps it
    wide = auto.Hit("s", "", "d", "assistant", 3, FACT, hit(0.3, score_words=4).features, 1.0, False, cosine_ask=0.6)
    assert not wide.relevant and wide.words_floor == pytest.approx(R.WORDS_FLOOR_SHARE * 0.6)


def test_choose_ranks_by_words_and_cosine_together() -> None:
    words, meaning, both, neither = hit(0.35, score_words=3), hit(0.6), hit(0.5, score_words=3), hit(0.3)
    assert auto.choose([neither, words, meaning, both]) == [both, words, meaning]


def test_the_switch_turns_the_client_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_SWITCH, "0")
    client = EncoderClient(tmp_path, tmp_path / ".clio")
    assert client.score(ASK, [[FACT]]) is None
    assert client.state.startswith("off") and not socket_path(tmp_path).exists()


def _helper_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A user's home and a project's ``.clio`` with an index file, the helper switch as a user has
    it (the suite runs with the helper off)."""
    monkeypatch.delenv(ENV_SWITCH, raising=False)
    home, clio_dir = tmp_path / "home", tmp_path / "proj" / ".clio"
    home.mkdir()
    clio_dir.mkdir(parents=True)
    (clio_dir / "recall.sqlite").touch()
    return home, clio_dir


def test_the_fill_is_asked_when_the_turn_ends_not_during_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search leaves the helper's background pass due; it is asked for once the turn has ended
    (the request and the answer have the machine to themselves), and once only. A stand-in
    helper on the real socket records what it is asked."""

    home, clio_dir = _helper_home(tmp_path, monkeypatch)
    asked: list[str] = []

    def answer(f: Any) -> None:
        req = json.loads(f.readline())
        asked.append(req["op"])
        if req["op"] == "score":
            line = f.readline()
            if not line:
                return  # dropped by the client (nothing to score)
            units = req.get("units") or json.loads(line)["units"]
            f.write(json.dumps({"cos": [0.5] * len(units)}).encode() + b"\n")
            f.flush()

    server = stand_in_helper(socket_path(home), answer)
    client = EncoderClient(home, clio_dir, timeout_s=5.0)
    try:
        assert client.score("which port?", [["the port is 6543"]]) == [0.5]
        pending = client.begin("and the host?")
        assert pending is not None
        pending.close()  # a search that found nothing to score
        time.sleep(0.2)
        assert asked == ["score", "score"]  # no fill while the turn goes on
        client.turn_ended()
        client.turn_ended()
        deadline = time.monotonic() + 5
        while "fill" not in asked and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        assert asked == ["score", "score", "fill"]
    finally:
        server.close()


def test_a_message_not_searched_still_leaves_the_fill_due_and_starts_a_helper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An order is not searched (clio.recall.auto_turn.plan); the helper still embeds what the
    turn archived once it ends, and one that does not run is started, as a search would have."""
    home, clio_dir = _helper_home(tmp_path, monkeypatch)
    asked: list[str] = []

    def answer(f: Any) -> None:
        line = f.readline()
        if line:
            asked.append(json.loads(line)["op"])

    server = stand_in_helper(socket_path(home), answer)
    client = EncoderClient(home, clio_dir, timeout_s=5.0)
    try:
        client.asked_nothing()
        time.sleep(0.2)
        assert asked == []  # nothing during the turn
        client.turn_ended()
        deadline = time.monotonic() + 5
        while "fill" not in asked and time.monotonic() < deadline:
            time.sleep(0.02)
        assert asked == ["fill"]
    finally:
        server.close()
    socket_path(home).unlink()
    started: list[bool] = []
    monkeypatch.setattr(EncoderClient, "start", lambda self: started.append(True))
    idle = EncoderClient(home, clio_dir, timeout_s=5.0)
    idle.asked_nothing()  # no helper listening: started, nothing due
    assert started == [True] and not idle._fill_due


def test_a_long_home_gets_a_private_short_socket(tmp_path: Path) -> None:
    home = tmp_path / ("h" * 120)
    path = socket_path(home)
    assert len(str(path)) < 100 and path.parent.name == f"clio-{os.getuid()}"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert socket_path(home) == path and socket_path(tmp_path / ("g" * 120)) != path


# -- the helper, for real ------------------------------------------------------------------------------
def ping(path: Path, timeout: float = 1.0) -> dict[str, object]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall(b'{"op": "ping"}\n')
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    out = json.loads(data)
    assert isinstance(out, dict)
    return out


def wait_ready(path: Path, seconds: float = 60.0) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            return int(str(ping(path)["pid"]))
        time.sleep(0.1)
    raise AssertionError(f"no helper answered at {path}")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with contextlib.suppress(OSError):  # a zombie of this test process counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    return False


@pytest.fixture
def helper_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    monkeypatch.delenv(ENV_SWITCH, raising=False)
    home, clio_dir = tmp_path / "home", tmp_path / "proj" / ".clio"
    home.mkdir()
    clio_dir.mkdir(parents=True)
    yield home, clio_dir
    path = socket_path(home)
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(str(ping(path)["pid"])), signal.SIGTERM)


@needs_model
def test_the_helper_starts_once_and_ranks_a_paraphrase_first(
    helper_home: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, clio_dir = helper_home
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-must-not-reach-the-helper")
    first, second = EncoderClient(home, clio_dir), EncoderClient(home, clio_dir)
    assert first.score(ASK, [[FACT]]) is None and first.state == "starting"  # never waits for it
    assert second.score(ASK, [[FACT]]) is None and second.state == "starting"  # one is starting: no second
    path = socket_path(home)
    pid = wait_ready(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    environ = Path(f"/proc/{pid}/environ").read_bytes()
    assert b"OPENAI_API_KEY" not in environ and b"sk-test" not in environ
    assert b"OPENBLAS_NUM_THREADS=1\0" in environ  # no BLAS pool spinning beside the next embedding

    client = EncoderClient(home, clio_dir, timeout_s=30.0)
    unrelated = "Tidy the navbar: flex layout with a 4px gap between the links."
    cos = client.score(ASK, [[unrelated], [ASKED, FACT]])
    assert cos is not None and client.state == "ready"
    assert cos[1] > cos[0] + 0.2, cos
    assert cos[1] >= R.COSINE_ASK > cos[0], cos
    with sqlite3.connect(clio_dir / "recall-vectors.sqlite") as db:
        assert db.execute("SELECT count(*) FROM vecs").fetchone()[0] == 3  # each text once
    assert int(str(ping(path)["pid"])) == pid  # still the one helper
    assert client.score(ASK, [[FACT, ASKED]]) == [cos[1]]  # from the stored vectors, the same cosine


@needs_model
def test_a_bad_request_gets_an_error_and_the_helper_serves_on(helper_home: tuple[Path, Path]) -> None:
    home, clio_dir = helper_home
    client = EncoderClient(home, clio_dir, timeout_s=30.0)
    threads.start(client.start, "test-warm-up").join(10)  # as the REPL's warm-up starts it: a thread that blocks SIGINT
    pid = wait_ready(socket_path(home))
    with open(f"/proc/{pid}/status", encoding="ascii") as f:  # the helper does not keep that mask
        assert next(line for line in f if line.startswith("SigBlk:")).split()[1].strip("0") == ""
    elsewhere = EncoderClient(home, clio_dir.parent / "not-clio", timeout_s=30.0)  # not a .clio folder
    assert elsewhere.score(ASK, [[FACT]]) is None and "not a project's vector cache" in elsewhere.state
    assert not (clio_dir.parent / "not-clio").exists()
    assert client.score(ASK, [[FACT]]) is not None and int(str(ping(socket_path(home))["pid"])) == pid


@needs_model
def test_fill_embeds_what_the_index_holds(helper_home: tuple[Path, Path]) -> None:
    home, clio_dir = helper_home
    with sqlite3.connect(clio_dir / "recall.sqlite") as db:
        db.execute("CREATE TABLE msgs(id INTEGER PRIMARY KEY, session_id TEXT, seq INTEGER, role TEXT, ts REAL, body TEXT)")
        db.executemany(
            "INSERT INTO msgs(session_id, seq, role, ts, body) VALUES ('s', ?, 'user', 0, ?)",
            [(i, f"message {i} about the billing service") for i in range(40)] + [(99, FACT)],
        )
    client = EncoderClient(home, clio_dir)
    client.start()  # with an index beside it, the helper starts by filling it
    wait_ready(socket_path(home))
    deadline = time.monotonic() + 60
    count = 0
    while time.monotonic() < deadline and count < 41:
        with contextlib.suppress(sqlite3.Error), sqlite3.connect(clio_dir / "recall-vectors.sqlite") as db:
            count = db.execute("SELECT count(*) FROM vecs").fetchone()[0]
        time.sleep(0.2)
    assert count == 41


@needs_model
def test_the_helper_leaves_when_idle_or_when_its_socket_is_gone(tmp_path: Path) -> None:
    idle_path, other_path = tmp_path / "idle.sock", tmp_path / "other.sock"
    env = {k: v for k, v in os.environ.items() if k != ENV_SWITCH}
    run = [sys.executable, "-m", "clio.recall.encoder_service", "--socket"]
    idle = subprocess.Popen([*run, str(idle_path), "--idle", "1"], env=env)
    other = subprocess.Popen([*run, str(other_path)], env=env)
    try:
        wait_ready(idle_path)
        wait_ready(other_path)
        other_path.unlink()
        assert other.wait(timeout=20) == 0  # its socket removed: it leaves
        assert idle.wait(timeout=30) == 0  # a second without a request: it leaves
        assert not idle_path.exists()  # and takes its socket with it
    finally:
        for p in (idle, other):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_a_helper_that_could_not_start_is_not_started_again_each_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_SWITCH, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    Path(str(socket_path(home)) + ".failed").write_text("reworded recall off: the model at /x fails its sha256 check\n")
    client = EncoderClient(home, tmp_path / ".clio")
    assert client.score(ASK, [[FACT]]) is None
    assert client.state == "off: reworded recall off: the model at /x fails its sha256 check"
    assert not Path(str(socket_path(home)) + ".lock").exists()  # nothing was started


@needs_model
def test_the_helper_names_the_messages_nearest_by_meaning(helper_home: tuple[Path, Path]) -> None:
    """A fact that shares no word with the question is found by meaning: the helper's first line
    names its index row, then the cosines of the units follow as before."""
    home, clio_dir = helper_home
    filler = [f"message {i} about the billing service" for i in range(30)]
    with sqlite3.connect(clio_dir / "recall.sqlite") as db:
        db.execute("CREATE TABLE msgs(id INTEGER PRIMARY KEY, session_id TEXT, seq INTEGER, role TEXT, ts REAL, body TEXT)")
        db.executemany("INSERT INTO msgs(session_id, seq, role, ts, body) VALUES ('s', ?, 'user', 0, ?)", enumerate(filler))
        fact_id = db.execute("INSERT INTO msgs(session_id, seq, role, ts, body) VALUES ('t', 0, 'assistant', 0, ?)", (FACT,)).lastrowid
    client = EncoderClient(home, clio_dir, timeout_s=30.0)
    client.start()
    wait_ready(socket_path(home))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pending = client.begin(ASK, near=3)
        assert pending is not None
        near = pending.near()
        cos = pending.finish(ASK, [[FACT]])
        if near:
            break
        time.sleep(0.3)  # the fill has not reached the archive yet
    assert near and near[0] == fact_id, (near, pending.cosines)
    assert cos is not None and abs(cos[0] - pending.cosines[fact_id]) < 0.02
    plain = client.begin(ASK)  # a client that asks for no neighbours gets the cosines alone
    assert plain is not None and plain.near() == [] and plain.finish(ASK, [[FACT]]) == cos


@needs_model
def test_a_model_that_keeps_no_fill_session_loads_one_only_for_a_big_fill(tmp_path: Path) -> None:
    """mpnet's declaration keeps no second session (its weights would be held twice): a turn's
    few messages are embedded on the query's session, a project's first big fill on a session of
    its own made for that pass and dropped after it. The same model (MiniLM, declared so) shows it."""
    import dataclasses

    from clio.recall.encoder import Encoder
    from clio.recall.encoder_cache import VectorCache
    from clio.recall.encoder_fill import SHARED_FILL
    from clio.recall.encoder_models import MINILM
    from clio.recall.encoder_service import Service

    model = dataclasses.replace(MINILM, own_fill_session=False)
    made = []
    service = Service(Encoder(threads=1, model=model), tmp_path / "s.sock", 60.0)
    session = service.fill.session
    service.fill.session = lambda: made.append(1) or session()  # type: ignore[method-assign]
    clio_dir = tmp_path / ".clio"
    clio_dir.mkdir()
    index = clio_dir / "recall.sqlite"

    def add(bodies: list[str]) -> None:
        with sqlite3.connect(index) as db:
            db.execute("CREATE TABLE IF NOT EXISTS msgs(id INTEGER PRIMARY KEY, session_id TEXT, seq INTEGER, role TEXT, ts REAL, body TEXT)")
            db.executemany("INSERT INTO msgs(session_id, seq, role, ts, body) VALUES ('s', 0, 'user', 0, ?)", [(b,) for b in bodies])

    cache = VectorCache(clio_dir / model.cache_name, model)
    stored = lambda: int(cache.conn.execute("SELECT count(*) FROM vecs").fetchone()[0])  # noqa: E731
    add([f"turn message {i} about the deploy" for i in range(SHARED_FILL // 2)])
    service.fill.fill(cache, index, None)
    assert stored() == SHARED_FILL // 2 and len(made) == 0  # a turn's worth: the query's session
    add([f"archived message {i} about the billing service" for i in range(3 * SHARED_FILL)])
    service.fill.fill(cache, index, None)
    assert stored() == SHARED_FILL // 2 + 3 * SHARED_FILL and len(made) == 1  # a big fill: its own, once
    cache.close()


@needs_model
def test_a_line_embedded_ahead_is_scored_without_embedding_it_again(helper_home: tuple[Path, Path]) -> None:
    """The REPL's line, sent while the user types, is embedded then; its score on Enter uses that
    vector (the same cosines as a query embedded on the spot) and is counted as served ahead."""
    home, clio_dir = helper_home
    client = EncoderClient(home, clio_dir, timeout_s=30.0)
    client.start()
    wait_ready(socket_path(home))
    fresh = client.score(ASK, [[ASKED, FACT]])
    assert fresh is not None and client.status()["ahead_used"] == 0
    other = "why do people lose their session on the live site?"
    client.embed_ahead(other)
    client.embed_ahead(other)  # the same line again: not sent twice
    deadline = time.monotonic() + 30
    while client.status()["ahead_kept"] < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client.status()["ahead_kept"] == 1
    ahead = client.score(other, [[ASKED, FACT]])
    assert client.status()["ahead_used"] == 1
    client.embed_ahead(ASK)  # the first query, now embedded ahead: the same cosine as on the spot
    while client.status()["ahead_kept"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client.score(ASK, [[ASKED, FACT]]) == fresh and client.status()["ahead_used"] == 2
    assert client.state == "ready, the message embedded while typed"
    client.score("and a question nobody typed ahead", [[FACT]])
    assert client.state == "ready"
    assert ahead is not None and ahead[0] > 0.3


def test_the_recall_sends_ahead_only_lines_it_would_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands, shell and memory lines, lines of a word or two and orders of new work (not
    searched) are not embedded ahead; a question is, once. A stand-in helper on the real socket
    records what it is sent."""
    import types

    from clio.app.auto_recall import AutoRecall
    from clio.config import Settings
    from clio.safety.redact import Redactor

    monkeypatch.delenv(ENV_SWITCH, raising=False)
    home, clio_dir = tmp_path / "home", tmp_path / "proj" / ".clio"
    home.mkdir()
    clio_dir.mkdir(parents=True)
    sent: list[dict[str, str]] = []
    server = stand_in_helper(socket_path(home), lambda f: sent.append(json.loads(f.readline())))
    archived = [False]
    services = types.SimpleNamespace(redactor=Redactor("standard"), recall=types.SimpleNamespace(has_archive=lambda: archived[0]))
    recall = AutoRecall(services, None, Settings(), EncoderClient(home, clio_dir))  # type: ignore[arg-type]
    recall.embed_ahead("a project's first session: nothing to recall yet")
    time.sleep(0.2)
    assert sent == []  # the helper is not asked in a project without history
    archived[0] = True
    token = "ghp_" + "k3Yq9ZtW2xLm8RvB4nPc7sDf1GhJ6aQe0UoI"
    for line in ("/context", "!ls -la", "# always use tabs", "ok thanks", "  where do rejected messages go?  ",
                 "where do rejected messages go?", f"why does {token} fail to push?",
                 "add a retry to the uploader please", "priya approved the DHL mapping PR, merging after lunch",
                 "add a retry to the uploader; what backoff did we agree on?"):  # fmt: skip
        recall.embed_ahead(line)
    deadline = time.monotonic() + 10
    while len(sent) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)
    server.close()
    # each line on a connection of its own, read on a thread of its own: in any order
    asked = sorted(m["q"] for m in sent if m.get("op") == "ahead")
    # an order that asks after it is searched by what it asks: that part is what is embedded ahead
    expected = ["where do rejected messages go?", Redactor("standard").text(f"why does {token} fail to push?"), "what backoff did we agree on?"]
    assert len(sent) == 3 and asked == sorted(expected)
    assert all(token not in q for q in asked)


@needs_model
def test_an_installed_model_whose_helper_fails_gives_way_to_minilm(
    helper_home: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """mpnet marked installed but its files gone (a damaged install): its helper fails to start and
    says why; the next run uses MiniLM (its own socket and cache) rather than no encoder, and
    `clio encoder` tells it. Naming mpnet explicitly keeps it (the user asked for that one)."""
    from clio.app.encoder_install import _forget_failure
    from clio.app.encoder_status import status
    from clio.recall.encoder_models import INSTALLED_MARK, MINILM, MPNET

    home, clio_dir = helper_home
    MPNET.folder(home).mkdir(parents=True)
    (MPNET.folder(home) / INSTALLED_MARK).write_text("{}")
    client = EncoderClient(home, clio_dir, timeout_s=30.0)
    assert client.model is MPNET and client.fallback == ""
    client.start()
    failed = Path(str(socket_path(home, MPNET)) + ".failed")
    deadline = time.monotonic() + 30
    while not failed.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "skeleton.onnx is missing or fails its sha256 check" in failed.read_text()
    again = EncoderClient(home, clio_dir, timeout_s=30.0)
    assert again.model is MINILM and again.cache.name == MINILM.cache_name
    assert again.fallback.startswith("mpnet's helper failed (reworded recall off: ")
    assert "but mpnet's helper failed" in status(home)
    named = EncoderClient(home, clio_dir, model=MPNET)  # as `clio encoder stop` asks each model's helper
    assert named.model is MPNET and named.fallback == "" and named.path() == socket_path(home, MPNET)
    assert named.cache.name == MPNET.cache_name
    again.start()
    wait_ready(socket_path(home, MINILM))
    assert again.score(ASK, [[ASKED, FACT]]) is not None and again.state == "ready"
    monkeypatch.setenv(ENV_SWITCH, "mpnet")
    assert EncoderClient(home, clio_dir).model is MPNET  # named: no silent substitute
    monkeypatch.delenv(ENV_SWITCH)
    _forget_failure(home, MPNET)  # what a new install does
    assert EncoderClient(home, clio_dir).model is MPNET


# -- a project's first fill under way: what fits in time, the rest to the words ----------------------


@needs_model
def test_a_texts_vectors_not_reached_before_the_deadline_are_none_and_kept_for_later(tmp_path: Path) -> None:
    """A score during a project's first fill embeds the candidates the fill has not reached, a
    few chunks at a time, only while its deadline has not passed; what it did not reach is None
    (the words decide that unit) and is embedded by a later look with time to spare."""
    from clio.recall.encoder import Encoder
    from clio.recall.encoder_cache import VectorCache

    (tmp_path / ".clio").mkdir()
    cache = VectorCache(tmp_path / ".clio" / "recall-vectors.sqlite")
    encoder = Encoder(threads=1)
    texts = [ASKED, FACT, "Tidy the navbar: flex layout with a 4px gap between the links."]
    assert cache.vectors(encoder, texts[:1])[0] is not None  # the fill had reached this one
    late = cache.vectors(encoder, texts, deadline=time.monotonic() - 1.0)
    assert late[0] is not None and late[1] is None and late[2] is None
    soon = cache.vectors(encoder, [*texts, FACT], deadline=time.monotonic() + 30.0)
    assert all(v is not None for v in soon)
    assert (soon[1] == soon[3]).all()  # the same text once, the same vectors
    with sqlite3.connect(tmp_path / ".clio" / "recall-vectors.sqlite") as db:
        assert db.execute("SELECT count(*) FROM vecs").fetchone()[0] == 3
    cache.close()


@needs_model
def test_a_score_out_of_time_names_no_cosine_for_a_unit_it_could_not_embed(tmp_path: Path) -> None:
    from clio.recall.encoder import Encoder
    from clio.recall.encoder_cache import VectorCache
    from clio.recall.encoder_service import Service

    (tmp_path / ".clio").mkdir()
    encoder = Encoder(threads=1)
    service = Service(encoder, tmp_path / "encoder.sock", idle_s=60.0)
    cache = VectorCache(tmp_path / ".clio" / "recall-vectors.sqlite")
    cache.vectors(encoder, [FACT])  # embedded by the fill already
    q = encoder.embed([ASK])[0]
    cos = service.score(
        cache, q, [["Tidy the navbar: flex layout."], [ASKED, FACT]], deadline=time.monotonic() - 1.0
    )
    assert cos[0] is None  # not reached: the words decide it
    assert cos[1] == service.score(cache, q, [[FACT]])[0]  # by the vector it had (its answer's), not dropped
    assert (
        service.score(cache, q, [["Tidy the navbar: flex layout."]])[0] is not None
    )  # no deadline: embedded
    cache.close()


def test_the_client_takes_the_units_scored_in_time_and_says_the_rest_were_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_SWITCH, raising=False)
    home = tmp_path / "home"
    home.mkdir()

    def answer(f: Any) -> None:
        f.readline()  # the query
        f.readline()  # the units
        f.write(json.dumps({"cos": [0.61, None], "ahead": False}).encode() + b"\n")
        f.flush()

    server = stand_in_helper(socket_path(home), answer)
    try:
        client = EncoderClient(home, tmp_path / ".clio", timeout_s=5.0)
        assert client.score(ASK, [[FACT], ["Tidy the navbar."]]) == [0.61, None]
        assert client.state.startswith("ready (1 of 2 units scored in time")
    finally:
        server.close()
    results = [
        {"session_id": "s", "seq": 1, "role": "assistant", "text": FACT, "date": "2026-11-01 10:00"},
        {
            "session_id": "s",
            "seq": 7,
            "role": "assistant",
            "text": "Tidy the navbar.",
            "date": "2026-11-01 10:00",
        },
    ]
    hits = auto.score_hits(
        ASK, results, None, lambda words: ({w: 1 for w in words}, 100), lambda q, u: [0.61, None]
    )
    assert hits[0].cosine == 0.61 and hits[0].relevant
    assert hits[1].cosine is None and "cosine" not in hits[1].why()  # the words alone decide it


@needs_model
def test_the_fill_embeds_texts_of_a_length_together(tmp_path: Path) -> None:
    """A batch's chunks are padded to its longest, so the fill embeds a page's texts by length:
    short messages with short ones, long tool results with long ones (in the index's order the
    mix padded 2.4x the tokens it embedded, and a first fill took twice as long)."""
    from clio.recall.encoder import Encoder
    from clio.recall.encoder_cache import VectorCache

    class Recording(Encoder):
        batches: list[list[int]] = []

        def embed(self, texts: list[str]) -> Any:
            self.batches.append([len(t) for t in texts])
            return super().embed(texts)

    clio_dir = tmp_path / ".clio"
    clio_dir.mkdir()
    bodies = [("ok " * (k % 5 + 1)) + f"short {k}" if k % 2 else f"long {k}: " + "the worker log says it retried. " * 11 for k in range(40)]
    with sqlite3.connect(clio_dir / "recall.sqlite") as db:
        db.execute("CREATE TABLE msgs(id INTEGER PRIMARY KEY, session_id TEXT, seq INTEGER, role TEXT, ts REAL, body TEXT)")
        db.executemany("INSERT INTO msgs(session_id, seq, role, ts, body) VALUES ('s', ?, 'user', 0, ?)", list(enumerate(bodies)))
    cache = VectorCache(clio_dir / "recall-vectors.sqlite")
    encoder = Recording(threads=1)
    assert cache.fill_from_index(clio_dir / "recall.sqlite", encoder, 1000, lambda: False) == 40
    firsts = [batch[0] for batch in encoder.batches]
    assert firsts == sorted(firsts)  # the page's texts in order of length
    mixed = [b for b in encoder.batches if min(b) < 100 < max(b)]
    assert len(mixed) <= 1, encoder.batches  # only where the short ones end and the long ones begin
    cache.close()


@needs_model
def test_memory_given_back_changes_no_vector() -> None:
    """The arena's free memory given back (after a fill pass, :meth:`Encoder.release`) changes no
    vector: a query's after it reads as before, to the bit, alone and in a batch."""
    from clio.recall.encoder import BATCH, Encoder

    encoder = Encoder(threads=1)
    texts = [f"the worker {k} retried the upload " * (k % 7 + 1) for k in range(BATCH * 2 + 3)]
    alone, batched = encoder.embed(texts[:1]), encoder.embed(texts)
    encoder.release()
    assert (encoder.embed(texts[:1]) == alone).all()
    encoder.release()
    assert (encoder.embed(texts) == batched).all()


@needs_model
def test_the_fill_gives_its_memory_back_after_its_first_pass_and_each_big_one(tmp_path: Path) -> None:
    """The helper's fill gives back what the model sessions took (their arenas, then glibc's
    heaps) after its first pass, whatever its size (loading the sessions left memory there), and
    after each big pass (more than a turn's messages: a project's first fill): the query's
    session and the fill's own (MiniLM keeps one) each release their arena. Another turn's pass
    gives nothing back: what it took is small and the next query would only take it again."""
    import threading

    from clio.recall.encoder import Encoder
    from clio.recall.encoder_cache import filled
    from clio.recall.encoder_fill import SHARED_FILL, Filler
    from clio.recall.encoder_models import MINILM

    released: list[int] = []

    class Counting(Encoder):
        def release(self) -> None:
            released.append(id(self))
            super().release()

    query = Counting(threads=1)
    passes = threading.Semaphore(0)
    filler = Filler(query, None, threading.Event(), threading.Lock(), lambda *a: None, passes.release)
    own = Counting(threads=1)
    filler.session = lambda: own  # type: ignore[method-assign]  # MiniLM's fill session, counted
    clio_dir = tmp_path / ".clio"
    clio_dir.mkdir()
    index = clio_dir / "recall.sqlite"
    with sqlite3.connect(index) as db:
        db.execute("CREATE TABLE msgs(id INTEGER PRIMARY KEY, session_id TEXT, seq INTEGER, role TEXT, ts REAL, body TEXT)")

    def one_pass(sid: str, n: int) -> None:
        with sqlite3.connect(index) as db:
            db.executemany("INSERT INTO msgs(session_id, seq, role, ts, body) VALUES (?, ?, 'user', 0, ?)",
                           [(sid, k, f"{sid}: message {k} about the billing export") for k in range(n)])  # fmt: skip
        filler.put(clio_dir / MINILM.cache_name, index)
        assert passes.acquire(timeout=60)
        assert filled(clio_dir)  # the pass embedded the index's messages

    threading.Thread(target=filler.run, daemon=True).start()
    one_pass("first", 3)  # a small first pass
    assert sorted(released) == sorted([id(query), id(own)])
    one_pass("big", SHARED_FILL + 8)
    assert len(released) == 4
    one_pass("turn", 3)
    assert len(released) == 4


@needs_model
def test_a_group_of_chunks_is_started_only_if_it_would_end_before_the_deadline(tmp_path: Path) -> None:
    """The helper's answer must reach clio within its 250 ms: a group is not begun when the one
    before took longer than the time left (here each group takes 60 ms, 40 ms are left)."""
    from clio.recall.encoder import Encoder
    from clio.recall.encoder_cache import VectorCache

    class Slow(Encoder):
        def embed(self, texts: list[str]) -> Any:
            time.sleep(0.06)
            return super().embed(texts)

    (tmp_path / ".clio").mkdir()
    cache = VectorCache(tmp_path / ".clio" / "recall-vectors.sqlite")
    texts = [ASKED, FACT, "Tidy the navbar: flex layout with a 4px gap between the links."]  # one chunk each: groups of two, then one
    got = cache.vectors(Slow(threads=1), texts, deadline=time.monotonic() + 0.1)
    assert got[0] is not None and got[1] is not None  # the first group began in time
    assert got[2] is None  # the second would have ended past the deadline
    cache.close()


@needs_model
def test_a_long_run_starts_the_helper_again_once_it_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A REPL open for hours outlives the helper's idle time: the helper leaves, and the REPL's
    next message (or the line the user is typing) starts it again, as the first did. (Before, a
    run started the helper once at most: every message after the helper left was words only
    for the rest of the session.)"""
    import clio.recall.encoder_client as C

    monkeypatch.delenv(ENV_SWITCH, raising=False)
    monkeypatch.setattr(C, "START_AGAIN_S", 0.0, raising=False)  # a minute in use: not waited for here
    home, clio_dir = tmp_path / "home", tmp_path / "proj" / ".clio"
    home.mkdir()
    clio_dir.mkdir(parents=True)
    client = EncoderClient(home, clio_dir, timeout_s=5.0)
    client.warm_up()  # the REPL's prompt is up: the helper starts
    first = wait_ready(socket_path(home))
    os.kill(first, signal.SIGTERM)  # it left (its idle time)
    deadline = time.monotonic() + 30
    while not gone(first) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(first)
    assert client.score(ASK, [[FACT]]) is None and client.state == "starting"  # this message: words
    second = wait_ready(socket_path(home))
    assert second != first
    cos = client.score(ASK, [[FACT]])
    assert cos is not None and cos[0] is not None, client.state
    os.kill(second, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while not gone(second) and time.monotonic() < deadline:
        time.sleep(0.05)
    client.embed_ahead("what did we decide about the session store")  # typing, after it left again
    third = wait_ready(socket_path(home))
    assert third not in (first, second)
    os.kill(third, signal.SIGTERM)


def test_a_paused_line_is_recalled_by_the_helper_once_for_its_line_task_and_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The REPL's line after a pause (AutoRecall.typed): what would be searched is sent as a whole
    recall (op "recall", redacted, with what the request will carry left out), once while the line,
    the task and the window stay as they were; commands and orders are not sent."""
    import types

    from clio.app.auto_recall import AutoRecall
    from clio.config import Settings
    from clio.safety.redact import Redactor

    monkeypatch.delenv(ENV_SWITCH, raising=False)
    home, clio_dir = tmp_path / "home", tmp_path / "proj" / ".clio"
    home.mkdir()
    clio_dir.mkdir(parents=True)
    (clio_dir / "recall.sqlite").write_bytes(b"")  # the project's index (the helper opens it, not this test)
    sent: list[dict[str, Any]] = []
    server = stand_in_helper(socket_path(home), lambda f: sent.append(json.loads(f.readline())))
    session = types.SimpleNamespace(id="s1", messages=[object()] * 4)
    carried = {"s1": {2, 3}}
    services = types.SimpleNamespace(
        redactor=Redactor("standard"), session=session,
        recall=types.SimpleNamespace(has_archive=lambda: True, carried=lambda quoted=True: carried),
    )  # fmt: skip
    recall = AutoRecall(services, None, Settings(), EncoderClient(home, clio_dir))  # type: ignore[arg-type]
    token = "ghp_" + "k3Yq9ZtW2xLm8RvB4nPc7sDf1GhJ6aQe0UoI"

    def wait(n: int) -> None:
        deadline = time.monotonic() + 10
        while len(sent) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)

    try:
        for line in ("/context", "!ls -la", "ok thanks", "add a retry to the uploader please"):
            recall.typed(line, "")
        recall.typed(f"why does {token} fail to push?", "")
        wait(1)
        assert len(sent) == 1 and sent[0]["op"] == "recall" and token not in sent[0]["q"]
        assert sent[0]["skip"] == {"s1": [2, 3, 4]} and sent[0]["since"] == 2  # the window, and the message itself
        recall.typed(f"why does {token} fail to push?", "")  # the same line, task and window: not again
        wait(1)
        assert len(sent) == 1
        recall.typed(f"why does {token} fail to push?", "the release pipeline")  # another task
        carried["s1"] = {3}  # a trim meanwhile
        recall.typed(f"why does {token} fail to push?", "the release pipeline")
        wait(3)
        assert [m["task"] for m in sent] == ["", "the release pipeline", "the release pipeline"]
        # each on a connection of its own, read on a thread of its own: in either order
        assert sorted(m["skip"]["s1"] for m in sent[1:]) == [[2, 3, 4], [3, 4]]
    finally:
        server.close()
