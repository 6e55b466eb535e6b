"""Throughput of secret redaction on ~1 MB of mixed text (code, JSON, logs, git log, prose).

Run: /work/venv/bin/python benches/bench_redact.py [megabytes]
Prints MB/s per level (best of 5, wall clock and process CPU time: the CPU figure is steadier on
a busy machine) and the hits found: the planted secrets, plus any false positives.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

from clio.safety.redact import LEVELS, Redactor

PLANTED = [
    "AWS_ACCESS_KEY_ID=AKIAZ4RT7QW2PLMX9KDE",
    "token = ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5",
    "postgres://app:Tr0ub4dor&3@db.internal:5432/app",
    "PASSWORD=correct-horse-battery",
    "Authorization: Bearer abcDEF123ghiJKL456mnoPQR789",
]


def corpus(size: int, seed: int = 7) -> str:
    rnd = random.Random(seed)
    stdlib = Path(json.__file__).parent.parent
    sources = sorted(stdlib.glob("*.py"))
    parts: list[str] = []
    total = 0
    while total < size:
        kind = rnd.randrange(5)
        if kind == 0:
            text = rnd.choice(sources).read_text(encoding="utf-8", errors="replace")[:20000]
        elif kind == 1:
            text = json.dumps(
                {
                    "id": str(uuid.UUID(int=rnd.getrandbits(128))),
                    "created": f"2024-0{rnd.randint(1, 9)}-1{rnd.randint(0, 9)}T12:34:56.789Z",
                    "epoch": 1700000000 + rnd.randrange(10**7),
                    "sha256": hashlib.sha256(str(rnd.random()).encode()).hexdigest(),
                    "items": [rnd.random() for _ in range(20)],
                    "max_tokens": 4096,
                },
                indent=1,
            )
        elif kind == 2:
            text = "\n".join(
                f"2024-05-0{rnd.randint(1, 9)} 10:{rnd.randint(10, 59)}:00,123 INFO req={uuid.UUID(int=rnd.getrandbits(128))}"
                f" took {rnd.random():.4f}s status=200 bytes={rnd.randrange(10**9)}"
                for _ in range(50)
            )
        elif kind == 3:
            text = "\n".join(
                f"commit {hashlib.sha1(str(rnd.random()).encode()).hexdigest()}\n"
                f"Author: Dev {i} <dev{i}@example.com>\nDate:   Tue May 7 10:00:00 2024 +0200\n\n    fix: thing {i}\n"
                for i in range(20)
            )
        else:
            text = rnd.choice(PLANTED)
        parts.append(text)
        total += len(text)
    return "\n".join(parts)


def per_message(text: str) -> None:
    """Latency on message-sized pieces (what the agent loop pays per message)."""
    red = Redactor("standard")
    chunks = [text[i : i + 2000] for i in range(0, min(len(text), 400_000), 2000)]
    t0 = time.perf_counter()
    for chunk in chunks:
        red.redact_message({"role": "tool", "content": chunk})
    print(f"standard, 2 KB messages: {(time.perf_counter() - t0) / len(chunks) * 1e6:.0f} us per message")


def main() -> None:
    mb = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    text = corpus(int(mb * 1_000_000))
    size = len(text.encode()) / 1e6
    print(f"corpus: {size:.2f} MB, {text.count(chr(10))} lines")
    for level in LEVELS:
        red = Redactor(level)
        wall = cpu = float("inf")
        for _ in range(5):
            t0, c0 = time.perf_counter(), time.process_time()
            _, labels = red.redact(text)
            wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
        print(
            f"{level:9s} {size / wall:7.1f} MB/s wall, {size / max(cpu, 1e-9):7.1f} MB/s cpu  hits={dict(Counter(labels))}"
        )
    per_message(text)


if __name__ == "__main__":
    main()
