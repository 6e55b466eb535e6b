"""How much of each request repeats the previous one's prefix (what a server's prompt cache reuses).

Run: .venv/bin/python benches/bench_prompt_cache.py [--session five|forty] [--real] [--ctx 4096]

Drives the installed ``clio -p`` through one resumed session in a temporary project:

- ``five``: two short turns, then three that each read a ~7 KB file (they force trims in a
  4,096-token window): the session issue 36 measured;
- ``forty``: 40 turns, every fourth one reading a ~3 KB file, the rest short questions.

Against the test server (default; it counts 4 characters a token and rejects a request over the
window as llama-server does) or, with ``--real``, against llama-server with the real 0.5B model
(scripts/real-model.sh; the figures the issue asks for). Prints per request the share of its
serialized text (system message, tool schemas, then the messages, in the order chat templates
render them) that repeats the previous request's, the prompt and cached tokens the server reported,
and at the end the totals, the number of distinct system messages and tool lists, and the wall time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.append(
    str(Path(__file__).resolve().parents[1])
)  # testkit/ (appended: an installed clio comes first)

from testkit.clio_run import run_clio  # noqa: E402
from testkit.fakeserver import FakeServer, Reply  # noqa: E402
from testkit.fakeserver_sse import common_prefix  # noqa: E402
from testkit.realmodel_harness import notes_file  # noqa: E402

SHORT = [
    "Say hello in five words.",
    "Name three colours.",
    "What is seven times six?",
    "Give me one word that rhymes with cat.",
    "Which is larger, 17 or 71?",
    "Name a prime number under ten.",
]


def session(name: str) -> list[tuple[str, str | None, int]]:
    """(message, file to create first, its size) per turn."""
    if name == "five":
        return [(SHORT[0], None, 0), (SHORT[1], None, 0)] + [
            (f"Read notes_{k}.txt with file_operations.", f"notes_{k}.txt", 7000) for k in range(3)
        ]
    turns: list[tuple[str, str | None, int]] = []
    for i in range(40):
        if i % 4 == 2:
            k = i // 4
            turns.append((f"Read notes_{k}.txt with file_operations.", f"notes_{k}.txt", 3000))
        else:
            turns.append((SHORT[i % len(SHORT)], None, 0))
    return turns


def serial(body: dict[str, Any]) -> str:
    """A request as chat templates lay it out: the system message, the tools, the rest."""
    msgs = body.get("messages") or []
    head = msgs[:1] if msgs and msgs[0].get("role") == "system" else []
    parts = [json.dumps(m, ensure_ascii=False) for m in head]
    parts.append(json.dumps(body.get("tools") or [], ensure_ascii=False))
    parts += [json.dumps(m, ensure_ascii=False) for m in msgs[len(head) :]]
    return "\n".join(parts)


def fake_responder(body: dict[str, Any]) -> Reply:
    msgs = body["messages"]
    last = max(i for i, m in enumerate(msgs) if m.get("role") == "user")
    text = str(msgs[last].get("content"))
    rounds = sum(1 for m in msgs[last + 1 :] if m.get("role") == "assistant")
    if "Read notes_" in text and rounds == 0 and body.get("tools"):
        name = text.split("Read ", 1)[1].split(" ", 1)[0]
        return Reply(
            tool_calls=[{"name": "file_operations", "arguments": {"operation": "read_file", "path": name}}]
        )
    if "Read notes_" in text:
        return Reply(text="The file lists numbered lines of words: river, stone, cloud and so on.")
    return Reply(text="Here is a short answer of a few words.")


def report(
    bodies: list[dict[str, Any]],
    usages: list[dict[str, Any] | None],
    wall: float,
    label: str,
    dump: Path | None,
) -> None:
    if dump is not None:
        dump.mkdir(parents=True, exist_ok=True)
        for i, body in enumerate(bodies, 1):
            (dump / f"{i:03d}.json").write_text(json.dumps(body, indent=1, ensure_ascii=False))
    prev = ""
    shares: list[float] = []
    fresh = 0  # characters past the common prefix: what a prefix cache cannot spare the server
    print(f"{'req':>4} {'chars':>7} {'repeats':>8} {'prompt':>7} {'cached':>7}")
    for i, (body, usage) in enumerate(zip(bodies, usages, strict=True), 1):
        s = serial(body)
        common = common_prefix(prev, s) if prev else 0
        share = common / len(s)
        fresh += len(s) - common
        if prev:
            shares.append(share)
        prev = s
        u = usage or {}
        cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens")
        if cached is None and isinstance(u.get("_cache_n"), int):
            cached = u["_cache_n"]
        print(
            f"{i:>4} {len(s):>7} {share:>8.1%} {u.get('prompt_tokens', '-'):>7} {cached if cached is not None else '-':>7}"
        )
    prompt = sum(int((u or {}).get("prompt_tokens") or 0) for u in usages)
    cached_total = sum(
        int(((u or {}).get("prompt_tokens_details") or {}).get("cached_tokens") or 0) for u in usages
    )
    systems = {
        json.dumps(b["messages"][0])
        for b in bodies
        if b.get("messages") and b["messages"][0].get("role") == "system"
    }
    tools = {json.dumps(b.get("tools")) for b in bodies}
    print(
        f"{label}: {len(bodies)} requests; repeats the previous request's prefix: median "
        f"{statistics.median(shares) if shares else 0:.1%}, mean {statistics.fmean(shares) if shares else 0:.1%}, "
        f"min {min(shares) if shares else 0:.1%}; {fresh:,} of {sum(len(serial(b)) for b in bodies):,} characters "
        f"new to the server; prompt tokens {prompt:,}, cached {cached_total:,} "
        f"({cached_total / prompt if prompt else 0:.1%}); {len(systems)} distinct system message(s), "
        f"{len(tools)} distinct tool list(s); wall {wall:.1f} s"
    )


def run_session(
    turns: list[tuple[str, str | None, int]],
    root: Path,
    home: Path,
    env: dict[str, str | None],
    server: FakeServer | None,
) -> float:
    started = time.monotonic()
    for k, (text, file, size) in enumerate(turns):
        if file:
            notes_file(root / file, k, size)
        r = run_clio(
            [*(["--resume"] if k else []), "-p", text],
            server=server,
            project=root,
            home=home,
            env_extra=env,
            timeout=1800,
        )
        if r.returncode != 0:
            print(f"turn {k + 1} exit {r.returncode}: {r.stderr.strip()[-300:]}", file=sys.stderr)
    return time.monotonic() - started


def project(tmp: Path, config: dict[str, Any]) -> tuple[Path, Path]:
    import subprocess

    root, home = tmp / "project", tmp / "home"
    (root / ".clio").mkdir(parents=True)
    home.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".clio" / "config.yaml").write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in config.items()))
    return root, home


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--session", choices=["five", "forty"], default="five")
    ap.add_argument("--real", action="store_true", help="against llama-server and the real model")
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--dump", type=Path, help="write each request's body to DIR/NNN.json")
    args = ap.parse_args()
    turns = session(args.session)
    config = {"context_window": args.ctx, "temperature": 0, "max_output_tokens": 256, "max_iterations": 2}
    with tempfile.TemporaryDirectory(prefix="clio-bench-cache-") as t:
        tmp = Path(t)
        if args.real:
            from testkit.realmodel_harness import real_backend
            from testkit.realmodel_server import SKIP_REASON, llama_paths

            if llama_paths() is None:
                print(f"bench_prompt_cache: {SKIP_REASON}", file=sys.stderr)
                return 2
            with real_backend(args.ctx) as backend:
                root, home = project(tmp, {"model": backend.model, **config})
                env: dict[str, str | None] = {
                    "OPENAI_BASE_URL": backend.proxy.base_url,
                    "OPENAI_API_KEY": None,
                }
                wall = run_session(turns, root, home, env, None)
                chats = [e for e in backend.proxy.chat() if e.status == 200]
                usages: list[dict[str, Any] | None] = []
                for e in chats:
                    u = dict(e.usage or {})
                    timings = e.timings or {}
                    if not (u.get("prompt_tokens_details") or {}).get("cached_tokens") and isinstance(
                        timings.get("cache_n"), int
                    ):
                        u["prompt_tokens_details"] = {"cached_tokens": timings["cache_n"]}
                    usages.append(u)
                print(f"llama-server -c {backend.ctx} -t {backend.threads}, session {args.session}")
                report([e.body for e in chats], usages, wall, f"real model, {args.session}", args.dump)
        else:
            server = FakeServer(
                fake_responder, chars_per_token=3.2, context_limit=args.ctx, context_dialect="llama.cpp"
            ).start()
            try:
                root, home = project(tmp, {"model": "fake-model", **config})
                wall = run_session(turns, root, home, {}, server)
                bodies = [b for b in server.chat_requests]
            finally:
                server.stop()
            report(bodies, [None] * len(bodies), wall, f"test server, {args.session}", args.dump)
    return 0


if __name__ == "__main__":
    sys.exit(main())
