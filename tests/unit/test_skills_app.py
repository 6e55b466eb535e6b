"""Behaviours in a real App against the fake server: what reaches the system prompt, signals from
/good, /bad, approvals, denials and corrections, stability between trims, /skills, --no-ltm,
and a stated preference winning over a pinned behaviour."""

from __future__ import annotations

from pathlib import Path

import pytest

import clio.commands.builtin  # noqa: F401  (registers the commands)
from clio.app.app import App
from clio.commands.registry import CommandError, run_command
from clio.memory.skills import HEADER
from testkit.clio_run import head_text, system_text
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import AppFactory, call, console_text

PLAN = "Before editing, state a short plan"
SHORT = "Keep answers short"
TESTS = "After editing code, run the relevant tests"


def run(app: App, line: str) -> str:
    start = len(console_text(app.console))
    run_command(app, line)
    return console_text(app.console)[start:]


def system_sent(server: FakeServer) -> str:
    """The last request's system message and clio's notes after it (the behaviours are there)."""
    return system_text(server.chat_requests[-1])


def head_sent(server: FakeServer) -> str:
    return head_text(server.chat_requests[-1])


def skill(app: App, sid: str) -> tuple[float, float, int]:
    assert app.services.skills is not None
    s = app.services.skills.store.get(sid)
    return s.a, s.b, s.n


def test_pinned_behaviour_is_sent_and_good_bad_move_it(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    app = app_factory()
    with pytest.raises(CommandError, match="no turn to judge"):
        run(app, "/good")
    assert "Pinned short-answers" in run(app, "/skills pin short-answers")
    fake_server.script(Reply(text="done"))
    app.run_turn("fix the bug")
    assert HEADER in system_sent(fake_server) and SHORT in system_sent(fake_server)
    assert system_sent(fake_server).index(HEADER) < system_sent(fake_server).index(SHORT)  # pinned: chosen
    assert "short-answers" in run(app, "/bad too chatty")
    assert skill(app, "short-answers") == (1.0, 2.0, 1)
    with pytest.raises(CommandError, match="already judged bad"):
        run(app, "/bad")  # a turn is judged once: repeating /bad does not stack
    assert skill(app, "short-answers") == (1.0, 2.0, 1)
    run(app, "/good")  # changing one's mind replaces the judgement
    assert skill(app, "short-answers") == (2.0, 1.0, 1)
    sig = app.services.skills.store.signals()[0]  # type: ignore[union-attr]
    assert (sig.kind, sig.session, sig.turn) == ("good", app.session.id, 1)  # type: ignore[union-attr]
    assert len(app.services.skills.store.signals()) == 1  # type: ignore[union-attr]
    shown = run(app, "/skills")
    assert "short-answers" in shown and "active, pinned" in shown and "0.67" in shown


def test_the_behaviours_are_drawn_once_per_session_not_at_a_trim(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    """A trim leaves the draw as it was (a new draw would cost the prompt cache what follows the
    head); the head itself never carries the behaviours."""
    app = app_factory()
    run(app, "/skills pin plan-first")
    fake_server.script(*(Reply(text=f"answer {i}") for i in range(4)))
    app.run_turn("first")
    first = system_sent(fake_server)
    assert PLAN in first and PLAN not in head_sent(fake_server)
    assert app.services.skills is not None
    app.services.skills.store.set_flags("plan-first", banned=True)  # a change that is not the user's /skills
    app.run_turn("second")
    assert system_sent(fake_server) == first  # byte for byte
    assert app.trim_now().dropped > 0
    app.run_turn("third")
    assert PLAN in system_sent(fake_server)  # still the session's draw after the trim


def test_skills_ban_draws_again_for_the_next_request(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    app = app_factory()
    run(app, "/skills pin plan-first")
    fake_server.script(Reply(text="one"), Reply(text="two"))
    app.run_turn("first")
    head = head_sent(fake_server)
    assert PLAN in system_sent(fake_server)
    assert "in effect from the next request" in run(app, "/skills ban plan-first")
    app.run_turn("second")
    assert PLAN not in system_sent(fake_server)  # the user's explicit word applies at once
    assert head_sent(fake_server) == head  # and only what follows the head changed


def test_a_resumed_session_keeps_its_behaviours(app_factory: AppFactory, fake_server: FakeServer) -> None:
    first = app_factory()
    run(first, "/skills pin plan-first")
    fake_server.script(Reply(text="one"), Reply(text="two"), Reply(text="three"))
    first.run_turn("first")
    sent = system_sent(fake_server)
    assert first.session is not None
    sid = first.session.id
    first.close()
    again = app_factory(resume=sid)  # another run (process) resuming the session
    assert again.services.skills is not None
    again.services.skills.store.set_flags("plan-first", banned=True)
    again.run_turn("second")
    assert system_sent(fake_server) == sent  # same prefix: the provider's cache still hits
    again.trim_now()
    again.run_turn("third")
    assert PLAN in system_sent(fake_server)


def test_a_draw_between_turns_is_kept_for_the_next_run(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    """/skills ban between turns draws again outside any turn; the next run resuming the session
    must send that draw, not the last turn's set."""
    first = app_factory()
    run(first, "/skills pin plan-first")
    fake_server.script(*(Reply(text=f"answer {i}") for i in range(5)))
    for i in range(2):
        first.run_turn(f"turn {i}")
    assert PLAN in system_sent(fake_server)
    run(first, "/skills ban plan-first")  # no turn is open
    head = first.agent.prompt.system()
    notes = str(head[1]["content"]) if len(head) > 1 else ""  # the new draw may hold no behaviour at all
    assert PLAN not in notes
    assert first.session is not None
    sid = first.session.id
    first.close()
    again = app_factory(resume=sid)
    again.run_turn("second")
    assert PLAN not in system_sent(fake_server)
    assert notes in system_sent(fake_server)


def test_correction_and_denial_are_weaker_signals(app_factory: AppFactory, fake_server: FakeServer) -> None:
    app = app_factory(ask=lambda q: "n", interactive=True)
    run(app, "/skills pin short-answers")
    fake_server.script(
        Reply(tool_calls=[call("terminal_operations", operation="execute", command="echo hi")]),
        Reply(text="could not run it"),
        Reply(text="ok"),
    )
    app.run_turn("run echo")
    assert skill(app, "short-answers") == (1.0, 1.25, 1)  # denied
    app.run_turn("no, that's not what I asked")
    assert skill(app, "short-answers") == (1.0, 1.75, 2)  # the correction judged turn 1
    kinds = [(s.kind, s.turn) for s in app.services.skills.store.signals()]  # type: ignore[union-attr]
    assert kinds == [("deny", 1), ("correction", 1)]


def test_approval_is_a_weak_reward(app_factory: AppFactory, fake_server: FakeServer) -> None:
    app = app_factory(ask=lambda q: "y", interactive=True)
    run(app, "/skills pin short-answers")
    fake_server.script(
        Reply(tool_calls=[call("terminal_operations", operation="execute", command="echo hi")]),
        Reply(text="done"),
    )
    app.run_turn("run echo")
    assert skill(app, "short-answers") == (1.25, 1.0, 1)


def test_stated_preference_wins_over_a_pin(app_factory: AppFactory, fake_server: FakeServer) -> None:
    app = app_factory()
    run(app, "/skills pin tests-after-edit")
    run(app, "/prefs add 9 Don't run tests unless I ask for them")
    fake_server.script(Reply(text="ok"))
    app.run_turn("edit it")
    assert TESTS not in system_sent(fake_server)
    assert "off: your preference" in run(app, "/skills")


def test_no_ltm_switches_behaviours_off(
    app_factory: AppFactory, fake_server: FakeServer, home: object
) -> None:
    app = app_factory(no_ltm=True)
    fake_server.script(Reply(text="ok"))
    app.run_turn("hello")
    assert HEADER not in system_sent(fake_server)
    with pytest.raises(CommandError, match="off in this run"):
        run(app, "/bad")
    with pytest.raises(CommandError, match="off in this run"):
        run(app, "/skills")


def test_skills_add_and_errors(app_factory: AppFactory) -> None:
    app = app_factory()
    assert "Added u-use-type-hints" in run(app, "/skills add Use type hints everywhere")
    with pytest.raises(CommandError, match="already"):
        run(app, "/skills add use type hints everywhere")
    with pytest.raises(CommandError, match="no behaviour"):
        run(app, "/skills ban nope")
    with pytest.raises(CommandError, match="Unknown /skills subcommand"):
        run(app, "/skills frob")
    with pytest.raises(CommandError, match="Usage"):
        run(app, "/skills add")
    assert "No feedback" in run(app, "/skills history")


def test_undo_of_a_turn_is_a_signal_against_its_behaviours(
    app_factory: AppFactory, fake_server: FakeServer, project: Path
) -> None:
    app = app_factory(yes=True)
    run(app, "/skills pin plan-first")
    fake_server.script(
        Reply(
            text="Plan: write a.txt with the new content, which is all the task asks for.",
            tool_calls=[call("file_operations", operation="write_file", path="a.txt", content="new\n")],
        ),
        Reply(text="written"),
    )
    app.run_turn("write a.txt")
    assert (project / "a.txt").read_text() == "new\n"
    assert skill(app, "plan-first") == (1.0, 1.0, 0)  # --yes: nobody was asked, no signal
    assert app.undo(1)
    assert not (project / "a.txt").exists()
    assert skill(app, "plan-first") == (1.0, 1.5, 1)
    kinds = [(s.kind, s.turn) for s in app.services.skills.store.signals()]  # type: ignore[union-attr]
    assert kinds == [("undo", 1)]
