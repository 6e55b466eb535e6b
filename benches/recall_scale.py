"""Recall index at scale: 1,000 synthetic sessions of 200 messages (prints figures, asserts nothing).

Writes the sessions in clio's on-disk layout into a temporary folder, then measures with the
real SessionStore: the full index build, a refresh with nothing changed, the incremental
reindex after one session grows, the freshness check with the sessions folder's change journal
against a full look at every session's file (interleaved), query latency p50/p95 (with and
without the freshness check) and the size of the index file, all lexical (bm25 only).

Then the semantic side (skip with --no-vectors): model load time, embedding rate on the
corpus's own messages (the build rate with vectors), hybrid query latency p50/p95 INCLUDING the
query's embedding over all messages' vectors, the file size with vectors, and the peak RSS
with the model and the vector matrix loaded. By default a sample is embedded for the rate and
the remaining rows get random unit vectors (a brute-force scan costs the same whatever the
values); --embed-all embeds every message for real (minutes with the static table). With the
vectors: the IVF lists (sizes), their recall@10 / @200 against the exact scan per nprobe and the
scan's cost, and an A/B interleaved query by query of the cosine scan beside bm25 vs in turn.
Lexical and hybrid both end with an A/B of the refine stages (clio/recall/refine.py) on and off, interleaved query by query.
--workdir keeps the corpus and its index for the next run. Last, it checks that start-up does not import
the model (``import clio.cli`` and the app's memory wiring leave numpy, onnxruntime,
tokenizers and clio.recall.embedder out of sys.modules).

    python benches/recall_scale.py [--sessions 1000] [--messages 200] [--queries 200]
        [--no-vectors] [--embed-sample 1000] [--embed-all] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

from clio.recall.index import RecallIndex  # noqa: E402
from clio.store.changes import note  # noqa: E402
from clio.store.sessions import SessionStore  # noqa: E402
from testkit.clio_run import write_archive  # noqa: E402

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


def text_pool(root: Path, need: int, rng: random.Random) -> list[str]:
    """Real text for --text-from: chunks of 6 non-blank lines of the .py files under ``root``
    (code, comments and docstrings: closer to a coding agent's archive than random words)."""
    pool: list[str] = []
    for path in sorted(root.rglob("*.py")):
        try:
            lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        except (OSError, UnicodeDecodeError):
            continue
        for i in range(0, len(lines) - 5, 6):
            chunk = " ".join(lines[i : i + 6])
            if len(chunk.split()) >= 8:
                pool.append(chunk[:2000])
        if len(pool) >= need * 2:
            break
    if len(pool) < need:
        raise SystemExit(f"--text-from {root}: {len(pool)} chunks of text, {need} needed")
    rng.shuffle(pool)
    return pool[:need]


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def rss_mb() -> float:
    """(current RSS, peak RSS) of this process in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


STARTUP_CHECK = """
import sys, time
t = time.perf_counter()
import clio.cli, clio.app.memory
ms = (time.perf_counter() - t) * 1000
heavy = [m for m in ("numpy", "onnxruntime", "tokenizers", "clio.recall.embedder", "clio.recall.vectors", "clio.recall.hybrid",
                     "clio.recall.index") if m in sys.modules]
print(f"{ms:.0f} {','.join(heavy) or '-'}")
"""


def startup_check() -> None:
    runs = [
        subprocess.run([sys.executable, "-c", STARTUP_CHECK], capture_output=True, text=True, check=True)
        for _ in range(5)
    ]
    outs = [r.stdout.split() for r in runs]
    ms = statistics.median(float(o[0]) for o in outs)
    print(
        f"start-up: import clio.cli + clio.app.memory {ms:.0f} ms (median of 5); "
        f"model-side modules imported: {outs[0][1]}"
    )


def refine_ab(index: RecallIndex, queries: list[str], mode: str) -> None:
    """The cost of the refine stages (clio/recall/refine.py): the same queries with and without
    them, interleaved query by query (index only), so that a change of load hits both alike."""
    both: dict[bool, list[float]] = {True: [], False: []}
    for i, query in enumerate(queries):
        for refine in (True, False) if i % 2 else (False, True):
            t0 = time.perf_counter()
            index.search(query, refresh=False, mode=mode, refine=refine)  # type: ignore[arg-type]
            both[refine].append(time.perf_counter() - t0)
    print(
        f"{mode}, index only, A/B interleaved: with the refine stages p50 / p95 "
        + " vs without ".join(
            f"{1000 * statistics.median(v):.1f} / {1000 * pct(v, 0.95):.1f} ms" for v in both.values()
        )
        + f"  [{load()}]"
    )


def load() -> str:
    return "load average " + " ".join(Path("/proc/loadavg").read_text().split()[:3])


def ann_figures(vectors: Any, qvecs: list[Any], k: int = 10, wide: int = 200) -> None:
    """Recall of the IVF prefilter against the exact scan (all lists), and the scan's cost."""
    if vectors._layout is None:
        print(f"IVF: no lists ({len(vectors._mat)} vectors < {vectors.min_rows}): exact scan")
        return
    nlist = len(vectors._centroids)
    sizes = sorted(
        int(e - s) for s, e in zip(vectors._layout.starts[:-1], vectors._layout.starts[1:], strict=True)
    )
    print(f"IVF: {nlist} lists, sizes min/median/max {sizes[0]}/{sizes[len(sizes) // 2]}/{sizes[-1]}")
    default = vectors.nprobe
    vectors.nprobe = 10**9
    exact = []
    lat: list[float] = []
    for q in qvecs:
        t0 = time.perf_counter()
        exact.append(vectors.scan(q, wide, min_cosine=-2.0))
        lat.append(time.perf_counter() - t0)
    print(
        f"  exact scan (all lists): p50 {1000 * statistics.median(lat):.1f} ms, p95 {1000 * pct(lat, 0.95):.1f} ms"
    )
    for nprobe in sorted({16, 32, 64, 128, default}):
        vectors.nprobe = nprobe
        r_k: list[float] = []
        r_wide: list[float] = []
        lat = []
        before = vectors.stats["rows_scanned"]
        for q, want in zip(qvecs, exact, strict=True):
            t0 = time.perf_counter()
            got = vectors.scan(q, wide, min_cosine=-2.0)
            lat.append(time.perf_counter() - t0)
            r_k.append(len(set(got[:k]) & set(want[:k])) / max(1, len(want[:k])))
            r_wide.append(len(set(got) & set(want)) / max(1, len(want)))
        share = (vectors.stats["rows_scanned"] - before) / len(qvecs) / len(vectors._mat)
        print(
            f"  nprobe {nprobe}{' (default)' if nprobe == default else ''}: recall@{k} vs exact "
            f"{statistics.fmean(r_k):.3f}, recall@{wide} {statistics.fmean(r_wide):.3f}, rows scanned {100 * share:.1f} %, "
            f"scan p50 {1000 * statistics.median(lat):.2f} ms, p95 {1000 * pct(lat, 0.95):.2f} ms  [{load()}]"
        )
    vectors.nprobe = default


def semantic_figures(
    args: argparse.Namespace, db: Path, store: SessionStore, kept: list[dict[str, Any]], total: int
) -> None:
    import numpy as np

    from clio.recall import embedder as semantic

    before = rss_mb()
    t0 = time.perf_counter()
    embedder = semantic.get_embedder()
    if embedder is None:
        print(f"semantic: unavailable ({semantic.unavailable_reason()})")
        return
    print(
        f"model load ({embedder.name}, sha256 checked): {1000 * (time.perf_counter() - t0):.0f} ms, "
        f"RSS {before:.0f} -> {rss_mb():.0f} MB"
    )
    index = RecallIndex(db, store, embedder=embedder, sync_budget_s=None)
    index.refresh()
    vectors = index.vector_index()
    assert vectors is not None
    conn = index._conn
    if args.embed_all:
        t0 = time.perf_counter()
        n = index.sync_vectors()
        took = time.perf_counter() - t0
        print(f"embedded all {n} messages: {took:.0f}s ({n / took:.1f} msg/s)")
    else:
        vectors.ensure(conn)
        sample = [
            str(r[0])
            for r in conn.execute(
                "SELECT substr(body, 1, 2000) FROM msgs ORDER BY id LIMIT ?", (args.embed_sample,)
            )
        ]
        t0 = time.perf_counter()
        embedder.embed(sample)
        took = time.perf_counter() - t0
        rate = len(sample) / took
        print(
            f"build rate with vectors: {rate:.1f} msg/s embedding ({len(sample)} of the corpus's messages, "
            f"1 thread); all {total}: ~{total / rate / 60:.0f} min"
        )
        rng = np.random.default_rng(args.seed)
        ids = [int(r[0]) for r in conn.execute("SELECT id FROM msgs ORDER BY id")]
        t0 = time.perf_counter()
        conn.execute("BEGIN")
        for start in range(0, len(ids), 10_000):
            chunk = ids[start : start + 10_000]
            mat = rng.standard_normal((len(chunk), embedder.dim)).astype(np.float32)
            mat /= np.linalg.norm(mat, axis=1, keepdims=True)
            conn.executemany(
                "INSERT OR IGNORE INTO vecs(id, v) VALUES (?, ?)",
                zip(chunk, (m.astype(np.float16).tobytes() for m in mat), strict=True),
            )
        conn.execute("COMMIT")
        print(f"stored {len(ids)} vectors (random unit rows) in {time.perf_counter() - t0:.1f}s")
    size = sum(p.stat().st_size for p in db.parent.glob("recall.sqlite*"))
    print(f"index size with vectors: {size / 1e6:.1f} MB on disk ({size / total:.0f} B/message)")
    t0 = time.perf_counter()
    index.search("warm up the matrix")
    print(
        f"first hybrid search (loads the vector matrix; IVF lists trained: {vectors.stats['ivf_trainings']}): "
        f"{1000 * (time.perf_counter() - t0):.0f} ms"
    )
    size = sum(p.stat().st_size for p in db.parent.glob("recall.sqlite*"))
    print(
        f"index size with vectors and IVF lists: {size / 1e6:.1f} MB on disk ({size / total:.0f} B/message)"
    )
    rng2 = random.Random(args.seed)
    queries = []
    for i in range(args.queries):
        words = kept[i % len(kept)]["content"].split()
        queries.append(" ".join(rng2.sample(words, min(6, len(words)))))
    ann_figures(vectors, [embedder.embed([q])[0] for q in queries])
    for label, fresh, mode in (
        ("hybrid, with freshness check", True, "hybrid"),
        ("hybrid, index only", False, "hybrid"),
        ("semantic only, index only", False, "semantic"),
        ("lexical only, index only", False, "lexical"),
    ):
        lat: list[float] = []
        for query in queries:
            t0 = time.perf_counter()
            index.search(query, refresh=fresh, mode=mode)  # type: ignore[arg-type]
            lat.append(time.perf_counter() - t0)
        print(
            f"query latency ({label}, including the query's embedding): p50 {1000 * statistics.median(lat):.1f} ms, "
            f"p95 {1000 * pct(lat, 0.95):.1f} ms  [{load()}]"
        )
    refine_ab(index, queries, "hybrid")
    both: dict[bool, list[float]] = {True: [], False: []}
    for i, query in enumerate(queries * 2):  # interleaved, so that a change of load hits both alike
        for parallel in (True, False) if i % 2 else (False, True):
            index.parallel = parallel
            t0 = time.perf_counter()
            index.search(query, refresh=False)
            both[parallel].append(time.perf_counter() - t0)
    index.parallel = True
    print(
        "hybrid, index only, A/B interleaved: cosine scan beside bm25 p50 / p95 / mean "
        + " vs in turn ".join(
            f"{1000 * statistics.median(v):.1f} / {1000 * pct(v, 0.95):.1f} / {1000 * statistics.fmean(v):.1f} ms"
            for v in both.values()
        )
        + f"  [{load()}]"
    )
    qlat = []
    for query in queries:
        t0 = time.perf_counter()
        embedder.embed([query])
        qlat.append(time.perf_counter() - t0)
    print(f"the query's embedding alone: p50 {1000 * statistics.median(qlat):.2f} ms")
    print(
        f"memory: vector matrix {vectors.memory_bytes() / 1e6:.0f} MB; RSS now {rss_mb():.0f} MB, "
        f"peak {peak_mb():.0f} MB (model + matrix + index)"
    )
    index.close()


def freshness_ab(index: RecallIndex, root: Path, sid: str, n: int) -> None:
    """The freshness check with the sessions folder's change journal (clio.store.changes: only
    the sessions noted since are looked at) against a full look at every session's file (as
    before the journal, and as still every FULL_LOOK_S), interleaved call by call: nothing
    written, and one session noted (its file looked at again, nothing to index)."""
    for label, noted in (("nothing written", False), ("one session noted", True)):
        lat: dict[bool, list[float]] = {True: [], False: []}
        for i in range(2 * n):
            journal = i % 2 == 0
            if noted:
                note(root, sid)
            if not journal:
                index._watch.forget()  # the next look is a full one
            t0 = time.perf_counter()
            index.refresh()
            lat[journal].append(time.perf_counter() - t0)
        j, f = lat[True], lat[False]
        print(
            f"freshness check, {label}, journal vs full look ({len(j)} each, interleaved): "
            f"p50 {1000 * statistics.median(j):.2f} vs {1000 * statistics.median(f):.2f} ms, "
            f"p95 {1000 * pct(j, 0.95):.2f} vs {1000 * pct(f, 0.95):.2f} ms"
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--messages", type=int, default=200)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-vectors", action="store_true", help="lexical figures only")
    ap.add_argument("--embed-sample", type=int, default=1000, help="messages embedded for the rate")
    ap.add_argument("--embed-all", action="store_true", help="embed every message for real (slow)")
    ap.add_argument(
        "--text-from",
        type=Path,
        default=None,
        help="messages from real text: 6-line chunks of the .py files under this folder (e.g. the stdlib)",
    )
    ap.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="keep the corpus and its index here and reuse them on the next run (default: a temporary folder)",
    )
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    vocab = vocabulary(rng)
    cum = list(itertools.accumulate(1.0 / (i + 1) for i in range(len(vocab))))  # Zipf-like frequencies
    total = args.sessions * args.messages
    pool = text_pool(args.text_from, total + 10, random.Random(args.seed)) if args.text_from else []
    if pool:
        freq = Counter(w for text in pool for w in text.split())
        rarity: Callable[[str], float] = lambda w: -freq[w]  # noqa: E731
    else:
        order = {w: i for i, w in enumerate(vocab)}  # 0 = the most frequent word
        rarity = order.__getitem__

    with contextlib.ExitStack() as stack:
        if args.workdir is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="clio-recall-scale-"))
        else:
            tmp = str(args.workdir.resolve())
        root = Path(tmp) / "sessions"
        kind = "text" if args.text_from else "words"
        marker = Path(tmp) / f"corpus-{kind}-{args.sessions}x{args.messages}-seed{args.seed}"
        reuse = marker.exists()
        t0 = time.perf_counter()
        base = 1.7e9 - 86400 * 365  # fixed, so a kept corpus is the same one
        kept: list[dict[str, Any]] = []
        for n in range(args.sessions):
            sid = f"20250101-{n:06d}-ab{n % 100:02d}"
            msgs = [message(rng, vocab, cum, i, base + n * 3600) for i in range(args.messages)]
            if pool:
                for i, m in enumerate(msgs):
                    m["content"] = pool[n * args.messages + i]
            if not reuse:
                write_archive(root, sid, msgs, base + n * 3600)
            kept.append(rng.choice(msgs))
        total = args.sessions * args.messages
        marker.touch()
        print(
            f"{'reused' if reuse else 'wrote'} {args.sessions} sessions x {args.messages} messages = {total} "
            f"in {time.perf_counter() - t0:.1f}s"
        )

        store = SessionStore(root)
        db = Path(tmp) / "recall.sqlite"
        t0 = time.perf_counter()
        index = RecallIndex(db, store, embedder=None)
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
        if pool:
            for i, m in enumerate(grown[-10:]):
                m["content"] = pool[total + i]
        write_archive(root, sid, grown, base + 7200)
        t0 = time.perf_counter()
        done = index.refresh()
        print(
            f"refresh after one session grew by 10 messages: {1000 * (time.perf_counter() - t0):.1f} ms {done}"
        )

        write_archive(root, sid, grown[:-1], base + 9000)
        t0 = time.perf_counter()
        done = index.refresh()
        print(f"refresh after one session was rewritten: {1000 * (time.perf_counter() - t0):.1f} ms {done}")
        freshness_ab(index, root, sid, args.queries)

        def random_words(text: str) -> str:  # mostly very common words: the worst case
            return " ".join(rng.sample(text.split(), 4))

        def one_rare_word(text: str) -> str:  # the message's rarest word among three random ones
            ws = text.split()
            return " ".join([max(ws, key=rarity), *rng.sample(ws, 3)])

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

        refine_ab(
            index, [one_rare_word(kept[i % len(kept)]["content"]) for i in range(args.queries)], "lexical"
        )
        index.close()
        t0 = time.perf_counter()
        reopened = RecallIndex(db, store, embedder=None)
        reopened.refresh()
        print(f"reopen + refresh of an up-to-date index: {1000 * (time.perf_counter() - t0):.1f} ms")
        reopened.close()
        print(f"peak RSS, lexical only: {peak_mb():.0f} MB")
        if not args.no_vectors:
            semantic_figures(args, db, store, kept, args.sessions * args.messages)
    startup_check()


if __name__ == "__main__":
    main()
