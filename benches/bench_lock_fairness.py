"""How long a process waits for FileLock when several hammer the same file with locked_update.

Run: /work/venv/bin/python benches/bench_lock_fairness.py [writers] [appends]
Prints the total time and each writer's longest wait for the lock. A fair lock keeps the longest
wait near (writers - 1) x one update; an unfair one lets a waiter starve until FileLock's timeout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from clio.store.atomic import FileLock, atomic_write_json


def worker(path: Path, wid: int, count: int, go: Path) -> None:
    (go.parent / f"ready-{wid}").touch()
    while not go.exists():
        time.sleep(0.001)
    longest = 0.0
    for i in range(count):
        t0 = time.monotonic()
        with FileLock(path, timeout=600):
            longest = max(longest, time.monotonic() - t0)
            items = json.loads(path.read_text()) if path.exists() else []
            atomic_write_json(path, [*items, [wid, i]])
    print(json.dumps({"longest_wait": longest}))


def main() -> None:
    writers = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    root = Path(tempfile.mkdtemp(prefix="clio-lock-"))
    go = root / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "worker", str(root / "list.json"), str(w), str(count), str(go)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(writers)
    ]
    while len(list(root.glob("ready-*"))) < writers:
        time.sleep(0.01)
    t0 = time.monotonic()
    go.touch()
    waits = sorted(json.loads(p.communicate()[0])["longest_wait"] for p in procs)
    total = time.monotonic() - t0
    items = json.loads((root / "list.json").read_text())
    print(f"{writers} writers x {count} locked appends: {len(items)} items in {total:.1f}s")
    print("longest wait per writer (s): " + " ".join(f"{w:.2f}" for w in waits))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5]))
    else:
        main()
