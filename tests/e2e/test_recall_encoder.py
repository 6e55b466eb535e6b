"""End to end, issue 32: a reworded question brings back the fact through the encoder helper.

Through the installed clio and the fake server: a one-shot run in a project with history starts
the user's encoder helper (and does not wait for it); once it is up, a question reworded so that
it shares almost no word with the earlier session gets that session's answer quoted, where the
words alone (the helper switched off) quote nothing; small talk still gets no block; and the run
imports nothing heavy: the model lives in the helper, not in clio. These runs are a user's as
clio comes, the helper's judge on (``recall_judge``, tests/e2e/test_recall_judge.py): it reads
the question with developers' short forms written out ("prod" as "production", stop 84), without
which it read this one at -0.1 and quoted nothing (docs/memory.md, "Short forms written out for
the judge").
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from clio.recall.encoder_cache import filled
from clio.recall.encoder_client import EncoderClient
from clio.recall.encoder_readiness import installed, socket_path
from testkit.clio_run import run_clio, session_dirs
from testkit.encoder_helper import stop_helper, wait_for_judge
from testkit.fakeserver import FakeServer, Reply
from testkit.recall_sets import build, load_set
from testkit.scripted import latest_user

pytestmark = pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")

ASKED = "session logins get dropped randomly in production"
FACT = (
    "The production Redis evicts with allkeys-lru, and sessions share that instance with the cache, so under "
    "memory pressure Django sessions get evicted. Move sessions to the database backend."
)
REWORDED = "users keep getting logged out in prod"
OTHER = [
    "Tidy the navbar css: flex layout and a 4px gap between the links",
    "add a CSV export to the invoices page",
    "rename the customers app to accounts everywhere",
]
HEAVY = ("numpy", "tokenizers", "onnxruntime", "torch")


def answering(asked: str, said: str) -> Callable[[dict[str, Any]], Reply]:
    """A fake model that says ``said`` to a message that starts with ``asked`` and "Done." to any other."""

    def reply(body: dict[str, Any]) -> Reply:
        text, _ = latest_user(body)
        return Reply(text=said if text.startswith(asked) else "Done.")

    return reply


responder = answering(ASKED, FACT)


def one_shot(server: FakeServer, project: Path, home: Path) -> Callable[[str], str]:
    """``clio -p`` with the helper on (as a user without CLIO_RECALL_ENCODER), returning what the
    request carried as the user's message: the message and any block recalled for it."""

    def clio(text: str) -> str:
        r = run_clio(["--model", "fake-model", "-p", text], server=server, project=project, home=home,
                     env_extra={"CLIO_RECALL_ENCODER": None})  # fmt: skip
        assert r.returncode == 0, r.stderr
        return sent(server, text)

    return clio


@contextlib.contextmanager
def asked_before(tmp_path: Path, responder: Callable[[dict[str, Any]], Reply], texts: Iterable[str]) -> Iterator[Callable[[str], str]]:
    """A project whose archive holds one-shot runs of ``texts`` (answered by ``responder``), every
    message embedded by the user's helper: yields :func:`one_shot` for the next runs; the server
    and the helper are stopped after."""
    with history(tmp_path, responder, texts) as (server, project, home):
        yield one_shot(server, project, home)


@contextlib.contextmanager
def history(tmp_path: Path, responder: Callable[[dict[str, Any]], Reply], texts: Iterable[str]) -> Iterator[tuple[FakeServer, Path, Path]]:
    """:func:`asked_before`'s project: yields its server, the project and the user's home."""
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    server = FakeServer(responder).start()
    try:
        clio = one_shot(server, project, home)
        for text in texts:
            clio(text)
        wait_filled(project)
        yield server, project, home
    finally:
        server.stop()
        stop_helper(home)


def sent(server: FakeServer, start: str) -> str:
    """The user message of the latest request that starts a turn with ``start``."""
    for body in reversed(server.chat_requests):
        text, rounds = latest_user(body)
        if text.startswith(start) and rounds == 0:
            return text
    raise AssertionError(f"no request for {start!r}")


def test_a_reworded_question_gets_the_fact_through_the_helper(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    server = FakeServer(responder).start()
    on = {"CLIO_RECALL_ENCODER": None}

    def clio(text: str, env: dict[str, str | None], *args: str) -> Any:
        r = run_clio(["--model", "fake-model", *args, "-p", text], server=server, project=project, home=home, env_extra=env)
        assert r.returncode == 0, r.stderr
        return r

    sock = socket_path(home)
    home.mkdir()
    (home / "config.yaml").write_text("recall_encoder_idle_minutes: 90\n")  # the user's, for the helper
    try:
        clio(ASKED, on)  # the earlier session that settles it (nothing archived yet: no helper)
        assert not sock.exists()
        for text in OTHER:
            clio(text, on)  # a project with history: the first of these starts the helper
        wait_filled(project)
        assert EncoderClient(home, project / ".clio").status()["idle_s"] == 90 * 60  # started with the user's time
        shown = run_clio(["encoder"], server=None, project=project, home=home, env_extra=on).stdout.splitlines()
        assert re.fullmatch(r"its helper: running \(pid \d+, minilm, [\d,]+ MiB\), leaves after 90 idle minutes", shown[-2]), shown
        assert shown[-1].startswith("its judge: on (recall_judge)"), shown  # then its judge (tests/e2e/test_encoder_cli.py)

        clio(REWORDED, {"CLIO_RECALL_ENCODER": "0"})  # the words alone find nothing to quote
        assert "allkeys-lru" not in sent(server, REWORDED)

        wait_for_judge(EncoderClient(home, project / ".clio"))  # loaded as the helper started
        served_ahead = EncoderClient(home, project / ".clio").status()["recalls_ahead"]
        r = clio(REWORDED, {**on, "PYTHONPROFILEIMPORTTIME": "1"})
        message = sent(server, REWORDED)
        # the run sent its message to the helper as it started: the helper did its recall
        assert EncoderClient(home, project / ".clio").status()["recalls_ahead"] == served_ahead + 1
        assert "<recalled_context>" in message and "allkeys-lru" in message, message
        block = message.split("<recalled_context>", 1)[1]
        assert "the assistant:" in block and ASKED in block  # the unit: what was asked, and its answer
        imported = {ln.rsplit("|", 1)[-1].strip() for ln in r.stderr.splitlines() if ln.startswith("import time:")}
        assert "clio.recall.encoder_client" in imported
        assert sorted(m for m in imported if m.split(".")[0] in HEAVY) == []  # the model is the helper's
        # nor the search: the run imported no index, no decision, not even sqlite3
        assert sorted(m for m in imported if m in ("sqlite3", "clio.recall.index", "clio.recall.relevance")) == []

        for small_talk in ("ok, continue", "thanks, that looks good"):
            clio(small_talk, on)
            assert "<recalled_context>" not in sent(server, small_talk)
    finally:
        server.stop()
        stop_helper(home)


def filler(i: int) -> str:
    return f"[fill{i:02d}] Review item {i} of the page layout. " + " ".join(
        f"Consider spacing, typography, contrast and motion for element {j} of section {i}." for j in range(12)
    )


def test_a_reworded_question_gets_a_fact_that_left_this_sessions_window(tmp_path: Path) -> None:
    """The same, for a fact of the running session that trims pushed out of the window."""
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    home.mkdir()

    def reply(body: dict[str, Any]) -> Reply:
        text, _ = latest_user(body)
        if text.startswith(ASKED):
            return Reply(text=FACT)
        if text.startswith("[fill"):
            return Reply(text="Noted. " + " ".join("The layout review continues with the next element." for _ in range(10)))
        return Reply(text="ok")

    server = FakeServer(reply).start()
    on = {"CLIO_RECALL_ENCODER": None}

    def clio(text: str, *args: str) -> Any:
        r = run_clio(
            ["--model", "fake-model", "--context-window", "6000", *args, "-p", text],
            server=server, project=project, home=home, env_extra={**on, "PYTHONPROFILEIMPORTTIME": "1"},
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        return r

    try:
        clio(ASKED)
        for i in range(10):
            clio(filler(i), "--resume")  # the first turn leaves the window
        state = json.loads(session_dirs(project)[0].joinpath("stm.json").read_text())
        assert state["summary"]["trims"] >= 1
        wait_filled(project)
        wait_for_judge(EncoderClient(home, project / ".clio"))
        served_ahead = EncoderClient(home, project / ".clio").status()["recalls_ahead"]
        r = clio(REWORDED, "--resume")
        message = sent(server, REWORDED)
        assert "<recalled_context>" in message and "allkeys-lru" in message, message
        block = message.split("<recalled_context>", 1)[1]
        assert "this session" in block
        # a resumed session's recall is the helper's too, leaving out what the window carries:
        # none of the filler turns still in it is quoted
        assert EncoderClient(home, project / ".clio").status()["recalls_ahead"] == served_ahead + 1
        assert "[fill09]" not in block
        imported = {ln.rsplit("|", 1)[-1].strip() for ln in r.stderr.splitlines() if ln.startswith("import time:")}
        assert sorted(m for m in imported if m in ("sqlite3", "clio.recall.index", "clio.recall.relevance")) == []
    finally:
        server.stop()
        stop_helper(home)


def rank_of(result: str) -> int | None:
    """The place (1-based) of the excerpt that holds the fact in a recall_sessions result."""
    place = None
    for line in result.splitlines():
        head = line.split(".", 1)[0]
        if head.isdigit():
            place = int(head)
        elif "allkeys-lru" in line and place is not None:
            return place
    return None


def ready(project: Path) -> bool:
    """Every indexed message has its vectors in the project's cache."""
    return filled(project / ".clio")


def wait_filled(project: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not ready(project):
        time.sleep(0.2)
    assert ready(project), "the helper did not embed the project's archive"


def tool_result(server: FakeServer, project: Path, home: Path, env: dict[str, str | None]) -> str:
    """The recall_sessions result of a run whose model calls the tool (a "[tool]" message)."""
    r = run_clio(["--model", "fake-model", "--yes", "-p", "[tool] look it up"], server=server, project=project, home=home, env_extra=env)
    assert r.returncode == 0, r.stderr
    found = [str(m.get("content")) for m in server.turn_requests[-1]["messages"] if m.get("role") == "tool"]
    assert found, f"the tool was not called: {r.stderr}"
    return found[-1]


def asks_the_tool(query: str, max_results: int) -> Callable[[dict[str, Any]], Reply]:
    """A model that, asked "[tool] ...", calls recall_sessions with ``query``, then says "Done."."""

    def reply(body: dict[str, Any]) -> Reply:
        text, rounds = latest_user(body)
        if text.startswith("[tool]") and rounds == 0:
            args = {"operation": "recall_sessions", "query": query, "max_results": max_results}
            return Reply(tool_calls=[{"name": "memory_operations", "arguments": args}])
        return Reply(text="Done.")

    return reply


def test_the_memory_tool_ranks_what_the_helper_finds_by_meaning(tmp_path: Path) -> None:
    """recall_sessions fuses the helper's nearest messages into its ranking: a question that shares
    no word with the earlier answer, among near misses that share its words, gets the answer ranked
    above where bm25 and the static table alone put it."""
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    query = REWORDED

    def reply(body: dict[str, Any]) -> Reply:
        text, rounds = latest_user(body)
        if text.startswith(ASKED):
            return Reply(text=FACT)
        if text.startswith("[tool]") and rounds == 0:
            args = {"operation": "recall_sessions", "query": query, "max_results": 5}
            return Reply(tool_calls=[{"name": "memory_operations", "arguments": args}])
        return Reply(text="Done.")

    server = FakeServer(reply).start()
    on = {"CLIO_RECALL_ENCODER": None}
    try:
        near_misses = [  # the query's own words, about other things: bm25 and the static table rank these first
            "users keep asking for a dark mode in the prod dashboard",
            "getting the prod build to run on node 20",
            "keep the users table sorted by signup date",
            "users in prod see the old logo after the deploy",
        ]
        for text in [ASKED, *OTHER, *near_misses]:
            r = run_clio(["--model", "fake-model", "-p", text], server=server, project=project, home=home, env_extra=on)
            assert r.returncode == 0, r.stderr
        wait_filled(project)
        words = rank_of(tool_result(server, project, home, {"CLIO_RECALL_ENCODER": "0"}))  # bm25 and the static table
        meaning = rank_of(tool_result(server, project, home, on))
        assert meaning is not None and (words is None or words > meaning), (words, meaning)
    finally:
        server.stop()
        stop_helper(home)


def test_the_memory_tool_leans_on_meaning_when_the_words_barely_match(tmp_path: Path) -> None:
    """A question of the dev set E asked in other words than its answer ("who can invite me so I can
    install the beta builds on my own iphone?": bm25's best rows are near misses about installed
    preview builds and the iPhone simulator): recall_sessions, with the helper, ranks the answer
    (the Apple account holder's name) in its top 3, because the helper's nearest count more when the
    words barely match; without the helper it is not there."""
    data = load_set("set_e")
    probe = next(p for p in data["probes"] if p["text"].startswith("who can invite me"))
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    build(data, project / ".clio" / "sessions")
    server = FakeServer(asks_the_tool(probe["text"], 3)).start()
    on = {"CLIO_RECALL_ENCODER": None}
    try:
        for text in ("what does the release workflow run first?", "add a loading spinner to the plant list"):
            r = run_clio(["--model", "fake-model", "-p", text], server=server, project=project, home=home, env_extra=on)
            assert r.returncode == 0, r.stderr  # runs in a project with history: the helper starts, then fills
        wait_filled(project)
        words = tool_result(server, project, home, {"CLIO_RECALL_ENCODER": "0"})
        assert not any(n in words for n in probe["needles"]), words  # bm25 and the static table: near misses
        meaning = tool_result(server, project, home, on)
        assert any(n in meaning for n in probe["needles"]), meaning
    finally:
        server.stop()
        stop_helper(home)


def test_clio_mcp_search_sessions_leans_on_the_helper_as_the_memory_tool_does(tmp_path: Path) -> None:
    """``clio mcp``'s search_sessions searches as recall_sessions does: the installed server, opened
    on a project with history, starts the user's helper; its first search asks for the fill; once
    the archive is embedded, set E's reworded iPhone question gets its answer in the top 3, which
    the same server with the helper switched off does not find."""
    import anyio

    from testkit.mcp_client import call, clio_mcp

    data = load_set("set_e")
    probe = next(p for p in data["probes"] if p["text"].startswith("who can invite me"))
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    build(data, project / ".clio" / "sessions")

    async def search(env: dict[str, str | None], then_fill: bool) -> str:
        async with clio_mcp(project, home, env_extra=env) as s:
            if then_fill:  # the server started the helper as it opened: once it is up, a search asks for the fill
                up, deadline = False, time.monotonic() + 30
                while not up and time.monotonic() < deadline:
                    with contextlib.suppress(OSError, ValueError):
                        up = EncoderClient(home, home).ping(1.0) > 0
                    await anyio.sleep(0.2)
                assert up, "clio mcp did not start the encoder helper"
                bad, first = await call(s, "search_sessions", query=probe["text"], max_results=3)
                assert not bad, first
                await anyio.to_thread.run_sync(wait_filled, project)
            bad, text = await call(s, "search_sessions", query=probe["text"], max_results=3)
            assert not bad, text
            return text

    try:
        words = anyio.run(search, {"CLIO_RECALL_ENCODER": "0"}, False)
        assert not any(n in words for n in probe["needles"]), words
        meaning = anyio.run(search, {"CLIO_RECALL_ENCODER": None}, True)
        assert any(n in meaning for n in probe["needles"]), meaning
    finally:
        stop_helper(home)
