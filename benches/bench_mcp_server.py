"""``clio mcp`` figures: server start to first tool call, and recall latency through MCP.

Run: .venv/bin/python benches/bench_mcp_server.py [--quick] [--before TREE [--starts N]]
Prints the figures; docs/benchmarks.md records them.

``--before TREE``: paired starts only: a folder holding another ``clio`` package (e.g. ``git archive
COMMIT clio | tar -x -C TREE``) is put first on PYTHONPATH for every other start, the installed
clio serves the rest, alternating which goes first; p50/p95/min of each and of the per-pair
difference (after minus before).

1. Start: the MCP SDK's stdio client spawns the installed ``clio mcp`` (testkit/mcp_client.py),
   initializes, and calls ``note_list``; wall time from the spawn to that result (median and max
   of N starts), and the import time of the server module alone (``python -X importtime`` is
   not used: one ``python -c`` run, so the interpreter's own start is included).
2. Recall: a project with 200 long-term memory entries (written through ``remember``); then
   ``recall`` for varied queries, one at a time over one session: p50 / p95 / max in ms, as the
   client sees them (JSON-RPC over the pipe included). ``remember`` latency (read, dedup,
   fsynced write under the lock) in the same way.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

from testkit.clio_run import CLIO  # noqa: E402
from testkit.mcp_client import call, clio_mcp  # noqa: E402

VOCABULARY = (
    "billing invoice render cache session queue worker retry deploy cluster proxy token schema migration "
    "index search config parser lexer plugin storage bucket upload thumbnail webhook cron backup restore "
    "metrics alert dashboard login oauth password reset email template locale timezone currency report"
)
WORDS = VOCABULARY.split()


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def fact(i: int) -> str:
    w = [WORDS[(i * k + 3 * k) % len(WORDS)] for k in (1, 3, 7, 11)]
    return f"The {w[0]} {w[1]} module {i} keeps its {w[2]} state next to the {w[3]} handler (item {i})"


async def start_once(project: Path, home: Path) -> float:
    t0 = time.perf_counter()
    async with clio_mcp(project, home) as s:
        is_error, text = await call(s, "note_list")
        assert not is_error, text
        return (time.perf_counter() - t0) * 1000


async def recall_run(
    project: Path, home: Path, entries: int, queries: int
) -> tuple[list[float], list[float]]:
    writes: list[float] = []
    reads: list[float] = []
    async with clio_mcp(project, home) as s:
        for i in range(entries):
            t0 = time.perf_counter()
            is_error, text = await call(s, "remember", type="discovery", fact=fact(i))
            writes.append((time.perf_counter() - t0) * 1000)
            assert not is_error, text
        for i in range(queries):
            q = f"where does the {WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} keep its state"
            t0 = time.perf_counter()
            is_error, text = await call(s, "recall", query=q)
            reads.append((time.perf_counter() - t0) * 1000)
            assert not is_error, text
    return writes, reads


def paired_starts(before: str, pairs: int) -> None:
    """Start to first tool result, ``before`` (PYTHONPATH) and the installed clio alternately."""
    import os

    times: dict[str, list[float]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        project, home = Path(tmp) / "proj", Path(tmp) / "home"
        project.mkdir()
        for i in range(pairs):
            for which in ("before", "after") if i % 2 == 0 else ("after", "before"):
                if which == "before":
                    os.environ["PYTHONPATH"] = before
                else:
                    os.environ.pop("PYTHONPATH", None)
                times[which].append(anyio.run(start_once, project, home))
    os.environ.pop("PYTHONPATH", None)
    for which, xs in times.items():
        print(f"{which}: p50 {pct(xs, 0.5):.0f} ms, p95 {pct(xs, 0.95):.0f}, min {min(xs):.0f} ({pairs} starts)")
    diffs = [a - b for a, b in zip(times["after"], times["before"], strict=True)]
    print(f"after - before, per pair: median {statistics.median(diffs):+.0f} ms, p5..p95 {pct(diffs, 0.05):+.0f}..{pct(diffs, 0.95):+.0f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--before", metavar="TREE", help="paired starts against the clio package in TREE")
    ap.add_argument("--starts", type=int, default=15, help="pairs with --before")
    args = ap.parse_args()
    if args.before:
        paired_starts(args.before, args.starts)
        return
    starts, entries, queries = (3, 50, 30) if args.quick else (10, 200, 200)
    with tempfile.TemporaryDirectory() as tmp:
        project, home = Path(tmp) / "proj", Path(tmp) / "home"
        project.mkdir()
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import clio.mcp.server"], check=True)
        imp = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        subprocess.run([str(CLIO), "--version"], check=True, capture_output=True)
        plain = (time.perf_counter() - t0) * 1000
        times = [anyio.run(start_once, project, home) for _ in range(starts)]
        print(f"python -c 'import clio.mcp.server': {imp:.0f} ms (clio --version: {plain:.0f} ms)")
        print(
            f"start to first tool call ({starts} starts): median {statistics.median(times):.0f} ms, "
            f"min {min(times):.0f}, max {max(times):.0f}"
        )
        writes, reads = anyio.run(recall_run, project, home, entries, queries)
        print(
            f"remember ({entries} entries, growing file): p50 {pct(writes, 0.5):.1f} ms, "
            f"p95 {pct(writes, 0.95):.1f}, max {max(writes):.1f}"
        )
        print(
            f"recall at {entries} entries ({queries} queries): p50 {pct(reads, 0.5):.1f} ms, "
            f"p95 {pct(reads, 0.95):.1f}, max {max(reads):.1f}"
        )


if __name__ == "__main__":
    main()
