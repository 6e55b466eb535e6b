"""End to end, issue 15: the installed clio learns from /bad which behaviour to leave out.

Twelve one-shot sessions against the fake server, one user-wide $CLIO_HOME. Whenever
``short-answers`` (which the fake model's short replies show) is in the system prompt, the user
answers that session with ``clio --resume -p "/bad"`` (the last turn of the resumed session). The behaviour must leave the
prompt and stay out; /skills and the stored signals must say why. The draws are seeded
(CLIO_SKILLS_SEED) so the run is reproducible; the learning is what the posteriors do.
"""

from __future__ import annotations

import json
from pathlib import Path

from clio.memory.skills import HEADER, TRY_HEADER, parse_catalogue
from clio.prompts import load_prompt
from testkit.clio_run import run_clio, system_text
from testkit.fakeserver import FakeServer

SESSIONS = 12
ENV = {"CLIO_SKILLS_SEED": "7", "COLUMNS": "250"}
ARGS = ["--context-window", "32000"]


def active(server: FakeServer) -> list[str]:
    """Ids of the behaviours in the last request's system prompt."""
    system = system_text(server.chat_requests[-1])
    heads = [system.find(h) for h in (HEADER, TRY_HEADER) if h in system]
    if not heads:
        return []
    block = system[min(heads) :]
    return [s.id for s in parse_catalogue(load_prompt("skills.md")) if f"- {s.text}" in block]


def test_repeated_bad_makes_a_behaviour_leave_the_prompt(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    seen: list[list[str]] = []
    target = "short-answers"
    bads = 0
    for i in range(SESSIONS):
        r = run_clio(
            [*ARGS, "-p", f"task {i}: tidy the module"],
            server=fake_server,
            project=project,
            home=home,
            env_extra=ENV,
        )
        assert r.returncode == 0, r.stderr
        seen.append(active(fake_server))
        if target in seen[-1]:  # /bad judges what the turn showed (clio.memory.shown)
            before = len(fake_server.chat_requests)
            r = run_clio(
                [*ARGS, "--resume", "-p", "/bad not like this"],
                server=fake_server,
                project=project,
                home=home,
                env_extra=ENV,
            )
            assert r.returncode == 0, r.stderr
            assert target in r.stdout + r.stderr  # "Noted (bad) for turn 1: ..."
            assert len(fake_server.chat_requests) == before  # a command asks the model nothing
            bads += 1
    assert 1 <= bads < SESSIONS - 3
    assert all(target not in s for s in seen[-3:]), seen
    data = json.loads((home / "skills.json").read_text())
    mine = [s for s in data["signals"] if target in s["skills"]]
    assert len(mine) == bads and {s["kind"] for s in mine} == {"bad"}
    assert all(s["note"] == "not like this" and s["turn"] == 1 for s in mine)
    stats = next(s for s in data["skills"] if s["id"] == target)
    assert (stats["a"], stats["b"], stats["n"]) == (1.0, 1.0 + bads, bads)
    shown = run_clio(["-p", "/skills"], server=fake_server, project=project, home=home, env_extra=ENV).stdout
    assert target in shown


def test_no_ltm_and_incognito_leave_behaviours_out(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    for flag in ("--no-ltm", "--incognito"):
        r = run_clio(
            [*ARGS, flag, "-p", "hello"], server=fake_server, project=project, home=home, env_extra=ENV
        )
        assert r.returncode == 0, r.stderr
        assert active(fake_server) == []
        assert HEADER not in system_text(fake_server.chat_requests[-1])
    assert not (home / "skills.json").exists()
