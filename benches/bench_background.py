"""Consolidation never in the user's way (issue 33 item 3): wall times with a slow model.

The fake server (testkit) answers clio's consolidation requests after ``--delay`` seconds (a small
local model: docs/memory.md measures 48 s median) and everything else at once. Measured, each
``--repeat`` times in a fresh project, through the installed ``clio``:

- ``clio -p`` with nothing to save (the baseline);
- ``clio -p`` with a decision (its read-back starts in a detached child after the answer);
- ``clio -p`` right after it, while that read-back is under way;
- Ctrl-D in the REPL after a decision, to the process's exit (pty).

``python benches/bench_background.py [--delay 8] [--repeat 3]``; medians printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

from testkit.clio_run import CLIO, clio_env, run_clio, wait_background
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import ScriptedModel, is_consolidation

DECISION = "We will use pgbouncer in transaction mode for the billing database."
TASK = "what is two plus two?"


class Slow:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.model = ScriptedModel()
        self.model.on(DECISION, Reply(text="Noted: pgbouncer in transaction mode."))
        self.model.on(TASK, Reply(text="Four."))
        self.stop = threading.Event()

    def __call__(self, body: dict[str, Any]) -> Any:
        if is_consolidation(body):
            self.stop.wait(self.delay)
        return self.model(body)


def timed(server: FakeServer, project: Path, home: Path, text: str) -> float:
    start = time.monotonic()
    r = run_clio(["-p", text], server=server, project=project, home=home, background=True)
    took = time.monotonic() - start
    assert r.returncode == 0, r.stderr
    return took


def ctrl_d(server: FakeServer, project: Path, home: Path) -> float:
    import pexpect

    env = clio_env(server, home, {"CLIO_MODEL": "fake-model", "TERM": "xterm-256color"})
    child = pexpect.spawn(str(CLIO), [], cwd=str(project), env=env, dimensions=(40, 120), encoding="utf-8")
    cpr = 0

    def pump(pattern: str) -> None:
        nonlocal cpr
        seen = ""
        deadline = time.monotonic() + 30
        while pattern not in seen and time.monotonic() < deadline:
            try:
                seen += child.read_nonblocking(65536, timeout=0.1)
            except pexpect.TIMEOUT:
                continue
            while cpr < seen.count("\x1b[6n"):
                child.send("\x1b[28;1R")
                cpr += 1

    pump("›")
    child.send(DECISION + "\r")
    pump("Noted")
    time.sleep(0.5)
    start = time.monotonic()
    child.sendeof()
    child.expect(pexpect.EOF, timeout=60)
    took = time.monotonic() - start
    child.close()
    return took


def one(delay: float) -> dict[str, float]:
    slow = Slow(delay)
    server = FakeServer(slow).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            project, home = Path(tmp) / "proj", Path(tmp) / "home"
            project.mkdir()
            home.mkdir()
            out = {"nothing to save": timed(server, project, home, TASK)}
            out["with a decision"] = timed(server, project, home, DECISION)
            out["the next run"] = timed(server, project, home, TASK)
            wait_background(project, timeout=4 * delay + 30)
            out["Ctrl-D in the REPL"] = ctrl_d(server, project, home)
            wait_background(project, timeout=4 * delay + 30)
            return out
    finally:
        slow.stop.set()
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=8.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = [one(args.delay) for _ in range(args.repeat)]
    load = os.getloadavg()[0]
    print(json.dumps({"delay_s": args.delay, "repeat": args.repeat, "load": round(load, 2)}))
    for key in runs[0]:
        values = [r[key] for r in runs]
        print(f"{key}: median {statistics.median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f})")


if __name__ == "__main__":
    main()
