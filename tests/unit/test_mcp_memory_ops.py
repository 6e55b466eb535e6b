"""The operations ``clio mcp`` serves (clio/mcp/memory_ops.py), in process over real stores in a
temporary project: provenance of MCP writes, the same ranking as the prompt, redaction,
read-only and --no-ltm, pinned entries, and what the prompt shows of an MCP write."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from clio.config import Settings
from clio.mcp.memory_ops import MemoryOps, Refused, open_memory
from clio.memory import ltm_rank
from clio.memory.ltm_store import LtmStore
from clio.memory.provenance import MARK, Provenance, combine, from_mcp, from_turn
from clio.paths import Paths

SECRET = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def paths_in(tmp_path: Path) -> Paths:
    root = tmp_path / "proj"
    root.mkdir(exist_ok=True)
    return Paths(root=root, cwd=root, home=tmp_path / "home")


def ops_in(tmp_path: Path, *, read_only: bool = False, no_ltm: bool = False) -> MemoryOps:
    return open_memory(paths_in(tmp_path), Settings(), read_only=read_only, no_ltm=no_ltm)


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_an_mcp_write_is_tainted_marked_mcp_and_survives_a_round_trip() -> None:
    p = from_mcp("Claude Code", 5.0)
    assert p.tainted and p.by == "mcp" and p.session is None
    again = Provenance.from_dict(p.to_dict())
    assert again == p
    assert again is not None and again.describe() == "written by mcp client Claude Code"
    assert Provenance.from_dict({"tainted": False, "at": 1, "by": "someone else"}) == Provenance(
        None, 1.0, False
    )
    # confirmed later by clio's model in a clean turn: the taint sticks, the latest writer is kept
    merged = combine(p, from_turn("s1", [{"role": "user", "content": "hi"}], 6.0))
    assert merged is not None and merged.tainted and merged.by == "model"


def test_remember_stores_redacted_with_mcp_provenance_and_dedups(tmp_path: Path) -> None:
    ops = ops_in(tmp_path)
    out = ops.remember(
        "solution", {"error": "E42 on login", "solution": f"export TOKEN={SECRET}"}, 0.8, "cli"
    )
    assert out.startswith("stored: - [s-") and SECRET not in out
    again = ops.remember(
        "solution", {"error": "E42 on login", "solution": f"export TOKEN={SECRET}"}, 0.8, "x"
    )
    assert again.startswith("confirmed an existing entry")
    raw = (tmp_path / "proj" / ".clio" / "ltm.json").read_text(encoding="utf-8")
    assert SECRET not in raw and "[REDACTED:github_token]" in raw
    [entry] = LtmStore(tmp_path / "proj" / ".clio" / "ltm.json").all()
    assert entry.provenance is not None and entry.provenance.by == "mcp" and entry.tainted


@pytest.mark.parametrize(
    ("type_", "fields", "says"),
    [
        ("opinion", {"fact": "x"}, "unknown type 'opinion'; use one of: rule, failure"),
        ("discovery", {"rule": "x"}, "a discovery takes fact, not rule"),
        ("discovery", {}, "fact"),
        ("failure", {"impact": "slow"}, "what"),
    ],
)
def test_remember_refuses_bad_entries_in_one_line(
    tmp_path: Path, type_: str, fields: dict[str, str], says: str
) -> None:
    with pytest.raises(Refused, match=says.replace("(", r"\(")) as info:
        ops_in(tmp_path).remember(type_, fields)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "proj" / ".clio" / "ltm.json").exists()


def test_recall_gives_the_prompts_entries_most_relevant_first_and_never_reinforces(tmp_path: Path) -> None:
    ops = ops_in(tmp_path)
    ops.remember("discovery", {"fact": "The billing service stores invoices in PostgreSQL"})
    ops.remember("discovery", {"fact": "The frontend is built with Vite"})
    ops.remember("rule", {"rule": "run ruff before committing"})
    store = ops.ltm
    assert store is not None
    before = {e.id: (e.last_used, e.uses) for e in store.all()}
    expected = ltm_rank.select_for_prompt(
        store.all(), "where are invoices stored", [], ops.clock(), ops.budget_tokens, ops.count_tokens
    )
    lines = ops.recall("where are invoices stored").splitlines()[1:]
    assert sorted(ln.split()[1].lstrip("[") for ln in lines) == sorted(e.id for e in expected)  # the same entries
    assert expected[0].type == "rule" and "PostgreSQL" in lines[0]  # the prompt puts rules first; recall the answer
    assert [ln.split()[1].lstrip("[") for ln in lines] == [
        e.id for e in ltm_rank.by_relevance(expected, "where are invoices stored", ops.clock())
    ]
    assert {e.id: (e.last_used, e.uses) for e in store.all()} == before
    block = ops.memory_block("where are invoices stored")
    assert block.startswith("## Notes from earlier sessions") and MARK in block
    assert ops.recall("where are invoices stored", limit=1).count("\n- ") == 1
    with pytest.raises(Refused, match="'limit' must be a whole number"):
        ops.recall("x", limit=0)
    with pytest.raises(Refused, match="'query' must not be empty"):
        ops.recall("  ")


def test_forget_removes_an_entry_but_not_one_the_user_pinned(tmp_path: Path) -> None:
    ops = ops_in(tmp_path)
    store = ops.ltm
    assert store is not None
    ops.remember("discovery", {"fact": "alpha beta gamma"})
    ops.remember("discovery", {"fact": "delta epsilon zeta"})
    a, b = (e.id for e in store.all())
    store.pin(b)
    assert ops.forget(a) == f"forgot {a}"
    with pytest.raises(Refused, match="pinned by the user"):
        ops.forget(b)
    with pytest.raises(Refused, match="no entry"):
        ops.forget(a)
    assert [e.id for e in store.all()] == [b]
    assert "pinned" in ops.list_entries() and "written by mcp client" in ops.list_entries()


def test_notes_are_redacted_and_carry_mcp_provenance(tmp_path: Path) -> None:
    ops = ops_in(tmp_path)
    assert ops.note_write("deploy", f"use {SECRET} to deploy", "agent") == "created note 'deploy'"
    text = ops.note_read("deploy")
    assert SECRET not in text and MARK in text
    with pytest.raises(Refused, match="must not contain"):
        ops.note_read("../x")
    with pytest.raises(Refused, match="no note 'nope'; notes: deploy"):
        ops.note_read("nope")
    assert "deploy" in ops.note_list()


def test_read_only_refuses_every_write_and_writes_nothing(tmp_path: Path) -> None:
    ops_in(tmp_path).remember("discovery", {"fact": "kept from before"})
    before = files_under(tmp_path)
    ro = ops_in(tmp_path, read_only=True)
    for write in (
        lambda: ro.remember("discovery", {"fact": "new"}),
        lambda: ro.note_write("k", "v"),
        lambda: ro.forget(next(e.id for e in ro.ltm.all())),  # type: ignore[union-attr]
    ):
        with pytest.raises(Refused, match="read-only"):
            write()
    assert "kept from before" in ro.recall("kept")
    assert ro.search_sessions("anything").startswith("Nothing archived mentions")
    assert files_under(tmp_path) == before


def test_no_ltm_refuses_the_ltm_operations_but_keeps_notes(tmp_path: Path) -> None:
    ops = ops_in(tmp_path, no_ltm=True)
    with pytest.raises(Refused, match="--no-ltm"):
        ops.remember("discovery", {"fact": "x"})
    assert ops.note_write("a", "b") == "created note 'a'"


def test_search_sessions_puts_what_answers_before_what_only_asks_again(tmp_path: Path) -> None:
    """clio mcp's session search orders as clio's own recall does: a past message that only
    repeats the question (asked again in many sessions, so bm25 ranks it high) goes after the
    message that answers it."""
    from testkit.clio_run import write_archive

    paths = paths_in(tmp_path)
    sessions = paths.clio_dir / "sessions"
    answer = "The staging database listens on port 6543 behind pgbouncer, not 5432."
    write_archive(sessions, "20261101-090000-aaaa", [
        {"role": "user", "content": "What port does the staging database use?", "meta": {"seq": 0}},
        {"role": "assistant", "content": answer, "meta": {"seq": 1}},
    ], 1_793_000_000.0)  # fmt: skip
    for i in range(6):  # the same question asked again, never answered there
        write_archive(sessions, f"20261102-09000{i}-bbb{i}", [
            {"role": "user", "content": "staging database port? staging database port?", "meta": {"seq": 0}},
            {"role": "assistant", "content": "Let me look.", "meta": {"seq": 1}},
        ], 1_793_100_000.0 + i * 100)  # fmt: skip
    out = open_memory(paths, Settings(), read_only=False, no_ltm=False).search_sessions(
        "staging database port", max_results=3
    )
    first = out.split("\n2. ")[0]  # the first unit: the question with its answer
    assert "What port does the staging database use?" in first and "6543" in first, out


# -- search_sessions with the user's encoder helper (a stand-in on its socket) -------------------

FACT = "Invalid events go to the dead-letter topic events.invalid.v2."


def archive_with_a_reworded_fact(paths: Paths) -> None:
    """Six sessions that share the query's words, and one whose answer (FACT) shares none."""
    from testkit.clio_run import write_archive

    sessions = paths.clio_dir / "sessions"
    for i in range(6):
        write_archive(sessions, f"20261101-0{i}0000-aaa{i}", [
            {"role": "user", "content": f"the staging database port {i} is documented in the wiki", "meta": {"seq": 0}},
            {"role": "assistant", "content": "ok", "meta": {"seq": 1}},
        ], 1_793_000_000.0 + i * 100)  # fmt: skip
    write_archive(sessions, "20261102-090000-bbbb", [
        {"role": "user", "content": "where do the events that fail validation end up?", "meta": {"seq": 0}},
        {"role": "assistant", "content": FACT, "meta": {"seq": 1}},
    ], 1_793_100_000.0)  # fmt: skip


def helper_naming_the_fact(home: Path, asked: list[dict[str, Any]]) -> Any:
    """A stand-in helper that records each request and, asked for the nearest messages, names the
    row of FACT in the index the request names (as the real helper's scan reads that index); the
    units' cosines it is then asked for (the memory tool's re-rank, the user's recall_judge on) it
    answers as a helper whose judge is not loaded: the search keeps its own order."""
    import sqlite3

    from clio.recall.encoder_readiness import socket_path
    from testkit.helper_stand_in import stand_in_helper

    def answer(f: Any) -> None:
        req = json.loads(f.readline())
        asked.append(req)
        if req["op"] == "ping":
            f.write(json.dumps({"ok": True, "pid": os.getpid()}).encode() + b"\n")
        elif req["op"] == "score" and "near" in req:
            row, deadline = None, time.monotonic() + 2
            while row is None and time.monotonic() < deadline:  # the search indexes the archive meanwhile
                with contextlib.closing(sqlite3.connect(req["near"]["index"])) as db, contextlib.suppress(sqlite3.Error):
                    row = db.execute("SELECT id FROM msgs WHERE body = ?", (FACT,)).fetchone()
                time.sleep(0.01)
            rid = row[0] if row else -1
            f.write(json.dumps({"near": [[rid, 0.8]]}).encode() + b"\n")
            f.flush()
            more = f.readline()  # the units' texts (the user's recall_judge asks the judge's re-rank), or closed
            if more.strip():
                units = json.loads(more)["units"]
                f.write(json.dumps({"cos": [0.5] * len(units)}).encode() + b"\n")  # as a helper with no judge loaded
            return
        f.flush()

    home.mkdir(parents=True, exist_ok=True)
    return stand_in_helper(socket_path(home), answer)


def ops_asked(asked: list[dict[str, Any]], ops: list[str]) -> list[str]:
    """The ops the stand-in was asked, once they read ``ops`` (or after 5 s)."""
    deadline = time.monotonic() + 5
    while [r["op"] for r in asked] != ops and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)  # and nothing more
    return [r["op"] for r in asked]


def test_search_sessions_fuses_what_the_encoder_helper_finds_by_meaning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """clio mcp searches as clio's memory tool does: the helper's nearest messages are fused into
    the ranking, so an answer that shares no word with the query is found; a search that used the
    helper asks it to embed what it has not yet, with the user's idle time."""
    monkeypatch.delenv("CLIO_RECALL_ENCODER", raising=False)  # the tests' default: off
    paths = paths_in(tmp_path)
    archive_with_a_reworded_fact(paths)
    query = "staging rollout postmortem timeline owner"
    words_only = open_memory(paths, Settings(recall_encoder=False), read_only=False, no_ltm=False)
    assert "dead-letter" not in words_only.search_sessions(query, max_results=3)
    asked: list[dict[str, Any]] = []
    helper = helper_naming_the_fact(paths.home, asked)
    try:
        out = open_memory(paths, Settings(), read_only=False, no_ltm=False).search_sessions(query, max_results=3)
        assert "dead-letter" in out, out
        assert ops_asked(asked, ["score", "fill"]) == ["score", "fill"]
        score, fill = asked
        assert score["q"] == query and score["near"]["k"] > 0
        assert Path(fill["index"]) == paths.clio_dir / "recall.sqlite"
        assert fill["idle"] == Settings().recall_encoder_idle_minutes * 60  # the user's idle time goes along
    finally:
        helper.close()


def test_the_server_warms_up_the_index_and_the_helper_in_a_project_with_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server lives long, as a REPL: opened on a project with history it brings the index up to
    date and asks the helper to embed it, in the background; on a project without history, nothing."""
    monkeypatch.delenv("CLIO_RECALL_ENCODER", raising=False)
    asked: list[dict[str, Any]] = []
    paths = paths_in(tmp_path)
    helper = helper_naming_the_fact(paths.home, asked)
    try:
        assert open_memory(paths, Settings(), read_only=False, no_ltm=False).warm_up() is None
        assert ops_asked(asked, []) == [] and not (paths.clio_dir / "recall.sqlite").exists()
        archive_with_a_reworded_fact(paths)
        thread = open_memory(paths, Settings(), read_only=False, no_ltm=False).warm_up(after_s=0)
        assert thread is not None
        thread.join(10)
        assert ops_asked(asked, ["ping", "fill"]) == ["ping", "fill"]  # the helper runs: it fills the index
        import sqlite3

        with contextlib.closing(sqlite3.connect(paths.clio_dir / "recall.sqlite")) as db:
            assert db.execute("SELECT count(*) FROM msgs WHERE body = ?", (FACT,)).fetchone() == (1,)
    finally:
        helper.close()


def test_read_only_search_sessions_never_asks_the_encoder_helper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--incognito searches an index kept in memory, whose rows are not the helper's, and must write
    nothing: the helper (whose fill writes in .clio/) is neither asked nor started."""
    monkeypatch.delenv("CLIO_RECALL_ENCODER", raising=False)
    paths = paths_in(tmp_path)
    archive_with_a_reworded_fact(paths)
    before = files_under(tmp_path)
    asked: list[dict[str, Any]] = []
    helper = helper_naming_the_fact(paths.home, asked)
    try:
        ro = open_memory(paths, Settings(), read_only=True, no_ltm=False)
        out = ro.search_sessions("staging rollout postmortem timeline owner", max_results=3)
        time.sleep(0.3)
        assert asked == [] and "dead-letter" not in out and "staging database port" in out
    finally:
        helper.close()
    assert {k for k in files_under(tmp_path) if k not in before} <= {"home/encoder.sock"}


def test_search_sessions_shows_its_best_units_whole_and_the_rest_compact(tmp_path: Path) -> None:
    """As recall_sessions: the first three units with what was said and answered, the later ones
    compact: here a remark whose reply says no more than it, the remark alone."""
    from testkit.clio_run import write_archive

    paths = paths_in(tmp_path)
    for i in range(6):
        write_archive(paths.clio_dir / "sessions", f"20261101-0{i}0000-ccc{i}", [
            {"role": "user", "content": f"the nightly export job {i} now writes to bucket exports-{i}", "meta": {"seq": 0}},
            {"role": "assistant", "content": f"Noted, I updated the runbook for job {i} accordingly.", "meta": {"seq": 1}},
        ], 1_793_000_000.0 + i * 100)  # fmt: skip
    out = ops_in(tmp_path).search_sessions("nightly export job bucket", max_results=6)
    units = out.split("\n")[1:]
    heads = [i for i, line in enumerate(units) if line[:1].isdigit()]
    sizes = [b - a - 1 for a, b in zip(heads, [*heads[1:], len(units)], strict=True)]
    assert len(heads) == 6 and sizes[:3] == [2, 2, 2] and sizes[3:] == [1, 1, 1], out
    assert all("Noted, I updated the runbook" not in line for line in units[heads[3] :]), out
