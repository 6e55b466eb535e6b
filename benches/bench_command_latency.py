"""What confining a shell command costs: ``true`` run through ``run_command`` as clio runs it.

Run: .venv/bin/python benches/bench_command_latency.py [--runs 40] [--gap MS]

Five ways: plain bash (no wrapper: a kernel without Landlock), hide only (every command without
``--sandbox`` where user namespaces are off: the wrapper keeps ``$CLIO_HOME`` from being read),
hide and guard (every command without ``--sandbox`` where they are on: ``$CLIO_HOME`` also a
read-only mount in the command's own user and mount namespaces), the sandbox without namespaces,
the sandbox with its own namespaces (``--sandbox`` where the kernel allows), plan mode's read-only sandbox. Prints p50/p95 wall time per way and
the load average; no asserts. The ways take turns (one command each, round after round) so that each
sees the same load, those without namespaces first, then those with them (plain bash in both); the confined ones go through the command launcher (clio/safety/launcher.py), and
a last row, run after the others, through the wrapper process it replaces (its fallback).
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

from clio.safety import launch  # noqa: E402
from clio.safety.wrapper import guards_writes, isolation  # noqa: E402
from clio.tools.terminal import run_command  # noqa: E402


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--gap", type=float, default=0.0,
                    help="ms to wait before each command, untimed (an agent's commands come a model reply apart)")
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proj = Path(tmp) / "proj"
        (proj / ".git").mkdir(parents=True)
        (proj / ".git" / "config").write_text("")
        clio_home = Path.home() / ".clio"
        ways = {
            "plain bash": {},
            "hide only (no --sandbox, no user namespaces)": {"hidden": [str(clio_home)], "ns": False},
            "--sandbox, no namespaces": {"contained": True, "hidden": [str(clio_home)], "ns": False},
            "hide and guard (no --sandbox: the default)": {"hidden": [str(clio_home)], "ns": True},
            "--sandbox, own namespaces": {"contained": True, "hidden": [str(clio_home)], "ns": True},
            "--plan (read-only sandbox), own namespaces": {"read_only": True, "hidden": [str(clio_home)], "ns": True},
        }
        print(f"load average: {_load()} on {os.cpu_count()} cores; namespaces: {isolation()[0]}; "
              f"{ns.gap:g} ms between commands\n")
        times: dict[str, list[float]] = {name: [] for name in ways}
        for phase in (False, True):  # namespaces off, then on: the probes run once per phase
            _namespaces(phase)
            turn = {name: dict(opts) for name, opts in ways.items() if opts.get("ns", phase) == phase}
            for _ in range(ns.runs):  # the ways in turn, so that each sees the same load
                for name, opts in turn.items():
                    opts = {k: v for k, v in opts.items() if k != "ns"}
                    time.sleep(ns.gap / 1000)
                    t = time.perf_counter()
                    run_command("true", proj, 30, **opts)  # type: ignore[arg-type]
                    times[name].append(time.perf_counter() - t)
        _namespaces(True)
        os.environ["CLIO_NO_LAUNCHER"] = "1"  # the fallback: every command through the wrapper process
        launch.stop()
        fallback = "hide and guard through the wrapper process (no launcher: the fallback)"
        times[fallback] = []
        for _ in range(max(10, ns.runs // 4)):
            time.sleep(ns.gap / 1000)
            t = time.perf_counter()
            run_command("true", proj, 30, hidden=[str(clio_home)])
            times[fallback].append(time.perf_counter() - t)
        print("| way | p50 | p95 | p50 over plain bash |\n|---|---|---|---|")
        base = statistics.median(times["plain bash"])
        for name, xs in times.items():
            p50 = statistics.median(xs)
            print(f"| {name} | {p50 * 1000:.1f} ms | {pct(xs, 0.95) * 1000:.1f} ms | +{(p50 - base) * 1000:.1f} ms |")
        print(f"\nload average after: {_load()}")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _namespaces(on: bool | None) -> None:
    """Namespaces for the commands that follow on or off (None: as they are)."""
    if on is None or on == (not os.environ.get("CLIO_SANDBOX_NO_NAMESPACES")):
        return
    os.environ.pop("CLIO_SANDBOX_NO_NAMESPACES", None)
    if not on:
        os.environ["CLIO_SANDBOX_NO_NAMESPACES"] = "1"
    isolation.cache_clear()
    guards_writes.cache_clear()
    isolation()
    guards_writes()


if __name__ == "__main__":
    main()
