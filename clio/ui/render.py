"""Rendering a turn with rich: streamed markdown, one line per tool call, a spinner while waiting.

:class:`MarkdownStream` re-renders the growing answer and prints the lines that can no
longer change above a small live region holding the tail (the approach of aider's
mdstream), so long answers scroll normally and stay cheap to redraw.

Text from the model or a tool goes through :mod:`clio.safety.visible` first: bidi controls,
invisible characters and terminal controls are shown as escapes (``\\u202e``) in reverse video,
never passed to the terminal raw.
"""

from __future__ import annotations

import contextlib
import io
import signal
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from clio.safety.visible import escape_invisible, split_invisible
from clio.tools.describe import summarize_args
from clio.ui.text import cut_words

if TYPE_CHECKING:
    from rich.live import Live

LIVE_LINES = 6
MIN_INTERVAL = 0.08  # seconds between re-renders
ESCAPE_STYLE = "bold reverse"  # how an escaped invisible character is drawn (kept under NO_COLOR)
# Around each escape in markdown: noncharacters, which escape_invisible itself escapes, so text
# can never contain them raw; replaced after rendering by reverse video on / off.
_OPEN, _CLOSE = "\ufdd0", "\ufdd1"
_SGR_OPEN, _SGR_CLOSE = "\x1b[7m", "\x1b[27m"


def visible(text: str, style: str = "") -> Text:
    """``text`` as a rich Text with invisible and control characters shown as styled escapes."""
    out = Text(style=style)
    for piece, is_escape in split_invisible(text):
        out.append(piece, style=ESCAPE_STYLE if is_escape else None)
    return out


def visible_markdown_source(text: str) -> str:
    """Markdown with each invisible character replaced by its escape between two markers."""
    return escape_invisible(text, lambda e: f"{_OPEN}{e}{_CLOSE}")


ERROR_HINT = 200  # a failed call's first line is what the user needs to act on: shown longer


def result_hint(text: str, width: int = 60) -> str:
    """The first non-blank line, at most ``width`` characters, cut between words, never inside one.
    A first line with nothing to read (a lone ``{`` of pretty-printed JSON, an MCP tool's usual
    result) gives way to the start of the whole text on one line."""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if first and not any(c.isalnum() for c in first):
        first = " ".join(text[: width * 8].split())
    return cut_words(first, width)


@contextlib.contextmanager
def _ctrl_c_deferred() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) until the block is done: a KeyboardInterrupt between printing lines
    and counting them would print them again with the final render (the partial answer's first
    lines shown twice). A Ctrl-C that came meanwhile is raised when the block ends."""
    # The Python handler is swapped, not the signal blocked: blocking it in the main thread lets
    # the kernel hand it to another thread (the embedding preload, the recall warm-up, MCP), whose
    # delivery still runs Python's handler at once, in the middle of the block.
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous in (signal.SIG_IGN, None):
        yield
        return
    caught: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            signal.raise_signal(signal.SIGINT)  # the Ctrl-C that came meanwhile, now


class MarkdownStream:
    def __init__(self, live: Live, console: Console) -> None:
        self.live = live
        self.console = console
        self.printed = 0
        self.last = 0.0

    def _lines(self, text: str) -> list[str]:
        from rich.markdown import Markdown  # ~40 ms with markdown-it: not needed until an answer shows

        buf = io.StringIO()
        c = Console(
            file=buf,
            force_terminal=True,
            width=max(20, self.console.width - 1),
            color_system=self.console.color_system,  # type: ignore[arg-type]
            no_color=self.console.no_color,
        )
        c.print(Markdown(visible_markdown_source(text), code_theme="monokai"))
        rendered = buf.getvalue().replace(_OPEN, _SGR_OPEN).replace(_CLOSE, _SGR_CLOSE)
        return rendered.splitlines(keepends=True)

    def update(self, text: str, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.last < MIN_INTERVAL:
            return
        self.last = now
        lines = self._lines(text)
        stable = len(lines) if final else max(0, len(lines) - LIVE_LINES)
        tail = Text.from_ansi("".join(lines[max(stable, self.printed) :]).rstrip("\n"))
        if stable > self.printed:
            # The new tail goes in (and is drawn) first: printing redraws the live region's last
            # drawn content below the printed lines, which would repeat lines just printed (or
            # bring back the spinner) until the next refresh.
            with _ctrl_c_deferred():
                self.live.update(tail, refresh=True)
                self.live.console.print(Text.from_ansi("".join(lines[self.printed : stable]).rstrip("\n")))
                self.printed = stable
        else:
            self.live.update(tail)


_DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"), ("\\", "dim"))


def diff_text(diff: str, left: int = 0) -> Text:
    """A unified diff coloured line by line (invisible characters shown escaped: the content
    comes from the model), and a last line saying how much was left out."""
    out = Text()
    for line in diff.splitlines():
        style = next((st for head, st in _DIFF_STYLES if line.startswith(head)), "")
        out.append_text(visible(line, style))
        out.append("\n")
    if left:
        out.append(f"… {left} more line{'s' if left != 1 else ''} of diff", style="dim")
        out.append("\n")
    out.rstrip()
    return out


def _spinner(text: Text) -> Any:
    from rich.spinner import Spinner  # imports rich.table: loaded with the first spinner shown

    return Spinner("dots", text=text)


class ReplUI:
    """Streams answers and tool lines to a terminal console."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._live: Live | None = None
        self._md: MarkdownStream | None = None
        self._text: list[str] = []

    def _start(self, renderable: Any) -> Live:
        if self._live is None:
            from rich.live import Live  # with rich.table (spinners): the first live region, not every start

            self._live = Live(renderable, console=self.console, refresh_per_second=12, transient=True)
            self._live.start()
        else:
            self._live.update(renderable)
        return self._live

    def pause(self) -> None:
        """Stop any live region (before asking the user something)."""
        if self._md is not None and self._text:
            self._md.update("".join(self._text), final=True)
            self._text = []
            self._md = None
        if self._live is not None:
            self._live.stop()
            self._live = None

    def waiting(self) -> None:
        self._start(_spinner(Text("thinking…", style="dim")))

    def text(self, delta: str) -> None:
        if self._md is None:
            live = self._start(Text(""))
            self._md = MarkdownStream(live, self.console)
        self._text.append(delta)
        self._md.update("".join(self._text))

    def answer_done(self, content: str, *, interrupted: bool, final: bool) -> None:
        self.pause()
        if interrupted:
            self.console.print(Text("⏹ interrupted", style="yellow"))

    def tool_start(self, name: str, args: dict[str, Any]) -> None:
        self.pause()
        self._label = f"{name} {summarize_args(name, args)}"
        self._start(_spinner(visible(self._label, "dim")))

    def tool_done(self, name: str, ok: bool, result: str) -> None:
        self.pause()
        mark = Text("✓ ", style="green") if ok else Text("✗ ", style="red")
        line = mark + visible(getattr(self, "_label", name), "cyan")
        if not ok:  # the reason, whole words, wrapped rather than cut at the terminal's edge
            hint = result_hint(result, ERROR_HINT)
            self.console.print(line + visible(f"  {hint}", "red") if hint else line)
            return
        hint = result_hint(result)
        if hint:
            line += visible(f"  {hint}", "dim")
        self.console.print(line, overflow="ellipsis", no_wrap=True)

    def notice(self, text: str) -> None:
        self.pause()
        self.console.print(visible(text, "yellow"))

    def diff(self, diff: str, left: int) -> None:
        self.pause()
        self.console.print(diff_text(diff, left), soft_wrap=True)


class OneShotUI:
    """For ``--input``: the final answer on stdout, everything else on stderr. On a terminal the
    answer streams as it arrives (invisible characters escaped); to a pipe or a file only the
    final answer is written, byte for byte, so scripts get exactly the answer."""

    def __init__(self, out: Console, err: Console) -> None:
        self.out = out
        self.err = err
        self.final_text = ""
        self.streamed = False  # part of the current answer is already on the terminal

    def pause(self) -> None:
        pass

    def waiting(self) -> None:
        pass

    def text(self, delta: str) -> None:
        if self.out.is_terminal and delta:
            self.out.file.write(escape_invisible(delta))
            self.out.file.flush()
            self.streamed = True

    def answer_done(self, content: str, *, interrupted: bool, final: bool) -> None:
        if self.streamed:  # already on the terminal: end its line
            self.out.file.write("" if content.endswith("\n") else "\n")
            self.out.file.flush()
            self.streamed = False
            if final:
                self.final_text = content
        elif final:
            self.final_text = content
            if content and self.out.is_terminal:  # a person reads it: nothing invisible, no controls
                self.out.print(visible(content.rstrip("\n")), soft_wrap=True)
            elif content:  # a pipe or a file: the answer byte for byte
                self.out.file.write(content if content.endswith("\n") else content + "\n")
                self.out.file.flush()
        elif content.strip():  # the model's words beside its tool calls: each line clio's prefix
            said = "\n".join(f"clio: {line}" for line in content.strip().splitlines())
            self.err.print(visible(said, "dim"))
        if interrupted:
            self.err.print(Text("interrupted", style="yellow"))

    def tool_start(self, name: str, args: dict[str, Any]) -> None:
        self._label = f"{name} {summarize_args(name, args)}"

    def tool_done(self, name: str, ok: bool, result: str) -> None:
        mark = "✓" if ok else "✗"
        hint = result_hint(result, 60 if ok else ERROR_HINT)
        self.err.print(visible(f"{mark} {getattr(self, '_label', name)}  {hint}", "green" if ok else "red"))

    def notice(self, text: str) -> None:
        self.err.print(visible(text, "yellow"))

    def diff(self, diff: str, left: int) -> None:
        self.err.print(diff_text(diff, left), soft_wrap=True)
