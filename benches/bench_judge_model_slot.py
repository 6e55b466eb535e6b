"""Whether a judge model's request (``recall_judge_model``) costs the turn its prompt cache on a
local server with one slot: llama.cpp's llama-server (the realmodel tests' build and Qwen2.5-Coder
0.5B, ``scripts/real-model.sh``) run with ``-np 1``, with its host-memory prompt cache as it comes
(``--cache-ram``, 8 GiB by default in current builds) and with it off (``--cache-ram 0``, as older
builds behave), and the same server without a judge model named.

Each arm: a project with set A's history (benches/recall_dev), two one-shot runs of the installed
clio in turn, each a related question the judge model is asked about, with no tools offered (one
request a turn; ``--tools``: all but the shell, as a user's turn carries them). Every request goes through
the recording proxy (testkit/realmodel_harness.py), so each one's prompt tokens, the tokens the
server found cached and its time are read from the server's own answer. What is printed for the
second run's turn request is the point: its prompt begins as the first run's did (the system
prompt, memory, tools are byte-stable), so it is found cached unless something came between and
evicted it.

    python benches/bench_judge_model_slot.py [--tools]
    python benches/bench_judge_model_slot.py --api    # the REPL's order at the server's API alone
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clio.agent.side import UPKEEP_SYSTEM  # noqa: E402
from clio.recall.cpu_kind import describe, this_cpu  # noqa: E402
from clio.recall.model_judge import INSTRUCTIONS  # noqa: E402
from testkit.clio_run import run_clio  # noqa: E402
from testkit.encoder_helper import stop_helper  # noqa: E402
from testkit.realmodel_harness import Exchange, RecordingProxy  # noqa: E402
from testkit.realmodel_server import MODEL_ALIAS, start_llama_server  # noqa: E402
from testkit.recall_sets import build, load_set  # noqa: E402

ARMS = (
    ("one slot, a judge model", ("-np", "1"), True),
    ("one slot, a judge model, --cache-ram 0", ("-np", "1", "--cache-ram", "0"), True),
    ("one slot, no judge model", ("-np", "1"), False),
    ("one slot, no judge model, --cache-ram 0", ("-np", "1", "--cache-ram", "0"), False),
)
SUFFIX = " Answer in one short sentence."


def kind(body: dict[str, Any]) -> str:
    """The judge model's request, the turn's, or the session's read-back into memory once a run
    ends (clio.app.background), which is a request of clio's own as well."""
    messages = body.get("messages") or [{}]
    first = str(messages[0].get("content") or "")
    if first.startswith(INSTRUCTIONS[:60]):
        return "judge"
    return "read-back" if first.startswith(UPKEEP_SYSTEM) else "turn"


def described(ex: Exchange) -> str:
    """A request as the server told it: its prompt tokens, those found cached, the prompt's time."""
    ms = (ex.timings or {}).get("prompt_ms")
    took = f"{ms / 1000:.1f} s" if isinstance(ms, (int, float)) else "?"
    return f"{(ex.usage or {}).get('prompt_tokens')} prompt tokens, {ex.cached_tokens} cached; prompt read in {took}"


def ask(proxy: RecordingProxy, messages: list[dict[str, str]]) -> str:
    """One request at the server's API, through the recording proxy, as it told it."""
    body = json.dumps({"model": MODEL_ALIAS, "messages": messages, "max_tokens": 8, "temperature": 0}).encode()
    req = urllib.request.Request(proxy.base_url + "/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as got:  # loopback only: the proxy and server started here
        got.read()
    return described(proxy.chat()[-1])


def repl_order(ctx: int) -> None:
    """The REPL's order at the server's API, without clio: a conversation's turn, its next turn,
    another prompt (a judge's request), then the conversation's third turn."""
    rules = " ".join(f"Rule {i}: keep function {i} small and tested." for i in range(120))
    conv = [{"role": "system", "content": "You are a coding agent. " + rules}, {"role": "user", "content": "What does rule 7 say?"}]
    other = [
        {"role": "system", "content": "Judge which passages answer. " + " ".join(f"Passage {i}: the staging port is {6000 + i}." for i in range(60))},
        {"role": "user", "content": "which port?"},
    ]
    for extra in (("-np", "1"), ("-np", "1", "--cache-ram", "0")):
        base, stop = start_llama_server(ctx_size=ctx, extra_args=extra)
        proxy = RecordingProxy(base).start()
        try:
            print(f"at the API (llama-server {' '.join(extra)}):", flush=True)
            print(f"  turn 1: {ask(proxy, conv)}", flush=True)
            conv2 = [*conv, {"role": "assistant", "content": "Keep function 7 small."}, {"role": "user", "content": "And rule 8?"}]
            print(f"  turn 2: {ask(proxy, conv2)}", flush=True)
            print(f"  another prompt: {ask(proxy, other)}", flush=True)
            conv3 = [*conv2, {"role": "assistant", "content": "Keep function 8 small."}, {"role": "user", "content": "And rule 9?"}]
            print(f"  turn 3: {ask(proxy, conv3)}", flush=True)
        finally:
            proxy.stop()
            stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--api", action="store_true", help="only the REPL's order at the server's API, without clio")
    ap.add_argument("--tools", action="store_true", help="offer clio's tools but the shell (a longer head to cache; a small model may loop on them)")
    args = ap.parse_args()
    print(f"cpu: {describe(this_cpu())}", flush=True)  # a timing from one kind of CPU says little of the other
    if args.api:
        repl_order(args.ctx)
        return
    data = load_set("set_a")
    asked = [p["text"] for p in data["probes"] if p["kind"] == "same"][:2]
    for label, server_args, judged in ARMS:
        base, stop = start_llama_server(ctx_size=args.ctx, extra_args=server_args)
        proxy = RecordingProxy(base).start()
        with tempfile.TemporaryDirectory() as tmp:
            project, home = Path(tmp) / "proj", Path(tmp) / "home"
            (project / ".clio").mkdir(parents=True)
            home.mkdir()
            (project / ".clio" / "config.yaml").write_text(f"model: {MODEL_ALIAS}\ncontext_window: {args.ctx}\n")
            build(data, project / ".clio" / "sessions", 0)
            env = {
                "OPENAI_BASE_URL": proxy.base_url,
                "OPENAI_API_KEY": None,
                "CLIO_RECALL_ENCODER": None,
                "CLIO_RECALL_JUDGE_MODEL": MODEL_ALIAS if judged else None,
            }
            try:
                print(f"{label} (llama-server {' '.join(server_args)}):", flush=True)
                for run, text in enumerate(asked, 1):
                    proxy.clear()
                    # without --tools none is offered: one request a turn, whatever a small model would make of them
                    deny = "shell" if args.tools else "*"
                    r = run_clio(["--deny-tools", deny, "-p", text + SUFFIX], server=None, project=project, home=home, env_extra=env, timeout=900)
                    if r.returncode != 0:
                        print(f"  run {run} exited {r.returncode}: {r.stderr.strip()[-300:]}")
                    for ex in proxy.chat():
                        print(f"  run {run}, {kind(ex.body)} request: {described(ex)}", flush=True)
            finally:
                proxy.stop()
                stop()
                stop_helper(home)
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
