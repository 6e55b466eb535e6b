"""Automatic recall: how often the block it injects is relevant, and what it costs per message.

A labelled set of coding sessions written for this bench (no public data): 14 past sessions, each
settling something in a tool result, an answer or the user's own words, beside filler sessions of
unrelated work (about 1,000 archived messages in all). Then 40 new user messages, each labelled
with the archived message that answers it, or with none (24 related, worded unlike their answer
as often as not; 16 unrelated, some sharing words with the archive). For each message the real
path runs: RecallIndex.search (hybrid, what the window carries left out) -> clio.recall.auto
(score, threshold, block) with the shipped static embedding.

Figures (printed; docs/memory.md keeps them):
- precision: of the messages that got a block, the share whose block quotes the labelled answer;
  of all quoted passages, the share that bear on the message (the labelled one or another
  message of its session that settles the same thing);
- recall: of the related messages, the share whose block quotes the labelled answer;
- false blocks: unrelated messages that got a block;
- latency p50/p95 of the whole per-message step (search + scoring + block), with the load average.

``--scale DIR`` also times the per-message step over a corpus built by ``benches/recall_scale.py
--workdir DIR`` (200,000 messages by default), with queries drawn from that corpus.

    python benches/bench_auto_recall.py [--min-cosine X] [--scale DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit; clio as installed

from clio.app.auto_recall import SEARCH_RESULTS, SEARCH_SESSIONS, similarity  # noqa: E402
from clio.recall import auto  # noqa: E402
from clio.recall.index import RecallIndex  # noqa: E402
from clio.store.sessions import SessionStore  # noqa: E402
from testkit.clio_run import write_archive  # noqa: E402

T0 = 1_763_000_000.0

# (session name, messages as (role, text)); the labelled answer of a query is (session, index)
SESSIONS: list[tuple[str, list[tuple[str, str]]]] = [
    ("staging db", [
        ("user", "where does staging keep its database settings?"),
        ("tool", "deploy/staging.env (lines 1-4)\nDB_HOST=db-stage.internal\nDB_PORT=6543\nPOOL=pgbouncer transaction mode"),
        ("assistant", "Staging connects through pgbouncer on db-stage.internal, port 6543."),
    ]),
    ("flaky ci", [
        ("user", "test_upload fails on CI only, sometimes"),
        ("tool", "FAILED tests/test_upload.py::test_upload - TimeoutError: S3 mock did not start within 5s"),
        ("assistant", "The S3 mock (moto server) starts slowly on the shared runners; I raised its startup timeout to 30 s in conftest.py."),
    ]),
    ("release process", [
        ("user", "From now on we tag releases as vYYYY.MM.N and never push tags from a laptop, only from the release workflow."),
        ("assistant", "Understood: tags vYYYY.MM.N, created only by .github/workflows/release.yml."),
    ]),
    ("logging", [
        ("user", "why are the logs so noisy in production?"),
        ("tool", "config/logging.yaml (lines 1-6)\nroot:\n  level: DEBUG\nhandlers: [console, sentry]\nsentry:\n  level: WARNING"),
        ("assistant", "The root logger is at DEBUG in config/logging.yaml; set it to INFO for production."),
    ]),
    ("auth tokens", [
        ("user", "how long do our API tokens live?"),
        ("tool", "src/auth/tokens.py (lines 10-14)\nACCESS_TTL = timedelta(minutes=15)\nREFRESH_TTL = timedelta(days=30)\nROTATE_REFRESH = True"),
        ("assistant", "Access tokens expire after 15 minutes; refresh tokens after 30 days, rotated on use."),
    ]),
    ("frontend build", [
        ("user", "the frontend build runs out of memory"),
        ("tool", "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\nnpm ERR! code ELIFECYCLE"),
        ("assistant", "Set NODE_OPTIONS=--max-old-space-size=4096 in the build script; vite's sourcemaps for the admin bundle need more than 2 GB."),
    ]),
    ("migrations", [
        ("user", "We decided: migrations must be backwards compatible for one release, so add columns as nullable first and backfill in a separate migration."),
        ("assistant", "Noted; I'll split schema changes into an additive migration and a later backfill."),
    ]),
    ("cache", [
        ("user", "what's the redis eviction policy on the cache cluster?"),
        ("tool", "infra/redis.conf (lines 20-23)\nmaxmemory 6gb\nmaxmemory-policy allkeys-lfu\nlazyfree-lazy-eviction yes"),
        ("assistant", "The cache cluster evicts with allkeys-lfu at 6 GB."),
    ]),
    ("payments", [
        ("user", "the webhook from the payment provider is rejected"),
        ("tool", "WARNING webhook signature mismatch: expected header Stripe-Signature, got none (proxy strips it)"),
        ("assistant", "nginx drops the Stripe-Signature header; I added it to proxy_pass_request_headers in deploy/nginx/site.conf."),
    ]),
    ("python version", [
        ("user", "Let's standardise on Python 3.11 everywhere, including the Docker base image."),
        ("assistant", "Updated the Dockerfile to python:3.11-slim and requires-python to >=3.11."),
    ]),
    ("search index", [
        ("user", "search results are stale after an edit"),
        ("tool", "src/search/indexer.py (lines 40-44)\n# reindex runs from cron every 6 hours\nREINDEX_CRON = '0 */6 * * *'"),
        ("assistant", "The search index is rebuilt by cron every six hours, so edits show up late; a signal-based update on save would fix it."),
    ]),
    ("feature flags", [
        ("user", "where do feature flags come from?"),
        ("tool", "src/flags/provider.py (lines 1-5)\n# flags are read from LaunchDarkly, cached for 60 s, defaults in flags/defaults.json"),
        ("assistant", "Flags come from LaunchDarkly with a 60-second cache; defaults live in flags/defaults.json."),
    ]),
    ("timezones", [
        ("user", "All timestamps in the database are stored in UTC and converted only in the templates."),
        ("assistant", "OK, UTC in storage, local time only at render."),
    ]),
    ("email", [
        ("user", "transactional emails are going to spam"),
        ("tool", "dig TXT mail.example.com\n\"v=spf1 include:_spf.google.com ~all\"\n(no DKIM record found for selector s1)"),
        ("assistant", "There is no DKIM record for selector s1; the SPF record lacks the mail provider too. Add both in DNS."),
    ]),
]

# (message, labelled answer as (session index, message index) or None)
QUERIES: list[tuple[str, tuple[int, int] | None]] = [
    ("which port does the staging database listen on?", (0, 1)),
    ("how do I connect to the pre-production postgres?", (0, 1)),
    ("test_upload timed out again on the CI runner", (1, 2)),
    ("the moto S3 mock is slow to come up, what did we do last time?", (1, 2)),
    ("can I push the release tag from my machine?", (2, 0)),
    ("what's our naming scheme for release tags?", (2, 0)),
    ("set the production log level properly", (3, 2)),
    ("why is there so much debug output in prod logs?", (3, 1)),
    ("how long before an access token expires?", (4, 1)),
    ("do refresh tokens rotate?", (4, 1)),
    ("javascript heap out of memory during npm run build", (5, 2)),
    ("the admin bundle build crashes for lack of memory", (5, 2)),
    ("add a non-null column to the orders table", (6, 0)),
    ("what is our rule for backwards compatible migrations?", (6, 0)),
    ("which eviction policy does redis use for the cache?", (7, 1)),
    ("what happens when the cache cluster is full?", (7, 2)),
    ("stripe webhooks fail signature verification", (8, 2)),
    ("payment provider callbacks are rejected with a signature error", (8, 1)),
    ("which python version should the Dockerfile use?", (9, 0)),
    ("bump the base image to a newer python", (9, 0)),
    ("why do search results lag behind edits?", (10, 2)),
    ("how often is the search index rebuilt?", (10, 1)),
    ("where are feature flag defaults defined?", (11, 1)),
    ("our emails land in spam folders", (13, 2)),
    # unrelated to anything archived (some share words with it)
    ("rename the css class of the hamburger icon", None),
    ("write a unit test for the slugify helper", None),
    ("add type hints to utils/dates.py", None),
    ("explain what a python decorator is", None),
    ("the navbar overlaps the page title on mobile", None),
    ("create a makefile target for linting", None),
    ("what does this regex do: ^\\d{3}-\\d{4}$", None),
    ("translate the README into French", None),
    ("refactor the invoice pdf generator into smaller functions", None),
    ("add a dark mode toggle to the settings page", None),
    ("list the open todo comments in src/", None),
    ("the build is green, thanks", None),
    ("ok, continue", None),
    ("yes", None),
    ("add a docker healthcheck for the api container", None),
    ("upgrade the test dependencies", None),
]
FILLER_TOPICS = [
    "navbar spacing", "button colours", "form validation", "pdf invoice layout", "csv export",
    "pagination", "image thumbnails", "password reset page", "date picker", "tooltip text",
]


def filler_session(rng: random.Random, i: int) -> list[tuple[str, str]]:
    topic = FILLER_TOPICS[i % len(FILLER_TOPICS)]
    out = []
    for j in range(rng.randint(4, 9)):
        out.append(("user", f"{topic}: item {j}, adjust the {rng.choice(['margin', 'width', 'label', 'order', 'icon'])} of part {rng.randint(1, 40)}"))
        out.append(("assistant", f"Changed the {topic} part {j}; the {rng.choice(['layout', 'style', 'copy'])} now matches the mockup."))
    return out


def build(root: Path, fillers: int) -> tuple[SessionStore, list[str]]:
    rng = random.Random(5)
    ids: list[str] = [""] * len(SESSIONS)
    sessions = [(name, msgs) for name, msgs in SESSIONS]
    sessions += [(f"frontend {i}", filler_session(rng, i)) for i in range(fillers)]
    order = list(range(len(sessions)))
    rng.shuffle(order)
    for k in order:
        name, msgs = sessions[k]
        sid = f"2025{k:04d}-000000-{k:04x}"
        ts = T0 + k * 3600
        archived = [{"role": r, "content": t, "meta": {"seq": n, "ts": ts + n}} for n, (r, t) in enumerate(msgs)]
        write_archive(root, sid, archived, ts, name)
        if k < len(SESSIONS):
            ids[k] = sid
    return SessionStore(root), ids


def evaluate(
    index: RecallIndex, ids: list[str], min_cosine: float, min_coverage: float, part: int | None
) -> dict[str, Any]:
    """``part``: 0 the dev half of the messages (tuned on), 1 the held-out half, None both."""
    auto.MIN_COSINE, auto.MIN_COVERAGE = min_cosine, min_coverage
    related = hits_ok = blocks = blocks_ok = blocks_session = false_blocks = passages = passages_ok = 0
    times: list[float] = []
    for n, (text, label) in enumerate(QUERIES):
        if part is not None and n % 2 != part:
            continue
        started = time.perf_counter()
        results = index.search(text, max_sessions=SEARCH_SESSIONS, max_results=SEARCH_RESULTS, with_text=True)
        chosen = auto.choose(auto.score_hits(text, results, None, similarity)) if results else []
        block = auto.render(chosen, text, 2100)
        times.append((time.perf_counter() - started) * 1000)
        quoted = chosen[: block.count("\n[") ] if block else []
        if label is not None:
            related += 1
        if not block:
            continue
        blocks += 1
        if label is None:
            false_blocks += 1
            passages += len(quoted)
            continue
        sid = ids[label[0]]
        answer = any(h.session_id == sid and h.seq == label[1] for h in quoted)
        hits_ok += answer
        blocks_ok += answer
        blocks_session += any(h.session_id == sid for h in quoted)
        passages += len(quoted)
        passages_ok += sum(h.session_id == sid for h in quoted)
    times.sort()
    return {
        "min_cosine": min_cosine,
        "related": related,
        "recall": hits_ok / related,
        "blocks": blocks,
        "block_precision": blocks_session / max(1, blocks),  # the block bears on the message
        "exact_precision": blocks_ok / max(1, blocks),  # it quotes the labelled answer itself
        "passage_precision": passages_ok / max(1, passages),
        "false_blocks": false_blocks,
        "unrelated": sum(1 for n, (_, lab) in enumerate(QUERIES) if lab is None and (part is None or n % 2 == part)),
        "p50_ms": statistics.median(times),
        "p95_ms": times[int(0.95 * (len(times) - 1))],
    }


def scale(workdir: Path, repeat: int) -> None:
    store = SessionStore(workdir / "sessions")
    index = RecallIndex(workdir / "recall.sqlite", store)
    started = time.perf_counter()
    count = index.counts()["messages"]
    index.search("warm up the index and the table")
    print(f"scale: {count:,} messages; first search (freshness check, loads) {time.perf_counter() - started:.1f} s")
    rng = random.Random(3)
    bodies = [r[0] for r in index._conn.execute("SELECT body FROM msgs WHERE rowid % 997 = 0 LIMIT 400")]
    times = []
    for _ in range(repeat):
        for body in rng.sample(bodies, min(len(bodies), 100)):
            words = body.split()
            query = " ".join(rng.sample(words, min(len(words), 8)))
            t = time.perf_counter()
            results = index.search(query, max_sessions=SEARCH_SESSIONS, max_results=SEARCH_RESULTS, with_text=True)
            auto.render(auto.choose(auto.score_hits(query, results, None, similarity)), query, 2100)
            times.append((time.perf_counter() - t) * 1000)
    times.sort()
    print(
        f"scale: per-message automatic recall p50 {statistics.median(times):.1f} ms, p95 {times[int(0.95 * (len(times) - 1))]:.1f} ms "
        f"({len(times)} messages; load {os.getloadavg()[0]:.2f})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--min-cosine", type=float, nargs="*", default=[auto.MIN_COSINE])
    ap.add_argument("--min-coverage", type=float, nargs="*", default=[auto.MIN_COVERAGE])
    ap.add_argument("--fillers", type=int, default=110)
    ap.add_argument("--scale", type=Path, help="a recall_scale.py --workdir folder")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store, ids = build(Path(tmp) / "sessions", args.fillers)
        index = RecallIndex(Path(tmp) / "recall.sqlite", store)
        index.search("warm up")  # index and vectors built, table loaded: the steady state
        print(f"archive: {index.counts()['messages']:,} messages in {index.counts()['sessions']} sessions; "
              f"{len(QUERIES)} messages, load {os.getloadavg()[0]:.2f}")
        for mc, cov, (part, label) in (
            (mc, cov, part)
            for mc in args.min_cosine
            for cov in args.min_coverage
            for part in ((0, "dev"), (1, "held-out"), (None, "all"))
        ):
            for _ in range(max(1, args.repeat - 1)):
                evaluate(index, ids, mc, cov, part)  # warm
            r = evaluate(index, ids, mc, cov, part)
            print(
                f"{label:8} min_cosine {mc:.2f} min_coverage {cov:.2f}: recall {r['recall']:.2f} ({r['related']} related), "
                f"blocks {r['blocks']}, block precision {r['block_precision']:.2f} (exact {r['exact_precision']:.2f}), "
                f"passage precision {r['passage_precision']:.2f}, false blocks {r['false_blocks']}/{r['unrelated']}; "
                f"p50 {r['p50_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms"
            )
    if args.scale:
        scale(args.scale, args.repeat)


if __name__ == "__main__":
    sys.exit(main())
