"""Team memory on PostgreSQL (issue 26): many writers, and ranking at team scale.

Run: .venv/bin/python benches/bench_team_memory.py [--sizes 10000,100000] [--writers 16] [--per-writer 50]
Needs the PostgreSQL server of scripts/install-postgres.sh; starts its own throwaway cluster on
127.0.0.1 (testkit/pgserver.py) with fsync ON (durable commits, as a real team server).
Prints the figures; docs/team-memory.md records them.

1. Writers: ``--writers`` processes on 2 simulated machines (two checkout folders, authors
   ``dev<i>@machine<i % 2>``), each its own SharedLtmStore and connection, each adding
   ``--per-writer`` distinct discoveries (runs of clio's docs, each naming its writer) plus, every
   10th write, one rule every writer also writes (dedup across writers). Entries/s over the wall time, and losses: distinct facts written minus
   rows in the table (must be 0), and the shared facts' rows (must be one each).
2. Ranking: the project filled with N entries made of 8-16 word runs of clio's own docs (a
   natural vocabulary; bulk-loaded through the same ``sql.write``), then ``SharedLtmStore.select``
   for 60 tasks (other runs of the docs), with the entries' meaning scored in clio over the
   candidates (``memory/meaning.py``, the path without pgvector; the entries here carry no vectors) (full-text candidates from the
   server, the local ranking rules, the default budget): p50/p95 of the whole selection and of
   the SQL candidates alone; and whether 10 planted, old facts reach the prompt for a task
   naming their subject (test_memory_ranking's subjects). pgvector is used where the server has it (said in the output).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import re
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clio.context.tokens import TokenEstimator  # noqa: E402
from clio.memory import ltm  # noqa: E402
from clio.memory.meaning import Meaning  # noqa: E402
from clio.team import search, sql  # noqa: E402
from clio.team.db import Db  # noqa: E402
from clio.team.link import TeamLink  # noqa: E402
from clio.team.store import SharedLtmStore  # noqa: E402
from testkit.pgserver import PgServer, why_not  # noqa: E402

PROJECT = "github.com/acme/bench"
WORDS = ["kafka", "redis", "nginx", "celery", "terraform", "webpack", "sentry", "grpc", "oauth", "invoices", "payments", "refunds", "cache", "queue", "worker", "scheduler", "migration", "schema", "index", "replica", "shard", "backup", "deploy", "release", "pipeline", "docker", "image", "helm", "chart", "secret", "vault", "token", "session", "cookie", "header", "proxy", "timeout", "retry", "backoff", "batch", "stream", "topic", "consumer", "producer", "partition", "offset", "lag", "metric", "alert", "dashboard", "trace", "span", "log", "level", "config", "flag"]


def _store(url: str, root: Path, author: str) -> SharedLtmStore:
    link = TeamLink(Db(url), PROJECT, root / ".clio", author=author, origin=f"{author}:{root}", notice=lambda _t: None)
    store = SharedLtmStore(link, root / ".clio" / "team", redact=lambda t: t, ignored=set)
    link.db.connect_in_background()
    assert link.db.ready(30), link.db.down
    return store


def _writer(url: str, root: str, i: int, per: int, out: mp.Queue) -> None:  # type: ignore[type-arg]
    store = _store(url, Path(root), f"dev{i}@machine{i % 2}")
    words, rng = corpus(), random.Random(i)
    lat = []
    for k in range(per):
        t = time.perf_counter()
        if k % 10 == 9:
            store.add("rule", rule=f"shared rule number {k // 10}: run the {WORDS[k // 10]} checks before merging")
        else:
            at = rng.randrange(len(words) - 16)
            store.add("discovery", fact=" ".join(words[at : at + rng.randint(8, 16)]) + f" (seen by writer {i} as w{i}k{k})")
        lat.append(time.perf_counter() - t)
    out.put(lat)


def bench_writers(server: PgServer, writers: int, per: int) -> None:
    url = server.new_database()
    base = Path(tempfile.mkdtemp(prefix="clio-team-bench-"))
    _store(url, base / "machine0", "setup@machine0")  # the schema, made once
    out: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    procs = [mp.Process(target=_writer, args=(url, str(base / f"machine{i % 2}"), i, per, out)) for i in range(writers)]
    start = time.perf_counter()
    for p in procs:
        p.start()
    lats = [x for _ in procs for x in out.get(timeout=600)]
    for p in procs:
        p.join()
    wall = time.perf_counter() - start
    distinct = writers * sum(1 for k in range(per) if k % 10 != 9) + len({k // 10 for k in range(per) if k % 10 == 9})
    rows = PgServer.query(url, "SELECT count(*) FROM clio_entries")[0][0]
    rules = PgServer.query(url, "SELECT count(*), min(cardinality(confirmed_by)) FROM clio_entries WHERE type = 'rule'")[0]
    lats.sort()
    print(f"writers: {writers} processes on 2 machines x {per} writes = {writers * per} writes in {wall:.1f} s: "
          f"{writers * per / wall:.0f} writes/s; per write p50 {1000 * statistics.median(lats):.1f} ms, "
          f"p95 {1000 * lats[int(0.95 * len(lats))]:.1f} ms")
    print(f"  distinct facts {distinct}, rows {rows}, lost {distinct - rows}; shared rules: {rules[0]} rows, "
          f"each confirmed by at least {rules[1]} other writers")


def corpus() -> list[str]:
    """Words in the order clio's own docs use them: a natural (Zipf-like) vocabulary."""
    root = Path(__file__).resolve().parents[1]
    text = " ".join(p.read_text(encoding="utf-8") for p in sorted((root / "docs").glob("*.md")))
    return [w for w in re.findall(r"[a-z][a-z0-9_]{2,}", text.lower())]


PLANTED = [
    ("kafka", "the kafka consumer group rebalances when max.poll.interval.ms is exceeded"),
    ("redis", "redis keys for sessions expire after 30 minutes via the sess: prefix"),
    ("alembic", "alembic migrations must be generated with --autogenerate from models/"),
    ("nginx", "nginx proxies /api to the gunicorn socket at /run/app.sock"),
    ("celery", "celery beat schedules live in scheduler/beat.py, not in settings"),
    ("terraform", "terraform state is stored in the s3 bucket infra-state-prod"),
    ("webpack", "webpack builds the frontend bundle into static/dist with contenthash names"),
    ("sentry", "sentry sampling is 0.2 in production and 1.0 in staging"),
    ("grpc", "grpc stubs are regenerated with make protos after editing proto/"),
    ("oauth", "oauth tokens are refreshed by the middleware in auth/refresh.py"),
]


def fill(url: str, n: int, words: list[str]) -> None:
    import psycopg

    rng = random.Random(n)
    with psycopg.connect(url) as conn:
        now = time.time()
        for i in range(n):
            at = rng.randrange(len(words) - 16)
            fact = " ".join(words[at : at + rng.randint(8, 16)]) + f" in module m{i}"
            e = ltm.make_entry("discovery", {"fact": fact}, now=now - rng.random() * 86400 * 90, eid=f"d-{i:08x}")
            sql.write(conn, PROJECT, e, sql.Meta(f"dev{i % 16}@machine{i % 2}", [], "bench"))
            if i % 5000 == 4999:
                conn.commit()
        for k, (_subject, fact) in enumerate(PLANTED):  # old, so only relevance can bring them up
            e = ltm.make_entry("discovery", {"fact": fact}, now=now - 80 * 86400, eid=f"d-p{k:07x}")
            sql.write(conn, PROJECT, e, sql.Meta("planter@machine0", [], "bench"))
        conn.commit()
        conn.execute("ANALYZE clio_entries")
        conn.commit()


def bench_ranking(server: PgServer, sizes: list[int]) -> None:
    est = TokenEstimator("gpt-4o")
    rng = random.Random(7)
    words = corpus()
    tasks = []
    for _ in range(60):
        at = rng.randrange(len(words) - 10)
        tasks.append("why does " + " ".join(words[at : at + rng.randint(4, 10)]) + " fail?")
    for n in sizes:
        url = server.new_database()
        store = _store(url, Path(tempfile.mkdtemp(prefix="clio-team-rank-")), "me@here")
        store.link.db.has_vector = False  # the entries carry no vectors here: the fallback, meaning scored in clio
        meaning = Meaning()
        meaning.arm()
        t = time.perf_counter()
        fill(url, n, words)
        search._stats = None  # the statistics of this database
        print(f"ranking at {n} shared entries (bulk load {time.perf_counter() - t:.0f} s; full-text candidates, "
              "meaning scored in clio over them, as without pgvector):")
        whole, cands, counts = [], [], []
        for task in tasks:
            t = time.perf_counter()
            found = store.link.read(lambda conn, task=task: search.candidates(conn, PROJECT, task, []))
            cands.append(time.perf_counter() - t)
            counts.append(len(found or []))
            t = time.perf_counter()
            store.select(task, [], 1200, est.count_text, similar_to=meaning.similarities)
            whole.append(time.perf_counter() - t)
        found_planted = 0
        for subject, fact in PLANTED:
            task = f"Why does our {subject} setup misbehave? Look at how {subject} is configured."
            chosen = store.select(task, [], 1200, est.count_text, similar_to=meaning.similarities)
            found_planted += any(e.fields.get("fact") == fact for e in chosen)
        print(f"  planted facts in the prompt for their task: {found_planted}/{len(PLANTED)}")
        for name, xs in (("select (SQL + ranking)", whole), ("SQL candidates only", cands)):
            xs.sort()
            print(f"  {name}: p50 {1000 * statistics.median(xs):.1f} ms, p95 {1000 * xs[int(0.95 * len(xs))]:.1f} ms")
        print(f"  candidates per task: median {statistics.median(counts):.0f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--writers", type=int, default=16)
    ap.add_argument("--per-writer", type=int, default=50)
    args = ap.parse_args()
    reason = why_not()
    if reason:
        sys.exit(f"bench_team_memory: {reason}")
    server = PgServer(durable=True).start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: the cluster still goes
    try:
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
        bench_writers(server, args.writers, args.per_writer)
        bench_ranking(server, [int(s) for s in args.sizes.split(",") if s])
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        server.close()


if __name__ == "__main__":
    main()
