"""Stuck detection against a real model: time and requests a small task costs.

Run: .venv/bin/python benches/bench_stuck.py [--runs 3] [--ctx 8192] [--max-iterations 20]
Needs scripts/real-model.sh to have run (llama-server + Qwen2.5-Coder-0.5B-Instruct Q4_K_M).
The clio under test is the one installed next to the Python running this script; to measure
a build without stuck detection, run this file with that build's Python (for example an older
checkout's ``.venv/bin/python``): the harness only drives the installed ``clio`` binary.

A run still going after ``--timeout`` seconds is stopped and shown with exit code -1.

The tasks (``--task``): ``fix``, a two-function calc.py whose ``add`` subtracts, which
``clio --yes -p "..."`` is asked to fix; ``create``, read notes.txt and write its lines upper-cased
to upper.txt. Printed per run: exit code, wall time, chat requests, tool calls, repeated calls (same
name and arguments as an earlier call of the turn), whether the task got done; then medians.
Figures go to docs/real-model.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

from testkit.clio_run import CLIO  # noqa: E402
from testkit.realmodel_harness import RealProject, real_backend  # noqa: E402
from testkit.realmodel_server import SKIP_REASON, llama_paths  # noqa: E402

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
# name -> (files written before the run, the task, a check of the result)
TASKS: dict[str, tuple[dict[str, str], str, str]] = {
    "fix": ({"calc.py": CALC}, "calc.py has a bug: add() subtracts instead of adding. Fix it.", "calc.py:return a + b"),
    "create": (
        {"notes.txt": "alpha\nbeta\ngamma\n"},
        "Read notes.txt, then create upper.txt holding the same lines in upper case.",
        "upper.txt:ALPHA",
    ),
}


def repeated_calls(archive: list[dict[str, object]]) -> int:
    seen: set[str] = set()
    repeats = 0
    for m in archive:
        for call in m.get("tool_calls") or []:  # type: ignore[attr-defined]
            fn = call.get("function") or {}
            try:
                args = json.dumps(json.loads(fn.get("arguments") or "{}"), sort_keys=True)
            except ValueError:
                args = str(fn.get("arguments"))
            key = f"{fn.get('name')}\x00{args}"
            repeats += key in seen
            seen.add(key)
    return repeats


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--max-iterations", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=600, help="seconds a run may take (exit -1 after)")
    ap.add_argument("--task", choices=sorted(TASKS), default="fix")
    ap.add_argument(
        "--max-output-tokens",
        type=int,
        default=1024,
        help="max_output_tokens in the project's config (0: none; without a cap a rambling reply of "
        "this model can fill the 8k context and take the whole --timeout)",
    )
    args = ap.parse_args()
    if llama_paths() is None:
        print(SKIP_REASON)
        return 0
    print(f"clio under test: {CLIO}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp, real_backend(args.ctx) as backend:
        project = RealProject(Path(tmp) / "proj", Path(tmp) / "home", backend)
        for n in range(args.runs):
            extra = {"max_output_tokens": args.max_output_tokens} if args.max_output_tokens else {}
            project.reset(max_iterations=args.max_iterations, **extra)
            files, task, check = TASKS[args.task]
            for name, text in files.items():
                (project.root / name).write_text(text, encoding="utf-8")
            t0 = time.perf_counter()
            try:
                code = project.run(task, "--yes", timeout=args.timeout).returncode
            except subprocess.TimeoutExpired:
                code = -1  # still going when the bench gave up on it
            wall = time.perf_counter() - t0
            archive = project.archive()
            calls = sum(len(m.get("tool_calls") or []) for m in archive)
            target, _, expected = check.partition(":")
            result_file = project.root / target
            fixed = result_file.is_file() and expected in result_file.read_text(encoding="utf-8", errors="replace")
            row = (code, wall, len(project.proxy.chat()), calls, repeated_calls(archive), fixed)
            rows.append(row)
            print(
                f"run {n}: exit {row[0]}, {wall:.0f} s, {row[2]} requests, {calls} tool calls, {row[4]} repeated, fixed={fixed}"
            )
    print()
    print(
        f"median wall time {statistics.median(r[1] for r in rows):.0f} s; median requests {statistics.median(r[2] for r in rows):.0f}; "
        f"repeated calls {sum(r[4] for r in rows)} in {len(rows)} runs; fixed {sum(r[5] for r in rows)}/{len(rows)}; "
        f"exit codes {[r[0] for r in rows]}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
