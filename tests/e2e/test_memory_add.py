"""``/memory add TEXT`` and the REPL's ``#`` shortcut (issue 27) through the installed clio: the
user's own words become a rule in long-term memory (provenance by: user, never tainted),
redacted, deduplicated, confirmed in one line, and sent in the next session's prompt; ``#``
sends nothing to the model."""

from __future__ import annotations

import json
from pathlib import Path

from testkit.clio_run import run_clio, system_text
from testkit.fakeserver import FakeServer, Reply
from tests.e2e.test_repl_pty import Spawn, spawn  # noqa: F401  (fixture)

KEY = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def entries(project: Path) -> list[dict[str, object]]:
    data = json.loads((project / ".clio" / "ltm.json").read_text(encoding="utf-8"))
    return list(data["entries"] if isinstance(data, dict) else data)


def test_memory_add_in_one_shot_runs(fake_server: FakeServer, project: Path, home: Path) -> None:
    r = run_clio(["-p", "/memory add always run ruff before committing"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Remembered rule r-") and len(r.stdout.strip().splitlines()) == 1
    again = run_clio(["-p", "/memory add Always run ruff before committing."], server=fake_server, project=project, home=home)
    assert "Already remembered; confirmed rule" in again.stdout
    (stored,) = entries(project)
    assert stored["type"] == "rule" and stored["provenance"]["by"] == "user"  # type: ignore[index]
    assert stored["provenance"]["tainted"] is False  # type: ignore[index]
    listed = run_clio(
        ["-p", "/memory list rules"], server=fake_server, project=project, home=home, env_extra={"COLUMNS": "200"}
    )
    assert "written by you" in listed.stdout

    secret = run_clio(["-p", f"/memory add deploy with token {KEY}"], server=fake_server, project=project, home=home)
    assert "(1 secret redacted)" in secret.stdout
    assert KEY not in (project / ".clio" / "ltm.json").read_text(encoding="utf-8")
    assert fake_server.chat_requests == []  # none of it went to the model

    fake_server.script(Reply(text="ok"))
    run_clio(["-p", "hello"], server=fake_server, project=project, home=home)
    assert "always run ruff before committing" in system_text(fake_server.chat_requests[-1]).lower()

    empty = run_clio(["-p", "/memory add"], server=fake_server, project=project, home=home)
    assert empty.returncode == 1 and "Usage: /memory add <text>" in empty.stderr


def test_hash_shortcut_in_the_repl(spawn: Spawn, fake_server: FakeServer, project: Path) -> None:  # noqa: F811
    term = spawn()
    term.prompt()
    term.type("# use tabs in Makefiles")
    term.expect(r"Remembered rule r-\w+: use tabs in Makefiles")
    term.prompt()
    assert fake_server.chat_requests == []
    (stored,) = entries(project)
    assert stored["rule"] == "use tabs in Makefiles"
    term.child.sendeof()
    assert term.wait_exit() == 0
