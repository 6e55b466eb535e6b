"""End to end: the model finds and reads text in files larger than the old limits (issue 27).

grep_search skipped files over 2 MB and said "no matches ... in 0 files"; read_file refused a line
range of a file over 20 MB and pointed at grep_search. Through the installed clio and the fake
server: what the model gets back is the text, and a skip is said.
"""

from __future__ import annotations

from pathlib import Path

from testkit.clio_run import run_clio, tool_results
from testkit.fakeserver import FakeServer, Reply


def _log(path: Path, lines: int, needle_at: int) -> None:
    row = "x" * 79 + "\n"
    with path.open("w") as f:
        for i in range(1, lines + 1):
            f.write(f"ERROR disk full at line {i}".ljust(79) + "\n" if i == needle_at else row)


def test_large_files_are_searched_and_read_by_range(fake_server: FakeServer, project: Path, home: Path) -> None:
    lines = 262_500  # 21 MB of 80-byte lines
    _log(project / "server.log", lines, lines - 3)
    (project / "core.bin").write_bytes(b"\x00ELF ERROR")
    fake_server.script(
        Reply(
            tool_calls=[
                {"id": "g", "name": "file_operations", "arguments": {"operation": "grep_search", "pattern": "ERROR"}},
                {
                    "id": "r",
                    "name": "file_operations",
                    "arguments": {
                        "operation": "read_file",
                        "path": "server.log",
                        "start_line": lines - 4,
                        "end_line": lines - 2,
                    },
                },
            ]
        ),
        Reply(text="The disk filled up."),
    )
    r = run_clio(["-p", "why did the server stop?", "--yes"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    results = tool_results(fake_server.chat_requests[-1])
    assert results["g"].splitlines() == [
        f"server.log:{lines - 3}: ERROR disk full at line {lines - 3}",
        "[skipped: 1 binary file]",
    ]
    assert results["r"].splitlines() == [
        f"server.log (lines {lines - 4}-{lines - 2} of {lines})",
        "x" * 79,
        f"ERROR disk full at line {lines - 3}".ljust(79),
        "x" * 79,
    ]
