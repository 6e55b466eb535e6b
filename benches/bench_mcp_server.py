"""``clio mcp`` figures: server start to first tool call, and recall latency through MCP.

Run: .venv/bin/python benches/bench_mcp_server.py [--quick] [--before TREE [--starts N] [--history]]
       .venv/bin/python benches/bench_mcp_server.py --sessions [--rounds N]
Prints the figures; docs/benchmarks.md records them.

``--first-search``: the paired starts' first call is ``search_sessions`` rather than ``note_list``.
``--history``: the paired starts in a project with history (the dev set E's 42 sessions), where
the server warms up as it opens (the session index brought up to date, the user's encoder helper
started or asked to fill) while the client connects.

``--sessions``: ``search_sessions`` latency and what it finds in that project, with the encoder
helper (started and filled first) and without it (``CLIO_RECALL_ENCODER=0``): set E's 24
probes, ``--rounds`` times each; the related probes whose fact is in the top 3.

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
from typing import Any

import anyio

sys.path.append(
    str(Path(__file__).resolve().parents[1])
)  # testkit/ (appended: an installed clio comes first)

from testkit.clio_run import CLIO  # noqa: E402
from testkit.encoder_helper import stop_helper  # noqa: E402
from testkit.mcp_client import call, clio_mcp  # noqa: E402
from testkit.recall_sets import build, load_set  # noqa: E402

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


def history(project: Path) -> dict[str, Any]:
    """The dev set E written as clio archives it, in ``project``; the set."""
    data = load_set("set_e")
    build(data, project / ".clio" / "sessions")
    return data


async def sessions_run(
    project: Path, home: Path, probes: list[dict[str, Any]], rounds: int, env: dict[str, str | None]
) -> tuple[list[float], int]:
    """search_sessions for each probe, ``rounds`` times over one session: the latencies, and the
    related probes whose fact (a needle) is in the top 3 (counted in the first round)."""
    times: list[float] = []
    found = 0
    async with clio_mcp(project, home, env_extra=env) as s:
        for r in range(rounds):
            for p in probes:
                t0 = time.perf_counter()
                is_error, text = await call(s, "search_sessions", query=p["text"], max_results=3)
                times.append((time.perf_counter() - t0) * 1000)
                assert not is_error, text
                if r == 0 and p.get("needles") and any(n in text for n in p["needles"]):
                    found += 1
    return times, found


def helper_filled(project: Path, home: Path) -> None:
    """Start the user's helper through the server and wait until it has embedded the archive."""
    from clio.recall.encoder_cache import filled

    async def one() -> None:
        async with clio_mcp(project, home, env_extra={"CLIO_RECALL_ENCODER": None}) as s:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not filled(project / ".clio"):
                await call(s, "search_sessions", query="warm up")  # asks for the fill once the helper is up
                await anyio.sleep(1.0)

    anyio.run(one)
    if not filled(project / ".clio"):
        raise SystemExit("the encoder helper did not embed the archive in 2 minutes")


def sessions_bench(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project, home = Path(tmp) / "proj", Path(tmp) / "home"
        project.mkdir()
        probes = history(project)["probes"]
        related = sum(1 for p in probes if p.get("needles"))
        try:
            helper_filled(project, home)
            for name, env in (
                ("words only", {"CLIO_RECALL_ENCODER": "0"}),
                ("with the helper", {"CLIO_RECALL_ENCODER": None}),
            ):
                times, found = anyio.run(sessions_run, project, home, probes, rounds, env)
                print(
                    f"search_sessions {name}: p50 {pct(times, 0.5):.1f} ms, p95 {pct(times, 0.95):.1f}, "
                    f"max {max(times):.1f} ({len(times)} calls); fact in the top 3: {found}/{related}"
                )
        finally:
            stop_helper(home)


async def start_once(project: Path, home: Path, search: bool = False) -> float:
    t0 = time.perf_counter()
    async with clio_mcp(project, home) as s:
        args = {"query": "who can invite me to the beta builds?"} if search else {}
        is_error, text = await call(s, "search_sessions" if search else "note_list", **args)
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


def paired_starts(before: str, pairs: int, with_history: bool = False, search: bool = False) -> None:
    """Start to first tool result, ``before`` (PYTHONPATH) and the installed clio alternately."""
    import os

    times: dict[str, list[float]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        project, home = Path(tmp) / "proj", Path(tmp) / "home"
        project.mkdir()
        if with_history:
            history(project)
        for i in range(pairs):
            for which in ("before", "after") if i % 2 == 0 else ("after", "before"):
                if which == "before":
                    os.environ["PYTHONPATH"] = before
                else:
                    os.environ.pop("PYTHONPATH", None)
                times[which].append(anyio.run(start_once, project, home, search))
        stop_helper(home)  # the helper a start warmed up
    os.environ.pop("PYTHONPATH", None)
    for which, xs in times.items():
        print(
            f"{which}: p50 {pct(xs, 0.5):.0f} ms, p95 {pct(xs, 0.95):.0f}, min {min(xs):.0f} ({pairs} starts)"
        )
    diffs = [a - b for a, b in zip(times["after"], times["before"], strict=True)]
    print(
        f"after - before, per pair: median {statistics.median(diffs):+.0f} ms, p5..p95 {pct(diffs, 0.05):+.0f}..{pct(diffs, 0.95):+.0f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--before", metavar="TREE", help="paired starts against the clio package in TREE")
    ap.add_argument("--starts", type=int, default=15, help="pairs with --before")
    ap.add_argument("--history", action="store_true", help="the paired starts in a project with history")
    ap.add_argument("--first-search", action="store_true", help="the paired starts' first call is search_sessions")
    ap.add_argument(
        "--sessions", action="store_true", help="search_sessions with and without the encoder helper"
    )
    ap.add_argument("--rounds", type=int, default=3, help="rounds of set E's probes with --sessions")
    args = ap.parse_args()
    if args.sessions:
        sessions_bench(args.rounds)
        return
    if args.before:
        paired_starts(args.before, args.starts, args.history, args.first_search)
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
