"""Invisible and control characters are shown escaped: the pure function, the terminal, the HTML export."""

from __future__ import annotations

import io
import re
import signal
from html.parser import HTMLParser
from typing import Any

import pytest
from rich.console import Console
from rich.live import Live

from clio.export.html import render_html
from clio.safety.visible import char_escape, escape_invisible, has_invisible, split_invisible
from clio.ui.render import ESCAPE_STYLE, MarkdownStream, OneShotUI, ReplUI, visible

SPOOF = "file_\u202etxt.exe"  # shows as file_exe.txt when drawn raw

INVISIBLES = [
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",  # bidi embeddings and overrides
    "\u2066", "\u2067", "\u2068", "\u2069",  # bidi isolates
    "\u200b", "\u200c", "\u200d", "\u200e", "\u200f",  # zero-width, LRM, RLM
    "\u061c",  # arabic letter mark
    "\x00", "\x07", "\x08", "\x0b", "\x0c", "\x1b", "\x1f", "\x7f",  # C0 and DEL
    "\x80", "\x85", "\x9b", "\x9f",  # C1
    "\ufeff", "\u2060", "\u2028", "\u2029", "\U000e0041",  # BOM, word joiner, separators, tag
]  # fmt: skip

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


# ------------------------------------------------------------------------------ the pure function


def test_the_spoofed_name_is_shown_with_its_override_escaped() -> None:
    assert escape_invisible(SPOOF) == "file_\\u202etxt.exe"
    assert has_invisible(SPOOF) and not has_invisible("file_txt.exe")


@pytest.mark.parametrize("ch", INVISIBLES, ids=lambda c: f"U+{ord(c):04X}")
def test_every_invisible_or_control_character_is_escaped(ch: str) -> None:
    out = escape_invisible(f"a{ch}b")
    assert ch not in out
    assert out == f"a{char_escape(ch)}b"
    assert not has_invisible(out)  # the escape itself is plain ASCII


def test_escape_forms() -> None:
    assert char_escape("\x1b") == "\\x1b"
    assert char_escape("\u202e") == "\\u202e"
    assert char_escape("\U000e0041") == "\\U000e0041"


def test_ordinary_text_is_untouched() -> None:
    text = (
        "tab\there\nnew line, CRLF\r\n, é 日本語 עברית العربية 🙂 👨\u200d👩\u200d👧 `code` \\u202e literal"
    )
    assert escape_invisible(text) == text


def test_a_lone_carriage_return_is_escaped_but_not_a_crlf_line_end() -> None:
    assert escape_invisible("ok\rFAKE\r\n") == "ok\\x0dFAKE\r\n"


def test_a_zero_width_joiner_outside_an_emoji_is_escaped() -> None:
    assert escape_invisible("pay\u200dpal") == "pay\\u200dpal"
    assert escape_invisible("👩\u200d") == "👩\\u200d"


def test_split_and_custom_mark() -> None:
    assert split_invisible("a\u200bb\x1b") == [("a", False), ("\\u200b", True), ("b", False), ("\\x1b", True)]
    assert escape_invisible("x\u202ey", lambda e: f"[{e}]") == "x[\\u202e]y"


# ------------------------------------------------------------------------------ the terminal


def _console(color: bool = True) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=100, color_system="standard", no_color=not color)
    return console, buf


def test_visible_text_styles_the_escape() -> None:
    text = visible(SPOOF, "cyan")
    assert text.plain == "file_\\u202etxt.exe"
    styled = [text.plain[s.start : s.end] for s in text.spans if str(s.style) == ESCAPE_STYLE]
    assert styled == ["\\u202e"]


@pytest.mark.parametrize("color", [True, False], ids=["color", "NO_COLOR"])
def test_repl_tool_line_and_notice_show_escapes_in_reverse_video(color: bool) -> None:
    console, buf = _console(color)
    ui = ReplUI(console)
    ui.tool_start("file_operations", {"operation": "read_file", "path": SPOOF})
    ui.tool_done("file_operations", True, "read 3 lines of \x1b[2Jcleared")
    ui.notice("model says \u2066hidden\u2069")
    raw = buf.getvalue()
    assert "\u202e" not in raw and "\u2066" not in raw and "\x1b[2J" not in raw
    plain = _ANSI.sub("", raw)
    assert "\\u202e" in plain and "\\x1b[2Jcleared" in plain and "\\u2066hidden\\u2069" in plain
    # the escape is drawn in reverse video (SGR 7), kept under NO_COLOR
    assert re.search(r"\x1b\[[0-9;]*7[0-9;]*m\\u202e", raw), raw


def test_streamed_markdown_answer_escapes_and_marks_invisibles() -> None:
    console, buf = _console()
    with Live(console=console, auto_refresh=False, transient=False) as live:
        stream = MarkdownStream(live, console)
        stream.update(f"Open **{SPOOF}** now.\n\n```\nrm -rf x\u202e\n```\n", final=True)
    raw = buf.getvalue()
    assert "\u202e" not in raw and "\ufdd0" not in raw and "\ufdd1" not in raw
    assert len(re.findall(r"\x1b\[[0-9;]*7[0-9;]*m\\u202e\x1b\[0m", raw)) == 2, raw
    plain = _ANSI.sub("", raw)
    assert "file_\\u202etxt.exe" in plain
    assert "rm -rf x\\u202e" in plain


def test_one_shot_answer_escaped_on_a_terminal_but_byte_exact_in_a_pipe() -> None:
    term, term_buf = _console()
    err, _ = _console()
    OneShotUI(term, err).answer_done(f"see {SPOOF}", interrupted=False, final=True)
    assert "\u202e" not in term_buf.getvalue() and "\\u202e" in _ANSI.sub("", term_buf.getvalue())

    pipe_buf = io.StringIO()
    pipe = Console(file=pipe_buf, force_terminal=False)
    OneShotUI(pipe, err).answer_done(f"see {SPOOF}", interrupted=False, final=True)
    assert pipe_buf.getvalue() == f"see {SPOOF}\n"


def test_one_shot_progress_lines_are_escaped() -> None:
    out, _ = _console()
    err, err_buf = _console(color=False)
    ui = OneShotUI(out, err)
    ui.tool_start("shell", {"command": "cat \u202egnp.sh"})
    ui.tool_done("shell", False, "\x1b]0;title\x07boom")
    ui.notice("\u200bnote")
    ui.answer_done("thinking \u202e", interrupted=False, final=False)
    raw = err_buf.getvalue()
    for ch in ("\u202e", "\u200b", "\x07", "\x1b]"):
        assert ch not in raw
    plain = _ANSI.sub("", raw)
    assert "\\u202egnp.sh" in plain and "\\x1b]0;title\\x07boom" in plain and "\\u200bnote" in plain


# ------------------------------------------------------------------------------ the HTML export


class _Spans(HTMLParser):
    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.ctl: list[str] = []
        self.attrs: list[str] = []
        self.text = ""
        self.title = ""
        self._in: list[str] = []
        self.feed(source)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs.extend(v or "" for _, v in attrs)
        classes = dict(attrs).get("class") or ""
        self._in.append("ctl" if "ctl" in classes.split() else tag)

    def handle_endtag(self, tag: str) -> None:
        if self._in:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        if self._in and self._in[-1] == "ctl":
            self.ctl.append(data)
        if "title" in self._in:
            self.title += data
        else:
            self.text += data


def _messages() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f'rename {SPOOF} and [link](https://ok.example "t\u202eitle")'},
        {"role": "user", "content": "entity &#x202E; decoded by markdown"},
        {
            "role": "assistant",
            "content": "```python\nx = '\u2066'\n```\n",
            "tool_calls": [
                {
                    "id": "c\u200b1",
                    "type": "function",
                    "function": {"name": "shell", "arguments": '{"command": "ls \\u202e"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c\u200b1", "content": "out\x1b[31mred\x00"},
    ]


def test_export_shows_every_invisible_as_a_marked_escape() -> None:
    page = render_html({"id": "s1", "name": f"session {SPOOF}"}, _messages())
    for ch in ("\u202e", "\u2066", "\u200b", "\x1b", "\x00"):
        assert ch not in page, repr(ch)
    parsed = _Spans(page)
    assert "file_\\u202etxt.exe" in parsed.text
    assert "\\u202e" in parsed.ctl and "\\u2066" in parsed.ctl and "\\u200b" in parsed.ctl
    assert "\\x1b" in parsed.ctl and "\\x00" in parsed.ctl
    assert parsed.ctl.count("\\u202e") >= 4  # name in header, message, entity, tool arguments
    # in a title and in attributes the escape goes in as text (no markup inside an attribute)
    assert "session file_\\u202etxt.exe" in parsed.title
    assert "t\\u202eitle" in parsed.attrs, parsed.attrs
    assert ".ctl" in page  # the style of the marked escapes


def test_export_without_invisibles_has_no_marks() -> None:
    page = render_html({"id": "s1"}, [{"role": "user", "content": "plain é 日本 🙂"}])
    assert 'class="ctl"' not in page


class _InterruptingFile(io.StringIO):
    """A terminal whose first write of the given text makes the process get a real SIGINT."""

    def __init__(self, trigger: str) -> None:
        super().__init__()
        self.trigger, self.fired = trigger, False

    def write(self, text: str) -> int:
        n = super().write(text)
        if not self.fired and self.trigger in text:
            self.fired = True
            signal.raise_signal(signal.SIGINT)  # to this thread: Ctrl-C lands while the lines are printed
        return n


def test_a_ctrl_c_while_lines_are_printed_never_prints_them_twice() -> None:
    # Ctrl-C as a terminal user's Python gets it, whatever the suite was started from (a
    # background job inherits SIGINT ignored, and then no KeyboardInterrupt ever comes).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _interrupt_mid_print()
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupt_mid_print() -> None:
    out = _InterruptingFile("ALPHA")
    console = Console(file=out, force_terminal=True, width=80, color_system=None)
    text = "ALPHA line one.\n\nBRAVO line two.\n\n" + "".join(f"line {i}\n\n" for i in range(12))
    with Live(console=console, auto_refresh=False, transient=False) as live:
        stream = MarkdownStream(live, console)
        with pytest.raises(KeyboardInterrupt):
            stream.update(text)  # prints the lines above the live tail, then the interrupt arrives
        assert out.fired
        stream.update(text, final=True)  # what the UI does after an interrupt
    assert _ANSI.sub("", out.getvalue()).count("ALPHA line one.") == 1


def test_as_seen_folds_what_looks_the_same() -> None:
    from clio.safety.visible import as_seen

    assert as_seen("\uff03\uff03 Notes") == "## Notes"  # fullwidth: NFKC
    assert as_seen("a\u00a0b\u2009c\u3000d\u202fe") == "a b c d e"  # spaces
    assert as_seen("pro\u200bject\u2060-fi\u00adle\ufeff\u202e") == "project-file"  # format characters dropped
    assert as_seen("\u2039/project\u2010file\u203a") == "</project-file>"
    assert as_seen("\u0440r\u043eject") == "project"  # Cyrillic р, о
    assert as_seen("plain ASCII, tabs\tand\nlines") == "plain ASCII, tabs\tand\nlines"  # ASCII as it is
    assert as_seen("caf\u00e9 na\u00efve \u65e5\u672c") == "caf\u00e9 na\u00efve \u65e5\u672c"  # ordinary text stays


def test_defuse_leaves_ordinary_text_byte_identical() -> None:
    from clio.safety.visible import defuse

    text = "## Build\n<file>x</file>\n</project>\nnon\u00a0breaking\n\u2039quoted\u203a\n"
    assert defuse(text, ("notes from earlier sessions",), ("project-file",)) == text
