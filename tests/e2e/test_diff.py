"""``/diff`` through the installed clio (issue 27): the session's file changes as one unified diff,
net per file across turns and runs (an edit edited again shows once, from before clio's first
change to now), created and deleted files, a file changed since by someone else named, undone
turns left out."""

from __future__ import annotations

from pathlib import Path

from testkit.clio_run import run_clio
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import call
from tests.e2e.test_undo import change_three_files, setup_files


def test_diff_shows_the_sessions_net_changes(fake_server: FakeServer, project: Path, home: Path) -> None:
    setup_files(project)
    (project / "keep.txt").write_text("one\n", encoding="utf-8")
    empty = run_clio(["-p", "/diff"], server=fake_server, project=project, home=home)
    assert empty.returncode == 0 and "No file was changed by clio" in empty.stdout
    change_three_files(fake_server)
    r = run_clio(["--yes", "-p", "fix add, notes, drop old.txt"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    fake_server.script(
        Reply(tool_calls=[
            call("file_operations", operation="replace_string", path="calc.py", old_string="a + b", new_string="a * b"),
            call("file_operations", operation="write_file", path="keep.txt", content="two\n"),
        ]),
        Reply(text="Done again."),
        Reply(tool_calls=[call("file_operations", operation="write_file", path="keep.txt", content="three\n")]),
        Reply(text="Third."),
    )  # fmt: skip
    r = run_clio(["--yes", "--resume", "-p", "multiply, bump keep"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    r = run_clio(["--yes", "--resume", "-p", "bump keep again"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    undo = run_clio(["--resume", "-p", "/undo"], server=fake_server, project=project, home=home)
    assert "keep.txt: restored" in undo.stdout  # keep.txt holds "two" again
    (project / "notes.md").write_text("# notes\nmine\n", encoding="utf-8")  # someone else's change

    d = run_clio(["--resume", "-p", "/diff"], server=fake_server, project=project, home=home)
    assert d.returncode == 0, d.stderr
    out = d.stdout
    assert "--- a/calc.py\n+++ b/calc.py" in out
    assert "-    return a - b\n+    return a * b" in out and "a + b" not in out  # net: from before the first change
    assert "--- /dev/null\n+++ b/notes.md" in out and "+mine" in out
    assert "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-old but precious" in out
    assert "-one\n+two" in out and "three" not in out  # the undone turn is left out
    assert "notes.md: changed after clio's last change to it" in out
    assert "4 of 4 file(s) clio changed differ from before its changes." in out
