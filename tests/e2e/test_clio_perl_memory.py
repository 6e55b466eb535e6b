"""CLIO users keep their memory (issue 35): a ``.clio/ltm.json`` written by CLIO, the Perl agent
clio grew from, is read (never moved aside), sent as notes to verify marked as imported from CLIO,
kept as it was in ``ltm.clio-perl.json`` once clio writes its own shape, and made the user's own
by ``/memory adopt-clio``.

The installed ``clio`` against the fake server, in a project holding the file CLIO itself wrote
(tests/fixtures/clio-perl/ltm.json, README.md beside it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from testkit.clio_run import context_text, run_clio
from testkit.fakeserver import FakeServer, Reply

FIXTURE = Path(__file__).parents[1] / "fixtures" / "clio-perl" / "ltm.json"
FACT = "The API server reads its port from APP_PORT and defaults to 8080"
ERROR = "ImportError: libpq.so.5 not found"
PATTERN = "Every HTTP handler validates its input with a pydantic model declared beside it"
IMPORTED = "[imported from CLIO's memory: verify before relying on it]"


def clio_project(project: Path) -> Path:
    (project / ".clio").mkdir()
    ltm = project / ".clio" / "ltm.json"
    shutil.copy(FIXTURE, ltm)
    return ltm


def test_a_clio_users_memory_is_read_kept_and_adoptable(fake_server: FakeServer, project: Path, home: Path) -> None:
    ltm = clio_project(project)
    fake_server.script(Reply(text="Port 8080."), Reply(text="ok"))
    r = run_clio(["-p", "which port does the API server use?"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert "damaged" not in r.stderr
    notes = context_text(fake_server.chat_requests[0])
    for text in (FACT, ERROR, PATTERN):
        line = next((ln for ln in notes.splitlines() if text in ln), "")
        assert line.endswith(IMPORTED), notes  # another agent's notes: to verify, never the user's rules
    assert not list((project / ".clio").glob("ltm.damaged*"))

    listed = run_clio(["-p", "/memory list imported"], server=fake_server, project=project, home=home)
    assert listed.returncode == 0, listed.stderr
    assert "3 entries" in listed.stdout and "imported from CLIO" in listed.stdout

    adopt = run_clio(["-p", "/memory adopt-clio"], server=fake_server, project=project, home=home)
    assert adopt.returncode == 0, adopt.stderr
    assert "3 entries from CLIO are now yours" in adopt.stdout
    # clio wrote its own shape: CLIO's file is kept beside, byte for byte
    assert (project / ".clio" / "ltm.clio-perl.json").read_bytes() == FIXTURE.read_bytes()
    data = json.loads(ltm.read_text(encoding="utf-8"))
    assert data["imported_from"]["agent"] == "CLIO" and len(data["entries"]) == 3
    assert {e["provenance"]["by"] for e in data["entries"]} == {"user"}
    again = run_clio(["-p", "/memory adopt-clio"], server=fake_server, project=project, home=home)
    assert "No entries imported from CLIO's memory are waiting" in again.stdout

    r2 = run_clio(["-p", "and the port again?"], server=fake_server, project=project, home=home)
    assert r2.returncode == 0, r2.stderr
    notes = context_text(fake_server.chat_requests[1])
    fact_line = next(ln for ln in notes.splitlines() if FACT in ln)
    assert "[" not in fact_line  # the user's own now: no mark
    mine = run_clio(["-p", "/memory list discovery"], server=fake_server, project=project, home=home)
    assert "adopted by you from CLIO" in mine.stdout
