"""A scripted 50-turn coding session through the real clio, against the fake server, at 8k and 32k windows.

Run: /work/venv/bin/python benches/bench_session.py [--turns 50] [--windows 8000,32000] [--ratio 3.3]

One `clio --resume -p TEXT` process per turn (the installed console script, as a user would run it),
the scenario of tests/test_e2e_context.py (large file reads, shell output paged through stored results,
an error and its fix, a commit, parallel calls).  Before each turn `clio --resume -p "/context --json"`
gives clio's estimate of the request as it stands (``used_tokens``); the turn's first request is that
request plus the new user message, so the server's count of the first request without its last message
is the truth to compare with (turns whose first request came after a trim are left out: the window
changed in between).  Prints a markdown table; no asserts.

Figures:
- tokens sent: sum of the server's prompt_tokens over the answered requests (and what clio recorded)
- trims: trim events (a trim starts a new archive thread) and summary merges (each drop round)
- estimator error: clio's estimate vs the server's count, in % (signed mean, mean |error|, max |error|)
- prefix share: share of each request's serialized messages repeating the previous request's from the
  first byte (mean over all consecutive pairs; and the share of pairs without a trim that extend the
  previous request completely)
- wall time per turn (process start to exit, the machine's load included)
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

from testkit.fakeserver import FakeServer  # noqa: E402
from testkit.long_session import (  # noqa: E402
    MODEL,
    Clio,
    Project,
    ScriptedModel,
    extends,
    main_session_turns,
    prefix_share,
    rejected,
    server_tokens,
)


def run_session(n_turns: int, window: int, ratio: float, workdir: Path, estimate: bool) -> dict[str, Any]:
    project = Project(workdir / "proj")
    turns = main_session_turns(n_turns)
    model = ScriptedModel({tag: steps for tag, _, steps in turns})
    errors: list[float] = []
    first_error: float | None = None
    turn_times: list[float] = []
    failures = 0
    with FakeServer(model, chars_per_token=ratio, context_limit=window, validate=True) as server:
        clio = Clio(project, server, workdir / "home", window=window)
        for n, (tag, text, _) in enumerate(turns):
            est: dict[str, Any] | None = None
            if estimate:
                proc = clio("/context --json", resume=n > 0)
                est = json.loads(proc.stdout) if proc.returncode == 0 else None
            n_before = len(project.archive()) if n else 0
            seen = len(server.chat_requests)
            t0 = time.perf_counter()
            proc = clio(f"[{tag}] {text}", resume=n > 0)
            turn_times.append(time.perf_counter() - t0)
            failures += proc.returncode != 0
            new = server.chat_requests[seen:]
            if est is None or not new or rejected(server, new[0]):
                continue
            user, first_answer = project.archive()[n_before : n_before + 2]
            assert user["role"] == "user" and first_answer["role"] == "assistant"
            if first_answer["meta"]["thread"] != user["meta"]["thread"]:
                continue  # clio trimmed before the first request: the window is not the one estimated
            truth = server_tokens(server, new[0]["messages"][:-1], new[0].get("tools"))
            err = 100.0 * (est["used_tokens"] - truth) / truth
            errors.append(err)
            if n == 0:
                first_error = err
        final = clio.context() if estimate else {}
        reqs = server.chat_requests
    ok = [b for b in reqs if not rejected(server, b)]
    archive = project.archive()
    threads = [m["meta"]["thread"] for m in archive if m["role"] == "assistant"]
    trim_flags = [t != p for p, t in zip([0, *threads], threads, strict=False)]
    pairs = list(zip(ok, ok[1:], trim_flags[1:], strict=False))
    shares = [prefix_share(a, b) for a, b, _ in pairs]
    plain = [(a, b) for a, b, trim in pairs if not trim]
    info = json.loads((project.session_dir() / "session.json").read_text())
    stm = project.stm()
    limit = window - min(4096, window // 4)
    return {
        "turns": n_turns,
        "failures": failures,
        "requests": len(reqs),
        "rejected": len(reqs) - len(ok),
        "tokens_sent": sum(server.prompt_tokens(b) for b in ok),
        "tokens_recorded": info.get("usage", {}).get("prompt_tokens", 0),
        "cached_recorded": info.get("usage", {}).get("cached_tokens", 0),
        "max_request": max(server.prompt_tokens(b) for b in ok),
        "limit": limit,
        "trim_events": sum(trim_flags),
        "summary_merges": (stm.get("summary") or {}).get("trims", 0),
        "archive": len(archive),
        "window": len(stm.get("window_seqs", [])),
        "ratio": final.get("chars_per_token"),
        "est_n": len(errors),
        "est_first": first_error,
        "est_mean": statistics.fmean(errors) if errors else None,
        "est_abs": statistics.fmean(abs(e) for e in errors) if errors else None,
        "est_max": max((abs(e) for e in errors), default=None),
        "est_rest_abs": statistics.fmean(abs(e) for e in errors[1:]) if len(errors) > 1 else None,
        "est_rest_max": max((abs(e) for e in errors[1:]), default=None),
        "share_mean": statistics.fmean(shares) if shares else 0.0,
        "plain_pairs": len(plain),
        "plain_extend": sum(extends(a, b) for a, b in plain),
        "turn_mean": statistics.fmean(turn_times),
        "turn_median": statistics.median(turn_times),
        "turn_max": max(turn_times),
        "model_problems": len(model.problems),
    }


def fmt(v: Any, spec: str = "") -> str:
    if v is None:
        return "-"
    return format(v, spec) if spec else str(v)


def table(results: dict[int, dict[str, Any]]) -> str:
    rows: list[tuple[str, Any]] = [
        ("turns (clio processes that failed)", lambda r: f"{r['turns']} ({r['failures']})"),
        ("chat requests (rejected for length)", lambda r: f"{r['requests']} ({r['rejected']})"),
        ("tokens sent (sum of prompt_tokens)", lambda r: f"{r['tokens_sent']:,}"),
        (
            "  as clio recorded them (cached part)",
            lambda r: f"{r['tokens_recorded']:,} ({r['cached_recorded']:,})",
        ),
        ("largest request / clio's limit", lambda r: f"{r['max_request']:,} / {r['limit']:,}"),
        ("trims (events; summary merges)", lambda r: f"{r['trim_events']} ({r['summary_merges']})"),
        ("archive / window messages at the end", lambda r: f"{r['archive']} / {r['window']}"),
        ("learned chars/token (server 3.3)", lambda r: fmt(r["ratio"])),
        ("estimator error, turns measured", lambda r: fmt(r["est_n"])),
        ("  first turn (default ratio 3.5)", lambda r: fmt(r["est_first"], "+.2f") + " %"),
        ("  signed mean", lambda r: fmt(r["est_mean"], "+.2f") + " %"),
        ("  mean abs / max abs", lambda r: f"{fmt(r['est_abs'], '.2f')} % / {fmt(r['est_max'], '.2f')} %"),
        (
            "  after the first turn: mean abs / max abs",
            lambda r: f"{fmt(r['est_rest_abs'], '.2f')} % / {fmt(r['est_rest_max'], '.2f')} %",
        ),
        ("prefix share, mean over consecutive requests", lambda r: f"{r['share_mean']:.3f}"),
        (
            "pairs without a trim that extend the previous",
            lambda r: f"{r['plain_extend']} / {r['plain_pairs']}",
        ),
        (
            "wall time per turn mean / median / max (s)",
            lambda r: f"{r['turn_mean']:.2f} / {r['turn_median']:.2f} / {r['turn_max']:.2f}",
        ),
    ]
    windows = sorted(results)
    out = [
        "| figure | " + " | ".join(f"{w:,} window" for w in windows) + " |",
        "|---|" + "---|" * len(windows),
    ]
    for label, get in rows:
        out.append(f"| {label} | " + " | ".join(get(results[w]) for w in windows) + " |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=50)
    ap.add_argument("--windows", default="8000,32000")
    ap.add_argument("--ratio", type=float, default=3.3, help="the fake server's chars per token")
    ap.add_argument("--no-estimate", action="store_true", help="skip the /context runs (no estimator error)")
    args = ap.parse_args()
    results: dict[int, dict[str, Any]] = {}
    for window in (int(w) for w in args.windows.split(",")):
        work = Path(tempfile.mkdtemp(prefix=f"bench_session_{window}_"))
        try:
            t0 = time.perf_counter()
            results[window] = run_session(args.turns, window, args.ratio, work, not args.no_estimate)
            print(f"{window:,} window: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"model {MODEL}, fake server at {args.ratio} chars/token, {args.turns} turns\n")
    print(table(results))
    problems = sum(r["model_problems"] for r in results.values())
    if problems:
        print(f"\nwarning: the scripted model saw {problems} unexpected conversation states", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
