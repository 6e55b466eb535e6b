"""Issue 33 item 1, end to end through the INSTALLED clio and the fake server: what clio sends in the
user's role on its own (here /init's prompt) is never read back as the user's words. After
``/init`` and the session's end, no long-term memory entry holds the prompt's words, and the
consolidation request shows the prompt as clio's, not as the user's."""

from __future__ import annotations

import json
from pathlib import Path

from testkit.clio_run import run_clio, wait_background
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import ScriptedModel, call, consolidation_requests

AGENTS = "# AGENTS.md\n\nRun the tests with `make test`.\n"
PROMPT_WORDS = "conventions a contributor must follow"  # a line of clio/prompts/init.md
TASK = "Which file runs the tests?"


def test_the_init_prompt_never_becomes_a_remembered_rule(project: Path, home: Path) -> None:
    (project / "Makefile").write_text("test:\n\tpytest\n", encoding="utf-8")
    model = ScriptedModel()
    model.on(
        "/init",
        Reply(tool_calls=[call("file_operations", operation="read_file", path="Makefile")]),
        Reply(tool_calls=[call("file_operations", operation="list_dir", path=".")]),
        Reply(tool_calls=[call("file_operations", operation="create_file", path="AGENTS.md", content=AGENTS)]),
        Reply(text="Wrote AGENTS.md."),
    )
    server = FakeServer(model).start()
    try:
        first = run_clio(["--yes", "-p", "/init"], server=server, project=project, home=home)
        assert first.returncode == 0, first.stderr
        assert (project / "AGENTS.md").read_text(encoding="utf-8") == AGENTS
        wait_background(project)  # the /init session, read back after its run (clio.app.background)
        asked = consolidation_requests(server)
        nxt = run_clio(["-p", TASK], server=server, project=project, home=home)
        assert nxt.returncode == 0, nxt.stderr
        wait_background(project)
    finally:
        server.stop()
    assert len(asked) == 1  # the /init session was worth reading back (tool calls)
    ltm = project / ".clio" / "ltm.json"
    stored = ltm.read_text(encoding="utf-8") if ltm.exists() else "{}"
    assert PROMPT_WORDS not in stored
    data = json.loads(stored)
    entries = data.get("entries", []) if isinstance(data, dict) else data
    assert not [e for e in entries if e.get("provenance", {}).get("by") == "consolidation"]
    transcript = asked[0]["messages"][-1]["content"]
    assert "[user] /init" in transcript  # what the user typed
    assert PROMPT_WORDS not in transcript  # clio's prompt is not quoted as theirs
