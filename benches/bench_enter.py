"""The REPL's Enter as a user presses it: a moment after the last keystroke, not at once.

``bench_auto_recall.py --scale-dev N --encoder`` times the recall's step for a line sent the
instant it is complete ("typed straight through"), and ``--recalled-ahead`` for one the helper
recalled during a long pause. A user's Enter comes between the two: some tenths of a second
after the last key. This bench builds the same archive (the sets' sessions copied until it
holds N messages, embedded by the helper, its judge loaded) and, for each message of the sets,
has the line typed (its last keystroke: one change of the prompt's line, through clio's own
:class:`clio.ui.typing_ahead.TypingAhead` and its pauses) and Enter pressed ``--gaps`` ms later:

- if the line was handed on by then, and the REPL would send it ahead
  (:func:`clio.app.auto_recall.worth_ahead`: a line the product searches, of three words or
  more), the helper was asked to recall it, and Enter fetches that block (waiting for the
  helper when it is still at work);
- else Enter does the step in the run, as the REPL does for a line typed straight through.

It prints, per gap, the time from Enter to the block (p50 / p95), and how many Enters found the
line recalled ahead; then the same for the lines that end as a sentence ends ("?", ".", "!")
and for the others, apart. The step of a message the product does not search is counted too (about
0.1 ms), as in ``--scale-dev``. Each message is typed in one change (as if its last key
completed it). ``--keystrokes`` takes only the lines that hold a sentence ended inside them (40 of
the 240) and types them key by key, 80-200 ms between keys (seeded): there the short pause after
a sentence's end hands on lines that Enter will not send. After each Enter the line is emptied
(prompt-toolkit resets it) and the bench waits 0.5 s (the user reads the answer), so the helper is
idle for the next one.

It reads the clio of stop 102 or later (``worth_ahead``, ``typing_ahead.ENDS``); stop 102's
"before" figures (docs/memory.md, "Enter after a question mark") came from the bench of that
stop run against a tree of b78920a.

    python benches/bench_enter.py [--scale-dev 10000] [--gaps 0,100,150,200,300,400] [--keystrokes] [--no-judge]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent))  # bench_auto_recall beside it

import bench_auto_recall as B  # noqa: E402

from clio.app.auto_recall import worth_ahead  # noqa: E402
from clio.recall.auto_turn import plan  # noqa: E402
from clio.recall.cpu_kind import describe, this_cpu  # noqa: E402
from clio.recall.encoder_client import EncoderClient  # noqa: E402
from clio.recall.index import RecallIndex  # noqa: E402
from clio.ui.typing_ahead import ENDS, TypingAhead  # noqa: E402

SESSION = "bench-running-session"


class Typist:
    """The REPL's side of typing ahead: clio's TypingAhead hands the line on after its pause, and
    the line is sent to the helper as AutoRecall.typed sends it (under one lock, which Enter
    takes before it looks, as AutoRecall's ``_ahead_lock``)."""

    def __init__(self, client: EncoderClient) -> None:
        self.client = client
        self.lock = threading.Lock()
        self.sent: tuple[str, str] | None = None  # (line, token) the helper recalls
        self.sends = 0  # lines sent to the helper
        self.ahead = TypingAhead(self._send)

    def _send(self, line: str) -> None:
        text = line.strip()
        if not worth_ahead(text, lambda: True):
            return
        self.sends += 1
        with self.lock:
            self.client.judge = B.JUDGE[0]
            token = self.client.recall_ahead(text, text, SESSION, "standard")
            self.sent = (text, token) if token is not None else None

    def enter(self, index: RecallIndex, text: str, gap_s: float, keys: list[float] | None = None) -> tuple[float, bool]:
        """The line typed, Enter ``gap_s`` later: (ms from Enter to the block, recalled ahead).
        ``keys``: the line typed key by key, each key this many seconds after the one before."""
        with self.lock:
            self.sent = None
        if keys is None:
            self.ahead.changed(text)
        else:
            for i, wait in enumerate(keys, 1):
                self.ahead.changed(text[:i])
                if i < len(text):
                    time.sleep(wait)
        time.sleep(gap_s)
        started = time.perf_counter()
        with self.lock:
            sent, self.sent = self.sent, None
        self.ahead.changed("")  # prompt-toolkit empties the line on Enter
        if sent is not None and sent[0] == text.strip():
            got = self.client.recalled(sent[1], B.BLOCK_CHARS)
            assert got is not None, f"the helper recalled nothing ahead: {self.client.state}"
            return (time.perf_counter() - started) * 1000, True
        B.step(index, text, self.client)
        return (time.perf_counter() - started) * 1000, False


def summary(times: list[float], ahead: int) -> str:
    if not times:
        return "none"
    ordered = sorted(times)
    return (
        f"p50 {statistics.median(ordered):.1f} ms, p95 {ordered[int(0.95 * (len(ordered) - 1))]:.1f} ms, "
        f"recalled ahead {ahead} of {len(ordered)}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale-dev", type=int, default=10000, metavar="N", help="messages in the archive (the sets' sessions, copied)")
    ap.add_argument("--gaps", default="0,100,150,200,300,400", help="ms from the last keystroke to Enter, comma-separated")
    ap.add_argument("--repeat", type=int, default=1, help="each gap's messages this many times")
    ap.add_argument(
        "--keystrokes", action="store_true",
        help="only the lines with a sentence ended inside them, typed key by key (80-200 ms between keys, seeded)",
    )  # fmt: skip
    ap.add_argument("--no-judge", action="store_true", help="the decision without the helper's judge (recall_judge: false)")
    args = ap.parse_args()
    print(f"cpu: {describe(this_cpu())}", flush=True)
    B.JUDGE[0] = not args.no_judge
    gaps = [float(g) for g in args.gaps.split(",") if g.strip()]
    sets = [B.load_set(n) for n in B.SET_NAMES]
    probes = [p["text"] for data in sets for p in data["probes"]]
    keys: dict[str, list[float]] = {}
    if args.keystrokes:  # a sentence ended inside the line: the short pause hands on a line Enter will not send
        probes = [t for t in probes if re.search(r"[.?!] \S", t.strip()) and plan(t, t)[0]]
        rng = random.Random(5)
        keys = {t: [rng.uniform(0.08, 0.2) for _ in t] for t in probes}
    with tempfile.TemporaryDirectory() as tmp:
        clio_dir = Path(tmp) / ".clio"
        index, k = B.copied_archive(clio_dir, sets, args.scale_dev)
        print(f"archive: {index.counts()['messages']:,} messages ({k} sessions of the sets); {len(probes)} messages a gap", flush=True)
        client = B.embedded_helper(Path(tmp) / "home", clio_dir)
        try:
            for _ in range(2):  # warm: the index's pages, the helper's scan
                for text in probes:
                    B.step(index, text, client)
            client.timeout_s = 0.25
            typist = Typist(client)
            for gap in gaps:
                times: dict[bool, list[float]] = {True: [], False: []}  # by whether the line ends as a sentence ends
                ahead = {True: 0, False: 0}
                for text in probes * args.repeat:
                    ms, was_ahead = typist.enter(index, text, gap / 1000, keys.get(text))
                    ended = text.rstrip().endswith(ENDS)
                    times[ended].append(ms)
                    ahead[ended] += was_ahead
                    time.sleep(0.5)
                load = os.getloadavg()[0]
                print(f"Enter {gap:.0f} ms after the last key: {summary(times[True] + times[False], ahead[True] + ahead[False])}, lines sent to the helper {typist.sends} (load {load:.2f})")
                typist.sends = 0
                print(f"  lines ending as a sentence ends: {summary(times[True], ahead[True])}; the others: {summary(times[False], ahead[False])}", flush=True)
        finally:
            B.stop_helper(client)
            index.close()


if __name__ == "__main__":
    main()
