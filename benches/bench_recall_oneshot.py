"""Automatic recall as a script or a new user meets it: each of a labelled set's 24 messages is one
``clio -p`` run of the installed clio, back to back, in a project that holds the set's history and
nothing else (no index, no vectors yet) and under a fresh ``$CLIO_HOME`` (no encoder helper
running). Whatever the first runs do (build the index, start the helper, leave their own sessions
in the archive, ask the helper to embed the archive) the later runs live with, as they would.

``bench_auto_recall.py`` measures the decision in-process in its steady state (the helper up, the
archive embedded). This one measures what reaches the endpoint: the ``<recalled_context>`` block
in the user message of each run's first request, as the fake server (testkit/fakeserver.py) on
127.0.0.1 recorded it. It counts, per set of ``benches/recall_dev/``: related messages whose block
quotes the fact (a labelled needle in the block; same words and reworded apart) and unrelated
messages given a block, with each run's wall time.

The fake server answers every request with ``--reply`` ("OK." by default): each earlier run's
session is then a question with a reply that says nothing, which later messages may find.

    python benches/bench_recall_oneshot.py [--sets set_a,...] [--order interleaved|related-first|as-written]
        [--reply TEXT] [--words] [--models-from CLIO_HOME] [--pause S] [--misses]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)
sys.path.append(str(Path(__file__).resolve().parent))  # bench_auto_recall, for the sets' layout

from bench_auto_recall import SET_NAMES, build, load_set, shows  # noqa: E402

from clio.recall.cpu_kind import describe, this_cpu  # noqa: E402
from testkit.clio_run import run_clio  # noqa: E402
from testkit.fakeserver import FakeServer, Reply  # noqa: E402
from testkit.scripted import is_consolidation, latest_user  # noqa: E402

BLOCK = re.compile(r"<recalled_context>.*?</recalled_context>", re.S)


def ordered(probes: list[dict[str, Any]], order: str) -> list[dict[str, Any]]:
    """The set's messages in the order the runs send them."""
    related = [p for p in probes if p["kind"] != "unrelated"]
    unrelated = [p for p in probes if p["kind"] == "unrelated"]
    if order == "related-first":
        return related + unrelated
    if order == "interleaved":
        return [p for pair in zip(related, unrelated, strict=False) for p in pair]
    return list(probes)


def block_sent(server: FakeServer, since: int, text: str) -> str | None:
    """The block in the first turn request, from request ``since`` on, whose user message holds
    ``text`` (a read-back of an earlier run, in the background, may come between); None when none
    came."""
    for body in server.chat_requests[since:]:
        sent, _ = latest_user(body)
        if text in sent and not is_consolidation(body):
            found = BLOCK.search(sent)
            return found.group(0) if found else ""
    return None


def run_set(name: str, args: argparse.Namespace) -> dict[str, Any]:
    data = load_set(name)
    out: dict[str, Any] = {"same": [0, 0], "reworded": [0, 0], "unrelated": [0, 0], "times": [], "lines": []}
    with tempfile.TemporaryDirectory() as tmp:
        project, home = Path(tmp) / "proj", Path(tmp) / "home"
        (project / ".clio").mkdir(parents=True)
        home.mkdir()
        if args.models_from is not None:  # the models installed there (clio encoder install): clio runs the one it would
            (home / "models").symlink_to(args.models_from.resolve() / "models")
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        build(data, project / ".clio" / "sessions")
        server = FakeServer(lambda body: Reply(text=args.reply)).start()
        env = {"CLIO_RECALL_ENCODER": "0" if args.words else None}
        try:
            for k, probe in enumerate(ordered(data["probes"], args.order)):
                since = len(server.chat_requests)
                started = time.perf_counter()
                result = run_clio(["-p", probe["text"]], server=server, project=project, home=home, env_extra=env, background=True)
                out["times"].append((time.perf_counter() - started) * 1000)
                if result.returncode != 0:
                    raise SystemExit(f"{name}: run {k} failed ({result.returncode}): {result.stderr[-500:]}")
                block = block_sent(server, since, probe["text"])
                if block is None:
                    raise SystemExit(f"{name}: run {k} sent no request for its message")
                kind = probe["kind"]
                ok = bool(block) if kind == "unrelated" else shows(block, probe.get("needles", []))
                out[kind][0] += ok
                out[kind][1] += 1
                wrong = ok if kind == "unrelated" else not ok
                if args.misses and wrong:
                    out["lines"].append(f"  {'false block' if ok else 'missed'} (run {k}, {kind}): {probe['text'][:90]!r}")
                    if block:
                        out["lines"].append("    " + " ".join(block.split())[180:560])
                time.sleep(args.pause)
        finally:
            server.stop()
            (home / "encoder.sock").unlink(missing_ok=True)  # the helper exits when its socket is gone
            time.sleep(0.2)
            shutil.rmtree(project, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(SET_NAMES), help="the sets to run, comma-separated")
    ap.add_argument("--order", choices=("interleaved", "related-first", "as-written"), default="interleaved")
    ap.add_argument("--reply", default="OK.", help="what the fake server answers to every request")
    ap.add_argument("--words", action="store_true", help="the encoder helper off (CLIO_RECALL_ENCODER=0)")
    ap.add_argument("--models-from", type=Path, metavar="CLIO_HOME", help="the models installed there (clio encoder install mpnet); each run's fresh CLIO_HOME links them")
    ap.add_argument("--pause", type=float, default=0.0, help="seconds between runs")
    ap.add_argument("--misses", action="store_true", help="list what each set missed or wrongly quoted")
    args = ap.parse_args()
    print(f"cpu: {describe(this_cpu())}", flush=True)  # a timing from one kind of CPU says little of the other
    totals = {"same": [0, 0], "reworded": [0, 0], "unrelated": [0, 0]}
    for name in [n for n in args.sets.split(",") if n]:
        r = run_set(name, args)
        for kind in totals:
            totals[kind][0] += r[kind][0]
            totals[kind][1] += r[kind][1]
        times = sorted(r["times"])
        print(
            f"{name}: same words {r['same'][0]}/{r['same'][1]}, reworded {r['reworded'][0]}/{r['reworded'][1]}, "
            f"false blocks {r['unrelated'][0]}/{r['unrelated'][1]}; a run p50 {statistics.median(times):.0f} ms, "
            f"p95 {times[int(0.95 * (len(times) - 1))]:.0f} ms (load {os.getloadavg()[0]:.2f})",
            flush=True,
        )
        for line in r["lines"]:
            print(line)
    print(
        f"all: same words {totals['same'][0]}/{totals['same'][1]}, reworded {totals['reworded'][0]}/{totals['reworded'][1]}, "
        f"false blocks {totals['unrelated'][0]}/{totals['unrelated'][1]} ({args.order}, "
        f"{'words only' if args.words else 'the helper started by the first run'}, reply {args.reply!r}"
        f"{', models from ' + str(args.models_from) if args.models_from else ''})"
    )


if __name__ == "__main__":
    sys.exit(main())
