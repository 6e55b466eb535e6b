# ruff: noqa: F811  (the pty fixtures are imported from test_repl_pty)
"""/compact in the REPL through a real pseudo-terminal (issue 27): the waiting spinner of its
request ended with it (it kept redrawing "thinking…" over the idle prompt), and a summary that
would take more room than the conversation is not applied (it reported "-82 freed")."""

from __future__ import annotations

from pathlib import Path

from testkit.clio_run import user_texts
from testkit.fakeserver import FakeServer, Reply
from tests.e2e.test_repl_pty import Spawn, project, screen_of, spawn  # noqa: F401  (fixtures)


def test_compact_leaves_no_spinner_and_refuses_to_grow(spawn: Spawn, fake_server: FakeServer, project: Path) -> None:  # noqa: F811
    long_summary = "SUMMARY " + "the user said hello and clio answered it " * 40
    fake_server.script(Reply(text="Hi there."), Reply(text=long_summary), Reply(text="Short one."))
    term = spawn()
    term.prompt()
    term.type("hello")
    term.expect(r"Hi there\.")
    term.prompt()
    term.type("/compact")
    m = term.expect(r"Not compacted: the model's summary would take ([\d,]+) tokens where the conversation takes ([\d,]+)")
    assert int(m.group(1).replace(",", "")) >= int(m.group(2).replace(",", ""))
    term.prompt()
    mark = term.mark()
    term.type("/stats")  # output after the command: the spinner would be redrawn in it
    term.expect(r"secrets redacted")
    term.prompt()
    assert "thinking" not in term.since(mark)
    assert "thinking" not in screen_of(term)
    # the conversation was left as it was: the next request still holds the first exchange
    term.type("and now?")
    term.expect(r"Short one\.")
    term.prompt()
    last = fake_server.chat_requests[-1]["messages"]
    assert user_texts(fake_server.chat_requests[-1]) == ["hello", "and now?"]
    assert "conversation_summary" not in str(last)
    term.child.sendeof()
    assert term.wait_exit() == 0
