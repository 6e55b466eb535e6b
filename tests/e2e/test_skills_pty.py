"""The feedback commands in the REPL, through a real pseudo-terminal against the fake server:
/skills pin, a turn, /bad with a note, /good, /skills, and what reached $CLIO_HOME/skills.json."""

from __future__ import annotations

import json
from pathlib import Path

from testkit.clio_run import system_text
from testkit.fakeserver import FakeServer, Reply
from tests.e2e.test_repl_pty import Spawn, project, spawn  # noqa: F401  (the pty fixtures)

SHORT = "Keep answers short"


def test_good_bad_and_skills_in_the_repl(spawn: Spawn, fake_server: FakeServer, project: Path) -> None:  # noqa: F811
    fake_server.script(Reply(text="Here you go."))
    term = spawn(env={"CLIO_CONTEXT_WINDOW": "32000", "CLIO_SKILLS_SEED": "1"})
    term.prompt()
    term.type("/bad")
    term.expect(r"no turn to judge yet")
    term.prompt()
    term.type("/skills pin short-answers")
    term.expect(r"Pinned short-answers")
    term.prompt()
    term.type("tidy the module")
    term.expect(r"Here you go\.")
    term.prompt()
    assert SHORT in system_text(fake_server.chat_requests[-1])
    term.type("/bad too chatty")
    term.expect(r"Noted \(bad\) for turn 1: [^\n]*short-answers")
    term.prompt()
    term.type("/bad")  # a turn is judged once
    term.expect(r"already judged bad")
    term.prompt()
    term.type("/good")  # a change of mind replaces the judgement
    term.expect(r"Noted \(good\) for turn 1")
    term.prompt()
    term.type("/skills")
    term.expect(r"short-answers[\s│|]+0\.67[\s│|]+1[\s│|]+active, pinned")
    term.prompt()
    term.type("/exit")
    assert term.wait_exit() == 0
    data = json.loads((project.parent / "home" / "skills.json").read_text())
    short = next(s for s in data["skills"] if s["id"] == "short-answers")
    assert (short["a"], short["b"], short["n"], short["pinned"]) == (2.0, 1.0, 1, True)
    assert [(s["kind"], s["note"]) for s in data["signals"]] == [("good", "")]
