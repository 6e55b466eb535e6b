"""Consolidation against a real model: the share of stated decisions a finished session yields.

Run: .venv/bin/python benches/bench_consolidation.py [--ctx 8192] [--threads 2] [--runs 1]
Needs scripts/real-model.sh to have run (llama-server + Qwen2.5-Coder-0.5B-Instruct Q4_K_M).

A scripted session set: 10 sessions, each with 2 decisions the user states in passing among
exchanges that decide nothing (reads, questions, a failing test). Each session is read back by
clio's own consolidation (``clio.app.consolidate.Consolidator``: the gate, the transcript, the
prompt in clio/prompts/consolidate.md, the strict reply parser, the LTM store with dedup and
redaction); only the model is real, asked the way ``Orchestrator.ask`` asks (the upkeep system
message, no tools). A decision counts as recovered when one stored entry carries all its key
terms; printed for all entries, for the rules stored from the user's own words
(``consolidate.established``, no model) and for the model's entries alone. Also printed: entries per session, entries that carry no decision's key term (noise),
replies that were not usable JSON, and the request's wall time. Figures go to docs/memory.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

from clio.agent.side import UPKEEP_SYSTEM  # noqa: E402
from clio.app.consolidate import Consolidator  # noqa: E402
from clio.memory import consolidate as cons  # noqa: E402
from clio.memory import ltm  # noqa: E402
from clio.memory.ltm_store import LtmStore  # noqa: E402
from clio.messages import make  # noqa: E402
from clio.safety.redact import Redactor  # noqa: E402
from clio.store.sessions import SessionStore  # noqa: E402
from testkit.realmodel_server import MODEL_ALIAS, SKIP_REASON, llama_paths, start_llama_server  # noqa: E402

# (the user's sentence, the key terms a stored entry must carry to count as recovering it)
DECISIONS: list[tuple[str, tuple[str, ...]]] = [
    ("We will use pgbouncer in transaction mode for the billing database.", ("pgbouncer", "transaction")),
    ("Let's keep every public endpoint under the /v2 prefix.", ("/v2",)),
    ("From now on we format Python with ruff format instead of black.", ("ruff",)),
    ("We decided to store uploads in the S3 bucket acme-uploads-prod.", ("acme-uploads-prod",)),
    ("Always run alembic upgrade head before the integration tests.", ("alembic",)),
    ("We'll log in JSON lines with structlog.", ("structlog",)),
    ("The payment webhook retries at most 5 times, decided.", ("webhook", "5")),
    ("We will require Python 3.12 as the minimum version.", ("3.12",)),
    ("Let's name every feature flag with the ff_ prefix.", ("ff_",)),
    ("Never change the legacy/ folder; it is frozen until the migration ends.", ("legacy",)),
    ("We settled on Redis 7 for the job queue.", ("redis",)),
    ("Use pytest-xdist with -n 4 in CI from now on.", ("xdist",)),
    ("We'll deploy with Helm chart version 2.4.1.", ("helm", "2.4.1")),
    ("Decision: dates in the API are ISO 8601 in UTC.", ("8601",)),
    ("Let's go with Argon2id for password hashing.", ("argon2",)),
    ("We agreed that the cache TTL is 300 seconds.", ("ttl", "300")),
    ("We will vendor the protobuf files under proto/vendor.", ("proto/vendor",)),
    ("Keep the CLI flags backwards compatible; never rename one.", ("flag",)),
    ("Let's use Decimal, not float, for money amounts.", ("decimal",)),
    ("We'll pin numpy below 2.0 until the C extension is rebuilt.", ("numpy", "2.0")),
]
FILLER: list[tuple[str, str]] = [
    ("Read src/app.py and tell me what main does.", "main parses the arguments and starts the HTTP server."),
    (
        "Why does test_login fail?",
        "It expects a 302 but the view now returns 303; the assertion is outdated.",
    ),
    ("What does utils.slugify return for an empty string?", "An empty string; it never raises."),
    (
        "Show me where the config is loaded.",
        "config/loader.py, load_settings(), reads settings.toml then the env.",
    ),
    ("How many migrations are there?", "Fourteen, the last one adds the invoices.status column."),
]


def session_set() -> list[list[tuple[str, str]]]:
    """10 sessions: filler, decision, filler, decision, filler (the assistant's replies scripted)."""
    out = []
    for i in range(len(DECISIONS) // 2):
        d1, d2 = DECISIONS[2 * i][0], DECISIONS[2 * i + 1][0]
        f = [FILLER[(i + k) % len(FILLER)] for k in range(3)]
        out.append([f[0], (d1, "Noted."), f[1], (d2, "Understood, I'll follow that."), f[2]])
    return out


def recovered(entries: list[ltm.Entry], keys: tuple[str, ...]) -> bool:
    return any(all(k.lower() in ltm.render_entry(e).lower() for k in keys) for e in entries)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=1, help="passes over the session set")
    ap.add_argument("--show", action="store_true", help="print each raw reply")
    args = ap.parse_args()
    if llama_paths() is None:
        print(SKIP_REASON)
        return 0
    import openai

    base_url, stop = start_llama_server(ctx_size=args.ctx, threads=args.threads)
    client = openai.OpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=600)
    times: list[float] = []
    bad_json = 0

    def ask(prompt: str, max_tokens: int) -> str:
        nonlocal bad_json
        t0 = time.perf_counter()
        r = client.chat.completions.create(
            model=MODEL_ALIAS,
            messages=[{"role": "system", "content": UPKEEP_SYSTEM}, {"role": "user", "content": prompt}],
            max_tokens=max_tokens,
            temperature=0.2,
        )
        times.append(time.perf_counter() - t0)
        text = r.choices[0].message.content or ""
        if cons.first_json_object(text) is None:
            bad_json += 1
        if args.show:
            print(f"--- reply ({times[-1]:.1f} s):\n{text}\n---")
        return text

    found = total = entries_n = noise = by_said = by_model = 0
    try:
        for run in range(args.runs):
            for n, script in enumerate(session_set()):
                with tempfile.TemporaryDirectory() as tmp:
                    store = LtmStore(Path(tmp) / "ltm.json")
                    sessions = SessionStore(Path(tmp) / "sessions")
                    session = sessions.create("qwen")
                    for user, answer in script:
                        session.append(make("user", user))
                        session.append(make("assistant", answer))
                    consolidator = Consolidator(store, sessions, Redactor(), max_chars=lambda: 12_000)
                    outcome = consolidator.run(session, ask)
                    got = store.all()
                    users = {u for u, _ in script}
                    said = [
                        e
                        for e in got
                        if e.type == "rule" and any(str(e.fields.get("rule")) in u for u in users)
                    ]
                    model_made = [e for e in got if e not in said]
                    keys = [k for u, _ in script for d, k in DECISIONS if d == u]
                    hit = sum(recovered(got, k) for k in keys)
                    by_said += sum(recovered(said, k) for k in keys)
                    by_model += sum(recovered(model_made, k) for k in keys)
                    found, total, entries_n = found + hit, total + len(keys), entries_n + len(got)
                    all_keys = [k.lower() for _, ks in DECISIONS for k in ks]
                    noise += sum(
                        1 for e in got if not any(k in ltm.render_entry(e).lower() for k in all_keys)
                    )
                    print(
                        f"run {run} session {n}: {hit}/{len(keys)} decisions, {len(got)} entries; {outcome.describe()}"
                    )
                    session.close()
    finally:
        stop()
    sessions_n = args.runs * len(session_set())
    print()
    print(f"decisions recovered: {found}/{total} = {found / total:.0%}")
    print(f"  from the user's words (decisions.py, no model): {by_said}/{total} = {by_said / total:.0%}")
    print(f"  from the model's entries: {by_model}/{total} = {by_model / total:.0%}")
    print(f"entries per session: {entries_n / sessions_n:.1f}; entries with no decision's key term: {noise}")
    print(f"replies without usable JSON: {bad_json}/{len(times)}")
    if times:
        print(
            f"consolidation request wall time: median {statistics.median(times):.1f} s, max {max(times):.1f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
