"""End to end, issue 11 (small hole): a damaged session.json no longer makes its session unreachable."""

from __future__ import annotations

import json
from pathlib import Path

from testkit.clio_run import run_clio, session_dirs, stderr_lines, user_texts
from testkit.fakeserver import FakeServer


def test_damaged_session_json_is_rebuilt_listed_and_resumable(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    r = run_clio(["-p", "first task about the parser"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    (sdir,) = session_dirs(project)
    meta = sdir / "session.json"
    meta.write_bytes(b'{"id": "' + sdir.name.encode() + b'", "name": "first task ab')  # torn

    r = run_clio(["--sessions"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert sdir.name in r.stdout
    (line,) = stderr_lines(r)  # one line naming the file and where it went
    (copy,) = sdir.glob("session.damaged-*.json")
    assert "session.json" in line and copy.name in line
    rebuilt = json.loads(meta.read_text(encoding="utf-8"))
    assert rebuilt["id"] == sdir.name and rebuilt["message_count"] == 2
    assert rebuilt["name"] == "first task about the parser"

    r = run_clio(["--resume", sdir.name, "-p", "second task"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert stderr_lines(r) == []
    assert user_texts(fake_server.turn_requests[-1]) == ["first task about the parser", "second task"]  # (its read-back aside)
