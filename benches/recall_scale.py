"""Recall index at scale: 1,000 synthetic sessions of 200 messages (prints figures, asserts nothing).

Writes the sessions in clio's on-disk layout into a temporary folder, then measures with the
real SessionStore: the full index build, a refresh with nothing changed, the incremental
reindex after one session grows, query latency p50/p95 (with and without the freshness
check) and the size of the index file.

    python benches/recall_scale.py [--sessions 1000] [--messages 200] [--queries 200]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clio.store.recall_index import RecallIndex  # noqa: E402
from clio.store.sessions import CHUNK, SessionInfo, SessionStore  # noqa: E402

SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "ta",
    "vo",
    "zi",
    "pe",
    "do",
    "gu",
    "sa",
    "fi",
    "ber",
    "tor",
    "lin",
]


def vocabulary(rng: random.Random, n: int = 20_000) -> list[str]:
    words = {"".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(n * 2)}
    return sorted(words)[:n]


def message(rng: random.Random, vocab: list[str], cum: list[float], seq: int, ts: float) -> dict[str, Any]:
    role = ("user", "assistant", "tool")[seq % 3]
    words = rng.choices(vocab, cum_weights=cum, k=rng.randint(15, 120))
    return {"role": role, "content": " ".join(words), "meta": {"seq": seq, "ts": ts + seq, "thread": 0}}


def write_session(root: Path, sid: str, msgs: list[dict[str, Any]], ts: float) -> None:
    d = root / sid
    (d / "archive").mkdir(parents=True, exist_ok=True)
    for i in range(0, len(msgs), CHUNK):
        (d / "archive" / f"{i // CHUNK:06d}.json").write_text(json.dumps(msgs[i : i + CHUNK]))
    info = SessionInfo(
        sid, name=f"session {sid}", created=ts, updated=ts + len(msgs), message_count=len(msgs)
    )
    (d / "session.json").write_text(json.dumps(info.to_dict()))


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--messages", type=int, default=200)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    vocab = vocabulary(rng)
    cum = list(itertools.accumulate(1.0 / (i + 1) for i in range(len(vocab))))  # Zipf-like frequencies

    with tempfile.TemporaryDirectory(prefix="clio-recall-scale-") as tmp:
        root = Path(tmp) / "sessions"
        t0 = time.perf_counter()
        base = time.time() - 86400 * 365
        kept: list[dict[str, Any]] = []
        for n in range(args.sessions):
            sid = f"20250101-{n:06d}-ab{n % 100:02d}"
            msgs = [message(rng, vocab, cum, i, base + n * 3600) for i in range(args.messages)]
            write_session(root, sid, msgs, base + n * 3600)
            kept.append(rng.choice(msgs))
        total = args.sessions * args.messages
        print(
            f"wrote {args.sessions} sessions x {args.messages} messages = {total} in {time.perf_counter() - t0:.1f}s"
        )

        store = SessionStore(root)
        db = Path(tmp) / "recall.sqlite"
        t0 = time.perf_counter()
        index = RecallIndex(db, store)
        done = index.refresh()
        build = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in Path(tmp).glob("recall.sqlite*"))
        print(
            f"full build: {build:.1f}s ({done.get('messages_indexed', 0)} messages, {total / build:.0f} msg/s)"
        )
        archive = sum(p.stat().st_size for p in root.glob("*/archive/*.json"))
        print(
            f"index size: {size / 1e6:.1f} MB on disk ({size / total:.0f} B/message; "
            f"the JSON archives: {archive / 1e6:.1f} MB)"
        )

        t0 = time.perf_counter()
        index.refresh()
        print(f"refresh, nothing changed: {1000 * (time.perf_counter() - t0):.1f} ms")

        sid = f"20250101-{0:06d}-ab00"
        grown = [*store.iter_messages(sid)] + [
            message(rng, vocab, cum, args.messages + i, base) for i in range(10)
        ]
        write_session(root, sid, grown, base + 7200)
        t0 = time.perf_counter()
        done = index.refresh()
        print(
            f"refresh after one session grew by 10 messages: {1000 * (time.perf_counter() - t0):.1f} ms {done}"
        )

        write_session(root, sid, grown[:-1], base + 9000)
        t0 = time.perf_counter()
        done = index.refresh()
        print(f"refresh after one session was rewritten: {1000 * (time.perf_counter() - t0):.1f} ms {done}")

        rank = {w: i for i, w in enumerate(vocab)}  # 0 = the most frequent word

        def random_words(text: str) -> str:  # mostly very common words: the worst case
            return " ".join(rng.sample(text.split(), 4))

        def one_rare_word(text: str) -> str:  # the message's rarest word among three random ones
            ws = text.split()
            return " ".join([max(ws, key=rank.__getitem__), *rng.sample(ws, 3)])

        for label, make_query, fresh in (
            ("4 random words of a message, with freshness check", random_words, True),
            ("4 random words of a message, index only", random_words, False),
            ("its rarest word + 3 random, with freshness check", one_rare_word, True),
            ("its rarest word + 3 random, index only", one_rare_word, False),
        ):
            lat: list[float] = []
            found = 0
            for i in range(args.queries):
                msg = kept[i % len(kept)]
                query = make_query(msg["content"])
                t0 = time.perf_counter()
                hits = index.search(query, refresh=fresh)
                lat.append(time.perf_counter() - t0)
                found += any(h["excerpt"] and h["session_id"] for h in hits)
            print(
                f"query latency ({label}): p50 {1000 * statistics.median(lat):.1f} ms, "
                f"p95 {1000 * pct(lat, 0.95):.1f} ms ({found}/{args.queries} with hits)"
            )

        index.close()
        t0 = time.perf_counter()
        reopened = RecallIndex(db, store)
        reopened.refresh()
        print(f"reopen + refresh of an up-to-date index: {1000 * (time.perf_counter() - t0):.1f} ms")
        reopened.close()


if __name__ == "__main__":
    main()
