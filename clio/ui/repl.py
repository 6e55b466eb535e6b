"""The interactive REPL: prompt-toolkit for input, rich for output.

Enter sends, Alt-Enter (or Esc then Enter) inserts a newline, Ctrl-C interrupts a running
answer or clears the line, Ctrl-D exits. Slash commands and paths complete with Tab. A line
starting with ``!`` runs a shell command (clio/app/user_shell.py), ``#`` adds to memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import os
import signal
import struct
import sys
import termios
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import HTML
from prompt_toolkit.history import History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from rich.console import Console
from rich.text import Text

from clio import __version__, lazy_re, threads
from clio.app import background, encoder_tip
from clio.app.app import App
from clio.commands.dispatch import run_slash
from clio.commands.registry import COMMANDS, ExitRequested
from clio.config import Settings
from clio.llm.errors import LLMError
from clio.paths import Paths
from clio.ui import mentions, resume_view
from clio.ui.asking import ReplAsk
from clio.ui.history import RedactingFileHistory
from clio.ui.render import ReplUI, visible
from clio.ui.sigint_latch import SigintLatch
from clio.ui.typing_ahead import TypingAhead
from clio.wording import plural


class ClioCompleter(Completer):
    """Slash commands and their subcommands; paths (relative to the project root) elsewhere."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths = PathCompleter(get_paths=lambda: [str(root)], expanduser=True)

    def get_completions(self, document: Document, event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if text.startswith("/") and "\n" not in text:
            head, sep, rest = text[1:].partition(" ")
            if not sep:
                for name in sorted(COMMANDS):
                    if name.startswith(head):
                        yield Completion(
                            "/" + name, start_position=-len(text), display_meta=COMMANDS[name].help
                        )
                return
            cmd = COMMANDS.get(head)
            if cmd and " " not in rest:
                for sub in cmd.subcommands:
                    if sub.startswith(rest):
                        yield Completion(sub, start_position=-len(rest))
                return
        word = document.get_word_before_cursor(WORD=True)
        mention = _mention_before(text)
        if mention is not None:  # @path, or @"path with spaces": complete the path, keep the @
            yield from self._mention_completions(mention, event)
            return
        if word and ("/" in word or "." in word or word.startswith("~")):
            sub_doc = Document(word, len(word))
            yield from self.paths.get_completions(sub_doc, event)


    def _mention_completions(self, mention: str, event: CompleteEvent) -> Iterable[Completion]:
        partial = mention.lstrip('"')
        for c in self.paths.get_completions(Document(partial, len(partial)), event):
            full = partial[: len(partial) + c.start_position] + c.text
            folder = (self.root / Path(full).expanduser()).is_dir()
            full += "/" if folder and not full.endswith("/") else ""
            close = "" if folder else '"'  # a folder: the path goes on, the quote stays open
            quoted = f'@"{full}{close}' if (" " in full or mention.startswith('"')) else f"@{full}"
            yield Completion(quoted, start_position=-(len(mention) + 1), display=c.display)


def _mention_before(text: str) -> str | None:
    """The @mention being typed at the end of ``text`` (without its @), or None."""
    at = text.rfind("@")
    if at < 0 or (at > 0 and not text[at - 1].isspace()):
        return None
    mention = text[at + 1 :]
    quoted = mention.startswith('"')
    if (not quoted and any(ch.isspace() for ch in mention)) or (quoted and mention.count('"') > 1):
        return None
    return mention


def _bindings() -> KeyBindings:
    kb = KeyBindings()

    @kb.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    return kb


def pending_interrupt(pt_input: Input) -> tuple[bool, str]:
    """Whether a Ctrl-C was typed while the prompt still had the terminal in raw mode: there it is
    a key, not a signal, so without this it is lost and the request goes out. It may sit in
    prompt-toolkit's typeahead (read with the Enter) or still in the terminal's input queue.
    Returns (found, what was typed before it, offered again at the next prompt); other typeahead
    is put back."""
    keys = get_typeahead(pt_input)
    cut = next((i for i, k in enumerate(keys) if k.key == Keys.ControlC), None)
    if cut is not None:
        return True, "".join(k.data for k in keys[:cut] if len(k.data) == 1 and k.data.isprintable())
    store_typeahead(pt_input, keys)
    try:
        fd = sys.stdin.fileno()
        if not os.isatty(fd):
            return False, ""
        waiting = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
        if waiting <= 0 or keys:
            return False, ""  # nothing queued (or typeahead first: its order must be kept)
        data = os.read(fd, waiting).decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return False, ""
    before, found, _after = data.partition("\x03")
    return bool(found), before.split("\r")[0].split("\n")[0]


@contextlib.contextmanager
def quiet_terminal() -> Iterator[None]:
    """No echo while a turn runs: a typed Ctrl-C echoed as ``^C`` (or any typeahead) would move
    the cursor under the live answer and make it draw twice. And no flush on Ctrl-C (NOFLSH): the
    kernel otherwise throws away output written but not yet shown, so the live answer's redraw,
    which moves the cursor by what it wrote, would start lines too high and overwrite the answer's
    first lines. Restored afterwards."""
    try:
        fd = sys.stdin.fileno()
        old = termios.tcgetattr(fd) if os.isatty(fd) else None
    except (OSError, ValueError, termios.error):
        old = None
    if old is not None:
        new = list(old)
        new[3] = (old[3] & ~(termios.ECHO | termios.ECHOCTL)) | termios.NOFLSH
        termios.tcsetattr(fd, termios.TCSANOW, new)
    try:
        yield
    finally:
        if old is not None:
            termios.tcsetattr(fd, termios.TCSANOW, old)


def _interruptible() -> None:
    """A REPL started from a background job (``cmd &`` in a script, nohup) inherits SIGINT as
    ignored, and Python then never raises KeyboardInterrupt: Ctrl-C would stop nothing. Someone at
    the terminal asked for the REPL, so Ctrl-C is given back (one-shot runs keep the ignore)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


PROMPT_WAIT = 2.0  # seconds the warm-up waits for the prompt to be drawn before it begins anyway


def _warm_up(app: App, shown: threading.Event, memory: bool) -> None:
    """While the user types: what the first answer needs and the prompt did not (the HTTP
    library, the markdown renderer, the regular expressions compiled on first use, the command
    launcher, the embedding table and the recall index). Begun once the prompt is drawn (or a
    line is run first): begun before, it held the interpreter's lock while the prompt was being
    drawn, and the prompt came later by its cost (numpy, urllib3, ~150 patterns)."""
    shown.wait(PROMPT_WAIT)
    if memory:
        app.memory.meaning.start_preload()  # the embedding table, for memory ranked by meaning (memory/meaning.py)
        app.auto_recall.start_warm_up()  # the recall index and its vectors, for the first message
    from clio.safety.launch import start as start_launcher

    start_launcher()  # the first command need not wait for it (clio/safety/launch.py)
    importlib.import_module("urllib3")
    importlib.import_module("rich.markdown")
    importlib.import_module("rich.live")
    importlib.import_module("rich.spinner")
    lazy_re.warm()


def run_repl(
    settings: Settings,
    paths: Paths,
    *,
    first_input: str | None,
    resume: str | None,
    out: Console,
    err: Console,
) -> int:
    _interruptible()
    ui = ReplUI(out)
    app = App.start(settings, paths, resume=resume, interactive=True, console=out, err=err, ui=ui, ask=ReplAsk())
    later: str | None = None  # the session read back after exit (clio.app.background)
    try:
        history: History = InMemoryHistory()
        if app.writes:
            paths.ensure_clio_dir()
            history = RedactingFileHistory(paths.clio_dir / "history", redact=app.redactor.text)
        session: PromptSession[str] = PromptSession(
            history=history,
            completer=ClioCompleter(paths.root),
            complete_while_typing=False,
            key_bindings=_bindings(),
            bottom_toolbar=lambda: _toolbar(app),
            multiline=False,
        )
        _banner(app, out)
        shown = threading.Event()  # the prompt is drawn: the warm-up may begin
        session.app.after_render += lambda _app: shown.set()
        if app.auto_recall.encoder is not None:  # the line recalled by the helper while the user types (typing_ahead.py)
            ahead = TypingAhead(lambda line: app.auto_recall.typed(line, _current_task(app)))
            session.default_buffer.on_text_changed += lambda buffer: ahead.changed(buffer.text)
        threads.start(_warm_up, "clio-warm-up", (app, shown, not (settings.no_ltm or settings.incognito)))
        pending = first_input
        pending_default = ""  # what was typed ahead of a Ctrl-C right after Enter
        latch = SigintLatch(session.app)  # a Ctrl-C as Enter is read is never lost (sigint_latch.py)
        while True:
            if pending is not None:
                line, pending = pending, None
            else:
                latch.arm()
                try:
                    line = session.prompt(HTML("<b>› </b>"), default=pending_default, handle_sigint=False)
                    pending_default = ""
                except KeyboardInterrupt:
                    latch.release()
                    continue
                except EOFError:
                    latch.release()
                    break
            try:
                signalled = latch.release()  # from here on, Ctrl-C raises KeyboardInterrupt, caught below
                shown.set()  # (a line run before any prompt: --input TEXT)
                if not line.strip():
                    continue
                interrupted, typeahead = pending_interrupt(session.input)
                if signalled:  # Ctrl-C as Enter was read, after the prompt left raw mode
                    interrupted, typeahead = True, ""
                if interrupted:  # Ctrl-C right after Enter: nothing is sent
                    out.print(Text("⏹ interrupted before it was sent (↑ brings the message back)", style="yellow"))
                    pending_default = typeahead
                    continue
                if line.lstrip().startswith("/"):
                    run_slash(app, line.strip())
                elif line.lstrip().startswith("!"):  # `!ls`: the user's own command, the model sees it
                    _bang(app, line.lstrip()[1:], out, err)
                elif remembered(line) is not None:  # `# always use tabs`: to memory, not the model
                    run_slash(app, "/memory add " + str(remembered(line)))
                else:
                    text, user_meta = _with_attachments(app, line, out)
                    with quiet_terminal():
                        app.run_turn(text, user_meta)
            except ExitRequested:
                break
            except KeyboardInterrupt:
                ui.pause()
                out.print(Text("⏹ interrupted", style="yellow"))
            except LLMError as exc:
                ui.pause()
                err.print(Text(str(exc), style="red"))
        later = _upkeep(app, err)
        return 0
    finally:
        app.close()
        if later is not None:
            background.spawn(settings, paths, later, upkeep=True)


def _bang(app: App, command: str, out: Console, err: Console) -> None:
    """``!command``: run it now (no question: the user typed it), show its output, and keep it for
    the model's next request (clio/app/user_shell.py)."""
    from clio.app.user_shell import run_bang

    with quiet_terminal():
        ran, shown = run_bang(app, command)
    if not ran:
        err.print(visible(f"! {shown}", "red"), soft_wrap=True)
        return
    out.print(visible(shown, ""), soft_wrap=True)
    out.print(Text("(the model sees this command and its output with your next message)", style="dim"))


def remembered(line: str) -> str | None:
    """What a one-line message starting with ``#`` asks clio to remember (Claude Code's shortcut);
    None for anything else (a pasted Markdown document of several lines is a message)."""
    text = line.strip()
    if not text.startswith("#") or "\n" in text:
        return None
    return text.lstrip("#").strip() or None


def _with_attachments(app: App, line: str, out: Console) -> tuple[str, dict[str, object] | None]:
    """The message with the files it mentions (@path) attached, saying what was attached."""
    if "@" not in line:
        return line, None
    done = mentions.attach(line, app.paths.root, app.paths.cwd, app.window.shares.attachment_chars(), app.private)
    for note in done.notes:
        out.print(visible(note, "dim"))
    return done.text, ({"attached": done.paths} if done.paths else None)


def _upkeep(app: App, err: Console) -> str | None:
    """Memory upkeep when the user leaves, never in the way: the session to read back (then faded
    topics compacted) in a detached child once this process has let go of it (clio.app.background);
    exit is not delayed. None when there is nothing to do."""
    compact = app.writes and app.memory.ltm.needs_compaction()
    if app.session is None or not (background.pending(app) or compact):
        return None
    err.print(Text(background.NOTICE, style="dim"))
    return app.session.id


def _banner(app: App, out: Console) -> None:
    s = app.settings
    assert app.session is not None
    resumed = f", resumed {plural(len(app.session.messages), 'message')}" if app.session.messages else ""
    mode = " · incognito" if s.incognito else (" · no-ltm" if s.no_ltm else "")
    out.print(
        Text.assemble(
            ("clio ", "bold"),
            (f"{__version__} · {s.model} @ {s.endpoint()}{mode}\n", "dim"),
            (f"project {app.paths.root} · session {app.session.id}{resumed}\n", "dim"),
            ("/help for commands, Alt-Enter for a newline, Ctrl-D to exit", "dim"),
        )
    )
    encoder = app.auto_recall.encoder
    tip = encoder_tip.offer(app.paths.home, app.paths.sessions_dir, app.session.id, encoder.model.name if encoder else None)
    if tip:
        out.print(Text(tip, style="dim"))
    for line, style in resume_view.render(app.session.messages, out.width):
        out.print(visible(line, style), soft_wrap=True)


def _current_task(app: App) -> str:
    """The session's current task, as the turn hands it to the automatic recall."""
    summary = app.orchestrator.engine.summary if app.orchestrator is not None else None
    return summary.current_task if summary is not None else ""


def _toolbar(app: App) -> HTML:
    used = app.orchestrator.shown_tokens() if app.orchestrator is not None else 0
    window = app.window.size
    name = app.session.info.name if app.session else ""
    return HTML(
        f" {app.settings.model} · {used:,}/{window:,} tokens ({100 * used // max(window, 1)}%)"
        + (f" · {name[:30]}" if name else "")
        + (" · plan mode (read-only)" if app.settings.plan else "")
    )
