"""The REPL driven through a real pseudo-terminal (pexpect), against the fake server.

The installed ``clio`` runs in a 40x120 pty with TERM=xterm-256color, like a user's terminal.
The harness answers prompt-toolkit's cursor-position requests the way a terminal does (so the
bottom toolbar is drawn) and matches output with ANSI escapes stripped. Nothing of clio is
patched: the fake server is the only test double.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from testkit.clio_run import CLIO, typed, user_texts, wait_background
from testkit.fakeserver import FakeServer, Reply

ROWS, COLS = 40, 120
TIMEOUT = 15.0
PROMPT = r"›"  # the REPL's prompt mark

_CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_OTHER_ESC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78M]")
_CONTROL = re.compile(r"[\r\x07\x08\x0e\x0f]")
_COLOR_SGR = re.compile(r"\x1b\[[0-9;]*(?:38|48);[25];[0-9;]*m")  # 256-colour or truecolour


def strip_ansi(raw: str) -> str:
    """Terminal output as text: escape sequences removed (a cursor-forward becomes a space)."""
    text = _CSI.sub(lambda m: " " if m.group().endswith("C") else "", raw)
    return _CONTROL.sub("", _OTHER_ESC.sub("", text))


class Term:
    """A spawned clio in a pty: reads its output, answers cursor-position requests, matches text."""

    def __init__(self, child: pexpect.spawn, project: Path | None = None) -> None:
        self.child = child
        self.project = project  # where clio runs: its exit's read-back child is waited for there
        self.raw = ""
        self.pos = 0  # offset in the stripped text up to which expectations have been consumed
        self.answered_cpr = 0
        self.eof = False

    @property
    def text(self) -> str:
        return strip_ansi(self.raw)

    def _pump(self, wait: float) -> None:
        if self.eof:
            time.sleep(min(wait, 0.05))
            return
        try:
            data = self.child.read_nonblocking(65536, timeout=wait)
        except pexpect.TIMEOUT:
            return
        except pexpect.EOF:
            self.eof = True
            return
        self.raw += data
        # A terminal answers "ESC [ 6 n" with the cursor position; prompt-toolkit needs it to
        # know the height below the cursor (the bottom toolbar is only drawn when it does).
        requests = self.raw.count("\x1b[6n")
        while self.answered_cpr < requests:
            self.child.send(f"\x1b[{ROWS - 12};1R")
            self.answered_cpr += 1

    def expect(self, pattern: str, timeout: float = TIMEOUT) -> re.Match[str]:
        """Wait for ``pattern`` (a regex) in the stripped output after the last match."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            m = rx.search(self.text, self.pos)
            if m:
                self.pos = m.end()
                return m
            if time.monotonic() > deadline or (self.eof and not self.child.isalive()):
                tail = self.text[max(self.pos - 200, 0) :][-3000:]
                raise AssertionError(f"did not see {pattern!r} within {timeout}s; output since:\n{tail}")
            self._pump(0.1)

    def mark(self) -> int:
        """The current end of the output (for :meth:`since`)."""
        self._pump(0)
        return len(self.text)

    def since(self, mark: int) -> str:
        return self.text[mark:]

    def type(self, line: str) -> None:
        """Type a line and press Enter (a carriage return, as a terminal's Enter key sends)."""
        self.child.send(line + "\r")

    def prompt(self) -> None:
        self.expect(PROMPT)

    def wait_exit(self, timeout: float = TIMEOUT, *, background: bool = False) -> int | None:
        """Wait for clio to exit, then for the read-back child its exit left (clio.app.background),
        so the next run and what the test reads never race it; ``background=True``: not for that."""
        deadline = time.monotonic() + timeout
        while not self.eof and time.monotonic() < deadline:
            self._pump(0.1)
        assert self.eof, f"clio did not exit; output:\n{self.text[-2000:]}"
        self.child.close()
        assert self.child.signalstatus is None, f"clio died of signal {self.child.signalstatus}"
        if self.project is not None and not background:
            wait_background(self.project, timeout=60)
        return self.child.exitstatus


Spawn = Callable[..., Term]


def screen_of(term: Term) -> str:
    """What the terminal shows now: the raw output replayed through a VT100 emulator (pyte)."""
    import pyte

    term._pump(0.05)
    screen = pyte.Screen(COLS, ROWS)
    screen.set_mode(pyte.modes.LNM)
    pyte.Stream(screen).feed(term.raw)
    return "\n".join(line.rstrip() for line in screen.display)


def wait_screen(term: Term, needle: str, timeout: float = TIMEOUT) -> str:
    deadline = time.monotonic() + timeout
    while True:
        shown = screen_of(term)
        if needle in shown:
            return shown
        assert time.monotonic() < deadline, f"the screen never showed {needle!r}:\n{shown}"
        time.sleep(0.05)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    proj = tmp_path / "proj"
    proj.mkdir()
    (tmp_path / "home").mkdir()
    yield proj
    wait_background(proj, timeout=30)  # a read-back a REPL's exit left (clio.app.background)


@pytest.fixture
def spawn(fake_server: FakeServer, project: Path) -> Iterator[Spawn]:
    terms: list[Term] = []

    def start(
        *args: str, no_color: bool = True, env: dict[str, str] | None = None, sigint: Any = signal.SIG_DFL
    ) -> Term:
        full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CLIO_"))}
        full["CLIO_RECALL_ENCODER"] = os.environ.get("CLIO_RECALL_ENCODER", "0")  # no helper per test (tests/conftest.py)
        full.pop("NO_COLOR", None)
        full.update(
            OPENAI_BASE_URL=fake_server.base_url,
            OPENAI_API_KEY="test-key",
            CLIO_HOME=str(project.parent / "home"),
            CLIO_MODEL="fake-model",
            TERM="xterm-256color",
            COLUMNS=str(COLS),
            LINES=str(ROWS),
        )
        if no_color:
            full["NO_COLOR"] = "1"
        full.update(env or {})
        child = pexpect.spawn(
            str(CLIO),
            list(args),
            cwd=str(project),
            env=full,
            dimensions=(ROWS, COLS),
            encoding="utf-8",
            codec_errors="replace",
            timeout=TIMEOUT,
            # as a user's shell starts it, even when this suite runs as a background job (which
            # inherits SIGINT ignored); ``sigint=signal.SIG_IGN`` starts it as such a job would
            preexec_fn=lambda: signal.signal(signal.SIGINT, sigint),
        )
        terms.append(Term(child, project))
        return terms[-1]

    yield start
    for n, term in enumerate(terms):
        if term.child.isalive():
            term.child.terminate(force=True)
        # the raw terminal output, kept in pytest's tmp dir for a look after a failure
        (project.parent / f"pty-{n}.raw").write_text(term.raw, encoding="utf-8")


# ---------------------------------------------------------------- helpers over the project's .clio


def session_dir(project: Path) -> Path:
    dirs = sorted(p for p in (project / ".clio" / "sessions").iterdir() if not p.name.startswith("."))  # not the journal
    assert len(dirs) == 1, dirs
    return dirs[0]


def archive(project: Path) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for chunk in sorted((session_dir(project) / "archive").glob("*.json")):
        messages.extend(json.loads(chunk.read_text(encoding="utf-8")))
    return messages


def history_entries(project: Path) -> list[str]:
    """The lines prompt-toolkit's FileHistory stored (each entry's lines start with '+')."""
    entries: list[str] = []
    current: list[str] = []
    for line in (project / ".clio" / "history").read_text(encoding="utf-8").splitlines():
        if line.startswith("+"):
            current.append(line[1:])
        elif current:
            entries.append("\n".join(current))
            current = []
    if current:
        entries.append("\n".join(current))
    return entries


def wait_for(check: Callable[[], bool], timeout: float = TIMEOUT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


# ---------------------------------------------------------------- tests


MARKDOWN_ANSWER = (
    "Here is a **boldword** in a sentence.\n\n```python\nprint('code-block-contents')\n```\n\n- first item"
)


@pytest.mark.parametrize("no_color", [True, False], ids=["NO_COLOR", "color"])
def test_banner_markdown_toolbar_and_ctrl_d(
    spawn: Spawn, fake_server: FakeServer, project: Path, no_color: bool
) -> None:
    fake_server.script(Reply(text=MARKDOWN_ANSWER))
    term = spawn(no_color=no_color, env={"CLIO_CONTEXT_WINDOW": "50000"})
    term.expect(r"clio \d+\.\d+")
    term.expect(rf"fake-model @ {re.escape(fake_server.base_url)}")
    term.expect(rf"project {re.escape(str(project))} · session \d{{8}}-\d{{6}}-[0-9a-f]{{4}}")
    term.prompt()
    toolbar = term.expect(r"fake-model · ([\d,]+)/50,000 tokens \((\d+)%\)")
    assert int(toolbar.group(1).replace(",", "")) > 0  # the system prompt and tool schemas count

    start, raw_start = term.mark(), len(term.raw)
    term.type("show me some markdown")
    term.expect(r"Here is a boldword in a sentence\.")
    term.expect(r"print\('code-block-contents'\)")
    last = term.expect(r"first item")
    prompt = term.expect(PROMPT)
    # Nothing stale (a spinner, an earlier render of the answer) is redrawn after the answer.
    assert term.text[last.end() : prompt.start()].strip() == ""
    shown = term.since(start)
    assert "**boldword**" not in shown  # rendered, not echoed raw
    assert "```" not in shown
    answer_raw = term.raw[raw_start:]
    if no_color:
        assert not _COLOR_SGR.search(term.raw), "NO_COLOR output carries colour escapes"
    else:
        assert re.search(r"\x1b\[[0-9;]*1[0-9;]*mboldword", answer_raw), "bold not rendered as bold"
        assert _COLOR_SGR.search(answer_raw), "the code block should be syntax-coloured"

    assert len(fake_server.chat_requests) == 1
    body = fake_server.chat_requests[0]
    assert body["stream"] is True and body["model"] == "fake-model"
    assert (
        body["messages"][-1]["role"] == "user"
        and typed(body["messages"][-1]["content"]) == "show me some markdown"
    )

    term.child.sendeof()
    assert term.wait_exit() == 0
    saved = archive(project)
    assert [m["role"] for m in saved] == ["user", "assistant"]
    assert saved[1]["content"] == MARKDOWN_ANSWER
    assert history_entries(project) == ["show me some markdown"]


def test_tool_line_slash_commands_completion_and_history(
    spawn: Spawn, fake_server: FakeServer, project: Path
) -> None:
    (project / "notes.txt").write_text("line one of the notes\nline two\n", encoding="utf-8")
    fake_server.script(
        Reply(tool_calls=[call("file_operations", operation="read_file", path="notes.txt")]),
        Reply(text="The notes start with *line one*."),
    )
    term = spawn(env={"CLIO_CONTEXT_WINDOW": "64000"})
    term.prompt()

    start = term.mark()
    term.type("what do the notes say")
    term.expect(r"✓ file_operations read_file notes\.txt")
    term.expect(r"The notes start with line one\.")
    term.prompt()
    assert term.since(start).count("✓ file_operations") == 1  # one line per tool call
    assert "✗" not in term.since(start)
    tool_msgs = [m for m in fake_server.chat_requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 1 and "line one of the notes" in tool_msgs[0]["content"]

    term.type("/help")
    for name in ("clear", "context", "exit", "help", "memory", "model", "session", "stats", "todo"):
        term.expect(rf"/{name}\b")
    term.prompt()

    term.type("/context")
    ctx = term.expect(r"context: ([\d,]+) of ([\d,]+) tokens \((\d+\.\d)%\), model fake-model")
    used, window = (int(g.replace(",", "")) for g in ctx.group(1, 2))
    assert window == 64000
    assert float(ctx.group(3)) == pytest.approx(100 * used / window, abs=0.05)
    fixed = term.expect(r"fixed part ([\d,]+) tokens")
    assert 0 < int(fixed.group(1).replace(",", "")) < used  # the conversation adds to the fixed part
    term.expect(r"window (\d+) messages of (\d+) archived")
    term.prompt()
    term.type("/context --json")
    figures = json.loads(term.expect(r'\{"context_window"[^\n]*"used_tokens"[^\n]*\}').group())  # one line
    assert figures["context_window"] == window and figures["used_tokens"] == used
    assert figures["archived_messages"] == 4  # user, assistant+call, tool result, answer
    assert figures["recall"]["state"] == "skipped"  # a first session: nothing to recall from yet
    term.prompt()

    start = term.mark()
    term.child.send("/ses")
    term.child.send("\t")  # the only command starting with "ses"
    term.child.send("\r")
    term.expect(r"created\s+\d{4}-\d{2}-\d{2}")
    term.prompt()
    assert "Unknown command" not in term.since(start)

    # Ctrl-C at the prompt drops the typed line and sends nothing.
    requests = len(fake_server.chat_requests)
    term.child.send("never sent")
    term.child.sendintr()
    term.prompt()
    term.child.sendeof()
    assert term.wait_exit() == 0
    assert len(fake_server.chat_requests) == requests
    assert history_entries(project) == [
        "what do the notes say",
        "/help",
        "/context",
        "/context --json",
        "/session",
    ]


def test_ctrl_c_interrupts_a_streamed_answer(spawn: Spawn, fake_server: FakeServer, project: Path) -> None:
    words = " ".join(f"word{i}" for i in range(150))
    fake_server.script(
        Reply(text=f"STREAMSTART {words} STREAMEND", chunk_chars=8, delay=0.2),
        Reply(text="AFTER-INTERRUPT-OK"),
    )
    term = spawn()
    term.prompt()
    term.type("tell me a long story")
    term.expect(r"STREAMSTART")
    term.child.sendintr()
    term.expect(r"interrupted")
    term.prompt()
    assert "STREAMEND" not in term.text
    # The client hung up: the server saw its next write fail.
    chat = [i for i, r in enumerate(fake_server.requests) if r.path.endswith("/chat/completions")]
    assert len(chat) == 1
    assert wait_for(lambda: fake_server.dropped == chat), (fake_server.dropped, chat)

    saved = archive(project)
    partial = saved[-1]
    assert partial["role"] == "assistant" and partial["meta"]["interrupted"] is True
    assert partial["content"].startswith("STREAMSTART ") and "STREAMEND" not in partial["content"]

    term.child.send("go on\x1b\r")  # Alt-Enter (Esc, Enter) inserts a newline
    term.type("from there")
    term.expect(r"AFTER-INTERRUPT-OK")
    term.prompt()
    assert len(fake_server.chat_requests) == 2  # validate=True accepted the follow-up
    messages = fake_server.chat_requests[1]["messages"]
    assert messages[-1] == {"role": "user", "content": "go on\nfrom there"}
    assert messages[-2]["role"] == "assistant"  # the partial answer, said to be cut off (issue 35 item 4)
    assert messages[-2]["content"] == partial["content"].rstrip() + "\n\n[interrupted by the user]"
    assert "meta" not in messages[-2]
    term.child.sendeof()
    assert term.wait_exit() == 0
    assert history_entries(project) == ["tell me a long story", "go on\nfrom there"]


def test_write_approval_yes_then_no(spawn: Spawn, fake_server: FakeServer, project: Path) -> None:
    fake_server.script(
        Reply(tool_calls=[call("file_operations", operation="write_file", path="ok.txt", content="kept\n")]),
        Reply(text="WROTE-IT"),
        Reply(tool_calls=[call("file_operations", operation="write_file", path="no.txt", content="nope\n")]),
        Reply(text="LEFT-IT-ALONE"),
    )
    term = spawn()
    term.prompt()

    term.type("write ok.txt")
    term.expect(r"\+\+\+ b/ok\.txt\s+@@ -0,0 \+1 @@\s+\+kept")  # the change, above the question
    term.expect(r"create ok\.txt \(1 line\)\s*Allow\? \[y\]es / \[n\]o / \[a\]lways write this session / \[d\]iff")
    assert not (project / "ok.txt").exists()  # nothing happens before the answer
    term.type("d")  # the whole diff, then the question again
    term.expect(r"\+\+\+ b/ok\.txt\s+@@ -0,0 \+1 @@\s+\+kept")
    term.expect(r"Allow\? \[y\]es")
    assert not (project / "ok.txt").exists()
    term.type("y")
    term.expect(r"✓ file_operations write_file ok\.txt")
    term.expect(r"WROTE-IT")
    term.prompt()
    assert (project / "ok.txt").read_text(encoding="utf-8") == "kept\n"

    term.type("write no.txt")
    term.expect(r"create no\.txt \(1 line\)\s*Allow\? \[y\]es")
    term.type("n")
    term.expect(r"✗ file_operations write_file no\.txt\s+.*declined")
    term.expect(r"LEFT-IT-ALONE")
    term.prompt()
    assert not (project / "no.txt").exists()
    refusal = fake_server.chat_requests[3]["messages"][-1]
    assert refusal["role"] == "tool" and "declined" in refusal["content"]

    term.child.sendeof()
    assert term.wait_exit() == 0
    assert history_entries(project) == ["write ok.txt", "write no.txt"]  # approvals are not history


def test_always_allows_the_kind_for_the_session_and_shows_later_diffs_after_the_fact(
    spawn: Spawn, fake_server: FakeServer, project: Path
) -> None:
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    fake_server.script(
        Reply(tool_calls=[call("file_operations", operation="write_file", path="a.txt", content="one\n")]),
        Reply(text="FIRST-DONE"),
        Reply(
            tool_calls=[
                call("file_operations", operation="replace_string", path="calc.py", old_string="a - b", new_string="a + b")
            ]
        ),
        Reply(text="SECOND-DONE"),
    )
    term = spawn()
    term.prompt()
    term.type("write a.txt")
    term.expect(r"Allow\? \[y\]es / \[n\]o / \[a\]lways write this session")
    term.type("a")
    term.expect(r"FIRST-DONE")
    term.prompt()
    start = term.mark()
    term.type("fix calc.py")
    term.expect(r"-    return a - b\s+\+    return a \+ b")  # shown after the fact: nobody was asked
    term.expect(r"SECOND-DONE")
    term.prompt()
    assert "Allow?" not in term.since(start)
    assert (project / "calc.py").read_text(encoding="utf-8") == "def add(a, b):\n    return a + b\n"
    term.child.sendeof()
    assert term.wait_exit() == 0
    term = spawn()  # 'always' lasts for the session only
    term.prompt()
    fake_server.script(
        Reply(tool_calls=[call("file_operations", operation="write_file", path="b.txt", content="two\n")]),
        Reply(text="THIRD"),
    )
    term.type("write b.txt")
    term.expect(r"Allow\? \[y\]es")
    term.type("n")
    term.expect(r"THIRD")
    term.prompt()
    assert not (project / "b.txt").exists()


def test_resume_shows_where_the_conversation_was(spawn: Spawn, fake_server: FakeServer, project: Path) -> None:
    from testkit.clio_run import run_clio

    home = project.parent / "home"
    for n in range(4):
        fake_server.script(Reply(text=f"answer number {n}\nsecond line {n}"))
        flags = ["--resume"] if n else []
        r = run_clio([*flags, "-p", f"request number {n}"], server=fake_server, project=project, home=home)
        assert r.returncode == 0, r.stderr
    term = spawn("--resume")
    term.expect(r"where you were \(2 earlier messages not shown; /session export has them all\):")
    shown = term.expect(r"› request number 1\s+answer number 1\s+second line 1\s+› request number 2[\s\S]*?› request number 3\s+answer number 3\s+second line 3")
    assert "request number 0" not in shown.group()
    term.prompt()
    term.child.sendeof()
    assert term.wait_exit() == 0


def test_at_mentions_complete_paths_and_attach_the_file(spawn: Spawn, fake_server: FakeServer, project: Path) -> None:
    (project / "docs dir").mkdir()
    (project / "docs dir" / "notes é.md").write_text("alpha note\nbeta note\n", encoding="utf-8")
    fake_server.script(Reply(text="READ-IT"))
    term = spawn()
    term.prompt()
    term.child.send("summarise @docs")
    term.child.send("\t")  # completes the folder, quoted because of the space
    wait_screen(term, 'summarise @"docs dir/')
    term.child.send("no\t")
    wait_screen(term, 'summarise @"docs dir/notes é.md"')
    term.child.send("\r")
    term.expect(r"attached docs dir/notes é\.md \(2 lines\)")
    term.expect(r"READ-IT")
    term.prompt()
    sent = user_texts(fake_server.chat_requests[-1])[-1]
    assert sent.startswith('summarise @"docs dir/notes é.md"')
    assert '<file path="docs dir/notes é.md">\nalpha note\nbeta note\n</file>' in sent
    saved = [m for m in archive(project) if m["role"] == "user"][-1]
    assert saved["meta"]["attached"] == ["docs dir/notes é.md"]
    term.child.sendeof()
    assert term.wait_exit() == 0
