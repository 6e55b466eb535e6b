"""clio.ui.prefixed: every line written to a one-shot run's stderr starts with ``clio: `` once."""

from __future__ import annotations

import io

from clio.ui.prefixed import PrefixedLines


def test_each_line_gets_the_prefix_once_whatever_the_writes() -> None:
    raw = io.StringIO()
    out = PrefixedLines(raw)
    out.write("one\ntw")  # a line split over writes is prefixed once
    out.write("o\n\nclio: usage: already\n")  # a blank line too; a line clio prefixed itself is left
    out.write("\x1b[33mretrying\x1b[0m\n")  # after the colour codes it starts with
    out.write("Allow? ")
    out.flush()  # a question without its line end: out now, prefixed
    out.write("y\n")  # the rest of that line: not prefixed again
    assert raw.getvalue() == (
        "clio: one\nclio: two\nclio: \nclio: usage: already\nclio: \x1b[33mretrying\x1b[0m\nclio: Allow? y\n"
    )
