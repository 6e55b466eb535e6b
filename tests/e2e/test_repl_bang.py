"""``!command`` in the REPL (issue 35 item 2), through a real pty against the fake server: the
user's command runs at once (no question), its output is shown, and the model gets it with the
next message, marked as the user's action; memory never reads the output as the user's words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testkit.clio_run import run_clio
from testkit.fakeserver import FakeServer, Reply
from tests.e2e.test_repl_pty import Spawn, archive, project, spawn  # noqa: F401  (the pty fixtures)


def user_contents(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in body["messages"] if m.get("role") == "user"]


def test_bang_runs_the_command_shows_it_and_the_model_sees_it_with_the_next_message(
    spawn: Spawn, fake_server: FakeServer, project: Path  # noqa: F811
) -> None:
    fake_server.script(Reply(text="SAW-IT"))
    (project / "marker-file.txt").write_text("x", encoding="utf-8")
    term = spawn()
    term.prompt()
    term.type('!ls; echo made > made.txt; test -n "$OPENAI_API_KEY" && echo KEY-SEEN || echo KEY-GONE')
    term.expect(r"marker-file\.txt")  # the output, shown at once, no question asked
    term.expect(r"KEY-GONE")  # clio's credentials are not in its environment
    term.expect(r"exit code: 0")
    term.expect(r"the model sees this command")
    term.prompt()
    assert (project / "made.txt").read_text(encoding="utf-8") == "made\n"  # it ran in the project
    assert fake_server.chat_requests == []  # nothing sent yet

    term.type("what do you make of that?")
    term.expect(r"SAW-IT")
    term.prompt()
    (body,) = fake_server.chat_requests
    users = user_contents(body)
    # one user turn (chat templates that want alternation): the command's output, then the words
    last = users[-1]
    assert "the user ran `ls; echo made > made.txt;" in last and "marker-file.txt" in last
    assert last.rstrip().endswith("what do you make of that?")
    assert [m["role"] for m in body["messages"]].count("user") == 1

    marked = [m for m in archive(project) if (m.get("meta") or {}).get("kind") == "user_shell"]
    assert len(marked) == 1 and "marker-file.txt" in marked[0]["content"]
    assert marked[0]["meta"]["command"].startswith("ls; echo made")

    term.type("/undo")  # what the command changed in the project is one step back
    term.expect(r"made\.txt: deleted\s+Undid 1 file change")
    term.prompt()
    assert not (project / "made.txt").exists()
    term.child.sendeof()
    assert term.wait_exit() == 0


def test_bang_in_plan_mode_runs_read_only(spawn: Spawn, fake_server: FakeServer, project: Path) -> None:  # noqa: F811
    term = spawn("--plan")
    term.prompt()
    term.type("!echo changed > planned.txt; echo after")
    # ran in the read-only sandbox (the write refused, said so), or refused where there is none
    term.expect(r"(plan mode: this command ran in a read-only sandbox|not run: plan mode)")
    term.prompt()
    assert not (project / "planned.txt").exists()
    term.child.sendeof()
    assert term.wait_exit() == 0


def test_consolidation_reads_the_command_not_its_output_as_the_users() -> None:
    from clio.memory.consolidate import transcript
    from clio.messages import KIND_USER_SHELL, make, typed_words

    msg = make("user", "[the user ran `cat notes`...]\nI prefer tabs over spaces", meta={"kind": KIND_USER_SHELL, "command": "cat notes"})
    assert typed_words(msg) == "!cat notes"
    lines = transcript([msg], 10_000)
    assert "[user] ran !cat notes" in lines and "tabs" not in lines
    from clio.recall.query import TOOL_RESULT_LIMIT, document_text

    long = make("user", "output line\n" * 2_000, meta={"kind": KIND_USER_SHELL, "command": "seq"})
    indexed = document_text(long)
    assert indexed is not None and len(indexed) <= TOOL_RESULT_LIMIT + 100  # clipped as a tool result


def test_one_shot_refuses_a_bang_command(fake_server: FakeServer, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    done = run_clio(["-p", "!touch made.txt"], server=fake_server, project=proj, home=tmp_path / "home")
    assert done.returncode == 2
    assert "!command runs a shell command in the REPL only" in done.stderr
    assert not (proj / "made.txt").exists() and fake_server.chat_requests == []
