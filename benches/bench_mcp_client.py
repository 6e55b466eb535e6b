"""clio as an MCP client: server start to tools listed, and per-call latency.

Run: .venv/bin/python benches/bench_mcp_client.py [--quick]
Prints the figures; docs/benchmarks.md records them.

1. Start: :class:`clio.mcp.client.McpClients` (the one background thread and its event loop, as
   a clio session uses it) starts the reference ``mcp-server-time`` (stdio: spawn, initialize,
   tools/list) and the SDK-written streamable-HTTP server of testkit/mcp_servers.py (already
   running: connect, initialize, tools/list); wall time from ``start()`` to the tools being
   listed, median and range of N starts. The first start in the process also pays the SDK's
   import, shown apart.
2. Calls: ``time__get_current_time`` and ``words__word_count`` through clio's registry (approval,
   argument redaction, the cross-thread hop, JSON-RPC, the result read as text): p50 / p95 / max.
3. The REPL: time to the prompt (pty, as benches/bench_shell.py measures it) with no server and
   with ``mcp-server-time`` configured (it starts in the background while the prompt is drawn),
   and Enter to the first answer in both (the first request waits for the servers).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))  # testkit/ (appended: an installed clio comes first)

from clio.app.mcp_servers import mcp_tools  # noqa: E402
from clio.mcp.client import McpClients  # noqa: E402
from clio.mcp.config import parse_servers  # noqa: E402
from clio.safety.redact import Redactor  # noqa: E402
from clio.tools.context import Services, ToolContext  # noqa: E402
from clio.tools.registry import Registry  # noqa: E402
from testkit.mcp_servers import http_server  # noqa: E402

sys.path.insert(0, str(ROOT / "benches"))

TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def start_once(servers: dict[str, object], cwd: Path) -> tuple[float, McpClients]:
    clients = McpClients(parse_servers(servers).servers, cwd)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    clients.start()
    clients.wait_started()
    took = (time.perf_counter() - t0) * 1000
    bad = [st.error for st in clients.servers.values() if st.state != "ready"]
    assert not bad, bad
    return took, clients


def calls(clients: McpClients, cwd: Path, name: str, args: dict[str, object], n: int) -> list[float]:
    registry = Registry()
    for t in mcp_tools(clients):
        registry.add(t)
    ctx = ToolContext(root=cwd, services=Services(redactor=Redactor("standard")))
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        text, ok = registry.run(ctx, name, args)
        out.append((time.perf_counter() - t0) * 1000)
        assert ok, text
    return out


def line(label: str, values: list[float]) -> str:
    return f"{label}: p50 {pct(values, 0.5):.1f} ms, p95 {pct(values, 0.95):.1f} ms, max {max(values):.1f} ms"


def repl_times(with_server: bool, runs: int) -> tuple[list[float], list[float]]:
    """(start to prompt, Enter to the first answer) in seconds, ``runs`` times."""
    import pexpect
    import yaml
    from bench_shell import CPR_REQUEST, clio_env, expect_answering_cpr, fresh_project

    from testkit.clio_run import CLIO
    from testkit.fakeserver import FakeServer, Reply

    prompt, first = [], []
    with FakeServer().start() as server:
        server.responder = lambda body: Reply(text="HELLO-ANSWER")
        for _ in range(runs):
            with tempfile.TemporaryDirectory(prefix="clio-bench-") as tmp:
                proj, home = fresh_project(Path(tmp))
                if with_server:
                    (home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": {"time": TIME}}))
                started = time.monotonic()
                child = pexpect.spawn(
                    str(CLIO), cwd=str(proj), env=clio_env(server, home, "fake-model"),
                    dimensions=(40, 120), encoding="utf-8", codec_errors="replace", timeout=60,
                )
                expect_answering_cpr(child, "›")
                prompt.append(time.monotonic() - started)
                sent = time.monotonic()
                child.send("say hello\r")
                expect_answering_cpr(child, "HELLO-ANSWER")
                first.append(time.monotonic() - sent)
                expect_answering_cpr(child, "›")
                child.sendeof()
                while child.expect([CPR_REQUEST, pexpect.EOF]) == 0:
                    child.send("\x1b[28;1R")
                child.close()
    return prompt, first


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    starts, n_calls = (3, 50) if a.quick else (10, 300)
    with http_server() as url, tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        t0 = time.perf_counter()
        first, clients = start_once({"time": TIME}, cwd)
        clients.close()
        print(f"first start in the process (SDK import included): {first:,.0f} ms")
        for label, servers in (("stdio mcp-server-time", {"time": TIME}), ("streamable HTTP", {"words": {"url": url}})):
            times = []
            for _ in range(starts):
                took, clients = start_once(servers, cwd)
                times.append(took)
                clients.close()
            print(
                f"start to tools listed, {label}, {starts} starts: median {statistics.median(times):,.0f} ms "
                f"({min(times):,.0f}-{max(times):,.0f})"
            )
        took, clients = start_once({"time": TIME, "words": {"url": url}}, cwd)
        print(f"both at once (in parallel): {took:,.0f} ms")
        try:
            print(line(f"time__get_current_time, {n_calls} calls", calls(
                clients, cwd, "time__get_current_time", {"timezone": "Europe/Paris"}, n_calls)))
            print(line(f"words__word_count (HTTP), {n_calls} calls", calls(
                clients, cwd, "words__word_count", {"text": "one two three"}, n_calls)))
        finally:
            t1 = time.perf_counter()
            clients.close()
            print(f"shutdown of both: {(time.perf_counter() - t1) * 1000:,.0f} ms")
        for label, flag in (("no MCP server", False), ("mcp-server-time configured", True)):
            p, f = repl_times(flag, starts)
            print(
                f"REPL, {label}, {starts} runs: start to prompt median {statistics.median(p) * 1000:,.0f} ms; "
                f"Enter to the first answer median {statistics.median(f) * 1000:,.0f} ms"
            )
        print(f"total {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
