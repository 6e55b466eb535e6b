"""End to end, issue 14 part 3: a recall query made only of very common words stays bounded.

The project holds 9,000 archived messages: 45 sessions that all say "deploy", 45 that all say
"staging" (each word in more messages than the per-query postings budget, 4,000), an older
session and the newest one saying both. The scripted model of a new session calls
``memory_operations`` / ``recall_sessions`` with "deploy staging": the installed clio must not
run bm25 over thousands of rows; it returns the newest messages holding both words first
(lexical recall: ``CLIO_SEMANTIC=0``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from testkit.clio_run import run_clio, sessions_dir, tool_results, write_archive
from testkit.fakeserver import FakeServer, Reply

TRIGGER = "what did we say about it"
QUERY = "deploy staging"
NEWEST = "Deploy to staging went fine after the cache fix (marker NEWEST-42)."
OLDER = "We should deploy to staging on Fridays only (marker OLDER-7)."


def responder(body: dict[str, Any]) -> Reply:
    msgs = body["messages"]
    last = max(i for i, m in enumerate(msgs) if m.get("role") == "user")
    if TRIGGER in str(msgs[last].get("content")):
        if not any(m.get("role") == "assistant" for m in msgs[last + 1 :]):
            args = {"operation": "recall_sessions", "query": QUERY}
            return Reply(tool_calls=[{"name": "memory_operations", "arguments": args}])
        return Reply(text="found it")
    return Reply(text="ok")


def archive(project: Path) -> None:
    root = sessions_dir(project)
    base = time.time() - 86400 * 30

    def msg(text: str, seq: int, ts: float) -> dict[str, Any]:
        role = "user" if seq % 2 == 0 else "assistant"
        return {"role": role, "content": text, "meta": {"seq": seq, "ts": ts + seq, "thread": 0}}

    write_archive(root, "20250101-000000-0000", [msg(OLDER, 0, base)], base, name="older")
    for n in range(90):
        word = "deploy" if n % 2 else "staging"
        ts = base + 3600 * (n + 1)
        texts = [f"{word} note {n}-{i}: routine entry number {i}" for i in range(100)]
        write_archive(root, f"20250102-{n:06d}-ab{n:02d}", [msg(t, i, ts) for i, t in enumerate(texts)], ts)
    ts = base + 3600 * 100
    write_archive(root, "20250103-000000-0001", [msg(NEWEST, 0, ts)], ts, name="newest")


def test_recall_of_only_common_words_returns_the_newest_rows_holding_them(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    archive(project)
    server = FakeServer(responder).start()
    try:
        # lexical only: the bound is bm25's (with vectors, RRF may lift a row the cosine likes)
        r = run_clio(
            ["-p", TRIGGER], server=server, project=project, home=home, env_extra={"CLIO_SEMANTIC": "0"}
        )
        assert r.returncode == 0, r.stderr
        assert r.stdout == "found it\n"
        last = server.turn_requests[-1]  # the run's turn (a read-back it left aside)
        (result,) = tool_results(last).values()
        assert "NEWEST-42" in result and "OLDER-7" in result, result
        assert result.index("NEWEST-42") < result.index("OLDER-7")  # newest first
        first = result.split("\n2. ")[0]
        assert "NEWEST-42" in first, result
    finally:
        server.stop()
