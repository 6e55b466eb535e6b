"""clio against a real llama-server (Qwen2.5-Coder-0.5B): the figures as clio sees them.

Run: .venv/bin/python benches/bench_realmodel.py [--ctx 4096] [--threads N] [--profile auto|full|lean]
Needs scripts/real-model.sh to have run. Starts llama-server on a free loopback port with a
recording proxy in front (testkit/realmodel_harness.py), runs the installed ``clio -p`` a few times in
a temporary project (one session resumed over four turns, one of them a tool call, then a new
session), and prints per request: time to first token and generation speed as measured at the
proxy (on clio's side of the wire), the server's own ``timings``, prompt/cached tokens; per run: the
wall time of ``clio -p``; then the learned chars-per-token ratio against the server's real one.
With ``--long-reads N``, then a long session: N turns in one resumed session, each asking to read
another ~7 KB file, and prints how the window held: requests, rejections, trims, the largest prompt
against the server's window, and the time per turn. The figures belong in docs/real-model.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

from testkit.clio_run import session_meta  # noqa: E402
from testkit.realmodel_harness import (  # noqa: E402
    Exchange,
    RealProject,
    notes_file,  # noqa: E402
    real_backend,
    request_chars,
)
from testkit.realmodel_server import SKIP_REASON, llama_paths  # noqa: E402

TURNS: list[tuple[str, list[str]]] = [
    ("Say hello in five words.", []),
    ("Name three colours.", ["--resume"]),
    ("What is seven times six?", ["--resume"]),
    ("Use file_operations to read hello.txt, then tell me the mascot's name.", ["--resume"]),
    ("Say hello in five words.", []),  # a new session: only the system prompt + tools are shared
]


def gen_speed(ex: Exchange) -> float | None:
    """Completion tokens per second after the first one, from the arrival times at the proxy."""
    first = ex.first_content_s
    usage = ex.usage or {}
    n = int(usage.get("completion_tokens") or 0)
    if first is None or n < 2 or not ex.chunk_times:
        return None
    span = ex.chunk_times[-1][0] - (ex.started + first)
    return (n - 1) / span if span > 0 else None


def fmt(x: float | None, spec: str = ".2f") -> str:
    return "-" if x is None else format(x, spec)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ctx", type=int, default=4096, help="llama-server -c (default 4096)")
    ap.add_argument(
        "--threads", type=int, default=None, help="llama-server -t (default 1, or $CLIO_REALMODEL_THREADS)"
    )
    ap.add_argument(
        "--profile",
        default="auto",
        choices=["auto", "full", "lean"],
        help="clio's tool profile (default auto)",
    )
    ap.add_argument("--long-reads", type=int, default=0, help="then a session of N file reads (default 0)")
    args = ap.parse_args()
    if llama_paths() is None:
        print(f"bench_realmodel: {SKIP_REASON}", file=sys.stderr)
        return 2
    with (
        tempfile.TemporaryDirectory(prefix="clio-bench-real-") as tmp,
        real_backend(args.ctx, args.threads) as backend,
    ):
        project = RealProject(Path(tmp) / "project", Path(tmp) / "home", backend)
        project.reset(temperature=0, max_output_tokens=256, max_iterations=2, profile=args.profile)
        (project.root / "hello.txt").write_text(
            "The mascot of this project is a walrus named Quillby-7391.\n"
        )
        print(
            f"llama-server -c {backend.ctx} -t {backend.threads}; clio (profile {args.profile}) -> proxy "
            f"-> {backend.upstream}"
        )
        print(
            f"{'run':>3} {'req':>3} {'status':>6} {'prompt':>6} {'cached':>6} {'compl':>5} "
            f"{'ttft_s':>7} {'gen_tok/s':>9} {'srv_pp/s':>8} {'srv_tg/s':>8} {'chars/tok':>9}  exit wall_s"
        )
        rows: list[dict[str, Any]] = []
        for run_no, (prompt, flags) in enumerate(TURNS, 1):
            before = len(backend.proxy.chat())
            started = time.monotonic()
            r = project.run(prompt, *flags)
            wall = time.monotonic() - started
            exchanges = backend.proxy.chat()[before:]
            for k, ex in enumerate(exchanges, 1):
                u = ex.usage or {}
                t = ex.timings or {}
                cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens")
                ratio = request_chars(ex.body) / u["prompt_tokens"] if u.get("prompt_tokens") else None
                row = {
                    "run": run_no,
                    "status": ex.status,
                    "prompt": u.get("prompt_tokens"),
                    "cached": cached,
                    "ttft": ex.first_content_s,
                    "gen": gen_speed(ex),
                    "pp": t.get("prompt_per_second"),
                    "tg": t.get("predicted_per_second"),
                    "ratio": ratio,
                }
                rows.append(row)
                tail = f"  {r.returncode:>4} {wall:6.1f}" if k == len(exchanges) else ""
                print(
                    f"{run_no:>3} {k:>3} {ex.status:>6} {u.get('prompt_tokens', '-'):>6} {fmt(cached, 'd'):>6} "
                    f"{u.get('completion_tokens', '-'):>5} {fmt(ex.first_content_s):>7} {fmt(row['gen'], '.1f'):>9} "
                    f"{fmt(row['pp'], '.1f'):>8} {fmt(row['tg'], '.1f'):>8} {fmt(ratio, '.3f'):>9}{tail}"
                )
        ok = [x for x in rows if x["status"] == 200 and x["ratio"] is not None]
        real = [x["ratio"] for x in ok]
        state = project.ratios().get(backend.model, {})
        print()
        if real:
            print(
                f"chars per prompt token: server (chars clio sent / prompt_tokens) mean {statistics.mean(real):.3f} "
                f"(min {min(real):.3f}, max {max(real):.3f}); clio learned {state.get('chars_per_token')} "
                f"from {state.get('samples')} samples (default before learning: 3.5)"
            )
        cold = [x for x in ok if not x["cached"]]
        warm = [x for x in ok if x["cached"]]
        for label, group in (("cold (nothing cached)", cold), ("prefix cached", warm)):
            ttfts = [x["ttft"] for x in group if x["ttft"] is not None]
            if ttfts:
                print(
                    f"time to first token, {label}: median {statistics.median(ttfts):.2f} s over {len(ttfts)}"
                )
        gens = [x["gen"] for x in ok if x["gen"] is not None]
        if gens:
            print(f"generation as clio receives it: median {statistics.median(gens):.1f} tokens/s")
        shares = [x["cached"] / x["prompt"] for x in warm if x["prompt"]]
        if shares:
            print(f"prefix reuse: cached share of the prompt, median {statistics.median(shares):.1%}")
        for sdir in project.sessions():
            usage = session_meta(sdir).get("usage", {})
            per_msg = [
                (m["meta"]["usage"]["prompt_tokens"], m["meta"]["usage"]["cached_tokens"])
                for m in project.archive(sdir)
                if m["role"] == "assistant" and "usage" in m.get("meta", {})
            ]
            print(f"session {sdir.name}: session.json usage {usage}; per reply (prompt, cached) {per_msg}")
        if args.long_reads:
            long_session(project, args.long_reads, args.profile)
    return 0


def long_session(project: RealProject, reads: int, profile: str) -> None:
    """``reads`` turns of one session, each reading another ~7 KB file: how the window holds."""
    project.reset(temperature=0, max_output_tokens=256, max_iterations=2, profile=profile)
    walls, codes = [], []
    for k in range(reads):
        name = f"notes_{k}.txt"
        notes_file(project.root / name, k)
        started = time.monotonic()
        r = project.run(f"Read {name} with file_operations.", *(["--resume"] if k else []))
        walls.append(time.monotonic() - started)
        codes.append(r.returncode)
    chats = project.proxy.chat()
    rejected = [e for e in chats if e.status == 400]
    prompts = [e.usage["prompt_tokens"] for e in chats if e.status == 200 and e.usage]
    archive = project.archive()
    stm = json.loads((project.sessions()[0] / "stm.json").read_text(encoding="utf-8"))
    trims = len({m["meta"]["thread"] for m in archive}) - 1
    print()
    print(
        f"long session, {reads} reads of ~7 KB in a {project.backend.ctx}-token window: exit codes {codes}; "
        f"{len(chats)} requests, {len(rejected)} rejected, {trims} trims; prompt tokens max {max(prompts)} "
        f"(median {statistics.median(prompts):.0f}); window {len(stm['window_seqs'])} of {len(archive)} "
        f"messages; wall per turn median {statistics.median(walls):.1f} s (max {max(walls):.1f} s)"
    )


if __name__ == "__main__":
    sys.exit(main())
