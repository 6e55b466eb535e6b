"""Shell figures: time to the interactive prompt, one-shot wall time and peak RSS, the fixed part of
every request (system prompt + tool schemas) in characters and tokens, and import time.

Run: /work/venv/bin/python benches/bench_shell.py [--runs 7]

The clio package under test is byte-compiled first (``compileall``), as a regular install is.
Everything runs the installed ``clio`` console script against the fake server (testkit/fakeserver.py)
in a fresh temporary project and $CLIO_HOME per run. Prints markdown tables; no asserts.

Methods:
- time to prompt: pexpect spawn (40x120 pty, TERM=xterm-256color) until the prompt mark is on the
  screen; peak RSS of that REPL at the prompt from /proc/<pid>/status VmHWM.
- one-shot wall time: process start to exit (``clio -p TEXT``); "until 1st request" is the time from
  process start until the fake server received the first chat request.
- peak RSS of a one-shot run: ``os.wait4(pid)`` on the clio process, i.e. the kernel's ru_maxrss of
  exactly that process (not the max over all children as RUSAGE_CHILDREN would give).
- fixed part: the system message and ``tools`` of the first request the server received, tokens by
  the fake server's formula ceil(chars / 4) (each part alone; the whole adds 3 per message + 3), and
  exact tiktoken counts when an encoding can be loaded offline.
- import time: ``python -X importtime``, median over runs of each module's cumulative microseconds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pexpect

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

from testkit.clio_run import CLIO  # noqa: E402
from testkit.fakeserver import FakeServer, Reply  # noqa: E402

PY = sys.executable
TOOL_ITERATIONS = 3
TEXT_ANSWER = "Sure. Here is a short **answer** with a list:\n\n- one\n- two\n"


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def fmt_ms(s: float) -> str:
    return f"{s * 1000:,.0f} ms"


# ---------------------------------------------------------------- the fake model


class Responder:
    """Stateless per request: a tool call until TOOL_ITERATIONS tool results are in, then text.

    Notes the arrival time of every chat request so the first one can be timed.
    """

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            self.arrivals.append(time.monotonic())
        messages = body.get("messages") or []
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        done = sum(1 for m in messages[last_user:] if m.get("role") == "tool")
        wants_tools = "use tools" in str(messages[last_user].get("content"))
        if not wants_tools or done >= TOOL_ITERATIONS:
            return Reply(text=TEXT_ANSWER)
        calls = [
            {"name": "file_operations", "arguments": {"operation": "read_file", "path": "app.py"}},
            {"name": "file_operations", "arguments": {"operation": "grep_search", "pattern": "def "}},
            {"name": "file_operations", "arguments": {"operation": "list_dir", "path": "."}},
        ]
        return Reply(tool_calls=[calls[done % len(calls)]])


def fresh_project(root: Path) -> tuple[Path, Path]:
    proj, home = root / "proj", root / "home"
    proj.mkdir(parents=True)
    home.mkdir()
    (proj / "app.py").write_text(
        "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(40)), encoding="utf-8"
    )
    return proj, home


def precompile() -> None:
    """Byte-compile the clio package under test, as ``pip install`` does for a regular install.

    An editable install writes its .pyc files on first import, unless PYTHONDONTWRITEBYTECODE is
    set (as on the team's machines): then every run would compile clio from source, ~0.3 s that no
    user pays. Reading existing .pyc files is not affected by that variable."""
    code = "import clio, os; print(os.path.dirname(clio.__file__))"
    package = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([PY, "-m", "compileall", "-q", package], check=True, stdout=subprocess.DEVNULL)


def clio_env(server: FakeServer, home: Path, model: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CLIO_"))}
    env.update(
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="test-key",
        CLIO_HOME=str(home),
        CLIO_MODEL=model,
        NO_COLOR="1",
        TERM="xterm-256color",
    )
    return env


def vm_hwm_kb(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    m = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------- (a) time to the prompt

CPR_REQUEST = re.escape("\x1b[6n")


def expect_answering_cpr(child: pexpect.spawn, pattern: str) -> None:
    """Wait for ``pattern``, answering cursor-position requests as a terminal does.

    prompt-toolkit asks for the cursor position when it draws a prompt and, when the prompt is
    accepted, waits up to a second for the answer; a pty nobody answers adds that second to
    every message.
    """
    while child.expect([CPR_REQUEST, pattern]) == 0:
        child.send("\x1b[28;1R")


def time_to_prompt(server: FakeServer, model: str, runs: int) -> dict[str, list[float]]:
    """Start to prompt, then Enter-to-answer for the first and the second message."""
    res: dict[str, list[float]] = {"prompt": [], "rss": [], "first": [], "second": []}
    answer = re.escape(TEXT_ANSWER.split("**")[0].strip())
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="clio-bench-") as tmp:
            proj, home = fresh_project(Path(tmp))
            started = time.monotonic()
            child = pexpect.spawn(
                str(CLIO),
                cwd=str(proj),
                env=clio_env(server, home, model),
                dimensions=(40, 120),
                encoding="utf-8",
                codec_errors="replace",
                timeout=30,
            )
            expect_answering_cpr(child, "›")
            res["prompt"].append(time.monotonic() - started)
            hwm = vm_hwm_kb(child.pid)
            if hwm:
                res["rss"].append(hwm)
            for key in ("first", "second"):
                sent = time.monotonic()
                child.send(f"say hello ({key})\r")
                expect_answering_cpr(child, answer)
                res[key].append(time.monotonic() - sent)
                expect_answering_cpr(child, "›")
            child.sendeof()
            child.expect(pexpect.EOF)
            child.close()
    return res


# ---------------------------------------------------------------- (b) one-shot runs


def one_shot(server: FakeServer, responder: Responder, model: str, text: str, runs: int) -> dict[str, Any]:
    walls: list[float] = []
    firsts: list[float] = []
    rss: list[int] = []
    requests: list[int] = []
    failures = 0
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="clio-bench-") as tmp:
            proj, home = fresh_project(Path(tmp))
            before = len(server.chat_requests)
            with responder.lock:
                responder.arrivals.clear()
            out, err = Path(tmp) / "out.txt", Path(tmp) / "err.txt"
            with out.open("wb") as fo, err.open("wb") as fe:
                started = time.monotonic()
                proc = subprocess.Popen(
                    [str(CLIO), "-p", text],
                    cwd=proj,
                    env=clio_env(server, home, model),
                    stdin=subprocess.DEVNULL,
                    stdout=fo,
                    stderr=fe,
                )
                _, status, usage = os.wait4(proc.pid, 0)
                ended = time.monotonic()
                proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                failures += 1
                print(f"  run failed ({proc.returncode}): {err.read_text()[-300:]}", file=sys.stderr)
                continue
            walls.append(ended - started)
            rss.append(usage.ru_maxrss)  # kB on Linux
            requests.append(len(server.chat_requests) - before)
            with responder.lock:
                if responder.arrivals:
                    firsts.append(responder.arrivals[0] - started)
    return {"wall": walls, "first": firsts, "rss": rss, "requests": requests, "failures": failures}


# ---------------------------------------------------------------- (c) the fixed part of a request


def try_tiktoken(timeout: float = 5.0) -> dict[str, Any]:
    """Load cl100k_base / o200k_base if they are at hand (cache or network), within ``timeout``."""
    found: dict[str, Any] = {}

    def work() -> None:
        try:
            import tiktoken
        except Exception as exc:
            found["error"] = f"tiktoken not importable: {exc}"
            return
        for name in ("o200k_base", "cl100k_base"):
            try:
                found[name] = tiktoken.get_encoding(name)
            except Exception as exc:
                found.setdefault("error", f"{type(exc).__name__}: {str(exc)[:120]}")

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        found.setdefault("error", f"timed out after {timeout:.0f}s (no network)")
    return found


def fixed_part(body: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    system = "\n\n".join(
        str(m.get("content") or "") for m in body["messages"] if m.get("role") in ("system", "developer")
    )
    tools = [
        (t["function"]["name"], json.dumps(t, separators=(",", ":"), ensure_ascii=False))
        for t in body.get("tools") or []
    ]
    return system, tools


# ---------------------------------------------------------------- (d) import time


def import_times(module: str, runs: int) -> tuple[dict[str, float], dict[str, float]]:
    """Median cumulative and self microseconds per module of ``python -X importtime -c 'import M'``."""
    cum: dict[str, list[float]] = {}
    own: dict[str, list[float]] = {}
    for _ in range(runs):
        res = subprocess.run(
            [PY, "-X", "importtime", "-c", f"import {module}"], capture_output=True, text=True, check=True
        )
        for line in res.stderr.splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
            if m:
                own.setdefault(m.group(4), []).append(float(m.group(1)))
                cum.setdefault(m.group(4), []).append(float(m.group(2)))
    return ({k: median(v) for k, v in cum.items()}, {k: median(v) for k, v in own.items()})


def wall_import(stmt: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.monotonic()
        subprocess.run([PY, "-c", stmt], check=True)
        times.append(time.monotonic() - started)
    return median(times)


# ---------------------------------------------------------------- report


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument(
        "--skip-default-model",
        action="store_true",
        help="skip the gpt-4o-mini rows (that model makes clio try to load its tiktoken encoding)",
    )
    args = ap.parse_args(argv)
    runs = args.runs
    precompile()
    print(
        f"# clio shell figures ({runs} runs each, medians; {os.cpu_count()} CPUs, Python {sys.version.split()[0]})\n"
    )

    responder = Responder()
    with FakeServer(responder, validate=True) as server:
        # (a) + (b)
        rows: list[list[str]] = []
        models = ["fake-model"] + ([] if args.skip_default_model else ["gpt-4o-mini"])
        for model in models:
            rep = time_to_prompt(server, model, runs)
            times, rss = rep["prompt"], rep["rss"]
            rows.append(
                [
                    f"REPL: start to prompt ({model})",
                    fmt_ms(median(times)),
                    f"{min(times) * 1000:,.0f}–{max(times) * 1000:,.0f} ms",
                    f"{median(rss) / 1024:.1f} MiB (VmHWM at prompt)" if rss else "n/a",
                    f"Enter to answer on screen: 1st message {fmt_ms(median(rep['first']))}, "
                    f"2nd {fmt_ms(median(rep['second']))}",
                ]
            )
        for label, text, model in [
            ("one-shot: text answer", "say hello", "fake-model"),
            (f"one-shot: {TOOL_ITERATIONS} tool iterations + answer", "use tools please", "fake-model"),
        ] + ([] if args.skip_default_model else [("one-shot: text answer", "say hello", "gpt-4o-mini")]):
            res = one_shot(server, responder, model, text, runs)
            walls = res["wall"]
            rows.append(
                [
                    f"{label} ({model})",
                    fmt_ms(median(walls)),
                    f"{min(walls) * 1000:,.0f}–{max(walls) * 1000:,.0f} ms" if walls else "n/a",
                    f"{median(res['rss']) / 1024:.1f} MiB (wait4 ru_maxrss)" if res["rss"] else "n/a",
                    f"{statistics.mode(res['requests']) if res['requests'] else 0} requests; "
                    f"1st request after {fmt_ms(median(res['first']))}"
                    + (f"; {res['failures']} failed" if res["failures"] else ""),
                ]
            )
        print("## Startup and one-shot\n")
        print(table(["what", "median", "range", "peak RSS", "notes"], rows))
        print()

        # (c) the fixed part, from a request the server actually received
        bodies = [b for b in server.chat_requests if b.get("tools")]
    body = bodies[0]
    system, tools = fixed_part(body)
    encs = try_tiktoken()
    exact_names = [n for n in ("o200k_base", "cl100k_base") if n in encs]

    def exact(text: str) -> list[str]:
        return [f"{len(encs[n].encode(text)):,}" for n in exact_names]

    tools_all = json.dumps(body["tools"], separators=(",", ":"), ensure_ascii=False)
    rows = [
        [
            "system prompt (fresh project, no memory)",
            f"{len(system):,}",
            f"{math.ceil(len(system) / 4):,}",
            *exact(system),
        ]
    ]
    for name, schema in sorted(tools, key=lambda t: -len(t[1])):
        rows.append([f"tool `{name}`", f"{len(schema):,}", f"{math.ceil(len(schema) / 4):,}", *exact(schema)])
    rows.append(
        [
            "all tool schemas (one JSON list)",
            f"{len(tools_all):,}",
            f"{math.ceil(len(tools_all) / 4):,}",
            *exact(tools_all),
        ]
    )
    total_chars = len(system) + len(tools_all)
    fixed_tokens = math.ceil(total_chars / 4) + 3 + 3  # one system message + reply priming
    rows.append(
        [
            "**fixed part** (system + tools)",
            f"**{total_chars:,}**",
            f"**{fixed_tokens:,}**",
            *exact(system + tools_all),
        ]
    )
    print("## Fixed part of every request\n")
    print(table(["part", "chars", "tokens (chars/4)", *[f"tokens ({n})" for n in exact_names]], rows))
    print()
    if exact_names:
        print(
            f"Exact counts with tiktoken {', '.join(exact_names)} (plain text of the JSON; providers add a few tokens of framing)."
        )
    else:
        print(
            f"tiktoken encodings are not loadable offline ({encs.get('error', 'unknown reason')}): no exact counts."
        )
    print(
        "The fixed-part token total is the fake server's count of a request holding only the system message "
        "and the tools: ceil(chars / 4) + 3 per message + 3.\n"
    )

    # (d) imports
    print("## Import time\n")
    base = wall_import("pass", runs)
    rows = []
    for stmt in ("import clio.cli", "import clio.cli, clio.ui.repl", "import clio.cli, clio.ui.oneshot"):
        rows.append([f"`{stmt}`", fmt_ms(max(0.0, wall_import(stmt, runs) - base))])
    for mod in (
        "openai",  # no longer imported by clio: the HTTP path below replaced it (docs/benchmarks.md)
        "urllib3",
        "clio.llm.client",
        "prompt_toolkit",
        "rich.markdown",
        "git",
        "tiktoken",
        "yaml",
        "clio.tools.builtin",
    ):
        try:
            rows.append([f"`import {mod}` alone", fmt_ms(max(0.0, wall_import(f"import {mod}", runs) - base))])
        except subprocess.CalledProcessError:
            rows.append([f"`import {mod}` alone", "not installed"])
    print(table(["statement (fresh interpreter, minus bare startup)", "median wall"], rows))
    print(f"\nBare interpreter start: {fmt_ms(base)}.\n")
    for module in ("clio.cli", "clio.ui.repl"):
        cum, own = import_times(module, runs)
        top = sorted(cum.items(), key=lambda kv: -kv[1])[:10]
        print(f"Top 10 modules by cumulative import time, `python -X importtime -c 'import {module}'`:\n")
        print(
            table(
                ["module", "cumulative", "self"],
                [[f"`{m}`", f"{us / 1000:,.1f} ms", f"{own[m] / 1000:,.1f} ms"] for m, us in top],
            )
        )
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
