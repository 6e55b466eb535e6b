# ruff: noqa: F811  (the pty fixtures are imported from test_repl_pty)
"""The resume view tells the truth (issue 35 item 4), through the installed clio in a real
pseudo-terminal, read on a terminal emulator's screen: clio's notes (an /undo, plan mode turned
off) are shown as clio's, apart from the user's words; an answer cut off by Ctrl-C is marked; long
lines wrap at spaces, never inside a word. The HTML export of the same session says the same."""

from __future__ import annotations

import re
from pathlib import Path

from testkit.clio_run import run_clio
from testkit.fakeserver import FakeServer, Reply
from tests.e2e.test_repl_pty import Spawn, project, spawn, wait_screen  # noqa: F401  (fixtures)
from tests.e2e.test_undo import change_three_files, setup_files

LONG = " ".join(["configuration", "editing", "loader", "override", "behaviour", "consistently"] * 8)
PARTIAL = "ECHO first part of the answer.\n\n" + "more words " * 200


def test_resume_after_undo_plan_toggles_and_ctrl_c(
    spawn: Spawn, fake_server: FakeServer, project: Path
) -> None:
    setup_files(project)
    change_three_files(fake_server)
    fake_server.script(Reply(text=LONG), Reply(text=PARTIAL, chunk_chars=4, delay=0.03))
    term = spawn("--yes")
    term.prompt()
    term.type("fix add, start notes, drop old.txt")
    term.expect(r"Done\.")
    term.prompt()
    term.type("/undo")
    term.expect(r"Undid 3 file change")
    term.prompt()
    term.type("/plan on")
    term.prompt()
    term.type("/plan off")
    term.prompt()
    term.type("carry on please")
    term.expect(r"consistently\s*\n")
    term.prompt()
    term.type("tell me more")
    term.expect(r"ECHO first part")
    term.child.sendintr()
    term.expect(r"⏹ interrupted")
    term.prompt()
    term.child.sendeof()
    assert term.wait_exit() == 0

    again = spawn("--resume")
    again.expect(r"where you were")
    # the view's own lines start with the prompt's mark ("› fix add…"): wait for the toolbar, which
    # only the prompt shows, so the screen is read once the whole view is printed
    shown = wait_screen(again, " tokens (")
    view = shown[shown.index("where you were") :]
    rows = view.splitlines()
    assert any(
        re.fullmatch(r"  clio: the user ran /undo; these file changes of yours were reverted: .*", r)
        for r in rows
    ), view
    assert "  clio: the user turned plan mode off: you may now make changes." in rows, view
    assert "› carry on please" in rows and "› fix add, start notes, drop old.txt" in rows, view
    assert not any(r.startswith("› ") and "clio" in r for r in rows), view  # no note as the user's words
    assert re.search(
        r"› tell me more\n  ECHO first part.*\n(.*\n)*?  ⏹ interrupted \(cut off by the user\)", view
    ), view
    # the long answer wraps at spaces: every word on screen whole
    at = rows.index("› carry on please")
    answer_rows = rows[at + 1 : rows.index("› tell me more")]
    assert len(answer_rows) >= 3, view
    words = set(LONG.split())
    for row in answer_rows:
        assert row.startswith("  "), view
        assert all(w.removesuffix("…") in words for w in row.split()), (row, view)
    again.child.sendeof()
    assert again.wait_exit() == 0

    # the HTML export of the same session: the notes as clio's, the cut-off answer marked
    out = project / "export.html"
    r = run_clio(
        ["--resume", "-p", f"/session export {out}"],
        server=fake_server,
        project=project,
        home=project.parent / "home",
    )
    assert r.returncode == 0, r.stderr
    page = out.read_text(encoding="utf-8")
    told = next(a for a in re.findall(r"<article .*?</article>", page, re.S) if "carry on please" in a)
    notes = re.search(r'<div class="clio-notes">(.*?)</div>', told, re.S)
    assert (
        notes
        and "the user ran /undo;" in notes.group(1)
        and "the user turned plan mode off" in notes.group(1)
    )
    content = re.search(r'<div class="content">(.*?)</div>', told, re.S)
    assert content and "carry on please" in content.group(1) and "clio" not in content.group(1)
    cut = next(a for a in re.findall(r"<article .*?</article>", page, re.S) if "ECHO first part" in a)
    assert "interrupted: the user cut this answer off here" in cut
