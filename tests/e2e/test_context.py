"""End-to-end tests of the context engine (issue 3) through the INSTALLED clio and the fake server.

Each clio run is a real subprocess (`clio --model fake-model --context-window N --yes [--resume] -p TEXT`)
against testkit/fakeserver.py, which counts tokens at 3.3 chars per token (clio starts at 3.5), rejects
anything over its context limit in a chosen server's wording, and rejects malformed conversations
(orphaned tool results, unanswered calls).  The "model" is a scripted responder: each user message
carries a tag ``[t07]`` naming its plan, a list of steps (tool calls producing large outputs, then an
answer).  Nothing of clio is patched; the server is the only test double.

The scenario helpers (`Project`, `ScriptedModel`, `Clio`, `main_session_turns`, ...) live in
testkit/long_session.py, shared with benches/bench_session.py.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testkit.clio_run import system_text, typed, user_texts
from testkit.fakeserver import FakeServer
from testkit.fakeserver_sse import validate_request
from testkit.long_session import (
    COMPACT_MARK,
    MODEL,
    SERVER_RATIO,
    Clio,
    Project,
    ScriptedModel,
    Step,
    answer,
    big,
    call,
    extends,
    last_user,
    longest_rejection_run,
    main_session_turns,
    ok,
    page,
    prefix_share,
    read,
    rejected,
    server_tokens,
    shell,
    summary_of,
)

# ---------------------------------------------------------------------------------------------------------
# the long session at 8,000 tokens, run once for the module

N_TURNS = 25


@dataclass
class LongRun:
    project: Project
    server: FakeServer
    model: ScriptedModel
    clio: Clio
    turns: list[tuple[str, str, list[Step]]]
    after: dict[str, Any]
    requests: list[dict[str, Any]]
    turn_of_request: list[int]  # index into turns of the turn each chat request belongs to


@pytest.fixture(scope="module")
def long_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LongRun]:
    tmp = tmp_path_factory.mktemp("e2e_context_long")
    project = Project(tmp / "proj")
    turns = main_session_turns(N_TURNS)
    model = ScriptedModel({tag: steps for tag, _, steps in turns})
    server = FakeServer(model, chars_per_token=SERVER_RATIO, context_limit=8000, validate=True).start()
    try:
        clio = Clio(project, server, tmp / "home", window=8000)
        turn_of_request: list[int] = []
        for n, (tag, text, _) in enumerate(turns):
            seen = len(server.chat_requests)
            ok(clio(f"[{tag}] {text}", resume=n > 0))
            turn_of_request += [n] * (len(server.chat_requests) - seen)
        after = clio.context()
        yield LongRun(project, server, model, clio, turns, after, server.chat_requests, turn_of_request)
    finally:
        server.stop()


def answered(run: LongRun) -> list[dict[str, Any]]:
    return [b for b in run.requests if not rejected(run.server, b)]


def trimmed_before(run: LongRun) -> list[bool]:
    """Per answered request: whether clio trimmed since the previous one.

    Known without looking at the requests: a trim starts a new archive thread, so the assistant
    message answering a request carries another thread number than the previous answer's exactly
    when a trim happened in between."""
    threads = [m["meta"]["thread"] for m in run.project.archive() if m["role"] == "assistant"]
    assert len(threads) == len(answered(run))
    return [t != p for p, t in zip([0, *threads], threads, strict=False)]


def last_trim_task(run: LongRun) -> str:
    """The latest user message when clio last trimmed."""
    flags = trimmed_before(run)
    return last_user(answered(run)[max(i for i, f in enumerate(flags) if f)])


def test_long_session_every_turn_succeeds_and_nothing_is_rejected(long_run: LongRun) -> None:
    run = long_run
    assert all(p.returncode == 0 for p in run.clio.runs)
    assert run.model.problems == []
    assert len(run.model.replies) == len(answered(run))  # no request failed and was retried
    for tag, _, steps in run.turns:  # every step of every plan was played: the tool loop ran to its answer
        assert run.model.pos.get(tag) == len(steps), tag
    flags = [rejected(run.server, b) for b in run.requests]
    malformed = [validate_request(b) for b in run.requests if validate_request(b)]
    assert malformed == []
    # the window is configured right: the engine keeps every request under the limit, so the
    # server never rejects one (not even at the start, with the 6% too optimistic default ratio)
    assert sum(flags) == 0, [i for i, f in enumerate(flags) if f]
    assert longest_rejection_run(flags) == 0
    # stronger: every request stays under clio's own budget (window minus reply reserve), as the
    # server counts it, within the estimator's error
    limit = run.after["limit_tokens"]
    biggest = max(run.server.prompt_tokens(b) for b in run.requests)
    assert biggest <= limit * 1.07, (biggest, limit)
    # and the run did trim, many times: the test exercised the engine
    summary = run.project.stm()["summary"]
    assert summary is not None and summary["trims"] >= 10


def test_learned_ratio_converges_to_the_servers(long_run: LongRun) -> None:
    run = long_run
    stored = run.project.ratios()[MODEL]
    assert abs(stored["chars_per_token"] - SERVER_RATIO) / SERVER_RATIO < 0.03, stored
    assert abs(run.after["chars_per_token"] - SERVER_RATIO) / SERVER_RATIO < 0.03, run.after
    # one sample per answered request: usage was read from every streamed response
    assert stored["samples"] == run.after["ratio_samples"] == len(answered(run))


def test_last_request_still_knows_the_task_and_the_first_file(long_run: LongRun) -> None:
    run = long_run
    last = run.requests[-1]
    summary = summary_of(last)
    assert summary, "the last request carries no <thread_summary>"
    original = run.turns[0][1]
    assert f"Original task: [t00] {original}" in summary
    assert "Files read: src/mod00.py" in summary  # the first file read, pinned first
    assert last_user(last).startswith("[t99]")
    # the summary is rendered at a trim (so the prefix stays cacheable): its current task is the
    # latest user message at the last trim; the one after it is in the window, as the anchor
    assert f"Current task: {last_trim_task(run)}" in summary
    print("\n" + summary)
    modified = re.search(r"^Files modified: (.*)$", summary, re.M)
    assert modified is not None and {"notes/plan.md", "src/fallback.py"} <= set(modified.group(1).split(", "))
    # the commit made through version_control, hash as git knows it
    head = run.project.git("log", "-1", "--format=%h %s", "--grep", "fallback helper")
    short, subject = head.split(" ", 1)
    assert subject == "Add fallback helper for missing config keys"
    assert re.search(rf"^Commits: .*\b{short}\w* {re.escape(subject)}", summary, re.M), summary
    # the error (reading the missing notes file) and how it was resolved
    err = re.search(r"^- (file_operations\.read_file notes/plan\.md: Error: .*) -> (.*)$", summary, re.M)
    assert err is not None, summary
    assert err.group(2).startswith("resolved"), err.group(0)


def test_summary_tool_counts_match_what_left_the_window(long_run: LongRun) -> None:
    run = long_run
    archive = run.project.archive()
    stm = run.project.stm()
    in_window = set(stm["window_seqs"])
    left = Counter(
        c["function"]["name"]
        for m in archive
        if m["meta"]["seq"] not in in_window
        for c in m.get("tool_calls") or []
    )
    assert stm["summary"]["tool_counts"] == dict(left)
    assert stm["summary"]["messages_compressed"] == len(archive) - len(in_window)
    rendered = summary_of(run.requests[-1])
    tool_line = re.search(r"^Tool use: (.*)$", rendered, re.M)
    assert tool_line is not None
    assert dict((k, int(v)) for k, v in re.findall(r"(\w+) x(\d+)", tool_line.group(1))) == dict(left)


def test_archive_keeps_every_message(long_run: LongRun) -> None:
    run = long_run
    archive = run.project.archive()
    assert [m["meta"]["seq"] for m in archive] == list(range(len(archive)))
    info = json.loads((run.project.session_dir() / "session.json").read_text())
    assert info["message_count"] == len(archive)
    # exactly what the session produced: the user turns, one assistant message per answered
    # request, one result per tool call
    # request, one result per tool call; and the automatic recall blocks, each right after the
    # user message it was recalled for
    n_calls = sum(len(r.tool_calls) for _, r in run.model.replies)
    recalled = [i for i, m in enumerate(archive) if m["meta"].get("kind") == "recall"]
    assert all(archive[i - 1]["role"] == "user" and archive[i]["role"] == "system" for i in recalled)
    assert len(archive) - len(recalled) == len(run.turns) + len(run.model.replies) + n_calls
    # every message that ever went out is in the archive, whole (the window's copies may be cut)
    stored = {(m["role"], m.get("tool_call_id"), m.get("content")) for m in archive}
    sent = {
        (m["role"], m.get("tool_call_id"), typed(m["content"]) if m["role"] == "user" else m.get("content"))
        for b in run.requests
        for m in b["messages"]
        if m["role"] != "system"
        and not (m["role"] == "user" and not typed(m["content"]))  # clio's notes alone
    }
    missing = [s for s in sent if s not in stored and "characters cut to fit" not in str(s[2])]
    assert missing == []
    # the window is a small part of it after the trims
    assert len(run.project.stm()["window_seqs"]) < len(archive) // 5


def test_checkpoint_written_at_the_last_trim_names_the_task(long_run: LongRun) -> None:
    run = long_run
    checkpoint = run.project.clio_dir / "memory" / "session_progress.md"
    text = checkpoint.read_text()
    assert f"Session: {run.project.session_dir().name}" in text
    task = last_trim_task(run)
    assert f"## Task\n{task}\n" in text
    assert "## Todos" in text and "read the loader" in text


def test_requests_extend_each_other_between_trims(long_run: LongRun) -> None:
    """Between trims each request is the previous one plus new messages, byte for byte."""
    run = long_run
    reqs = answered(run)
    flags = trimmed_before(run)
    pairs = list(zip(reqs, reqs[1:], flags[1:], strict=False))
    same = [(a, b) for a, b, trim in pairs if not trim]
    across = [(a, b) for a, b, trim in pairs if trim]
    assert len(same) >= 20 and len(across) >= 10
    assert [i for i, (a, b) in enumerate(same) if not extends(a, b)] == []
    # and the summary only changes at a trim
    assert all(summary_of(a) == summary_of(b) for a, b in same)
    # that includes a turn's first request against the previous turn's last, from another process
    turns = [t for t, b in zip(run.turn_of_request, run.requests, strict=True) if not rejected(run.server, b)]
    resumed = sum(1 for i, (*_, trim) in enumerate(pairs) if not trim and turns[i] != turns[i + 1])
    assert resumed >= 1
    shares = [prefix_share(a, b) for a, b, _ in pairs]
    print(
        f"\nprefix share: {sum(shares) / len(shares):.3f} over {len(pairs)} pairs; "
        f"{len(same)} pairs without a trim ({resumed} across a resume) all extend the previous request"
    )


def test_context_json_matches_the_session(long_run: LongRun) -> None:
    run = long_run
    after = run.after
    archive = run.project.archive()
    stm = run.project.stm()
    assert after["context_window"] == 8000
    assert after["model"] == MODEL
    assert after["limit_tokens"] == 8000 - after["reserve_output"]
    assert after["archived_messages"] == len(archive)
    assert after["window_messages"] == len(stm["window_seqs"])
    assert after["summary"] is True and after["trims"] == stm["summary"]["trims"]
    # used_tokens estimates the next request as it stands: the last request plus the final answer;
    # the server counts that same request within 3%
    last = run.requests[-1]
    final = next(m for m in reversed(archive) if m["role"] == "assistant")
    truth = server_tokens(
        run.server, [*last["messages"], {"role": "assistant", "content": final["content"]}], last.get("tools")
    )
    assert abs(after["used_tokens"] - truth) / truth < 0.03, (after["used_tokens"], truth)


# ---------------------------------------------------------------------------------------------------------
# reactive trimming: the server's real window is smaller than clio was told


def reading_marathon(tag: str, n_files: int) -> list[Step]:
    """One turn of many tool iterations: read big files one after another, paging some."""
    steps: list[Step] = [call("todo_operations", operation="write", items=["read every module", "report"])]
    for i in range(n_files):
        if i % 3 == 2:
            steps += [shell(f"cat {big(i)}"), page]
        else:
            steps.append(read(f"src/mod{i:02d}.py"))
    steps.append(answer(f"Read {n_files} modules."))
    return steps


REACTIVE_TASK = "[r00] Read the modules one by one and report on their loaders."


@dataclass
class ReactiveRun:
    dialect: str
    server: FakeServer
    model: ScriptedModel
    out: str
    err: str
    requests: list[dict[str, Any]]


@pytest.fixture(scope="module", params=["openai", "llamacpp", "vllm", "ollama"])
def reactive_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ReactiveRun:
    """One turn of 7 large reads; clio is told 16,000 tokens, the server's real window is 6,000."""
    tmp = tmp_path_factory.mktemp(f"e2e_reactive_{request.param}")
    project = Project(tmp / "proj")
    model = ScriptedModel({"r00": reading_marathon("r00", 7)})
    with FakeServer(
        model, chars_per_token=SERVER_RATIO, context_limit=6000, context_dialect=request.param, validate=True
    ) as server:
        clio = Clio(project, server, tmp / "home", window=16000)
        proc = clio(REACTIVE_TASK, resume=False)
        out = ok(proc)
        return ReactiveRun(request.param, server, model, out, proc.stderr, server.chat_requests)


def test_reactive_trim_recovers_from_a_window_too_small(reactive_run: ReactiveRun) -> None:
    run, server, reqs = reactive_run, reactive_run.server, reactive_run.requests
    assert "Read 7 modules." in run.out
    assert run.model.problems == [] and run.model.pos["r00"] == len(run.model.plans["r00"])
    assert [validate_request(b) for b in reqs if validate_request(b)] == []
    flags = [rejected(server, b) for b in reqs]
    n_rejected = sum(flags)
    assert n_rejected >= 1  # the wrong window was hit
    longest = longest_rejection_run(flags)
    assert longest <= 3  # 50%, 25%, minimal: the third retry at the latest is accepted
    assert not flags[-1]
    for i, f in enumerate(flags):
        if f:  # the retry after a rejection is smaller and carries the recovery message
            retry = reqs[i + 1]
            assert server.prompt_tokens(retry) < server.prompt_tokens(reqs[i])
            if i == 0 or not flags[i - 1]:  # a first retry fits 50% of clio's limit (16,000 - 4,000)
                assert server.prompt_tokens(retry) <= 0.5 * 12000 * 1.03
            system = system_text(retry)
            assert "The conversation was shortened to fit the model's context window" in system
            assert f"Current task (the user's latest message): {REACTIVE_TASK}" in system
            assert "Todo list:" in system and "read every module" in system
            assert "Recent commits:" in system and "initial import" in system
            assert last_user(retry) == REACTIVE_TASK
    if run.dialect != "ollama":
        # the rejection states the real window: clio uses it from then on and is not rejected again
        assert n_rejected == 1
        assert "the endpoint's context window is 6,000 tokens, not 16,000" in " ".join(run.err.split())
    print(f"\n{run.dialect}: {len(reqs)} requests, {n_rejected} rejected, at most {longest} in a row")


@pytest.mark.parametrize("reactive_run", ["ollama"], indirect=True)  # no window stated: several trims
def test_reactive_requests_carry_one_thread_summary(reactive_run: ReactiveRun) -> None:
    assert sum(rejected(reactive_run.server, b) for b in reactive_run.requests) >= 2
    counts = [system_text(b).count("<thread_summary>\n") for b in reactive_run.requests]
    assert max(counts) == 1, counts


# ---------------------------------------------------------------------------------------------------------
# /session trim, /compact, /context --json on demand


def near(estimate: int, truth: int, tolerance: float = 0.03) -> bool:
    return abs(estimate - truth) <= tolerance * truth


def test_session_trim_and_compact_on_demand(tmp_path: Path) -> None:
    project = Project(tmp_path / "proj")
    model = ScriptedModel({})
    task = "[c00] Original task: audit src/mod00.py, then page through src/mod01.py and read src/mod03.py."
    model.turn(
        "c00", [read("src/mod00.py"), shell("cat src/mod01.py"), page, read("src/mod03.py"), answer("ok")]
    )
    model.turn("c01", [read("src/mod04.py"), answer("read mod04")])
    model.turn("c02", [answer("still here")])
    with FakeServer(model, chars_per_token=SERVER_RATIO, context_limit=32000, validate=True) as server:
        clio = Clio(project, server, tmp_path / "home", window=32000)
        ok(clio(task, resume=False))
        before = clio.context()
        archive_before = len(project.archive())
        assert before["summary"] is False and before["window_messages"] == archive_before

        # /session trim: the window shrinks into the thread summary, the archive keeps everything
        out = ok(clio("/session trim"))
        m = re.search(r"Trimmed (\d+) messages into the thread summary: ([\d,]+) -> ([\d,]+) tokens", out)
        assert m is not None, out
        n_dropped, t_before, t_after = (int(g.replace(",", "")) for g in m.groups())
        assert t_before == before["used_tokens"] and 0 < t_after < t_before and n_dropped > 0
        assert len(project.archive()) == archive_before
        assert len(project.stm()["window_seqs"]) == archive_before - n_dropped
        assert f"## Task\n{task}\n" in (project.clio_dir / "memory" / "session_progress.md").read_text()

        n_seen = len(server.chat_requests)
        ok(clio("[c01] Then src/mod04.py."))
        first = server.chat_requests[n_seen]
        # the request is the trimmed window plus the new message, and "after" was its size
        assert len(first["messages"]) == 1 + archive_before - n_dropped + 1
        assert near(t_after, server_tokens(server, first["messages"][:-1], first.get("tools")))
        summary = summary_of(first)
        # the task was still the latest user message at the trim: kept in the window, named current
        assert f"Current task: {task}" in summary and "Files read: src/mod00.py" in summary
        assert user_texts(first)[0] == task

        # /compact: the model writes the summary; the window becomes that summary
        last = server.chat_requests[-1]
        final = project.archive()[-1]
        assert final["role"] == "assistant"
        now = server_tokens(
            server, [*last["messages"], {"role": "assistant", "content": final["content"]}], last.get("tools")
        )
        n_seen = len(server.chat_requests)
        out = ok(clio("/compact the loader"))
        m = re.search(r"Compacted the conversation: ([\d,]+) -> ([\d,]+) tokens \(([\d,]+) freed\)", out)
        assert m is not None, out
        a, b, freed = (int(g.replace(",", "")) for g in m.groups())
        assert near(a, now) and freed == a - b > 0
        ask = server.chat_requests[n_seen]
        assert (
            last_user(ask).startswith(COMPACT_MARK)
            and "Pay particular attention to: the loader" in ask["messages"][-1]["content"]
        )

        n_seen = len(server.chat_requests)
        ok(clio("[c02] Are you still with me?"))
        nxt = server.chat_requests[n_seen]
        text = json.dumps(nxt["messages"])
        assert f"<conversation_summary>\\n{model.compact_text}\\n</conversation_summary>" in text
        assert f"Original task: {task}" in summary_of(nxt)
        # "after" was the request without the new message (here clio's notes are joined to it)
        typed_chars = len(user_texts(nxt)[-1]) + 2
        whole = server_tokens(server, nxt["messages"], nxt.get("tools"))
        assert near(b, whole - typed_chars / server.chars_per_token - (3 if len(user_texts(nxt)) > 1 else 0))
        # the compacted messages left the window, not the archive
        archive = project.archive()
        assert [m["meta"]["seq"] for m in archive] == list(range(len(archive)))
        assert [m["content"] for m in archive if m["role"] == "user"] == [
            task,
            "[c01] Then src/mod04.py.",
            "[c02] Are you still with me?",
        ]
        assert model.problems == []
        assert all(not rejected(server, r) and validate_request(r) is None for r in server.chat_requests)
