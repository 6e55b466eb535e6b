"""The REPL prompt's SIGINT latch (clio/ui/sigint_latch.py), in process, with a real prompt-toolkit
session reading from a pipe: a SIGINT while the prompt reads aborts the line, one after Enter is
remembered (the line is not sent), and the handler before is put back."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest
from prompt_toolkit import PromptSession
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

from clio.ui.sigint_latch import SigintLatch

Prompt = tuple[PromptSession[str], PipeInput]


@pytest.fixture
def prompt() -> Iterator[Prompt]:
    """A real prompt-toolkit session reading from a pipe, writing nowhere."""
    with create_pipe_input() as pipe:
        yield PromptSession(input=pipe, output=DummyOutput()), pipe


def test_a_signal_after_enter_is_remembered_and_the_handler_put_back(prompt: Prompt) -> None:
    session, pipe = prompt
    latch = SigintLatch(session.app)
    before = signal.getsignal(signal.SIGINT)
    latch.arm()
    pipe.send_text("deploy it\r")
    line = session.prompt("> ", handle_sigint=False)
    assert line == "deploy it"
    os.kill(os.getpid(), signal.SIGINT)  # the prompt has returned: only the latch sees it
    assert latch.release() is True
    assert signal.getsignal(signal.SIGINT) is before
    assert latch.release() is False  # said once


def test_nothing_fired_says_false(prompt: Prompt) -> None:
    session, pipe = prompt
    latch = SigintLatch(session.app)
    latch.arm()
    pipe.send_text("hello\r")
    assert session.prompt("> ", handle_sigint=False) == "hello"
    assert latch.release() is False


def test_a_signal_while_the_prompt_reads_aborts_the_line(prompt: Prompt) -> None:
    session, pipe = prompt
    latch = SigintLatch(session.app)
    latch.arm()
    pipe.send_text("half a lin")
    returned = threading.Event()

    def later() -> None:
        while not session.app.is_running:
            time.sleep(0.01)
        time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGINT)
        if not returned.wait(5):  # (never sent once the prompt returned: the pipe is closed after the test)
            pipe.send_text("\r")  # not aborted: the prompt returns the half line, and the test fails

    threading.Thread(target=later, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            session.prompt("> ", handle_sigint=False)
    finally:
        returned.set()
    latch.release()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_latch_holds_through_the_whole_prompt(prompt: Prompt) -> None:
    """The prompt under the latch leaves the handler alone: asyncio's runner installs its own only
    over Python's default handler, and the latch's stays in place across the whole prompt."""
    session, pipe = prompt
    latch = SigintLatch(session.app)
    latch.arm()
    seen: list[object] = []
    session.app.after_render += lambda _app: seen.append(signal.getsignal(signal.SIGINT))
    pipe.send_text("x\r")
    session.prompt("> ", handle_sigint=False)
    assert seen and all(getattr(h, "__self__", None) is latch for h in seen)
    latch.release()


def test_a_signal_as_the_line_is_accepted_is_caught(prompt: Prompt) -> None:
    """The window that lost a Ctrl-C (a CI flake of test_repl_ctrlc): the line is accepted and the
    prompt's machinery is still running. Sent there, under prompt-toolkit's own handler
    (``handle_sigint=True``) the signal went to the finished prompt and was dropped; the latch
    keeps it."""
    session, pipe = prompt
    hooked: list[object] = []

    def on_render(_app: object) -> None:
        future = session.app.future
        if future is not None and future not in hooked:
            hooked.append(future)
            future.add_done_callback(lambda _f: os.kill(os.getpid(), signal.SIGINT))

    session.app.after_render += on_render
    latch = SigintLatch(session.app)
    latch.arm()
    pipe.send_text("deploy to production\r")
    assert session.prompt("> ", handle_sigint=False) == "deploy to production"
    assert hooked
    assert latch.release() is True
