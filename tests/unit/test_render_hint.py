"""The one-line hint after a tool line (clio.ui.render.result_hint): whole words, never cut inside one."""

from __future__ import annotations

from clio.ui.render import result_hint


def test_a_short_first_line_is_kept_whole() -> None:
    assert result_hint("\n\n  Wrote calc.py (12 bytes)\nmore") == "Wrote calc.py (12 bytes)"


def test_a_long_line_is_cut_between_words() -> None:
    text = "Error: not allowed: edit calc.py. No user is present to approve it (one-shot mode)"
    hint = result_hint(text, 40)
    assert hint.endswith("…") and len(hint) <= 40
    assert text.startswith(hint[:-1])
    assert text[len(hint) - 1] == " "  # the cut falls on a space: the last word is whole


def test_one_long_word_is_cut_when_there_is_no_space_to_cut_at() -> None:
    hint = result_hint("x" * 100, 20)
    assert hint == "x" * 19 + "…"


def test_a_pretty_printed_json_result_is_summarised_on_one_line() -> None:
    """Issue 27: an MCP tool's result line showed only '{'."""
    text = '{\n  "timezone": "UTC",\n  "datetime": "2026-11-23T15:00:00+00:00",\n  "is_dst": false\n}'
    hint = result_hint(text, 60)
    assert hint.startswith('{ "timezone": "UTC", "datetime"') and len(hint) <= 61
    assert result_hint("[\n  1,\n  2\n]") == "[ 1, 2 ]"
