"""What confining a shell command costs: ``true`` run through ``run_command`` as clio runs it.

Run: .venv/bin/python benches/bench_command_latency.py [--runs 40]

Five ways: plain bash (no wrapper: a kernel without Landlock), hide only (every command without
``--sandbox`` where user namespaces are off: the wrapper keeps ``$CLIO_HOME`` from being read),
hide and guard (every command without ``--sandbox`` where they are on: ``$CLIO_HOME`` also a
read-only mount in the command's own user and mount namespaces), the sandbox without namespaces,
the sandbox with its own namespaces (``--sandbox`` where the kernel allows), plan mode's read-only sandbox. Prints p50/p95 wall time per way and
the load average; no asserts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clio.safety.wrapper import guards_writes, isolation  # noqa: E402
from clio.tools.terminal import run_command  # noqa: E402


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40)
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proj = Path(tmp) / "proj"
        (proj / ".git").mkdir(parents=True)
        (proj / ".git" / "config").write_text("")
        clio_home = Path.home() / ".clio"
        ways = {
            "plain bash": {},
            "hide only (no --sandbox, no user namespaces)": {"hidden": [str(clio_home)], "ns": False},
            "hide and guard (no --sandbox: the default)": {"hidden": [str(clio_home)], "ns": True},
            "--sandbox, no namespaces": {"contained": True, "hidden": [str(clio_home)], "ns": False},
            "--sandbox, own namespaces": {"contained": True, "hidden": [str(clio_home)], "ns": True},
            "--plan (read-only sandbox), own namespaces": {"read_only": True, "hidden": [str(clio_home)], "ns": True},
        }
        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; namespaces: {isolation()[0]}\n")
        print("| way | p50 | p95 |\n|---|---|---|")
        for name, opts in ways.items():
            if "ns" in opts:
                os.environ.pop("CLIO_SANDBOX_NO_NAMESPACES", None)
                if not opts.pop("ns"):
                    os.environ["CLIO_SANDBOX_NO_NAMESPACES"] = "1"
                isolation.cache_clear()
                guards_writes.cache_clear()
                isolation()
                guards_writes()
            times = []
            for _ in range(ns.runs):
                t = time.perf_counter()
                run_command("true", proj, 30, **opts)  # type: ignore[arg-type]
                times.append(time.perf_counter() - t)
            print(f"| {name} | {statistics.median(times) * 1000:.0f} ms | {pct(times, 0.95) * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
