"""End to end, issue 24: what was said comes back, through the installed clio and the fake server.

- A fact read in a tool result early in a long session is no longer in the request after many
  trims; a later question (also reworded) brings it back in that turn's first request, with no
  tool call: the automatic recall block appended to the user's message.
- A fact from an earlier session comes back in a new session's first request.
- Recall results are never indexed again: after repeated recalls of one fact, the original leads
  and no echo is counted.
- At a 4k window (the lean profile) the model can still recall with a tool, and the automatic
  recall still works.
- A message that names a day ("yesterday") brings back what was said that day before what was
  said a month earlier, which leads when no day is named.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from testkit.clio_run import run_clio, session_dirs, tool_results
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import latest_user

FACT = "The staging database listens on port 6543, behind pgbouncer on the db-stage host."
NOTES = (
    "Deployment notes\n================\n\n"
    "The web tier runs three replicas behind the load balancer.\n"
    f"{FACT}\n"
    "Backups are taken nightly and kept for fourteen days.\n"
)
TOPICS = [
    "the navbar should collapse into a hamburger menu on narrow screens",
    "the login form needs clearer error text when the password is wrong",
    "the footer links point to the old documentation site",
    "the settings page loads slowly because of the avatar images",
    "the colour of the primary button is too close to the warning colour",
    "the search box on the landing page forgets what was typed",
    "the modal dialog cannot be closed with the escape key",
    "the sidebar overlaps the editor on tablets in portrait mode",
]


def filler(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return f"[fill{i:02d}] Frontend review item {i}: {topic}. " + " ".join(
        f"Consider spacing, typography, contrast and motion for element {j} of the page layout."
        for j in range(10)
    )


def responder(body: dict[str, Any]) -> Reply:
    text, rounds = latest_user(body)
    if text.startswith("[read]") and rounds == 0:
        return Reply(tool_calls=[{"name": "file_operations", "arguments": {"operation": "read_file", "path": "deploy/notes.txt"}}])
    if text.startswith("[recall]") and rounds == 0:
        query = text.split("]", 1)[1].split("\n\n<recalled_context>")[0].strip()
        return Reply(tool_calls=[{"name": "memory_operations", "arguments": {"operation": "recall_sessions", "query": query}}])
    if text.startswith("[fill"):
        return Reply(text="Noted. " + " ".join("The layout review continues with the next element." for _ in range(12)))
    return Reply(text="ok")


@pytest.fixture
def env(tmp_path: Path) -> Any:
    project, home = tmp_path / "proj", tmp_path / "home"
    (project / "deploy").mkdir(parents=True)
    (project / "deploy" / "notes.txt").write_text(NOTES)
    server = FakeServer(responder).start()
    try:
        yield project, home, server
    finally:
        server.stop()


def clio(env: Any, text: str, *args: str) -> Any:
    project, home, server = env
    r = run_clio(["--model", "fake-model", "--yes", *args, "-p", text], server=server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    return r


def first_request(server: FakeServer, marker: str) -> dict[str, Any]:
    """The first request of the turn whose user message starts with ``marker``."""
    bodies = [b for b in server.chat_requests if latest_user(b)[0].startswith(marker)]
    assert bodies, f"no request for {marker!r}"
    return bodies[0]


def recalled_block(body: dict[str, Any]) -> str:
    text, rounds = latest_user(body)
    assert rounds == 0, "not the first request of the turn"
    head, sep, block = text.partition("<recalled_context>")
    return sep + block


ASKS = [
    "which port does the staging database listen on?",  # (no marker: a made-up word would count)
    "remind me how to reach the staging db, what port number?",
]


def test_a_fact_evicted_from_a_long_session_comes_back_without_a_tool_call(env: Any) -> None:
    project, home, server = env
    clio(env, "[read] please look at deploy/notes.txt", "--context-window", "6000")
    for i in range(24):
        clio(env, filler(i), "--context-window", "6000", "--resume")
    (session,) = session_dirs(project)
    state = json.loads((session / "stm.json").read_text())
    assert state["summary"]["trims"] >= 5, state["summary"]  # the read left the window long ago
    shutil.copytree(project.parent, project.parent.parent / "copy")  # the same point, asked otherwise
    for ask, where in zip(ASKS, (env, (project.parent.parent / "copy" / "proj", home.parent.parent / "copy" / "home", server)), strict=True):
        before = len(server.turn_requests)
        clio(where, ask, "--context-window", "6000", "--resume")
        assert len(server.turn_requests) == before + 1  # answered at once: no tool call (the read-back after it aside)
        body = first_request(server, ask)
        requests_sent = json.dumps(body["messages"])
        block = recalled_block(body)
        assert "6543" in block and "this session, earlier" in block, block
        # the fact is in the request only through the recall block: the read itself was trimmed
        assert requests_sent.count("6543") == 1, requests_sent
    # what the request carries is not recalled again: the next message does not repeat the block
    clio(env, "and the staging database port once more?", "--context-window", "6000", "--resume")
    body = first_request(server, "and the staging database port once more?")
    assert json.dumps(body["messages"]).count("6543") == 1
    # /context tells what the latest message recalled and why
    r = clio(env, "/context", "--resume")
    assert "automatic recall for the latest message" in r.stdout, r.stdout


def test_a_fact_from_an_earlier_session_reaches_a_new_sessions_first_request(env: Any) -> None:
    project, home, server = env
    clio(env, "[read] please look at deploy/notes.txt")
    for ask in ASKS:
        clio(env, ask)  # a new session each time
        block = recalled_block(first_request(server, ask))
        assert "6543" in block, block
        assert "session" in block and "a tool result" in block, block
    # an unrelated message brings nothing back
    clio(env, "[ask3] rename the css class of the hamburger icon")
    text, _ = latest_user(first_request(server, "[ask3]"))
    assert "<recalled_context>" not in text, text


def test_repeated_recalls_leave_the_original_on_top_and_count_no_echo(env: Any) -> None:
    project, home, server = env
    clio(env, "[read] please look at deploy/notes.txt")
    for i in range(5):
        clio(env, f"[recall] staging database port {i}")
    before = len(server.turn_requests)
    clio(env, "[recall] staging database port")
    result = next(iter(tool_results(server.turn_requests[-1]).values()))
    assert len(server.turn_requests) == before + 2
    entries = result.split("\n")[1:]
    assert result.count("6543") == 1, result  # the original once, no echo of earlier recalls
    first = result.split("\n2. ")[0]  # the first unit: its heading and its messages
    assert "6543" in first, result  # and it leads
    assert "excerpt(s) from" not in "\n".join(entries), result


def test_the_lean_profile_at_a_4k_window_can_still_recall(env: Any) -> None:
    project, home, server = env
    clio(env, "[read] please look at deploy/notes.txt")
    clio(env, "[recall] staging database port", "--context-window", "4096")
    body = first_request(server, "[recall]")
    names = [t["function"]["name"] for t in body.get("tools", [])]
    assert "todo_operations" not in names and "memory_operations" in names  # the lean profile
    (memory,) = [t["function"] for t in body["tools"] if t["function"]["name"] == "memory_operations"]
    assert memory["parameters"]["properties"]["operation"]["enum"] == ["recall_sessions"]
    result = next(iter(tool_results(server.turn_requests[-1]).values()))
    assert "6543" in result, result
    assert "6543" in recalled_block(body)  # and the automatic recall works there too


def shift_session(session: Path, to: float) -> None:
    """Move every archived message of ``session`` to ``to`` (epoch seconds), keeping their spacing."""
    chunks = sorted((session / "archive").glob("*.json"))
    first = min(m["meta"]["ts"] for c in chunks for m in json.loads(c.read_text()))
    for chunk in chunks:
        msgs = json.loads(chunk.read_text())
        for m in msgs:
            m["meta"]["ts"] = to + (m["meta"]["ts"] - first)
        chunk.write_text(json.dumps(msgs))


def test_a_message_naming_a_day_brings_back_what_was_said_that_day(env: Any) -> None:
    project, home, server = env
    older = "[old] We changed the deploy config: in the deploy config the worker pool size is now 8."
    newer = "[new] We changed the deploy config again, the queue timeout is now 45 seconds."
    clio(env, older)
    clio(env, newer)
    old_dir, new_dir = sorted(session_dirs(project), key=lambda d: (d / "archive").stat().st_mtime)
    noon = datetime.now().replace(hour=12, minute=0, second=0, microsecond=0)
    shift_session(old_dir, (noon - timedelta(days=30)).timestamp())
    shift_session(new_dir, (noon - timedelta(days=1)).timestamp())
    (project / ".clio" / "recall.sqlite").unlink(missing_ok=True)  # read the archives as they are now
    clio(env, "what did we change in the deploy config?")
    block = recalled_block(first_request(server, "what did we change in the deploy config?"))
    assert "pool size is now 8" in block and block.index("pool size") < block.index("45 seconds"), block
    clio(env, "what did we change in the deploy config yesterday?")
    block = recalled_block(first_request(server, "what did we change in the deploy config yesterday"))
    assert "45 seconds" in block, block
    assert "pool size" not in block or block.index("45 seconds") < block.index("pool size"), block
