"""End to end, issue 36: a byte-stable head, what changes after it.

Through the installed clio and the fake server, one session that has it all: several runs resuming
it, trims, automatic recall of a fact from an earlier session, ``/compact``. Every request of the
session carries the same system message and the same tools; clio's notes (learned behaviours, the
thread summary) come after the head, in one ``<clio_context>`` block framed as clio's; the recall
block stays with the user message it was recalled for. ``/context`` and ``/cost`` show the cached
share the server reported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from testkit.clio_run import context_text, head_text, run_clio, session_dirs, typed
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import is_consolidation, latest_user

FACT = "The staging database listens on port 6543, behind pgbouncer on the db-stage host."
ASK = "which port does the staging database listen on?"


def filler(i: int) -> str:
    return f"[fill{i:02d}] Review item {i} of the page layout. " + " ".join(
        f"Consider spacing, typography, contrast and motion for element {j} of section {i}."
        for j in range(12)
    )


def responder(body: dict[str, Any]) -> Reply:
    text, rounds = latest_user(body)
    if text.startswith("[read]") and rounds == 0:
        return Reply(
            tool_calls=[
                {"name": "file_operations", "arguments": {"operation": "read_file", "path": "notes.txt"}}
            ]
        )
    if text.startswith("[fill"):
        return Reply(
            text="Noted. " + " ".join("The layout review continues with the next element." for _ in range(10))
        )
    if "Summarise" in text or "summary" in text.lower():
        return Reply(
            text="We reviewed the page layout item by item; the staging database facts came from notes.txt."
        )
    return Reply(text="ok")


def test_every_request_of_a_session_has_the_same_head(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    (project / "notes.txt").write_text(f"Deployment notes\n{FACT}\n")
    (project / "AGENTS.md").write_text("# Conventions\nRun `make test` before committing.\n")
    server = FakeServer(responder).start()
    try:

        def clio(text: str, *args: str) -> Any:
            r = run_clio(
                ["--model", "fake-model", "--yes", "--context-window", "6000", *args, "-p", text],
                server=server,
                project=project,
                home=home,
            )
            assert r.returncode == 0, r.stderr
            return r

        clio("[read] please look at notes.txt")  # an earlier session holds the fact
        earlier = len(server.chat_requests)
        clio("Let us review the page layout.")  # the session under test
        for i in range(14):  # remarks (clio.recall.remarks): no recall block of their own adds to the window
            clio(filler(i), "--resume")
        clio(ASK, "--resume")  # automatic recall from the earlier session
        compacted = clio("/compact", "--resume")
        clio("And the next layout item?", "--resume")
        context = clio("/context", "--resume").stdout
        cost = clio("/cost", "--resume").stdout
    finally:
        server.stop()

    sent = [b for b in server.chat_requests[earlier:] if not is_consolidation(b)]
    state = json.loads((session_dirs(project)[-1] / "stm.json").read_text())
    assert state["summary"]["trims"] >= 3, state["summary"]  # the window was trimmed several times
    heads = {head_text(b) for b in sent}
    tools = {json.dumps(b.get("tools"), sort_keys=True) for b in sent}
    assert len(sent) >= 14 and len(heads) == 1 and len(tools) == 1, (len(sent), len(heads), len(tools))
    (head,) = heads
    assert "Run `make test` before committing." in head  # the project's instructions are in it
    assert "<thread_summary>\n" not in head and "Ways of working" not in head  # what changes is not

    # clio's notes follow the head, framed as clio's, least often changing first
    later = [b for b in sent if "<thread_summary>" in context_text(b)]
    assert later, "no request carried the thread summary"
    notes = context_text(later[-1])
    assert notes.startswith("<clio_context>\n[clio's notes") and notes.endswith("</clio_context>")
    assert notes.index("Ways of working") < notes.index("<thread_summary>")
    assert all(m["role"] != "system" for b in sent for m in b["messages"][1:])  # one system message

    # the recall block travels with the message it was recalled for, not in the head or the notes
    (asked,) = [b for b in sent if latest_user(b)[0].startswith(ASK)]
    last_user = [m for m in asked["messages"] if m["role"] == "user"][-1]["content"]
    assert typed(last_user) == ASK and "6543" in last_user and "<recalled_context>" in last_user
    assert "6543" not in head and "6543" not in context_text(asked)

    # /compact went out with the same head and tools, and changed only what follows them
    assert "compact" in compacted.stdout.lower() or "summar" in compacted.stdout.lower(), compacted.stdout
    compact_requests = [b for b in sent if b.get("tool_choice") == "none"]
    assert compact_requests, "the /compact request was not sent with the session's tools"

    # what the server reported as cached is shown
    assert "prompt cache: last request" in context and "cached (" in context, context
    assert "cached, " in cost and "%)" in cost, cost
