"""``/memory add`` in-process: the user's words as a clean rule (by: user) even after the turn read
files, secrets redacted before the write, incognito refusing; the REPL's ``#`` shortcut parser."""

from __future__ import annotations

import pytest

from clio.commands.dispatch import run_slash
from clio.memory.provenance import BY_USER, Provenance, from_user
from clio.ui.repl import remembered
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import AppFactory, call, console_text

KEY = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.mark.parametrize(
    ("line", "text"),
    [
        ("# always use tabs", "always use tabs"),
        ("  ## run make lint first ", "run make lint first"),
        ("#", None),
        ("# a heading\nand a pasted document", None),
        ("fix #12 please", None),
        ("/memory add x", None),
    ],
)
def test_hash_shortcut(line: str, text: str | None) -> None:
    assert remembered(line) == text


def test_user_provenance_round_trips_clean() -> None:
    p = from_user("s1", 5.0)
    assert p.by == BY_USER and not p.tainted and p.describe() == "written by you · session s1"
    assert Provenance.from_dict(p.to_dict()) == p


def test_memory_add_after_a_tainted_turn_is_still_the_users(
    app_factory: AppFactory, fake_server: FakeServer, project: object
) -> None:
    app = app_factory(yes=True)
    fake_server.script(Reply(tool_calls=[call("terminal_operations", operation="execute", command="echo hi")]), Reply(text="ok"))
    app.run_turn("run echo")
    assert run_slash(app, f"/memory add never push to main; key {KEY}")
    assert app.services.ltm is not None
    (entry,) = app.services.ltm.all()
    assert entry.type == "rule" and entry.provenance is not None and entry.provenance.by == BY_USER
    assert not entry.tainted and KEY not in entry.text()
    assert "secret redacted" in console_text(app.console)


def test_memory_add_in_incognito_stores_nothing(app_factory: AppFactory) -> None:
    app = app_factory(incognito=True)
    assert run_slash(app, "/memory add something")
    assert "incognito" in console_text(app.console)
