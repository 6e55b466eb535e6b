"""Digests of the ten archives' sessions written by a small local model, for
``bench_auto_recall.py --digests FILE`` (the shape of ``digests.json``: {set letter: {session
name: digest}}). The model is the real-model tests' qwen2.5-coder 0.5B Q4_K_M on llama.cpp's
server (``scripts/real-model.sh`` builds and fetches both into ``~/.cache/clio-realmodel``),
started here on 127.0.0.1.

``--prompt product`` asks what clio asks: the consolidation request (``clio/prompts/consolidate.md``,
built by ``clio.memory.consolidate.build_prompt`` over the session as clio archives it), whose
reply's ``digest`` is read by ``parse_reply``; a session ``worth_it`` rejects gets none, as in clio.
``--prompt digest`` asks for the digest alone (stop 70's first reading: what the digest clause
says, without the rest of the read-back).

    .venv/bin/python benches/recall_dev/small_model_digests.py --prompt product OUT.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from clio.memory import consolidate as cons  # noqa: E402
from clio.prompts import load_prompt  # noqa: E402
from testkit.recall_sets import archived  # noqa: E402

CACHE = Path.home() / ".cache" / "clio-realmodel"
PORT = 18431
MAX_CHARS = 8_000  # the read-back's budget for a small local model's window (35% of ~23k characters)
DIGEST_ONLY = """A coding session in a software project has ended. Write its digest, for a search that will find it later.
First, in one to three sentences, what the session settled: decisions, causes of bugs, fixes, values, names, paths, commands and numbers exactly as they appear. Then one line that starts with "Symptoms / other words:" saying how someone might ask about it later in different words.
At most 70 words. Reply with the digest only.

The session:
{transcript}"""


def digest_only_transcript(msgs: list[dict[str, Any]], limit: int = 6000) -> str:
    lines = []
    for m in msgs:
        role = m.get("role")
        if role == "tool":
            lines.append("tool result: " + str(m.get("content") or "")[:400])
            continue
        if m.get("content"):
            lines.append(f"{role}: {str(m['content'])[:1200]}")
        for c in m.get("tool_calls") or []:
            a = c.get("arguments") or {}
            lines.append(f"{role} called {c.get('name')}: " + " ".join(f"{k}={str(v)[:200]}" for k, v in a.items()))
    return "\n".join(lines)[:limit]


def ask(prompt: str, max_tokens: int) -> str:
    body = json.dumps(
        {"model": "q", "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens, "temperature": 0}
    ).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}/v1/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return str(json.load(r)["choices"][0]["message"]["content"] or "").strip()


def digest_of(messages: list[dict[str, Any]], how: str) -> str:
    if how == "digest":
        return ask(DIGEST_ONLY.format(transcript=digest_only_transcript(messages)), 160)
    part = archived(messages, 0.0)
    if not cons.worth_it(part):
        return ""
    said = cons.established(part)
    prompt = cons.build_prompt(load_prompt("consolidate.md"), part, "", [], MAX_CHARS, said)
    return cons.parse_reply(ask(prompt, cons.REPLY_TOKENS), []).digest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--prompt", choices=("product", "digest"), default="product")
    ap.add_argument("--sets", default="abcdefghij", help="the sets' letters (default: all ten)")
    args = ap.parse_args()
    env = dict(line.split("=", 1) for line in (CACHE / "env").read_text().split())
    server = subprocess.Popen(
        [env["LLAMA_SERVER"], "-m", env["LLAMA_MODEL"], "--host", "127.0.0.1", "--port", str(PORT), "-c", "8192", "-t", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{PORT}/health", timeout=2)
                break
            except OSError:
                time.sleep(1)
        out: dict[str, dict[str, str]] = json.loads(args.out.read_text()) if args.out.exists() else {}
        start = time.time()
        for letter in args.sets:
            data = json.loads((ROOT / "benches" / "recall_dev" / f"set_{letter}.json").read_text())
            got = out.setdefault(letter, {})
            for s in data["sessions"]:
                if s["name"] not in got:
                    got[s["name"]] = digest_of(s["messages"], args.prompt)
                    args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False))
            given = sum(1 for v in got.values() if v)
            print(f"{letter}: {given} of {len(got)} sessions given a digest, {time.time() - start:.0f} s so far", flush=True)
        for letter in out:  # a session given none keeps none (the bench reads only those with one)
            out[letter] = {k: v for k, v in out[letter].items() if v}
        args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False))
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
