# ruff: noqa: F811  (the pty fixtures are imported from test_repl_pty)
"""The REPL toolbar's token count (issue 35 item 4), read on a real pseudo-terminal: it never runs
backwards while the conversation only grows (the estimate before the first reply uses a default
characters-per-token ratio, the endpoint's first usage figure teaches a different one), and it
starts again from the true figure after /clear."""

from __future__ import annotations

import re
import time
from pathlib import Path

from testkit.fakeserver import FakeServer, Reply
from tests.e2e.test_repl_pty import PROMPT, Spawn, Term, project, screen_of, spawn  # noqa: F401  (fixtures)

TOOLBAR = r"fake-model · ([\d,]+)/50,000 tokens"


def count(term: Term) -> int:
    """The toolbar's count on the screen once the prompt is back (prompt-toolkit redraws only
    what changed, so it is read from a terminal emulator's screen, not from the byte stream)."""
    term.expect(PROMPT)
    deadline = time.monotonic() + 5
    while True:
        term._pump(0.2)
        shown = screen_of(term)
        found = re.findall(TOOLBAR, shown)
        if found or time.monotonic() > deadline:
            break
    assert len(found) == 1, repr(shown)
    return int(found[0].replace(",", ""))


def test_the_toolbar_count_never_runs_backwards_for_the_same_conversation(
    spawn: Spawn, fake_server: FakeServer, project: Path
) -> None:
    fake_server.chars_per_token = 6.0  # the endpoint's tokens are larger than clio's default guess
    fake_server.script(Reply(text="first answer"), Reply(text="second answer"), Reply(text="third answer"))
    term = spawn(env={"CLIO_CONTEXT_WINDOW": "50000"})
    counts = [count(term)]
    for n, text in enumerate(("first", "second", "third")):
        words = " padding" * (800 if n == 2 else 0)  # the last question grows the window past the first figure
        term.type(f"question number {n}{words}")
        term.expect(rf"{text} answer")
        counts.append(count(term))
    assert counts == sorted(counts), counts
    assert counts[-1] > counts[0], counts
    term.type("/clear")
    cleared = count(term)
    assert cleared < counts[-1], (cleared, counts)  # the window truly shrank: the count says so
    term.child.sendeof()
    assert term.wait_exit() == 0
