"""``/init`` in-process: the prompt (new file or update) and the write through the file tool."""

from __future__ import annotations

from pathlib import Path

from clio.commands.dispatch import run_slash
from testkit.clio_run import user_texts
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import AppFactory, call


def test_init_writes_agents_md_through_the_file_tool(
    app_factory: AppFactory, fake_server: FakeServer, project: Path
) -> None:
    fake_server.script(
        Reply(tool_calls=[call("file_operations", operation="create_file", path="AGENTS.md", content="# A\n")]),
        Reply(text="Wrote it."),
    )
    app = app_factory(yes=True)
    assert run_slash(app, "/init")
    assert (project / "AGENTS.md").read_text() == "# A\n"
    sent = user_texts(fake_server.chat_requests[0])[-1]
    assert sent.startswith("/init: write an AGENTS.md") and "file_operations (create_file)" in sent
    assert "{" not in sent  # every placeholder filled
    assert app.session is not None and app.session.messages[0]["meta"]["command"] == "init"
    assert app.services.snapshots is not None and app.services.snapshots.last(1)  # /undo can take it back
