"""End to end, issue 4: long-term memory, preferences, cross-session recall and /memory, /prefs.

The installed ``clio`` runs against the fake server. The scripted "model" stores what it learns
with the ``memory_operations`` and ``preferences`` tools in one session; later sessions must carry
it in their system prompt (and must not under ``--no-ltm`` / ``--incognito``), recall must find an
older session's decision from a reworded question, and the slash commands must show and tidy it
without talking to the endpoint.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from testkit.clio_run import (
    archive_messages,
    run_clio,
    run_parallel,
    session_dirs,
    session_meta,
    system_text,
    tool_results,
    user_texts,
    wait_background,
)
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import ScriptedModel, call, turn_requests

DECISION = "we decided to use PostgreSQL for the billing service because of row-level locking"
DISTRACTOR = "we decided to use Redis as the cache for web sessions because it is fast"
FACT = "Invoice PDFs are rendered by the quillmark template engine in invoices/render.py"
PREF = "Write pytest fixtures instead of unittest setUp methods"
TABOO = "Reformatting whole files with black"  # score 1: a hard limit
RECALL_QUERY = "which database did we choose for billing"
WIDE = {"COLUMNS": "250"}  # rich tables wrap at 80 columns otherwise


# ---------------------------------------------------------------- one project, two earlier sessions


@dataclass
class Learned:
    server: FakeServer
    model: ScriptedModel
    project: Path
    home: Path
    session_a: Path  # the session holding the decision
    fact_id: str
    results: dict[str, str]  # tool results session A's model received


@pytest.fixture(scope="module")
def learned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Learned]:
    """Session A: the decision, and the model stores a discovery, a preference and a taboo.
    Session D (at the same time, same project): an unrelated decision."""
    base = tmp_path_factory.mktemp("e2e_memory")
    project, home = base / "proj", base / "home"
    project.mkdir()
    model = ScriptedModel()
    model.on(
        DECISION,
        Reply(
            tool_calls=[
                call("memory_operations", operation="add_discovery", fact=FACT, confidence=0.9),
                call("preferences", operation="add", text=PREF, score=9),
                call("preferences", operation="add", text=TABOO, score=1),
            ]
        ),
        Reply(text="Noted."),
    )
    server = FakeServer(model).start()
    try:
        ra, rd = run_parallel(
            {"args": ["--yes", "-p", DECISION], "server": server, "project": project, "home": home},
            {"args": ["-p", DISTRACTOR], "server": server, "project": project, "home": home},
        )
        assert ra.returncode == 0, ra.stderr
        assert rd.returncode == 0, rd.stderr
        wait_background(project)  # their read-backs, after the answers (clio.app.background)
        assert ra.stdout == "Noted.\n"
        reqs = turn_requests(server, DECISION)
        assert len(reqs) == 2
        results = tool_results(reqs[1])
        assert len(results) == 3
        stored = [r for r in results.values() if r.startswith("Stored discovery")]
        assert len(stored) == 1, results
        m = re.match(r"Stored discovery (\S+?)\.", stored[0])
        assert m, stored[0]
        dirs = [
            d
            for d in session_dirs(project)
            if any(DECISION in str(x.get("content")) for x in archive_messages(d))
        ]
        assert len(dirs) == 1
        yield Learned(server, model, project, home, dirs[0], m.group(1), results)
    finally:
        server.stop()


# ---------------------------------------------------------------- the next session's prompt


def test_learned_memory_reaches_the_next_session_prompt_but_not_no_ltm_or_incognito(
    learned: Learned,
) -> None:
    s = learned.server
    runs = run_parallel(
        *(
            {
                "args": [*flags, "-p", f"start task {tag}"],
                "server": s,
                "project": learned.project,
                "home": learned.home,
            }
            for tag, flags in (("plain", []), ("noltm", ["--no-ltm"]), ("incognito", ["--incognito"]))
        )
    )
    for r in runs:
        assert r.returncode == 0, r.stderr
        assert r.stdout == "ok\n"
    prompts = {}
    for tag in ("plain", "noltm", "incognito"):
        reqs = turn_requests(s, f"start task {tag}")
        assert len(reqs) == 1
        body = reqs[0]
        # a new session: nothing of the earlier sessions' conversation is in the request
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        prompts[tag] = system_text(body)

    plain = prompts["plain"]
    assert FACT in plain
    assert PREF in plain
    assert TABOO in plain
    taboo_line = next(line for line in plain.splitlines() if TABOO in line)
    assert PREF not in taboo_line
    assert re.search(r"\b(never|avoid|do not|don't)\b", taboo_line.replace(TABOO, ""), re.I), taboo_line
    for tag in ("noltm", "incognito"):
        for text in (FACT, PREF, TABOO, "quillmark"):
            assert text not in prompts[tag], f"{text!r} leaked into the --{tag} prompt"
        # the rest of the system prompt is the same as the plain run's
        assert prompts[tag].split("\n\n")[0] == plain.split("\n\n")[0]


# ---------------------------------------------------------------- cross-session recall


def test_recall_sessions_finds_an_older_decision_from_a_reworded_query(learned: Learned) -> None:
    s = learned.server
    trigger = "what did we settle on earlier"
    learned.model.on(
        trigger,
        Reply(tool_calls=[call("memory_operations", operation="recall_sessions", query=RECALL_QUERY)]),
        Reply(text="You chose PostgreSQL."),
    )
    r = run_clio(["-p", trigger], server=s, project=learned.project, home=learned.home)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "You chose PostgreSQL.\n"
    reqs = turn_requests(s, trigger)
    assert len(reqs) == 2
    # the request that asked for the recall carries no trace of session A: the answer must come from recall
    assert "PostgreSQL" not in str(user_texts(reqs[0])) + str(reqs[0]["messages"][2:])
    results = list(tool_results(reqs[1]).values())
    assert len(results) == 1
    result = results[0]
    assert "PostgreSQL for the billing service" in result
    meta = session_meta(learned.session_a)
    assert meta["name"] and meta["name"] in result
    assert learned.session_a.name in result
    user_msg = next(m for m in archive_messages(learned.session_a) if m["role"] == "user")
    day = time.strftime("%Y-%m-%d", time.localtime(user_msg["meta"]["ts"]))
    assert day in result
    # best first: session A's excerpt ranks above the unrelated Redis decision
    first = result.split("\n2. ")[0]
    assert DECISION in first and meta["name"] in first, result
    if "Redis" in result:
        assert result.index("PostgreSQL") < result.index("Redis")
    assert (learned.project / ".clio" / "recall.sqlite").is_file()  # the derived index now exists

    # a session written after the index was built is found too (the stale index catches up)
    later = "we agreed that the frontend bundles are built with esbuild instead of webpack"
    r = run_clio(["-p", later], server=s, project=learned.project, home=learned.home)
    assert r.returncode == 0, r.stderr
    trigger = "and the frontend, remind me"
    learned.model.on(
        trigger,
        Reply(tool_calls=[call("memory_operations", operation="recall_sessions", query="frontend bundler")]),
        Reply(text="esbuild."),
    )
    r = run_clio(["-p", trigger], server=s, project=learned.project, home=learned.home)
    assert r.returncode == 0, r.stderr
    (result,) = tool_results(turn_requests(s, trigger)[1]).values()
    assert later in result.split("\n2. ")[0], result


# ---------------------------------------------------------------- /memory and /prefs


def test_memory_and_prefs_commands_show_memory_without_a_chat_request(learned: Learned) -> None:
    s = learned.server
    before = len(s.chat_requests)
    sessions_before = session_dirs(learned.project)
    commands = [
        "/memory list",
        "/memory search quillmark templates",
        "/memory search kubernetes",
        "/memory stats",
        "/prefs",
        "/memory forget no-such-id",
    ]
    runs = run_parallel(
        *(
            {
                "args": ["-p", c],
                "server": s,
                "project": learned.project,
                "home": learned.home,
                "env_extra": WIDE,
            }
            for c in commands
        )
    )
    for c, r in zip(commands, runs, strict=True):
        assert r.returncode == 0, (c, r.stderr)
        assert r.stderr.strip() == "", (c, r.stderr)
    listed, found, missed, stats, prefs, not_forgotten = (r.stdout for r in runs)
    assert "no-such-id" in not_forgotten and "Forgot" not in not_forgotten
    assert FACT in (learned.project / ".clio" / "ltm.json").read_text(encoding="utf-8")
    assert learned.fact_id in listed and "quillmark" in listed and "discovery" in listed
    assert learned.fact_id in found and "quillmark" in found
    assert learned.fact_id not in missed and "kubernetes" in missed
    entries = json.loads((learned.project / ".clio" / "ltm.json").read_text(encoding="utf-8"))["entries"]
    others = [e for e in entries if e["type"] != "discovery"]  # what later runs read back (consolidation)
    assert all(e["provenance"]["by"] == "consolidation" for e in others)
    assert re.search(rf"\b{len(entries)} entr", stats) and "1 discovery" in stats
    pref_rows = [line for line in prefs.splitlines() if "pytest fixtures" in line]
    taboo_rows = [line for line in prefs.splitlines() if "black" in line]
    assert len(pref_rows) == 1 and len(taboo_rows) == 1, prefs
    assert "9.0" in pref_rows[0] and "preference" in pref_rows[0]
    assert "1.0" in taboo_rows[0] and "taboo" in taboo_rows[0]
    # slash commands never talk to the model and leave no empty session behind
    assert len(s.chat_requests) == before
    assert session_dirs(learned.project) == sessions_before


def test_memory_forget_removes_the_entry(learned: Learned, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    shutil.copytree(learned.project, project)  # the other tests keep their memory
    s = learned.server
    before = len(s.chat_requests)
    r = run_clio(["-p", f"/memory forget {learned.fact_id}"], server=s, project=project, home=learned.home)
    assert r.returncode == 0, r.stderr
    assert f"Forgot {learned.fact_id}" in r.stdout, r.stdout
    assert "quillmark" not in (project / ".clio" / "ltm.json").read_text(encoding="utf-8")
    r = run_clio(["-p", "/memory list"], server=s, project=project, home=learned.home, env_extra=WIDE)
    assert r.returncode == 0, r.stderr
    assert learned.fact_id not in r.stdout and "quillmark" not in r.stdout
    assert len(s.chat_requests) == before
    # the original project still has it
    assert FACT in (learned.project / ".clio" / "ltm.json").read_text(encoding="utf-8")
