"""End to end, issue 25 item 8: a .clio symlink leaving the project, a project config that would
make clio unusable, and temp files an interrupted write left in the user's tree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from testkit.clio_run import run_clio, run_scripted, stderr_lines
from testkit.fakeserver import Reply


def test_a_clio_symlink_leaving_the_project_is_refused_in_one_line(tmp_path: Path, home: Path) -> None:
    proj, elsewhere = tmp_path / "proj", tmp_path / "elsewhere"
    proj.mkdir()
    elsewhere.mkdir()
    (proj / ".clio").symlink_to(elsewhere)
    r = run_clio(["-p", "hello"], server=None, project=proj, home=home)
    assert r.returncode == 2
    (line,) = stderr_lines(r)
    assert "is a symlink to" in line and "outside the project" in line and "--incognito" in line
    assert list(elsewhere.iterdir()) == []  # nothing written through it
    ok, _ = run_scripted(["--incognito", "-p", "hello"], project=proj, home=home)
    assert ok.returncode == 0 and list(elsewhere.iterdir()) == []
    # clio mcp serves the same folder: refused the same way (stdin closed: it would serve stdio)
    served = run_clio(["mcp"], server=None, project=proj, home=home)
    assert served.returncode == 2 and "outside the project" in served.stderr, served.stderr
    assert list(elsewhere.iterdir()) == []
    (proj / ".clio").unlink()
    (proj / "inner").mkdir()
    (proj / ".clio").symlink_to(proj / "inner")  # a link that stays inside is fine
    inside, _ = run_scripted(["-p", "hello"], Reply(text="hi"), project=proj, home=home)
    assert inside.returncode == 0, inside.stderr
    assert (proj / "inner" / "sessions").is_dir()  # clio's state went through the link, inside


def test_a_project_config_cannot_make_clio_unusable(tmp_path: Path, home: Path) -> None:
    proj = tmp_path / "proj"
    (proj / ".clio").mkdir(parents=True)
    (proj / ".clio" / "config.yaml").write_text(
        "redaction: 0\nmax_iterations: -1\ncontext_window: lots\ntemperature: 9\nprofile: tiny\nmax_retries: 1000\n"
    )
    todo = Reply(tool_calls=[{"name": "todo_operations", "arguments": {"operation": "read"}}])
    r, server = run_scripted(["-p", "hello"], todo, Reply(text="Done."), project=proj, home=home)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Done.\n"  # the agent still works: max_iterations -1 was ignored
    ignored = [ln for ln in stderr_lines(r) if " ignored (" in ln]
    assert len(ignored) == 6, stderr_lines(r)
    assert any("redaction: 0 ignored (expected off or standard or strict); using 'standard'" in ln for ln in ignored)
    assert any("max_iterations: -1 ignored (expected 1 to 1000); using 40" in ln for ln in ignored)
    body = server.chat_requests[0]
    assert "temperature" not in body or body["temperature"] <= 2


def test_temp_files_an_interrupted_write_left_are_swept_on_the_next_start(tmp_path: Path, home: Path) -> None:
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / ".clio").mkdir()
    journal = proj / ".clio" / "inflight"
    writer = (
        "import os, sys\nfrom pathlib import Path\n"
        "from clio.store.atomic import _journaled_temp\n"
        f"fd, tmp, entry = _journaled_temp(Path({str(proj / 'src' / 'f13.py')!r}), Path({str(journal)!r}))\n"
        "os.write(fd, b'half a file'); print(tmp, flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    killed = subprocess.run([sys.executable, "-c", writer], capture_output=True, text=True, timeout=60)
    assert killed.returncode == -9
    stray = Path(killed.stdout.strip())
    assert stray.exists() and stray.name.startswith(".f13.py.")
    mine = proj / "src" / ".notes.txt.1-deadbeef.tmp"  # the user's own file with a look-alike name
    mine.write_text("keep me")
    r, _ = run_scripted(["-p", "hello"], project=proj, home=home)
    assert r.returncode == 0, r.stderr
    assert not stray.exists() and mine.exists()
    assert any("removed 1 temp file(s) an interrupted write left: src/.f13.py." in ln for ln in stderr_lines(r))
    assert list(journal.iterdir()) == []
