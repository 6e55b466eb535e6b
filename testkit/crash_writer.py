"""Helper processes for tests/unit/test_crash_safety.py (real processes, killed with SIGKILL).

    python testkit/crash_writer.py server DIR           fork a write-loop child per "round SEED" line on stdin
    python testkit/crash_writer.py append PATH ID N GO  wait for file GO, then N locked_update appends to PATH
    python testkit/crash_writer.py read PATH GO STOP    wait for GO, then read_json PATH until STOP exists
    python testkit/crash_writer.py hold PATH            take FileLock(PATH), say "locked", sleep forever
    python testkit/crash_writer.py inside PATH          locked_update(PATH) that says "inside" and never returns

The write loop (one forked child per round, so a round costs a fork, not an interpreter start) writes,
over and over, the three kinds of files clio keeps: a session-like JSON object (atomic_write_json),
an LTM-like JSON list (locked_update append) and a notes text file (atomic_write_text). Every value
carries a digest of itself, so a reader can tell a complete value from a torn one. After each write
returns, the child appends "<file> <counter>" to progress.log: the parent then knows the last value
that was certainly written, and the file on disk must hold that value or the next one.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

from clio.store.atomic import FileLock, atomic_write_json, atomic_write_text, locked_update, read_json

SESSION, LTM, NOTES, LOG = "session.json", "ltm.json", "notes.md", "progress.log"


def digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def payload(n: int, size: int) -> str:
    seed = hashlib.sha256(str(n).encode()).hexdigest()
    return (seed * (size // len(seed) + 1))[:size]


def session_value(n: int, size: int) -> dict[str, Any]:
    body = payload(n, size)
    return {"id": "20261122-143005-a1b2", "counter": n, "body": body, "digest": digest(n, body)}


def ltm_item(n: int, size: int) -> dict[str, Any]:
    text = payload(n, size)
    return {"n": n, "text": text, "digest": digest(n, text)}


def notes_text(n: int, size: int) -> str:
    lines = [f"- note {i}: {payload(i, 40)}" for i in range(n % 50)]
    body = "\n".join(lines) + "\n" + payload(n, size)
    return f"counter {n}\n{body}\nsha256 {digest(n, body)}\n"


def parse_notes(text: str) -> tuple[int, bool]:
    """(counter, digest ok) of a notes file."""
    head, _, rest = text.partition("\n")
    body, _, tail = rest.rstrip("\n").rpartition("\n")
    n = int(head.split()[1])
    return n, tail == f"sha256 {digest(n, body)}"


def write_loop(root: Path, seed: int) -> None:
    """Runs until killed."""
    rnd = random.Random(seed)
    log = os.open(root / LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def done(name: str, n: int) -> None:
        os.write(log, f"{name} {n}\n".encode())

    while True:
        durable = rnd.random() < 0.7  # fsync or not: either way a killed process leaves old or new
        size = rnd.choice([200, 5_000, 60_000, 250_000])
        current: dict[str, Any] = read_json(root / SESSION, dict)
        n = int(current.get("counter", 0)) + 1
        atomic_write_json(root / SESSION, session_value(n, size), durable=durable)
        done("session", n)

        # a sliding window of the last 40 items, numbered on: the list stays small, the numbers tell
        def add(items: list[dict[str, Any]], size: int = size) -> list[dict[str, Any]]:
            return [*items, ltm_item(items[-1]["n"] + 1 if items else 1, size // 50)][-40:]

        items = locked_update(root / LTM, add, list)
        done("ltm", items[-1]["n"])

        m = parse_notes((root / NOTES).read_text())[0] + 1 if (root / NOTES).exists() else 1
        atomic_write_text(root / NOTES, notes_text(m, size), durable=durable)
        done("notes", m)


def _die_with_parent() -> None:
    """Linux: a writer whose server goes away (a failed test) is killed too, never left looping."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def server(root: Path) -> None:
    """Fork one write-loop child per command; the parent test kills it and asks us to reap it."""
    for line in sys.stdin:
        cmd, arg = line.split()
        if cmd == "round":
            (root / LOG).unlink(missing_ok=True)
            pid = os.fork()
            if pid == 0:
                try:
                    _die_with_parent()
                    write_loop(root, int(arg))
                finally:
                    os._exit(1)
            print(f"pid {pid}", flush=True)
        elif cmd == "reap":
            _, status = os.waitpid(int(arg), 0)
            killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
            print(f"reaped {int(killed)}", flush=True)


def wait_for(path: Path) -> None:
    while not path.exists():
        time.sleep(0.001)


def append(path: Path, writer: int, count: int, go: Path) -> None:
    (go.parent / f"ready-w{writer}").touch()
    wait_for(go)
    for i in range(count):

        def add(items: list[dict[str, int]], i: int = i) -> list[dict[str, int]]:
            return [*items, {"w": writer, "i": i}]

        # what is tested is that no update is lost; a starved writer under a loaded CI machine
        # may wait past the product's 30 s (benches/bench_lock_fairness.py measures the waits)
        locked_update(path, add, list, lock_timeout=600)


def read(path: Path, go: Path, stop: Path) -> None:
    """Read while others write: every read must parse (a torn read would be quarantined)."""
    (go.parent / f"ready-r{os.getpid()}").touch()
    wait_for(go)
    damaged: list[str] = []
    reads = 0
    while not stop.exists():
        data: list[Any] = read_json(path, list, on_damaged=lambda p, moved: damaged.append(str(moved)))
        assert isinstance(data, list)
        reads += 1
    print(json.dumps({"reads": reads, "damaged": damaged}), flush=True)


def hold(path: Path) -> None:
    lock = FileLock(path)
    lock.acquire()
    print("locked", flush=True)
    time.sleep(3600)


def inside(path: Path) -> None:
    def update(items: list[Any]) -> list[Any]:
        print("inside", flush=True)
        time.sleep(3600)
        return [*items, "never written"]

    locked_update(path, update, list)


def main(argv: list[str]) -> None:
    mode, args = argv[0], argv[1:]
    if mode == "server":
        server(Path(args[0]))
    elif mode == "append":
        append(Path(args[0]), int(args[1]), int(args[2]), Path(args[3]))
    elif mode == "read":
        read(Path(args[0]), Path(args[1]), Path(args[2]))
    elif mode == "hold":
        hold(Path(args[0]))
    elif mode == "inside":
        inside(Path(args[0]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
