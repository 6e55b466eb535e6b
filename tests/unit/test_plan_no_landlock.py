"""Plan mode where the kernel has no Landlock (issue 34, item 2): shell commands are refused with
one line saying why, never run on the strength of the word check alone."""

from __future__ import annotations

import pytest

from clio.safety.containment import Availability
from clio.tools import terminal
from clio.tools.policy import plan_refusal


def test_plan_mode_refuses_every_shell_command_without_landlock(monkeypatch: pytest.MonkeyPatch) -> None:
    args = {"operation": "execute", "command": "ls"}
    none = Availability(
        False, 0, False, "no OS sandbox: this kernel has no Landlock (Linux >= 5.13); every shell command will ask"
    )
    monkeypatch.setattr(terminal, "availability", lambda: none)
    why = plan_refusal(terminal.SPEC, args)
    assert why is not None and "\n" not in why
    assert "`ls` was not run: plan mode runs shell commands only in a read-only kernel sandbox" in why
    assert "this kernel has no Landlock (Linux >= 5.13)" in why and "will ask" not in why


def test_plan_mode_lets_a_read_through_where_landlock_is(monkeypatch: pytest.MonkeyPatch) -> None:
    some = Availability(True, 4, True, "OS sandbox: Landlock ABI 4")
    monkeypatch.setattr(terminal, "availability", lambda: some)
    assert plan_refusal(terminal.SPEC, {"operation": "execute", "command": "ls"}) is None
