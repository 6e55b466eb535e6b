"""End to end, issue 14: recall_sessions finds an earlier session by meaning.

The installed ``clio`` runs against the fake server. Session A settles a question in words the
later question never uses ("UTC", "clocks"); a distractor session holds unrelated work. The
scripted model of a later session calls ``memory_operations`` / ``recall_sessions`` with the
reworded question: the tool result must lead with session A (the shipped embedding model, run
offline: a static table distilled from MiniLM). With ``CLIO_SEMANTIC=0`` the same question finds nothing of session A: lexical recall
alone misses it, which is what the model adds.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from testkit.clio_run import archive_messages, run_clio, run_parallel, session_dirs, tool_results
from testkit.fakeserver import FakeServer, Reply

DECISION = (
    "From now on every server keeps its clocks on UTC, so the nightly cron jobs stop drifting twice a year."
)
DISTRACTOR = "Please restyle the navbar with flexbox instead of the CSS grid in nav.css."
QUESTION = "what time zone do our machines use"
TRIGGER = "remind me what we settled"


def latest_user(body: dict[str, Any]) -> tuple[str, int]:
    msgs = body["messages"]
    last = max(i for i, m in enumerate(msgs) if m.get("role") == "user")
    rounds = sum(1 for m in msgs[last + 1 :] if m.get("role") == "assistant")
    return str(msgs[last].get("content")), rounds


def responder(body: dict[str, Any]) -> Reply:
    text, rounds = latest_user(body)
    if TRIGGER in text:
        if rounds == 0:
            args = {"operation": "recall_sessions", "query": QUESTION}
            return Reply(tool_calls=[{"name": "memory_operations", "arguments": args}])
        return Reply(text="UTC.")
    return Reply(text="ok")


def recall_result(server: FakeServer, project: Path, home: Path, env: dict[str, str | None]) -> str:
    before = len(server.chat_requests)
    r = run_clio(["-p", TRIGGER], server=server, project=project, home=home, env_extra=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "UTC.\n"
    reqs = [b for b in server.chat_requests[before:] if TRIGGER in latest_user(b)[0]]
    assert len(reqs) == 2
    (result,) = tool_results(reqs[1]).values()
    return result


def test_recall_sessions_finds_an_earlier_session_by_meaning(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    server = FakeServer(responder).start()
    try:
        ra, rd = run_parallel(
            {"args": ["-p", DECISION], "server": server, "project": project, "home": home},
            {"args": ["-p", DISTRACTOR], "server": server, "project": project, "home": home},
        )
        assert ra.returncode == 0, ra.stderr
        assert rd.returncode == 0, rd.stderr
        (session_a,) = [
            d
            for d in session_dirs(project)
            if any(DECISION in str(m.get("content")) for m in archive_messages(d))
        ]

        # a copy of both, taken before any recall: a recall's own session repeats the question
        shutil.copytree(project, tmp_path / "proj2")
        shutil.copytree(home, tmp_path / "home2")

        # hybrid (the default): the meaning matches, session A leads
        result = recall_result(server, project, home, {"CLIO_SEMANTIC": None})
        first = result.split("\n2. ")[0]
        assert session_a.name in first, result  # session A's messages lead (an excerpt each)
        assert "clocks on UTC" in result, result
        if "flexbox" in result:
            assert result.index("UTC") < result.index("flexbox")

        # lexical only, on the copy: no word of the question is in session A, bm25 cannot find it
        lexical = recall_result(server, tmp_path / "proj2", tmp_path / "home2", {"CLIO_SEMANTIC": "0"})
        assert "UTC" not in lexical, lexical
        db = project / ".clio" / "recall.sqlite"
        assert db.is_file()
    finally:
        server.stop()
