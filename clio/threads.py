"""The threads clio starts leave Ctrl-C to the main thread.

A terminal's Ctrl-C is a SIGINT to the whole process. The kernel hands it to the main thread
unless that thread has a signal pending already; then to any other thread that does not block it.
CPython's handler, run there, only flags the main thread, which acts on the flag when it next runs
bytecode: asleep in a socket read (the model's first byte may be a minute away) or in a long wait,
it would sleep through the Ctrl-C. So every thread clio starts blocks SIGINT: started through
:func:`start`, a thread inherits the blocked signal from the moment it exists (a new thread takes
the mask of the thread that starts it, so the threads it starts in turn, an asyncio loop's
executor among them, block it too), and a pool's threads block it first thing
(:func:`block_interrupts` as the pool's initializer). The kernel then always hands Ctrl-C to the
main thread, and a blocking call there ends at once.

A process forked from such a thread would inherit the blocked signal, and so would everything it
runs: a command's own ``kill -INT`` or a test runner's Ctrl-C to its children would do nothing.
So clio's own programs (the command launcher, the encoder helper, the background upkeep, the
wrapper that execs a confined command) unblock every signal first, and a thread that starts a
program it does not own (an MCP server) does so inside :func:`spawning`.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

_MASKS = hasattr(signal, "pthread_sigmask")  # POSIX; elsewhere the console's Ctrl-C goes its own way


def start(target: Callable[..., Any], name: str, args: tuple[Any, ...] = ()) -> threading.Thread:
    """Start a daemon thread that never receives the user's Ctrl-C."""
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    if not _MASKS:
        thread.start()
        return thread
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # a Ctrl-C meanwhile waits, then comes here
    try:
        thread.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
    return thread


def block_interrupts() -> None:
    """This thread leaves Ctrl-C to the main thread (a thread pool's ``initializer``)."""
    if _MASKS:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


_spawns = threading.local()  # per thread: how many spawning() blocks are open, the mask before them


@contextlib.contextmanager
def spawning() -> Iterator[None]:
    """Processes this thread starts meanwhile get SIGINT unblocked, as any program expects. Nested
    and interleaved uses (the coroutines of one event loop each starting a server) are counted: the
    signal is blocked again when the last one ends."""
    if not _MASKS:
        yield
        return
    depth = getattr(_spawns, "depth", 0)
    if depth == 0:
        _spawns.before = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _spawns.depth = depth + 1
    try:
        yield
    finally:
        _spawns.depth -= 1
        if _spawns.depth == 0:
            signal.pthread_sigmask(signal.SIG_SETMASK, _spawns.before)
