"""A one-shot run's automatic recall done ahead by the encoder helper (clio.recall.encoder_recall),
with the real helper process and the real model: the block it hands back is the one the run would
have made in process (the same units, the same text), small talk is skipped there as here, the
room is the run's, and what the helper cannot vouch for (another clio version, a file that is no
project's index, a token it does not know) gives no block, so the run recalls in process."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from clio.recall import auto_turn, hits_wire, model_judge
from clio.recall.encoder_cache import filled
from clio.recall.encoder_client import ENV_SWITCH, EncoderClient
from clio.recall.encoder_readiness import installed
from clio.recall.index import RecallIndex
from clio.recall.query import best_first
from clio.recall.tool_search import search_with_meaning
from clio.store.sessions import SessionStore
from testkit.clio_run import write_archive
from testkit.encoder_helper import wait_for_judge

pytestmark = pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")

ASKED = "session logins get dropped randomly in production"
FACT = (
    "The production Redis evicts with allkeys-lru, and sessions share that instance with the cache, so under "
    "memory pressure Django sessions get evicted. Move sessions to the database backend."
)
UPLOAD_Q = "How do we handle file uploads larger than 100 MB?"
UPLOAD_A = "Anything over 100 MB goes through S3 multipart in 8 MB parts (api/uploads.py); smaller files are a single PUT."
OTHER = [
    ("Tidy the navbar css: flex layout and a 4px gap between the links", "Done: the navbar is a flex row with a 4px gap."),
    ("add a CSV export to the invoices page", "Added an Export CSV button that streams the invoices."),
    ("ok that worked, thanks", "Glad it works."),
]
CURRENT = "20991231-000000-cccc"  # the run's own new session (left out of its recall)


def exchange(q: str, a: str, ts: float) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": q, "meta": {"seq": 0, "ts": ts}},
        {"role": "assistant", "content": a, "meta": {"seq": 1, "ts": ts + 1}},
    ]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path, EncoderClient]]:
    monkeypatch.delenv(ENV_SWITCH, raising=False)
    home, clio_dir = tmp_path / "home", tmp_path / "proj" / ".clio"
    home.mkdir()
    root = clio_dir / "sessions"
    pairs = [(ASKED, FACT), (UPLOAD_Q, UPLOAD_A), *OTHER]
    for k, (q, a) in enumerate(pairs):
        ts = 1_763_000_000.0 + k * 86400
        write_archive(root, f"2025{k:04d}-000000-{k:04x}", exchange(q, a, ts), ts, name=f"work {k}")
    RecallIndex(clio_dir / "recall.sqlite", SessionStore(root), embedder=None).refresh()
    client = EncoderClient(home, clio_dir, timeout_s=30.0)
    client.start()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not filled(clio_dir, client.model):
        with contextlib.suppress(OSError, ValueError):
            client.fill()
        time.sleep(0.2)
    assert filled(clio_dir, client.model), "the helper did not embed the archive"
    yield home, clio_dir, client
    with contextlib.suppress(OSError, ValueError):
        os.kill(client.ping(2.0), signal.SIGTERM)


def in_process(
    clio_dir: Path, client: EncoderClient, text: str, budget: int, skip: dict[str, set[int]] | None = None, since: int = 0
) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """The run's own path for the same message: its index, the helper's cosines over the socket
    (``skip``: what the run's request carries, as ``clio.app.recall`` leaves it out)."""
    index = RecallIndex(clio_dir / "recall.sqlite", SessionStore(clio_dir / "sessions"), embedder=None)
    found = auto_turn.search_and_score(
        text,
        "",
        budget,
        search=lambda query, nearby: best_first(
            index.search, query, auto_turn.SEARCH_RESULTS, max_sessions=auto_turn.SEARCH_SESSIONS,
            exclude_session=None if skip else CURRENT, skip=skip, with_text=True, mode="lexical", nearby=nearby,
        ),  # fmt: skip
        frequencies=lambda words: index.frequencies(words, (CURRENT, since), refresh=False),
        said_elsewhere=index.said_to_other_questions,
        begin=lambda query: client.begin(query, near=auto_turn.NEAR_ASKED),
        current=CURRENT,
        cosine_ask=client.model.cosine_ask,
        weights=client.verdict(),
    )
    return auto_turn.outcome(found, budget)


def ahead(client: EncoderClient, text: str, budget: int = 3000, **extra: Any) -> Any:
    token = client.recall_ahead(text, "", CURRENT, "standard")
    assert token is not None
    return client.recalled(token, budget)


@pytest.mark.parametrize("text", ["users keep getting logged out in prod", "how do we handle big file uploads over 100 MB?"])
def test_the_helper_hands_back_the_block_the_run_would_have_made(project: Any, text: str) -> None:
    _home, clio_dir, client = project
    got = ahead(client, text)
    assert got is not None, client.state
    block, last, quoted, units = got
    assert units is None  # the judge model's units only when asked for
    assert block and last["state"] == "recalled" and quoted
    assert ("allkeys-lru" in block) if "logged out" in text else ("8 MB parts" in block)
    assert "the assistant:" in block  # the exchange, its answer with it
    mine = in_process(clio_dir, client, text, 3000)
    assert (block, quoted) == (mine[0], mine[2])
    assert client.status()["recalls_ahead"] == 1


def test_small_talk_is_skipped_in_the_helper_as_in_the_run(project: Any) -> None:
    _home, _clio_dir, client = project
    got = ahead(client, "thanks, that looks good")
    assert got is not None
    assert got[0] == "" and got[1] == {"state": "skipped", "why": "no words of its own"} and got[2] == []


def test_the_block_takes_the_runs_room(project: Any) -> None:
    _home, _clio_dir, client = project
    text = "how do we handle big file uploads over 100 MB?"
    wide = ahead(client, text, 3000)
    narrow = ahead(client, text, 260)
    assert wide is not None and narrow is not None
    assert len(narrow[0]) <= 260 < len(wide[0])
    none = ahead(client, text, 100)  # under the least a block can quote
    assert none is not None and none[0] == "" and none[1]["why"] == "no room in the window"


def test_what_the_helper_cannot_vouch_for_gives_no_block(project: Any, tmp_path: Path) -> None:
    _home, clio_dir, client = project
    text = "how do we handle big file uploads over 100 MB?"
    # a token it never saw, or one already fetched
    assert client.recalled("0123456789abcdef", 3000) is None and "no recall done ahead" in client.state
    token = client.recall_ahead(text, "", CURRENT, "standard")
    assert token is not None and client.recalled(token, 3000) is not None
    assert client.recalled(token, 3000) is None
    # another clio's request (a helper left running across an upgrade answers none)
    req = {"op": "recall", "id": "feedfeedfeedfeed", "index": str(client.index), "cache": str(client.cache), "q": text, "v": "0.0.0-other"}
    with pytest.raises(ValueError, match="runs clio"):
        client._request(req, 30.0)
    assert client.recalled("feedfeedfeedfeed", 3000) is None
    # a file that is no project's recall index, however it is named
    stray = tmp_path / "elsewhere" / "recall.sqlite"
    stray.parent.mkdir()
    stray.write_bytes((clio_dir / "recall.sqlite").read_bytes())
    with pytest.raises(ValueError, match="not a project's recall index"):
        client._request(dict(req, id="abababababababab", index=str(stray), v=client_version()), 30.0)
    assert client.status()["pid"] == client.ping()  # the helper serves on


def client_version() -> str:
    from clio import __version__

    return __version__


def test_an_index_a_run_rebuilt_is_the_one_the_helper_searches_next(project: Any) -> None:
    """A run that finds the index damaged deletes and rebuilds it; the helper then opens the new
    file, and holds the deleted one open no longer (its disk space is freed)."""
    _home, clio_dir, client = project
    text = "how do we handle big file uploads over 100 MB?"
    assert ahead(client, text) is not None
    index_file = clio_dir / "recall.sqlite"
    index = RecallIndex(index_file, SessionStore(clio_dir / "sessions"), embedder=None)
    index.rebuild()
    index.refresh()
    index.close()
    got = ahead(client, text)
    assert got is not None and "8 MB parts" in got[0]
    pid = client.ping()
    held = [os.readlink(f) for f in Path(f"/proc/{pid}/fd").iterdir() if "recall.sqlite" in os.readlink(f)]
    assert held and all("(deleted)" not in h for h in held), held


def test_two_runs_at_once_each_get_the_block_of_their_own_message(project: Any) -> None:
    """Two one-shot runs that start together: each fetches the recall of its own message, in
    whatever order they ask."""
    home, clio_dir, client = project
    other = EncoderClient(home, clio_dir, timeout_s=30.0)
    first = client.recall_ahead("users keep getting logged out in prod", "", CURRENT, "standard")
    second = other.recall_ahead("how do we handle big file uploads over 100 MB?", "", "20991231-000000-dddd", "standard")
    assert first is not None and second is not None and first != second
    late, early = other.recalled(second, 3000), client.recalled(first, 3000)
    assert late is not None and "8 MB parts" in late[0] and "allkeys-lru" not in late[0]
    assert early is not None and "allkeys-lru" in early[0] and "8 MB parts" not in early[0]


def test_a_resumed_sessions_recall_leaves_out_only_what_its_window_carries(project: Any) -> None:
    """``clio -c -p``: the running session has messages of its own. The helper leaves out what
    the run's request carries (the window's messages and the message itself), and still finds
    what left the window, as the run's own search would."""
    _home, clio_dir, client = project
    ts = 1_763_900_000.0
    msgs = [
        ("user", "which port does the staging database listen on?"),
        ("assistant", "The staging database listens on port 6543, behind pgbouncer."),
        ("user", "and which port does the production database listen on?"),
        ("assistant", "The production database listens on port 5433, reachable only through the VPN."),
    ]
    session = [{"role": r, "content": c, "meta": {"seq": i, "ts": ts + i}} for i, (r, c) in enumerate(msgs)]
    write_archive(clio_dir / "sessions", CURRENT, session, ts, name="resumed")
    text = "remind me which port the database listens on"
    skip = {CURRENT: {2, 3, 4}}  # the window: the last exchange, and the message itself (seq 4)
    token = client.recall_ahead(text, "", CURRENT, "standard", skip, since=2)
    assert token is not None
    got = client.recalled(token, 3000)
    assert got is not None, client.state
    block, _last, quoted, _units = got
    assert "6543" in block and "5433" not in block, block  # what left the window, not what is in it
    mine_quoted = [set(q["seqs"]) for q in quoted if q["session"] == CURRENT]
    assert mine_quoted and all(seqs <= {0, 1} for seqs in mine_quoted), quoted
    mine = in_process(clio_dir, client, text, 3000, skip, since=2)
    assert (block, quoted) == (mine[0], mine[2])
    # without a skip the running session is left out whole, as for a new one
    new = ahead(client, text)
    assert new is not None and "6543" not in new[0] and "5433" not in new[0]
    # a skip that is not a map of sessions to sequence numbers is refused, and the run recalls itself
    req = {"op": "recall", "id": "cdcdcdcdcdcdcdcd", "index": str(client.index), "cache": str(client.cache), "q": text}
    for bad in ({"skip": [1, 2]}, {"skip": {CURRENT: ["1"]}}, {"skip": {CURRENT: [True]}}, {"skip": {}, "since": -1}):
        with pytest.raises(ValueError, match="skip|since"):
            client._request(dict(req, v=client_version(), **bad), 30.0)


@pytest.mark.parametrize("judged", [False, True], ids=["recall_judge off", "the helper's judge on"])
def test_the_helper_searches_the_judge_models_units_as_the_run_would(project: Any, judged: bool) -> None:
    """A run that names a judge model asks the helper for the units that model reads too
    (``pool``): they are the run's own, unit for unit (the memory tool's first, by words and the
    helper's nearest messages, in the search's order: no judge re-reads them), scored as the run scores them, and
    handed back with the message's own scored units, so the run decides over them with no index
    of its own. A reworded question's fact is among them though its words are not."""
    _home, clio_dir, client = project
    client.judge = judged  # the user's recall_judge, as clio.app.app sets it
    if judged:
        wait_for_judge(client)
    for text, fact in (
        ("users keep getting signed out of the live site, any idea why?", "allkeys-lru"),  # no word of the fact's
        ("why did session logins drop in production, and what gap did the navbar get? any CSV export for invoices?", "4px gap"),
    ):
        token = client.recall_ahead(text, "", CURRENT, "standard", pool=True)
        assert token is not None
        got = client.recalled(token, 3000)
        assert got is not None and got.units is not None, client.state
        found, pool = hits_wire.searched_in(got.units[0]), hits_wire.hits_in(got.units[1])
        index = RecallIndex(clio_dir / "recall.sqlite", SessionStore(clio_dir / "sessions"), embedder=None)
        results = search_with_meaning(
            index.search, text, model_judge.POOL_UNITS, client, with_helper="lexical", reread=False,
            max_sessions=model_judge.POOL_SESSIONS, exclude_session=CURRENT, with_text=True,
        )  # fmt: skip
        mine = model_judge.pool(text, results, CURRENT, partial(index.frequencies, carried=(CURRENT, 0), refresh=False), index.said_to_other_questions)
        assert pool == mine and any(fact in h.text for h in pool)
        # the message's own units as the run scores them, and its block from them
        assert found.query == text and found.hits == own_units(clio_dir, client, text)
        assert (got.block, got.quoted) == in_process(clio_dir, client, text, 3000)[::2]
    assert len(pool) >= 3  # the wordy one: units of other sessions too, as the memory tool lists them

    small_talk = client.recall_ahead("thanks, that looks good", "", CURRENT, "standard", pool=True)
    assert small_talk is not None
    nothing = client.recalled(small_talk, 3000)
    assert nothing is not None and nothing.units is not None
    assert hits_wire.searched_in(nothing.units[0]).skipped and nothing.units[1] == []  # nothing searched, nothing to read


def own_units(clio_dir: Path, client: EncoderClient, text: str) -> list[Any]:
    """The message's own scored units, searched in process as the run would."""
    index = RecallIndex(clio_dir / "recall.sqlite", SessionStore(clio_dir / "sessions"), embedder=None)
    return auto_turn.search_and_score(
        text, "", 3000,
        search=lambda query, nearby: best_first(
            index.search, query, auto_turn.SEARCH_RESULTS, max_sessions=auto_turn.SEARCH_SESSIONS,
            exclude_session=CURRENT, with_text=True, mode="lexical", nearby=nearby,
        ),
        frequencies=lambda words: index.frequencies(words, (CURRENT, 0), refresh=False),
        said_elsewhere=index.said_to_other_questions,
        begin=lambda query: client.begin(query, near=auto_turn.NEAR_ASKED),
        current=CURRENT, cosine_ask=client.model.cosine_ask, weights=client.verdict(),
    ).hits  # fmt: skip
