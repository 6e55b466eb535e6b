"""Long-term memory by meaning (issue 14, part 3): injection and dedup candidates, lexical vs hybrid.

Run: .venv/bin/python benches/bench_ltm_semantic.py
Prints the figures; docs/memory.md records them. Uses the shipped embedding table, no disk writes.

1. Injection: 24 older entries on distinct subjects and 24 newer unrelated ones (48 discoveries,
   more than the 15 a prompt carries at most). Each task is worded differently from the entry
   that answers it. For each task, ``ltm_rank.select_for_prompt`` with the default budget and
   caps: is the answering entry injected? Lexical (BM25 + confidence x recency) against hybrid
   (the same with the entries' cosine to the task fused by RRF, ``clio.memory.meaning``).
   The ``dev`` tasks were used to choose ``MIN_SIMILARITY``, ``TOP`` and ``ltm_rank.RRF_K``; the ``held-out`` tasks were
   written before any figure was looked at and never used to tune.
2. Dedup candidates: pairs of same-type entries, reworded duplicates the words miss (word-set
   Jaccard < 0.5) and related but distinct facts. The cosine of each pair, and at each
   threshold the share of duplicates found and of distinct pairs wrongly queued; the dev pairs
   chose ``dedup.SEMANTIC_MIN``, the held-out pairs report it.
3. Cost: loading the table, embedding N entries (the first request of a run), a hybrid
   ``select_for_prompt`` at N entries, the dedup candidate scan at N entries; and the start-up
   check: ``python -X importtime -c "import clio.cli"`` imports neither numpy nor tokenizers.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

from clio.context.tokens import TokenEstimator  # noqa: E402
from clio.memory import dedup, ltm, ltm_rank  # noqa: E402
from clio.memory.ltm import Entry  # noqa: E402
from clio.memory.meaning import MIN_SIMILARITY, TOP, Meaning  # noqa: E402
from clio.memory.similarity import jaccard, word_set  # noqa: E402

T0 = 1_800_000_000.0
BUDGET = 2000  # the default ltm_budget_tokens

# older entries, each answering a task below (index = subject)
OLD = [
    "the database pool times out under load because max_connections is only 20",
    "flaky end-to-end tests come from the shared redis instance not being flushed between runs",
    "the docker image is large because the build stage copies node_modules into the final layer",
    "emails are not delivered locally: the smtp relay only accepts mail from the office network",
    "the memory leak in the worker came from caching every parsed report in a module-level dict",
    "login cookies are rejected on staging because the cookie domain is set to the production host",
    "the nightly backup job fails silently when the disk is more than 90 percent full",
    "timestamps in the api responses are stored in utc and converted in the browser",
    "the search page is slow because the query does a full table scan on the products table",
    "uploads larger than 10 megabytes are cut off by the reverse proxy body size limit",
    "the translation strings live in locales/ and are compiled with make messages",
    "the mobile app crashes on start when the feature flag service is unreachable",
    "prices are rounded twice, once in the cart and once in the invoice, giving off-by-one cents",
    "the ci runner caches pip downloads keyed by the hash of requirements.txt",
    "background jobs are retried with exponential backoff capped at one hour",
    "the admin dashboard charts are drawn with chart.js loaded from a vendored copy",
    "password reset links expire after fifteen minutes",
    "the cpu spikes every hour because the cron job rebuilds the whole sitemap",
    "websocket connections drop after sixty seconds idle because of the load balancer timeout",
    "the pdf export uses weasyprint and needs the pango system library",
    "user avatars are resized to 256 pixels by a celery task after upload",
    "the staging database is refreshed from an anonymised production dump every monday",
    "git hooks run black and isort before each commit via pre-commit",
    "rate limiting counts requests per api key in a sliding window of one minute",
]
# newer entries on other subjects (what a recency-first ranking would inject)
NEW = [
    "the frontend uses tailwind with a custom colour palette in theme.js",
    "release notes are written in docs/changelog.md under an unreleased heading",
    "the team prefers small pull requests reviewed within a day",
    "storybook runs on port 6006 for the component library",
    "the analytics events are sent through segment with a batching size of 20",
    "the onboarding wizard has five steps defined in onboarding/steps.ts",
    "dark mode is toggled by a class on the html element",
    "icons come from the heroicons package, outline style",
    "the marketing site is a separate astro project in site/",
    "typescript strict mode is on for the web package",
    "the design tokens are exported from figma with a script in tools/tokens",
    "the help center articles are fetched from the cms at build time",
    "keyboard shortcuts are registered in one hook, useShortcuts",
    "the date picker component wraps react-day-picker",
    "the landing page hero image is served in avif and webp",
    "eslint runs with the airbnb config minus the import/prefer-default-export rule",
    "the settings page groups options into account, billing and notifications tabs",
    "toast notifications disappear after four seconds",
    "the font is inter, self-hosted from public/fonts",
    "the sidebar collapses below 768 pixels wide",
    "forms are validated with zod schemas shared with the backend",
    "the changelog modal shows the three latest releases",
    "screenshots for the docs are taken with playwright",
    "the pricing table reads its plans from plans.json",
]
# (subject, task): dev tasks chose MIN_SIMILARITY, TOP and RRF_K
DEV_TASKS = [
    (0, "why is the DB connection slow when traffic peaks?"),
    (2, "how can we shrink the container we ship?"),
    (4, "the worker's RAM keeps growing, what's going on?"),
    (6, "why did last night's archive copy not happen?"),
    (8, "finding items on the catalogue screen takes ages"),
    (10, "where do I add a new language for the UI text?"),
    (12, "customers see a one cent difference on their bill"),
    (14, "how often does a failed task get attempted again?"),
    (16, "how long is a forgotten-credentials email valid?"),
    (18, "realtime sockets disconnect after a minute of silence"),
]
# written before any figure was seen; never used to tune
HELD_OUT = [
    (1, "our browser tests fail randomly, sometimes green sometimes red"),
    (3, "I don't get any messages in my inbox when running the app on my laptop"),
    (5, "people can't stay signed in on the preprod site"),
    (7, "what time zone do the endpoints return dates in?"),
    (9, "big file attachments arrive truncated"),
    (11, "the phone application dies at launch when toggles can't be fetched"),
    (13, "how does the build pipeline avoid redownloading python packages?"),
    (15, "which library draws the graphs in the back office?"),
    (17, "processor usage jumps at the top of every hour"),
    (19, "generating a document for printing fails on a fresh machine"),
    (20, "where are profile pictures scaled down?"),
    (21, "how fresh is the data in the pre-release environment?"),
    (22, "what formats the code when I commit?"),
    (23, "how is throttling of clients implemented?"),
]

# (older, newer) reworded duplicates the words miss (Jaccard < 0.5), then related distinct facts
DUP_DEV = [
    ("the api rate limit is enforced by nginx", "nginx is what enforces the rate limiting of the api"),
    ("tests must run with pytest -x from the repo root", "run the test suite with pytest -x at the root of the repository"),
    ("deploys go through the staging cluster first", "we always ship to staging before production"),
    ("the frontend build output goes to static/dist", "built frontend assets end up in static/dist"),
    ("migrations are generated with alembic autogenerate", "use alembic's autogenerate to create the migrations"),
    ("the cache is invalidated when a product is saved", "saving a product clears its cached entry"),
    ("logs are shipped to loki by promtail", "promtail forwards our log lines into loki"),
    ("secrets are read from vault at startup", "at boot the service fetches its secrets from vault"),
]  # fmt: skip
DISTINCT_DEV = [
    ("the api rate limit is enforced by nginx", "nginx serves the static files of the api docs"),
    ("tests must run with pytest -x from the repo root", "the test fixtures live in tests/conftest.py"),
    ("deploys go through the staging cluster first", "the staging cluster has two nodes"),
    ("the frontend build output goes to static/dist", "the frontend uses tailwind for styling"),
    ("migrations are generated with alembic autogenerate", "migrations are applied on deploy by the entrypoint script"),
    ("the cache is invalidated when a product is saved", "the cache lives in redis with a one hour ttl"),
    ("logs are shipped to loki by promtail", "grafana dashboards read metrics from prometheus"),
    ("secrets are read from vault at startup", "the service reads its config from environment variables"),
]  # fmt: skip
DUP_HELD = [
    ("the worker queue is backed by rabbitmq", "rabbitmq is the broker behind our job queue"),
    ("coverage must stay above 80 percent in ci", "ci fails when test coverage drops under 80 percent"),
    ("the docs site is built with mkdocs", "we generate the documentation website using mkdocs"),
    ("feature flags are stored in launchdarkly", "launchdarkly holds our feature toggles"),
    ("images are served from a cdn in front of s3", "a cdn sits before the s3 bucket that serves pictures"),
    ("the python version is pinned in .python-version", ".python-version is where the interpreter version is fixed"),
]  # fmt: skip
DISTINCT_HELD = [
    ("the worker queue is backed by rabbitmq", "the worker processes run under supervisord"),
    ("coverage must stay above 80 percent in ci", "ci runs the linters before the tests"),
    ("the docs site is built with mkdocs", "the docs site is deployed to github pages"),
    ("feature flags are stored in launchdarkly", "feature branches are deleted after merge"),
    ("images are served from a cdn in front of s3", "database backups are copied to s3 nightly"),
    ("the python version is pinned in .python-version", "node is pinned in .nvmrc"),
]  # fmt: skip


def entries() -> list[Entry]:
    out: list[Entry] = []
    for i, fact in enumerate(OLD):
        out.append(ltm.make_entry("discovery", {"fact": fact}, now=T0 + i))
    for i, fact in enumerate(NEW):
        out.append(ltm.make_entry("discovery", {"fact": fact}, now=T0 + 40 * 86400 + i))
    return out


def injected(es: list[Entry], task: str, meaning: Meaning | None, est: TokenEstimator) -> list[str]:
    sem = meaning.similarities(es, task) if meaning is not None else None
    now = T0 + 45 * 86400
    return [e.id for e in ltm_rank.select_for_prompt(es, task, [], now, BUDGET, est.count_text, semantic=sem)]


def rank_of(es: list[Entry], task: str, idx: int, sem: dict[str, float] | None) -> int:
    return [e.id for _, e in ltm_rank.rank(es, task, T0 + 45 * 86400, sem)].index(es[idx].id) + 1


def dev_sweep(meaning: Meaning) -> None:
    """How MIN_SIMILARITY, TOP and RRF_K were chosen: on the dev tasks only."""
    import clio.memory.meaning as am

    es, est = entries(), TokenEstimator("gpt-4o")
    kept = am.MIN_SIMILARITY, am.TOP, ltm_rank.RRF_K
    print("   dev sweep (answering entries injected / median rank of the answering entry):")
    for floor, top, k in [
        (0.0, 100, 60), (0.3, 100, 60), (0.35, 100, 60), (0.5, 100, 60),
        (0.3, 100, 5), (0.3, 100, 10), (0.3, 100, 30), (0.3, 3, 10), (0.3, 8, 10), (0.3, 15, 10),
    ]:  # fmt: skip
        am.MIN_SIMILARITY, am.TOP, ltm_rank.RRF_K = floor, top, k
        hits = sum(es[s].id in injected(es, t, meaning, est) for s, t in DEV_TASKS)
        med = statistics.median(rank_of(es, t, s, meaning.similarities(es, t)) for s, t in DEV_TASKS)
        chosen = " <- chosen" if (floor, top, k) == kept else ""
        print(f"     floor {floor:.2f} top {top:3} k {k:2}: {hits}/{len(DEV_TASKS)}, rank {med}{chosen}")
    am.MIN_SIMILARITY, am.TOP, ltm_rank.RRF_K = kept


def injection(meaning: Meaning) -> None:
    es, est = entries(), TokenEstimator("gpt-4o")
    print("1. injection: the answering entry in the prompt (48 discoveries, 15 injected at most)")
    for name, tasks in (("dev", DEV_TASKS), ("held-out", HELD_OUT)):
        lex = sum(es[s].id in injected(es, t, None, est) for s, t in tasks)
        hyb = sum(es[s].id in injected(es, t, meaning, est) for s, t in tasks)
        rl = statistics.median(rank_of(es, t, s, None) for s, t in tasks)
        rh = statistics.median(rank_of(es, t, s, meaning.similarities(es, t)) for s, t in tasks)
        print(f"   {name:8} {len(tasks)} tasks: injected lexical {lex}/{len(tasks)}, hybrid {hyb}/{len(tasks)}; "
              f"median rank of the answer lexical {rl}, hybrid {rh}")  # fmt: skip
    shared = [s for s, t in DEV_TASKS + HELD_OUT if jaccard(word_set(OLD[s]), word_set(t)) > 0]
    print(f"   tasks sharing a word with their entry: {len(shared)}/{len(DEV_TASKS) + len(HELD_OUT)}")
    right = pair_cosines(meaning, [(es[i].full_text(), t) for i, t in DEV_TASKS + HELD_OUT])
    print(f"   cosine task-answer: median {statistics.median(right):.2f}, min {min(right):.2f}; "
          f"floor MIN_SIMILARITY={MIN_SIMILARITY}, TOP={TOP}, RRF_K={ltm_rank.RRF_K}")  # fmt: skip


def pair_cosines(meaning: Meaning, pairs: list[tuple[str, str]]) -> list[float]:
    emb = meaning.embedder()
    assert emb is not None
    return [float(emb.embed([a])[0] @ emb.embed([b])[0]) for a, b in pairs]


def dedup_figures(meaning: Meaning) -> None:
    print("2. dedup candidates by meaning (pairs the words miss)")
    for name, dup, dis in (("dev", DUP_DEV, DISTINCT_DEV), ("held-out", DUP_HELD, DISTINCT_HELD)):
        jac = max(jaccard(word_set(a), word_set(b)) for a, b in dup)
        cd, cx = pair_cosines(meaning, dup), pair_cosines(meaning, dis)
        print(f"   {name}: duplicates (max Jaccard {jac:.2f}) cosine {min(cd):.2f}..{max(cd):.2f}, "
              f"distinct {min(cx):.2f}..{max(cx):.2f}")  # fmt: skip
        for th in (0.6, 0.65, 0.7, 0.75, 0.8, 0.9):
            mark = " <- SEMANTIC_MIN" if abs(th - dedup.SEMANTIC_MIN) < 1e-9 else ""
            print(f"     cosine >= {th:.2f}: duplicates queued {sum(c >= th for c in cd)}/{len(cd)}, "
                  f"distinct queued {sum(c >= th for c in cx)}/{len(cx)}{mark}")  # fmt: skip
    store = entries()  # 48 distinct facts: every pair queued is a false alarm
    emb = meaning.embedder()
    assert emb is not None
    m = emb.embed([e.text() for e in store])
    allc = [float(m[i] @ m[k]) for i in range(len(store)) for k in range(i + 1, len(store))]
    print(f"   the 48 distinct injection entries ({len(allc)} pairs): "
          + ", ".join(f">= {th:.2f}: {sum(c >= th for c in allc)}" for th in (0.6, 0.65, 0.7, 0.75, 0.8)))  # fmt: skip
    # through the real path: the candidates, then the pure filter (anchors, word duplicates)
    es: list[Entry] = []
    for k, (a, b) in enumerate(DUP_HELD + DISTINCT_HELD):
        es.append(ltm.make_entry("discovery", {"fact": a}, now=T0 + 2 * k))
        es.append(ltm.make_entry("discovery", {"fact": b}, now=T0 + 2 * k + 1))
    pairs = dedup.ambiguous_pairs(es, meaning.dedup_candidates(es))
    dups = {frozenset((es[2 * k].id, es[2 * k + 1].id)) for k in range(len(DUP_HELD))}
    right = sum(frozenset((a, b)) in dups for a, b, _ in pairs)
    print(f"   held-out through ambiguous_pairs: {len(pairs)} pair(s) queued for the model, "
          f"{right} of them the {len(dups)} duplicates; merged without the model: none")  # fmt: skip


def cost(meaning: Meaning) -> None:
    print("3. cost")
    emb = meaning.embedder()
    assert emb is not None
    from clio.recall.embedder import load_embedder

    t = time.perf_counter()
    load_embedder()
    print(f"   loading the table (with its sha256 checks): {(time.perf_counter() - t) * 1000:.0f} ms")
    est = TokenEstimator("gpt-4o")
    for n in (50, 200, 500):
        es = [ltm.make_entry("discovery", {"fact": f"{OLD[i % 24]} (case {i})"}, now=T0 + i) for i in range(n)]
        fresh = Meaning()
        fresh.arm()
        t = time.perf_counter()
        fresh.similarities(es, "why is the DB connection slow?")
        first = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        sem = fresh.similarities(es, "why is the DB connection slow?")
        again = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        ltm_rank.select_for_prompt(es, "why is the DB connection slow?", [], T0, BUDGET, est.count_text, semantic=sem)
        rank_ms = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        fresh.dedup_candidates(es)
        cand = (time.perf_counter() - t) * 1000
        print(f"   {n} entries: embed+cosine first {first:.0f} ms, cached {again:.1f} ms; "
              f"select_for_prompt {rank_ms:.0f} ms; dedup candidates {cand:.0f} ms")  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import clio.cli"], capture_output=True, text=True, check=True
    ).stderr
    heavy = [m for m in ("numpy", "tokenizers", "clio.recall.embedder") if f" {m}\n" in out or f" {m} " in out]
    print(f"   import clio.cli loads: {', '.join(heavy) or 'none of numpy, tokenizers, clio.recall.embedder'}")


def main() -> None:
    meaning = Meaning()
    meaning.arm()
    injection(meaning)
    dev_sweep(meaning)
    dedup_figures(meaning)
    cost(meaning)


if __name__ == "__main__":
    main()
