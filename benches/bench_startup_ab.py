"""Start-up, paired: another clio tree ("before") against the installed clio ("after"), run by run.

    python benches/bench_startup_ab.py --before TREE [--pairs 15] [--only oneshot,history,prompt]

TREE is a folder holding a ``clio`` package (``git archive COMMIT clio | tar -x -C TREE``; before
issue 31 the prompts lived beside the package: copy ``prompts/`` into ``TREE/clio/prompts``). It
is byte-compiled first, as an install is, and put first on PYTHONPATH for its runs; the installed
clio (``pip install .``) runs the others, in the same interpreter. Each pair alternates which goes
first. Every run is a whole ``clio`` process against the fake server (testkit/fakeserver.py),
``CLIO_MODEL=fake-model``:

- one-shot, fresh project and home each run: automatic recall as configured by default, and off
  (``auto_recall: false`` in the home's config.yaml: a config file, so PyYAML is loaded);
- one-shot in a project with history (``--sessions`` x ``--messages`` archived messages, written
  in clio's layout; each tree its own copy, warmed by one run that builds the index; the encoder
  helper, where the tree has one, waited for until it has embedded the archive), recall on and off;
- time to the prompt: a pty (pexpect, 40x120), from spawn until the prompt mark is drawn.

Prints p50 / p95 / min per side and the per-pair difference (after minus before), with the load.
"""

from __future__ import annotations

import argparse
import compileall
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pexpect

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

from clio.recall.cpu_kind import describe, this_cpu  # noqa: E402
from testkit.clio_run import clio_env, write_archive  # noqa: E402
from testkit.fakeserver import FakeServer, Reply  # noqa: E402

RUN = "import sys; from clio.cli import main; sys.exit(main(sys.argv[1:]))"
WORDS = ["parser", "fixture", "module", "import", "config", "deploy", "staging", "database", "cache", "queue", "worker", "retry", "port"]


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def history(root: Path, sessions: int, messages: int) -> None:
    rng = random.Random(7)
    for s in range(sessions):
        ts = 1_763_000_000.0 + s * 3600
        msgs = []
        for i in range(messages):
            role = "user" if i % 2 == 0 else "assistant"
            text = " ".join(rng.choice(WORDS) for _ in range(12))
            msgs.append({"role": role, "content": f"{text} ({s}.{i})", "meta": {"seq": i, "ts": ts + i}})
        write_archive(root / ".clio" / "sessions", f"s{s:04d}", msgs, ts, name=f"work {s}")


class Side:
    """One clio tree: its environment, and its own history project and homes."""

    def __init__(self, name: str, tree: str | None, server: FakeServer, tmp: Path) -> None:
        self.name, self.tree, self.server, self.tmp = name, tree, server, tmp / name
        self.tmp.mkdir()

    def env(self, home: Path) -> dict[str, str]:
        env = clio_env(self.server, home, {"CLIO_MODEL": "fake-model"})
        env.pop("PYTHONPATH", None)
        if self.tree:
            env["PYTHONPATH"] = self.tree
        return env

    def one_shot(self, proj: Path, home: Path) -> float:
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", RUN, "-p", "which port does staging listen on"],
            cwd=proj, env=self.env(home), stdin=subprocess.DEVNULL, capture_output=True, text=True,
        )  # fmt: skip
        took = time.perf_counter() - t0
        if done.returncode != 0:
            raise SystemExit(f"{self.name}: clio failed: {done.stderr[-600:]}")
        return took

    def fresh(self, recall: bool) -> float:
        with tempfile.TemporaryDirectory(dir=self.tmp) as d:
            proj, home = Path(d) / "proj", Path(d) / "home"
            proj.mkdir()
            home.mkdir()
            if not recall:
                (home / "config.yaml").write_text("auto_recall: false\n")
            return self.one_shot(proj, home)

    def with_history(self, sessions: int, messages: int) -> None:
        self.proj, self.home_on, self.home_off = self.tmp / "proj", self.tmp / "on", self.tmp / "off"
        for d in (self.proj, self.home_on, self.home_off):
            d.mkdir()
        (self.home_off / "config.yaml").write_text("auto_recall: false\n")
        history(self.proj, sessions, messages)
        self.one_shot(self.proj, self.home_on)  # builds the index, starts the helper (if any)
        self.helper = wait_for_helper(self.env(self.home_on), self.home_on, self.proj / ".clio")

    def prompt(self) -> float:
        with tempfile.TemporaryDirectory(dir=self.tmp) as d:
            proj, home = Path(d) / "proj", Path(d) / "home"
            proj.mkdir()
            home.mkdir()
            t0 = time.perf_counter()
            child = pexpect.spawn(
                sys.executable, ["-c", RUN], cwd=str(proj), env=self.env(home), dimensions=(40, 120),
                encoding="utf-8", codec_errors="replace", timeout=60,
            )  # fmt: skip
            while child.expect([re.escape("\x1b[6n"), "›"]) == 0:  # answer cursor-position requests
                child.send("\x1b[28;1R")
            took = time.perf_counter() - t0
            child.sendeof()
            child.expect(pexpect.EOF)
            child.close()
            return took


def wait_for_helper(env: dict[str, str], home: Path, clio_dir: Path) -> int:
    """The encoder helper's pid once it has embedded the archive (0: this tree has none)."""
    probe = (
        "import sys\nfrom pathlib import Path\n"
        "try:\n from clio.recall.encoder_cache import filled\n from clio.recall.encoder_client import EncoderClient\n"
        "except ImportError:\n print(0); sys.exit()\n"
        "c = EncoderClient(Path(sys.argv[1]), Path(sys.argv[2]), timeout_s=5.0)\n"
        "try:\n pid = c.ping()\nexcept (OSError, ValueError):\n print(-1); sys.exit()\n"
        "print(pid if filled(Path(sys.argv[2])) else -1)\n"
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        out = subprocess.run([sys.executable, "-c", probe, str(home), str(clio_dir)], env=env, capture_output=True, text=True)
        pid = int(out.stdout.strip() or -1)
        if pid >= 0:
            return pid
        time.sleep(0.5)
    return 0


def paired(label: str, before: Callable[[], float], after: Callable[[], float], pairs: int) -> None:
    times: dict[str, list[float]] = {"before": [], "after": []}
    load = os.getloadavg()[0]
    for i in range(pairs):
        order = (("before", before), ("after", after)) if i % 2 == 0 else (("after", after), ("before", before))
        for which, fn in order:
            times[which].append(fn() * 1000)
    diffs = [a - b for a, b in zip(times["after"], times["before"], strict=True)]
    cells = [f"{pct(xs, 0.5):.0f} / {pct(xs, 0.95):.0f} / {min(xs):.0f}" for xs in times.values()]
    print(
        f"| {label} | {cells[0]} | {cells[1]} | {statistics.median(diffs):+.0f} ({pct(diffs, 0.05):+.0f}..{pct(diffs, 0.95):+.0f})"
        f" | {load:.2f} -> {os.getloadavg()[0]:.2f} |",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, metavar="TREE")
    ap.add_argument("--pairs", type=int, default=15)
    ap.add_argument("--only", default="oneshot,history,prompt")
    ap.add_argument("--sessions", type=int, default=40)
    ap.add_argument("--messages", type=int, default=30)
    args = ap.parse_args()
    print(f"cpu: {describe(this_cpu())}", flush=True)  # a timing from one kind of CPU says little of the other
    only = set(args.only.split(","))
    compileall.compile_dir(args.before, quiet=1)
    print(f"{args.pairs} pairs; before: {args.before}; after: the installed clio ({sys.executable})")
    print("| run | before p50 / p95 / min ms | after p50 / p95 / min ms | after - before per pair, median (p5..p95) | load |")
    print("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="clio-ab-") as tmp, FakeServer() as server:
        server.responder = lambda body: Reply(text="It listens on 6543.")
        b, a = Side("before", args.before, server, Path(tmp)), Side("after", None, server, Path(tmp))
        try:
            if "oneshot" in only:
                paired("one-shot, fresh project", lambda: b.fresh(True), lambda: a.fresh(True), args.pairs)
                paired("one-shot, fresh, recall off", lambda: b.fresh(False), lambda: a.fresh(False), args.pairs)
            if "history" in only:
                b.with_history(args.sessions, args.messages)
                a.with_history(args.sessions, args.messages)
                for mode, home in (("on", "home_on"), ("off", "home_off")):
                    paired(
                        f"one-shot, {args.sessions * args.messages:,} messages of history, recall {mode}",
                        lambda h=home: b.one_shot(b.proj, getattr(b, h)),  # type: ignore[misc]
                        lambda h=home: a.one_shot(a.proj, getattr(a, h)),  # type: ignore[misc]
                        args.pairs,
                    )
            if "prompt" in only:
                paired("REPL: start to prompt, fresh project", b.prompt, a.prompt, args.pairs)
        finally:
            for side in (a, b):
                if getattr(side, "helper", 0) > 0:
                    os.kill(side.helper, signal.SIGTERM)
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
