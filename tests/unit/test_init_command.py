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


def test_clios_own_text_in_the_users_role_is_marked_where_it_is_made(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    """Issue 33 item 1: /init's prompt carries kind clio_prompt; a note put before the user's words
    (plan mode turned off) is recorded in the message's meta, so typed_words leaves both out."""
    from clio.messages import KIND_PROMPT, typed_words

    fake_server.script(Reply(text="Nothing to write."), Reply(text="Renamed."))
    app = app_factory(yes=True)
    assert run_slash(app, "/init")
    app.set_plan(True)
    app.set_plan(False)
    app.run_turn("Then rename the module.")
    assert app.session is not None
    users = [m for m in app.session.messages if m["role"] == "user"]
    assert users[0]["meta"]["kind"] == KIND_PROMPT and typed_words(users[0]) == "/init"
    assert users[1]["content"].startswith("[clio: the user turned plan mode off")
    assert typed_words(users[1]) == "Then rename the module."
    assert user_texts(fake_server.chat_requests[-1])[-1].startswith("[clio: the user turned plan mode off")
