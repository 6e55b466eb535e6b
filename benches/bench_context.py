"""Context engine figures: per-turn cost vs session length, estimator error, cached-prefix share.

Run: /work/venv/bin/python benches/bench_context.py [--quick]
Prints the figures; docs/memory.md records them.  Pure CPU, no server: usage is computed
with the fake server's formula, ceil(chars / ratio) + 3 * messages + 3.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

import clio.tools.builtin  # noqa: E402, F401  (registers the built-in tools)
from clio.context.budget import Budget  # noqa: E402
from clio.context.engine import ContextEngine  # noqa: E402
from clio.context.tokens import TokenEstimator  # noqa: E402
from clio.messages import api_view  # noqa: E402
from clio.tools.registry import REGISTRY  # noqa: E402

ACTIONS = REGISTRY.actions()  # what each built-in tool operation does, as clio passes it

SYSTEM = [{"role": "system", "content": "You are clio, a terminal coding agent. Be brief and exact. " * 60}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool with an operation parameter.",
            "parameters": {
                "type": "object",
                "properties": {"operation": {"type": "string"}, "path": {"type": "string"}},
                "required": ["operation"],
            },
        },
    }
    for name in ("file_operations", "terminal_operations", "version_control", "todo_operations")
]


def server_prompt_tokens(msgs: list[dict[str, Any]], tools: list[dict[str, Any]], ratio: float) -> int:
    chars = 0
    for m in msgs:
        c = m.get("content")
        chars += len(c) if isinstance(c, str) else 0
        for call in m.get("tool_calls") or []:
            fn = call["function"]
            chars += len(fn["name"]) + len(fn["arguments"])
    chars += len(json.dumps(tools, separators=(",", ":"))) if tools else 0
    return math.ceil(chars / ratio) + 3 * len(msgs) + 3


class Session:
    """Synthetic agent turns: a user request every 8 turns, one tool call + result per turn."""

    def __init__(self, window: int, seed: int = 1, sizes: tuple[int, ...] = (200, 800, 2500, 6000)) -> None:
        self.rng = random.Random(seed)
        self.sizes = sizes
        self.engine = ContextEngine(TokenEstimator("bench-model"), Budget(window), actions=ACTIONS)
        self.seq = 0
        self.turn = 0

    def add(self, msg: dict[str, Any]) -> None:
        msg["meta"] = {"seq": self.seq}
        self.seq += 1
        self.engine.append(msg)

    def step(self) -> int:
        """Add one turn's messages; returns how many were added."""
        n = 0
        if self.turn % 8 == 0:
            self.add({"role": "user", "content": f"request {self.turn}: please go on with the refactor"})
            n += 1
        cid = f"call_{self.turn}"
        op = self.rng.choice(["read_file", "read_file", "replace_string", "grep_search"])
        args = json.dumps({"operation": op, "path": f"src/pkg/module_{self.turn % 97}.py"})
        self.add(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": "file_operations", "arguments": args},
                    }
                ],
            }
        )
        size = self.rng.choice(self.sizes)
        self.add(
            {"role": "tool", "tool_call_id": cid, "content": "def f(x):\n    return x + 1\n" * (size // 28)}
        )
        self.turn += 1
        return n + 2


def bench_turn_cost(quick: bool) -> None:
    print("== per-turn cost of append + prepare() vs session length (steady state, median of last turns)")
    lengths = [100, 1_000, 10_000] if quick else [100, 1_000, 10_000, 100_000]
    print(f"{'messages':>10} {'window':>8} {'win msgs':>9} {'median us':>10} {'p95 us':>8} {'resume ms':>10}")
    for window in (8_000, 128_000):
        for n in lengths:
            s = Session(window)
            measured = min(200, n // 3)
            while s.seq < n - 3 * measured:  # warm up: prepare every few turns keeps the window bounded
                s.step()
                if s.turn % 4 == 0:
                    s.engine.prepare(SYSTEM, TOOLS)
            times = []
            while s.seq < n:
                t0 = time.perf_counter()
                s.step()
                s.engine.prepare(SYSTEM, TOOLS)
                times.append(time.perf_counter() - t0)
            state = json.loads(json.dumps(s.engine.state()))
            archive = [{"role": "user", "content": "x", "meta": {"seq": i}} for i in range(s.seq)]
            t0 = time.perf_counter()
            ContextEngine.from_state(TokenEstimator("bench-model"), Budget(window), state, archive)
            resume = time.perf_counter() - t0
            times.sort()
            print(
                f"{s.seq:>10} {window:>8} {len(s.engine.window):>9} {statistics.median(times) * 1e6:>10.0f} "
                f"{times[int(len(times) * 0.95)] * 1e6:>8.0f} {resume * 1e3:>10.1f}"
            )


def bench_estimator(quick: bool) -> None:
    print("\n== estimator error vs server-reported prompt_tokens (learning from usage)")
    turns = 300 if quick else 1000
    for label, ratio_of in (
        ("uniform server ratio 3.2", lambda turn: 3.2),
        ("server ratio drifting 2.8..4.2", lambda turn: 3.5 + 0.7 * math.sin(turn / 40)),
    ):
        s = Session(32_000, seed=3)
        errs = []
        for _ in range(turns):
            s.step()
            p = s.engine.prepare(SYSTEM, TOOLS)
            usage = server_prompt_tokens([api_view(m) for m in p.messages], TOOLS, ratio_of(s.turn))
            errs.append(abs(p.tokens - usage) / usage * 100)
            s.engine.observe(p.messages, TOOLS, usage)
        first, rest = errs[0], errs[5:]
        print(
            f"{label:34} first request {first:5.1f}%  after 5: mean {statistics.mean(rest):.2f}%  "
            f"p95 {sorted(rest)[int(len(rest) * 0.95)]:.2f}%  max {max(rest):.2f}%  "
            f"learned {s.engine.estimator.chars_per_token:.3f}"
        )


def common_prefix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def bench_prefix(quick: bool) -> None:
    print("\n== share of each request repeating the previous request's prefix (serialized messages)")
    turns = 150 if quick else 400
    print(
        f"{'window':>8} {'requests':>9} {'trims':>6} {'mean share':>11} {'full extends':>13} {'tokens sent':>12}"
    )
    for window in (8_000, 32_000, 128_000):
        s = Session(window, seed=5)
        prev = ""
        shares = []
        extends = trims = sent_tokens = 0
        for _ in range(turns):
            s.step()
            p = s.engine.prepare(SYSTEM, TOOLS)
            trims += p.trimmed
            sent = [api_view(m) for m in p.messages]
            key = json.dumps(sent, separators=(",", ":"), ensure_ascii=False)
            usage = server_prompt_tokens(sent, TOOLS, 3.3)
            sent_tokens += usage
            s.engine.observe(p.messages, TOOLS, usage)
            if prev:
                shares.append(common_prefix(prev, key) / len(key))
                extends += key.startswith(prev[:-1])
            prev = key
        print(
            f"{window:>8} {turns:>9} {trims:>6} {statistics.mean(shares) * 100:>10.1f}% "
            f"{extends / len(shares) * 100:>12.1f}% {sent_tokens:>12}"
        )


def bench_scripted_50(quick: bool) -> None:
    print("\n== tokens sent over a scripted 50-turn session (one request per turn)")
    for window in (8_000, 32_000, 200_000):
        s = Session(window, seed=9)
        total = 0
        for _ in range(50):
            s.step()
            p = s.engine.prepare(SYSTEM, TOOLS)
            usage = server_prompt_tokens([api_view(m) for m in p.messages], TOOLS, 3.3)
            s.engine.observe(p.messages, TOOLS, usage)
            total += usage
        print(f"window {window:>7}: {total:>9} prompt tokens, last request {usage} tokens")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smaller sessions (no 100,000-message run)")
    args = ap.parse_args()
    bench_turn_cost(args.quick)
    bench_estimator(args.quick)
    bench_prefix(args.quick)
    bench_scripted_50(args.quick)


if __name__ == "__main__":
    main()
