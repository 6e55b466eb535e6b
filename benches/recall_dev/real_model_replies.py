"""The real local model as the judge model (stop 90): the requests ``model_judge_reading.py export``
wrote (its ``SYSTEM.txt`` and ``part*.json``), each sent as it is to llama.cpp's server on
127.0.0.1 with the model ``scripts/real-model.sh`` set up (Qwen2.5-Coder-0.5B-Instruct, Q4_K_M),
temperature 0, and its reply written as ``replies*.json`` beside a copy of the key, for
``model_judge_reading.py score`` to read as it reads the stand-ins' (a reply that is no ``QUOTE:``
line keeps the packaged decision, as in the product)::

    python real_model_replies.py EXPORT_DIR OUT_DIR [--limit 45] [--threads 2]

Each request is a few thousand tokens (the memory tool's 20 units): about 10 s a request on this
machine's two cores. Replies already in ``OUT_DIR`` are kept (a run can be resumed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from testkit.realmodel_server import MODEL_ALIAS, llama_paths, start_llama_server  # noqa: E402

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("export", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--limit", type=int, default=0, help="at most this many requests (0: all), in the parts' order")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    if llama_paths() is None:
        raise SystemExit("no real model here: run scripts/real-model.sh first")
    args.out.mkdir(parents=True, exist_ok=True)
    shutil.copy(args.export / "key.json", args.out / "key.json")
    system = (args.export / "SYSTEM.txt").read_text()
    base, stop = start_llama_server(ctx_size=8192, threads=args.threads)
    sent, seconds = 0, []
    try:
        for part in sorted(args.export.glob("part*.json")):
            dest = args.out / part.name.replace("part", "replies")
            got: dict[str, str] = json.loads(dest.read_text()) if dest.exists() else {}
            for item in json.loads(part.read_text()):
                if args.limit and sent >= args.limit:
                    break
                sent += 1
                if item["id"] in got:
                    continue
                body = {
                    "model": MODEL_ALIAS, "temperature": 0, "max_tokens": 64,
                    "messages": [{"role": "system", "content": system}, {"role": "user", "content": item["user"]}],
                }  # fmt: skip
                req = urllib.request.Request(f"{base}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
                started = time.monotonic()
                reply = json.loads(OPENER.open(req, timeout=600).read())
                seconds.append(time.monotonic() - started)
                got[item["id"]] = str(reply["choices"][0]["message"]["content"] or "").strip()
                dest.write_text(json.dumps(got, indent=1))
                print(f"{item['id']}: {seconds[-1]:.1f} s, {reply['usage']['prompt_tokens']} tokens in: {got[item['id']][:60]!r}", flush=True)
    finally:
        stop()
    if seconds:
        seconds.sort()
        print(f"{len(seconds)} requests: p50 {seconds[len(seconds) // 2]:.1f} s, p95 {seconds[int(0.95 * (len(seconds) - 1))]:.1f} s")


if __name__ == "__main__":
    main()
