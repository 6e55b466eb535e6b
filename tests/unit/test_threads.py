"""Every thread clio starts leaves Ctrl-C to the main thread (clio.threads): the kernel hands a
terminal's SIGINT to any thread that does not block it, and a main thread asleep in a socket read
would then sleep through it."""

from __future__ import annotations

import ast
import signal
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import clio
from clio import threads


def blocks_sigint() -> bool:
    return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set())


def test_a_thread_clio_starts_blocks_sigint_and_so_do_the_threads_it_starts() -> None:
    seen: dict[str, bool] = {}

    def grandchild() -> None:
        seen["grandchild"] = blocks_sigint()

    def child() -> None:
        seen["child"] = blocks_sigint()
        plain = threading.Thread(target=grandchild)  # e.g. an asyncio loop's executor
        plain.start()
        plain.join()

    before = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    threads.start(child, "test-child").join(5)
    assert seen == {"child": True, "grandchild": True}
    assert signal.pthread_sigmask(signal.SIG_BLOCK, set()) == before  # the caller's own mask is as it was
    assert not blocks_sigint()


def test_a_plain_thread_would_take_sigint() -> None:
    """The contrast the rule exists for: Python's own threads inherit the main thread's mask."""
    seen: list[bool] = []
    plain = threading.Thread(target=lambda: seen.append(blocks_sigint()))
    plain.start()
    plain.join()
    assert seen == [False]


def test_a_pool_with_the_initializer_blocks_it() -> None:
    with ThreadPoolExecutor(max_workers=1, initializer=threads.block_interrupts) as pool:
        assert pool.submit(blocks_sigint).result(5) is True


def child_blocks_sigint() -> bool:
    out = subprocess.run(["grep", "SigBlk", "/proc/self/status"], capture_output=True, text=True, check=True).stdout
    return bool(int(out.split()[-1], 16) & (1 << (signal.SIGINT - 1)))


def test_a_process_started_inside_spawning_does_not_inherit_the_blocked_sigint() -> None:
    seen: list[bool] = []

    def work() -> None:
        seen.append(child_blocks_sigint())  # what a plain spawn from such a thread would do
        with threads.spawning():
            with threads.spawning():  # nested (an event loop's coroutines each starting a server)
                seen.append(child_blocks_sigint())
            seen.append(child_blocks_sigint())  # the outer one still open
        seen.append(blocks_sigint())  # blocked again once the last one ends

    threads.start(work, "test-spawner").join(10)
    assert seen == [True, False, False, True]


def test_every_thread_of_the_clio_process_is_started_through_clio_threads() -> None:
    """No module of the clio process starts a thread or a pool any other way (the encoder helper
    is a process of its own, in a session of its own: no terminal sends it SIGINT)."""
    src = Path(clio.__file__).parent
    allowed = {src / "threads.py", src / "recall" / "encoder_service.py"}
    found = []
    for path in src.rglob("*.py"):
        if path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                if name.endswith(("threading.Thread", "ThreadPoolExecutor")) or name in ("Thread",):
                    kwargs = {k.arg for k in node.keywords}
                    if name.endswith("ThreadPoolExecutor") and "initializer" in kwargs:
                        continue
                    found.append(f"{path.relative_to(src)}:{node.lineno} {name}")
    assert found == [], found
