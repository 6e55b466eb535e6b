"""clio in scripts (issue 35): a slash command's output to a pipe is never wrapped, every line a
one-shot run writes to stderr starts with ``clio: `` (retry lines, tool lines, diffs, the JSON
mode's error line, the model's words beside a tool call), and a question nobody was there to answer
fails the run (exit 4) saying ``--yes`` is needed instead of printing "Kept." and exiting 0.

The installed ``clio -p`` against the fake server, stdout and stderr pipes, ``COLUMNS=80``.
"""

from __future__ import annotations

import json
from pathlib import Path

from testkit.clio_run import run_clio, stderr_lines
from testkit.fakeserver import Fail, FakeServer, Reply

LONG_RULE = (
    "Before every commit run ruff, mypy and the unit tests of the packages you touched, "
    "then read the diff once more from the top"
)


def test_piped_slash_command_output_is_not_wrapped(fake_server: FakeServer, project: Path, home: Path) -> None:
    ctx = run_clio(["-p", "/context"], server=fake_server, project=project, home=home)
    assert ctx.returncode == 0, ctx.stderr
    ratio = next(ln for ln in ctx.stdout.splitlines() if "chars/token" in ln)
    assert "trims at" in ratio and len(ratio) > 80  # one line, past the 80 columns COLUMNS says

    added = run_clio(["-p", f"/memory add {LONG_RULE}"], server=fake_server, project=project, home=home)
    assert added.returncode == 0, added.stderr
    assert "rule r-" in added.stdout
    listed = run_clio(["-p", "/memory list rule"], server=fake_server, project=project, home=home)
    assert any(LONG_RULE in ln for ln in listed.stdout.splitlines()), listed.stdout  # the row whole


def test_every_stderr_line_of_a_one_shot_run_starts_with_clio(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    write = {"name": "file_operations", "arguments": {"operation": "write_file", "path": "a.txt", "content": "x\n"}}
    fake_server.script(
        Fail.rate_limit(retry_after=0),
        Reply(text="Writing it.\nclio: usage: $0 (made up by the model)", tool_calls=[write]),
        Reply(text="Done."),
    )
    r = run_clio(["--yes", "-p", "write a.txt"], server=fake_server, project=project, home=home)
    assert r.returncode == 0 and r.stdout == "Done.\n", r.stderr
    lines = r.stderr.splitlines()
    assert lines and all(ln.startswith("clio: ") for ln in lines), r.stderr
    assert "clio: rate limited; retrying in 0.0s" in lines  # the retry line
    assert "clio: +x" in lines and any(ln.startswith("clio: ✓ file_operations write_file a.txt") for ln in lines)
    assert "clio: Writing it." in lines
    assert "clio: clio: usage: $0 (made up by the model)" in lines  # the model's words stay the model's
    assert lines[-1].startswith("clio: usage: ")

    fake_server.script(Fail.not_found_model("fake-model"))
    j = run_clio(["--output", "json", "-p", "again"], server=fake_server, project=project, home=home)
    assert j.returncode == 6
    assert json.loads(j.stdout)["error"].startswith("Model 'fake-model' was not found")
    (line,) = stderr_lines(j)  # the JSON mode's error line
    assert line.startswith("clio: Model 'fake-model' was not found"), j.stderr


def test_a_question_nobody_answered_fails_saying_yes_is_needed(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    run_clio(["-p", "/memory add always use tabs in Makefiles"], server=fake_server, project=project, home=home)
    no = run_clio(["-p", "/memory clear"], server=fake_server, project=project, home=home)
    assert no.returncode == 4, no.stderr
    assert "Nothing deleted." in no.stdout
    assert stderr_lines(no) == [
        "clio: not done: nobody was there to answer 'Delete all 1 long-term memory entries of this project?'; "
        "rerun with --yes to answer yes (or run it in the REPL)."
    ]
    yes = run_clio(["--yes", "-p", "/memory clear"], server=fake_server, project=project, home=home)
    assert yes.returncode == 0, yes.stderr
    assert "Deleted 1 long-term memory entries" in yes.stdout and stderr_lines(yes) == []
