"""What automatic recall costs a one-shot run in a project with history: whole ``clio -p`` runs
with recall on (the encoder helper answering), on with words only (``recall_encoder: false``) and
off, paired (on, words, off, on, ...), wall time p50/p95 and the peak RSS of the clio process, plus
the helper's own peak RSS (a separate process, started by the first run and kept warm).

The project's history is written in clio's on-disk layout (``--sessions`` sessions of
``--messages`` messages of everyday coding work, drawn from the dev set's sessions when they are
there, else generated), and one run first builds the recall index, as the first run in such a
project would; the measured runs are the steady state that follows. Each run is the installed
``clio`` against the fake server (testkit/fakeserver.py), which answers with a short text.

``--resume`` times ``clio -c -p`` instead: each run resumes the latest session (the first run's,
growing by a turn a run), whose window's messages the recall must leave out.

``--cold`` times the first run after the helper left (its idle time passed, or the machine
restarted): before each 'on' run the helper is stopped, so that run finds none, decides by words,
and starts a new helper (with its judge when ``recall_judge`` is on, the default), which loads
beside the run on the same cores. After the run the bench waits until that helper is ready (the
archive's vectors are on disk from the first run; its judge loaded) and stops it, so the 'words'
and 'off' runs of the triple never share the cores with a loading helper. It also says how long
the new helper took to be ready, from the run's start.

``--real`` answers with llama.cpp's server and the small model of ``scripts/real-model.sh`` (one
thread, 32 tokens an answer, temperature 0) in place of the fake server, which answers at once: a
run then waits for a model, as a user's does, and a cold run's helper loads during that wait.

    python benches/bench_recall_cost.py [--runs 15] [--sessions 60] [--messages 30] [--models-from CLIO_HOME] [--resume] [--cold] [--real]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

from clio.recall.cpu_kind import describe, this_cpu
from clio.recall.encoder_cache import filled  # noqa: E402
from clio.recall.encoder_client import EncoderClient  # noqa: E402
from testkit.clio_run import CLIO, wait_background, write_archive  # noqa: E402
from testkit.encoder_helper import stop_helper  # noqa: E402
from testkit.fakeserver import FakeServer, Reply  # noqa: E402
from testkit.realmodel_server import MODEL_ALIAS  # noqa: E402

T0 = 1_763_000_000.0
QUESTION = "which port does the staging database listen on again?"
WORDS = (  # noqa: SIM905
    "parser test fixture refactor module import config deploy staging database cache queue worker "
    "upload handler migration schema index query endpoint token session retry timeout log metric "
    "docker image build lint type check commit branch review release version dependency"
).split()
EVERYDAY = ["looks good, commit it", "ok that worked, thanks", "great, continue", "run the tests again"]


def history(sessions: int, messages: int, seed: int = 7) -> list[tuple[str, list[dict[str, Any]]]]:
    """Sessions of user asks, tool calls with results and answers (no public data)."""
    rng = random.Random(seed)
    out = []
    for s in range(sessions):
        msgs: list[dict[str, Any]] = []
        ts = T0 + s * 3600
        while len(msgs) < messages:
            topic = " ".join(rng.sample(WORDS, 4))
            seq = len(msgs)
            msgs.append({"role": "user", "content": rng.choice([f"please look at the {topic}", *EVERYDAY])})
            cid = f"c{s}_{seq}"
            path = f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
            args = json.dumps({"operation": "read_file", "path": path})
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "file_operations", "arguments": args}}]})
            body = "\n".join(f"def {rng.choice(WORDS)}_{i}(x):\n    return x" for i in range(6))
            msgs.append({"role": "tool", "tool_call_id": cid, "content": f"{path}\n{body}"})
            msgs.append({"role": "assistant", "content": f"The {topic} is handled in {path}; I updated it."})
        for i, m in enumerate(msgs[:messages]):
            m["meta"] = {"seq": i, "ts": ts + i}
        out.append((f"s{s:04d}", msgs[:messages]))
    return out


REAL: list[str] = []  # --real: llama-server's base URL


def run(proj: Path, home: Path, server: FakeServer, resume: bool = False) -> tuple[float, int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CLIO_"))}
    env.update(OPENAI_BASE_URL=REAL[0] if REAL else server.base_url, OPENAI_API_KEY="k", CLIO_HOME=str(home),
               CLIO_MODEL=MODEL_ALIAS if REAL else "bench-model", NO_COLOR="1")
    started = time.monotonic()
    proc = subprocess.Popen([str(CLIO), *(["-c"] if resume else []), "-p", QUESTION], cwd=proj, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"clio failed: {err[-400:]}")
    return wall, usage.ru_maxrss, err


MODES = ("on", "words", "off")


def wait_for_helper(home: Path, clio_dir: Path, seconds: float = 300.0, judge: bool = False, poll: float = 0.5) -> int:
    """The pid of the helper a run started, once it has embedded the archive and, with
    ``judge``, loaded its judge (0: none within ``seconds``)."""
    client = EncoderClient(home, clio_dir, timeout_s=5.0)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            got = client.status(1.0)
            if filled(clio_dir, client.model) and (not judge or got.get("judge") is True):
                return int(got["pid"])
        except (OSError, ValueError):
            pass
        time.sleep(poll)
    print(f"the encoder helper was not ready within {seconds:.0f} s (an 'on' run without it decides by words)")
    return 0


def proc_mib(pid: int, field: str) -> float:
    """A ``/proc/PID/status`` figure (VmHWM: the peak RSS, VmRSS: now) in MiB."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return int(next((ln.split()[1] for ln in status if ln.startswith(field + ":")), "0")) / 1024


def stopped(home: Path) -> None:
    """Stop the helper listening in ``home`` and wait until it is gone (no answer to a ping)."""
    client = EncoderClient(home, home, timeout_s=2.0)
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        try:
            pid = client.ping(1.0)
        except (OSError, ValueError):
            return
        stop_helper(home)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    raise SystemExit("the encoder helper would not stop")


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--sessions", type=int, default=60)
    ap.add_argument("--messages", type=int, default=30)
    ap.add_argument("--models-from", type=Path, metavar="CLIO_HOME", help="the encoders installed there (clio encoder install): the 'on' runs use the one clio would")
    ap.add_argument("--resume", action="store_true", help="time clio -c -p: each run resumes the latest session")
    ap.add_argument("--cold", action="store_true", help="no helper before each 'on' run: the first run after it left")
    ap.add_argument("--real", action="store_true", help="llama.cpp's server answers (scripts/real-model.sh), not the fake server")
    args = ap.parse_args(argv)
    print(f"cpu: {describe(this_cpu())}", flush=True)  # a timing from one kind of CPU says little of the other
    if args.real:
        from testkit.realmodel_server import start_llama_server

        base_url, stop_llama = start_llama_server(threads=1)
        REAL.append(base_url)
        try:
            measure(args)
        finally:
            stop_llama()
        return
    measure(args)


def measure(args: argparse.Namespace) -> None:
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="clio-recall-cost-") as tmp, FakeServer() as server:
        server.responder = lambda body: Reply(text="It listens on 6543.")
        proj = Path(tmp) / "proj"
        proj.mkdir()
        homes = {mode: Path(tmp) / mode for mode in MODES}
        for home in homes.values():
            home.mkdir()
        answer = "max_output_tokens: 32\ntemperature: 0\n" if REAL else ""  # a short answer from the real model
        (homes["on"] / "config.yaml").write_text(answer)
        (homes["off"] / "config.yaml").write_text(answer + "auto_recall: false\n")
        (homes["words"] / "config.yaml").write_text(answer + "recall_encoder: false\n")
        if args.models_from is not None:
            (homes["on"] / "models").symlink_to(args.models_from.resolve() / "models")
        root = proj / ".clio" / "sessions"
        for sid, msgs in history(args.sessions, args.messages):
            write_archive(root, sid, msgs, msgs[0]["meta"]["ts"], name=f"work {sid}")
        # the first run in the project builds the index and starts the encoder helper, which
        # then embeds the archive in the background: the measured runs are the steady state after
        first, _, _ = run(proj, homes["on"], server)
        helper = wait_for_helper(homes["on"], proj / ".clio")
        walls: dict[str, list[float]] = {mode: [] for mode in MODES}
        rss: dict[str, list[int]] = {mode: [] for mode in MODES}
        ready: list[float] = []  # seconds from a cold run's start until its helper was ready (-1: never)
        cold_hwm = 0.0  # the peak RSS (MiB) of the last helper a cold run started
        for _ in range(args.runs):
            for mode in MODES:
                if args.cold and mode == "on":
                    stopped(homes["on"])
                started = time.monotonic()
                w, r, _ = run(proj, homes[mode], server, args.resume)
                walls[mode].append(w)
                rss[mode].append(r)
                if args.cold and mode == "on":
                    pid = wait_for_helper(homes["on"], proj / ".clio", 120.0, judge=True, poll=0.02)
                    ready.append(time.monotonic() - started if pid else -1.0)
                    cold_hwm = proc_mib(pid, "VmHWM") if pid else cold_hwm
                    stopped(homes["on"])
        n = args.sessions * args.messages
        how = ("; each run resumes the latest session" if args.resume else "") + ("; each 'on' run finds no helper (cold)" if args.cold else "")
        print(f"history: {args.sessions} sessions, {n:,} messages{how}; first run (builds the index) "
              f"{first * 1000:,.0f} ms; {args.runs} triples; load {load:.2f} -> {os.getloadavg()[0]:.2f}")
        for mode in MODES:
            w = walls[mode]
            print(f"recall {mode:5}: wall p50 {statistics.median(w) * 1000:,.0f} ms, "
                  f"p95 {pct(w, 95) * 1000:,.0f} ms; peak RSS p50 {statistics.median(rss[mode]) / 1024:.1f} MiB, "
                  f"max {max(rss[mode]) / 1024:.1f} MiB")
        base = statistics.median(walls["off"])
        for mode in ("on", "words"):
            diffs = [a - b for a, b in zip(walls[mode], walls["off"], strict=True)]
            print(f"paired difference ({mode} - off): p50 {statistics.median(diffs) * 1000:+,.0f} ms "
                  f"({statistics.median(diffs) / base:+.0%}), p95 {pct(diffs, 95) * 1000:+,.0f} ms; "
                  f"peak RSS {(statistics.median(rss[mode]) - statistics.median(rss['off'])) / 1024:+.1f} MiB")
        if args.cold:
            got = [x for x in ready if x >= 0]
            if got:
                print(f"the helper a cold run started, ready (judge loaded) after: p50 {statistics.median(got):.2f} s, "
                      f"p95 {pct(got, 95):.2f} s from the run's start ({len(ready) - len(got)} never); its peak RSS {cold_hwm:.0f} MiB")
        elif helper:
            with_ahead = EncoderClient(homes["on"], proj / ".clio").status().get("recalls_ahead", 0)
            print(f"recalls the helper did ahead for the 'on' runs: {with_ahead} of {args.runs}")
            print(f"the encoder helper (a separate process, pid {helper}): peak RSS {proc_mib(helper, 'VmHWM'):.0f} MiB, "
                  f"RSS at the end {proc_mib(helper, 'VmRSS'):.0f} MiB")
            os.kill(helper, signal.SIGTERM)
        wait_background(proj)  # each run's read-back child, before its project is removed
        # the run's own message (a resumed session's requests carry the earlier turns too)
        served = [next((m for m in reversed(r.get("messages", [])) if m.get("role") == "user"), {}) for r in server.chat_requests]
        blocks = sum("<recalled_context>" in str(m.get("content")) for m in served)
        if not REAL:  # the fake server keeps the requests
            print(f"requests whose message has a recall block: {blocks} of {len(served)}")


if __name__ == "__main__":
    main()
