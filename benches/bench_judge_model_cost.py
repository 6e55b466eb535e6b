"""What naming a judge model (``recall_judge_model``) costs clio's own side of a one-shot run in a
project with history: whole ``clio -p`` runs with the judge model named and not, paired (the order
swapped every pair), the encoder helper warm, against the fake server (testkit/fakeserver.py),
which answers the judge's request (``QUOTE: A``) and the turn's at once. So the figure is clio's
side only: the run's recall done in the run rather than by the helper ahead, and one more local
round trip; a real endpoint's latency for the judge's request comes on top of it.

The project's history is set A's sessions (benches/recall_dev), the messages its related probes
(asked in turn, ``--rounds`` times each arm).

    python benches/bench_judge_model_cost.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clio.recall.cpu_kind import describe, this_cpu  # noqa: E402
from testkit.clio_run import run_clio  # noqa: E402
from testkit.encoder_helper import stop_helper  # noqa: E402
from testkit.fakeserver import FakeServer, Reply  # noqa: E402
from testkit.recall_sets import build, load_set  # noqa: E402

JUDGE = "judge-model"


def respond(body: dict[str, Any]) -> Reply:
    return Reply(text="QUOTE: A" if body.get("model") == JUDGE else "Done.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    print(f"cpu: {describe(this_cpu())}", flush=True)  # a timing from one kind of CPU says little of the other
    with tempfile.TemporaryDirectory() as tmp:
        project, home = Path(tmp) / "proj", Path(tmp) / "home"
        project.mkdir()
        home.mkdir()
        data = load_set("set_a")
        build(data, project / ".clio" / "sessions", 0)
        asked = [p["text"] for p in data["probes"] if p["kind"] != "unrelated"]
        server = FakeServer(respond).start()

        def run(text: str, judged: bool) -> float:
            env = {"CLIO_RECALL_ENCODER": None, "CLIO_RECALL_JUDGE_MODEL": JUDGE if judged else None}
            started = time.perf_counter()
            r = run_clio(["--model", "fake-model", "-p", text], server=server, project=project, home=home, env_extra=env)
            if r.returncode != 0:
                raise SystemExit(r.stderr)
            return 1000 * (time.perf_counter() - started)

        try:
            for _ in range(3):  # the index built, the helper started and its archive embedded
                run(asked[0], False)
            time.sleep(8)
            on: list[float] = []
            off: list[float] = []
            for rnd in range(args.rounds):
                for i, text in enumerate(asked):
                    first = (i + rnd) % 2 == 1
                    a, b = run(text, first), run(text, not first)
                    on.append(a if first else b)
                    off.append(b if first else a)
            judged = sum(1 for b in server.chat_requests if b.get("model") == JUDGE)
        finally:
            server.stop()
            stop_helper(home)
    diff = sorted(a - b for a, b in zip(on, off, strict=True))
    print(
        f"{len(on)} pairs, {judged} judge requests: named p50 {statistics.median(on):.0f} ms, not named "
        f"{statistics.median(off):.0f} ms; paired named minus not p50 {statistics.median(diff):+.0f} ms, "
        f"p95 {diff[int(len(diff) * 0.95)]:+.0f} ms (load {os.getloadavg()[0]:.2f})"
    )


if __name__ == "__main__":
    main()
