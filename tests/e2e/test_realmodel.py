"""clio against a real model server: llama.cpp's llama-server with Qwen2.5-Coder-0.5B (docs/real-model.md).

Every test runs the INSTALLED ``clio`` as a subprocess against a real llama-server (started once per
module on a free loopback port, stopped afterwards), through a recording proxy that shows what clio
sent and what the server answered (testkit/realmodel_harness.py). They assert protocol and behaviour,
not the model's wisdom. Skipped, with the reason, when ``scripts/real-model.sh`` has not been run.

Settings in every project: ``temperature: 0`` (deterministic), ``max_output_tokens: 256`` (bounds
runaway generation: with clio's tools this model chains calls until stopped), ``max_iterations: 2``
(this model never ends a turn after a tool result, see test 3), ``context_window`` = the server's
``-c``, ``model`` = the server's alias.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.clio_run import context_text, session_meta, typed, user_texts, without_context
from testkit.realmodel_harness import Backend, Exchange, RealProject, notes_file, real_backend, request_chars
from testkit.scripted import is_consolidation

pytestmark = pytest.mark.realmodel

CTX = 4096
SMALL_CTX = 2048
# consolidate off: these tests count a run's own requests; the read-back a run's detached child may
# send of an earlier session (tests/e2e/test_consolidation_background.py) is not theirs
SETTINGS: dict[str, Any] = {"temperature": 0, "max_output_tokens": 256, "max_iterations": 2, "consolidate": False}
CAP_EXIT = 3  # clio's exit code when a turn stopped at max_iterations
CAP_NOTICE = "Stopped after 2 tool iterations"


@pytest.fixture(scope="module")
def backend() -> Iterator[Backend]:
    with real_backend(CTX) as b:
        yield b


@pytest.fixture(scope="module")
def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One project path for the module: the server's cached prompt prefix then serves every test."""
    return tmp_path_factory.mktemp("realmodel") / "project"


@pytest.fixture
def project(shared_root: Path, backend: Backend, tmp_path: Path) -> RealProject:
    return RealProject(shared_root, tmp_path / "home", backend).reset(**SETTINGS)


def answered(exchanges: list[Exchange]) -> list[Exchange]:
    return [e for e in exchanges if e.status == 200]


# ---------------------------------------------------------------- 1. a streamed answer renders


def test_streamed_answer_renders(project: RealProject) -> None:
    r = project.run("Say hello in five words.")
    assert r.returncode == 0, r.stderr
    chats = project.proxy.chat()
    assert chats and all(e.status == 200 for e in chats), [e.status for e in chats]
    last = chats[-1]
    assert last.body["stream"] is True
    assert last.body.get("stream_options") == {"include_usage": True}
    assert last.body["model"] == project.backend.model
    assert last.body.get("temperature") == 0 and last.body.get("max_tokens") == 256
    assert last.content_chunks > 1, "the server streamed the answer in one piece"
    assert last.finish_reason in ("stop", "length")
    assert last.usage is not None and last.usage["completion_tokens"] > 0
    # the final answer goes to stdout exactly as the server streamed it
    assert r.stdout.strip(), r.stderr
    assert r.stdout.strip() == last.content.strip()


# ---------------------------------------------------------------- 2. usage recorded, ratio learned


def test_usage_recorded_and_ratio_learned(project: RealProject) -> None:
    prompts = ("Say hello in five words.", "Name three colours.", "What is seven times six?")
    for prompt in prompts:
        r = project.run(prompt)
        assert r.returncode in (0, CAP_EXIT), r.stderr
    chats = project.proxy.chat()
    ok = answered(chats)
    assert len(ok) == len(chats) >= len(prompts), [e.status for e in chats]
    usages = [e.usage for e in ok]
    assert all(u is not None and u["prompt_tokens"] > 0 for u in usages), "a reply came without usage"

    # what clio stored is what the server reported: per request in each assistant message's
    # meta.usage, summed in session.json
    stored: list[dict[str, int]] = []
    totals = {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0, "requests": 0}
    for sdir in project.sessions():
        stored += [m["meta"]["usage"] for m in project.archive(sdir) if m["role"] == "assistant"]
        for key, value in session_meta(sdir)["usage"].items():
            totals[key] = totals.get(key, 0) + value

    def triple(u: dict[str, Any]) -> tuple[int, int, int]:
        cached = u.get("cached_tokens", (u.get("prompt_tokens_details") or {}).get("cached_tokens", 0))
        return (u["prompt_tokens"], u["completion_tokens"], cached)

    assert [triple(u) for u in stored] == [triple(u) for u in usages if u is not None]
    assert totals["requests"] == len(ok)
    assert totals["prompt_tokens"] == sum(u["prompt_tokens"] for u in usages if u is not None)
    assert totals["cached_tokens"] == sum(triple(u)[2] for u in usages if u is not None)

    # the server's real ratio, per request: characters clio sent (as recorded on the wire) per
    # prompt token the server counted for them (template tokens included, as clio's estimator sees it)
    real = [request_chars(e.body) / e.usage["prompt_tokens"] for e in ok if e.usage is not None]
    mean_real = sum(real) / len(real)
    state = project.ratios().get(project.backend.model)
    assert isinstance(state, dict), project.ratios()
    learned = state["chars_per_token"]
    assert state["samples"] == len(ok), state
    assert abs(learned - mean_real) <= 0.15 * mean_real, (learned, real)
    # learned from these replies: an average of the per-request ratios (clio also subtracts a few
    # tokens of per-message overhead, which raises its samples by 1-2%)
    assert min(real) * 0.99 <= learned <= max(real) * 1.03, (learned, real)


# ---------------------------------------------------------------- 3. a tool call recovered from text runs

MASCOT = "Quillby-7391"  # not secret-looking: "The secret token is ..." gets redacted


def test_tool_call_recovered_executed_and_result_accepted(project: RealProject) -> None:
    # a call must happen: tool_choice "required" on the turn's first request, then "auto"
    project.reset(**SETTINGS, tool_choice="required")
    (project.root / "hello.txt").write_text(f"The mascot of this project is a walrus named {MASCOT}.\n")
    r = project.run("Use file_operations to read hello.txt, then tell me the mascot's name.")
    # This model never ends a turn after a tool result: it calls again (the same read, todo writes),
    # on each of ~15 phrasings that got it to read the file. So the turn ends at max_iterations
    # (exit 3, with clio's notice) or, should the model answer in words, with exit 0. The follow-up
    # request's acceptance is checked on the wire below.
    assert r.returncode in (0, CAP_EXIT), r.stderr
    if r.returncode == CAP_EXIT:
        assert CAP_NOTICE in r.stderr, r.stderr

    chats = project.proxy.chat()
    assert all(e.status == 200 for e in chats), [(e.status, e.reply[:200]) for e in chats]
    assert all(e.native_tool_calls == 0 for e in chats), "llama-server sent native tool_calls after all"
    first = chats[0]
    assert "file_operations" in first.content  # the call came as text
    assert [e.body.get("tool_choice") for e in chats] == ["required"] + ["auto"] * (len(chats) - 1)

    msgs = project.archive()
    i, call = next(
        (i, c)
        for i, m in enumerate(msgs)
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
        if c["function"]["name"] == "file_operations"
    )
    args = json.loads(call["function"]["arguments"])
    assert args["operation"] == "read_file" and str(args["path"]).endswith("hello.txt"), args
    content = msgs[i].get("content") or ""
    assert '"arguments"' not in content and "```json" not in content, content  # the block was taken out
    result = msgs[i + 1]
    assert result["role"] == "tool" and result["tool_call_id"] == call["id"]
    assert MASCOT in result["content"]

    # the request after the tool result carried the call in the standard form and was accepted
    follow = next(e for e in chats if any(m.get("tool_call_id") == call["id"] for m in e.body["messages"]))
    sent = follow.body["messages"]
    j = next(k for k, m in enumerate(sent) if any(c["id"] == call["id"] for c in m.get("tool_calls") or []))
    assert sent[j]["role"] == "assistant"
    assert [c for c in sent[j]["tool_calls"] if c["id"] == call["id"]] == [
        {
            "id": call["id"],
            "type": "function",
            "function": {"name": "file_operations", "arguments": call["function"]["arguments"]},
        }
    ]
    answer = next(m for m in sent[j + 1 :] if m["role"] == "tool" and m["tool_call_id"] == call["id"])
    assert MASCOT in answer["content"]
    assert follow.status == 200 and follow.usage is not None and follow.finish_reason is not None


# ---------------------------------------------------------------- 4. a resumed session continues


def test_resumed_session_continues(project: RealProject) -> None:
    r1 = project.run("My favourite colour is teal. Reply with OK.")
    assert r1.returncode in (0, CAP_EXIT), r1.stderr
    first_run = project.archive()
    assert first_run and first_run[0]["content"].startswith("My favourite colour")
    n_first = len(project.proxy.chat())

    r2 = project.run("What is my favourite colour?", "--resume")
    assert r2.returncode in (0, CAP_EXIT), r2.stderr
    assert len(project.sessions()) == 1, "--resume started a new session"
    opening = project.proxy.chat()[n_first]
    assert opening.status == 200
    sent = [
        {**m, "content": without_context(str(m.get("content") or ""))} if m["role"] == "user" else m
        for m in opening.body["messages"]
        if m["role"] != "system" and not (m["role"] == "user" and not typed(str(m.get("content") or "")))
    ]

    def view(m: dict[str, Any]) -> tuple[Any, ...]:
        calls = tuple(c["id"] for c in m.get("tool_calls") or [])
        return (m["role"], m.get("content") or "", calls, m.get("tool_call_id"))

    assert [view(m) for m in sent[: len(first_run)]] == [view(m) for m in first_run]
    assert sent[len(first_run)] == {"role": "user", "content": "What is my favourite colour?"}
    whole = project.archive()
    assert [view(m) for m in whole[: len(first_run)]] == [view(m) for m in first_run]
    assert whole[len(first_run)]["content"] == "What is my favourite colour?"


# ---------------------------------------------------------------- 5. a small window, a long session


@pytest.fixture(scope="module")
def small_backend() -> Iterator[Backend]:
    with real_backend(SMALL_CTX) as b:
        yield b


def test_small_window_long_session_carries_on(
    small_backend: Backend, shared_root: Path, tmp_path: Path
) -> None:
    project = RealProject(shared_root, tmp_path / "home", small_backend).reset(**SETTINGS)
    names = [f"notes_{k}.txt" for k in range(1, 4)]
    for k, name in enumerate(names):
        notes_file(project.root / name, k)
    results = []
    for k, name in enumerate(names):
        r = project.run(f"Read {name} with file_operations.", *(["--resume"] if k else []))
        results.append(r.returncode)
        assert "too long for the model's context window" not in r.stderr, (results, r.stderr)
        assert r.returncode in (0, CAP_EXIT), (results, r.stderr)
    chats = [e for e in project.proxy.chat() if not is_consolidation(e.body)]  # the turns (read-backs aside)
    rejections = [e for e in chats if e.status == 400 and "exceed" in e.reply.decode(errors="replace")]
    assert all(e.status == 200 for e in chats if e not in rejections), [e.status for e in chats]
    # the lean profile: a 2,048-token window cannot carry the full system prompt and seven tools
    lean = ["file_operations", "version_control", "terminal_operations"]
    assert all([t["function"]["name"] for t in e.body["tools"]] == lean for e in chats)
    ok = [e for e in chats if e.status == 200]
    assert all(e.usage is not None and e.usage["total_tokens"] <= SMALL_CTX for e in ok)
    assert len(project.sessions()) == 1
    archive = project.archive()
    stm = json.loads((project.sessions()[0] / "stm.json").read_text(encoding="utf-8"))
    trims = len({m["meta"]["thread"] for m in archive}) - 1  # every trim starts a new thread
    assert len(stm["window_seqs"]) < len(archive), (stm, len(archive))
    assert trims >= 1 or rejections, "no trim and no rejection: the files did not press on the window"
    # the session carried on: the last request holds the latest task and the summary of what left
    assert f"Read {names[-1]} with file_operations." in user_texts(ok[-1].body)
    assert "<thread_summary>" in context_text(ok[-1].body)
    # every read reached the session whole: in the archive, or (too large for this window) stored
    # under the session with a preview and a handle in the archive
    reads = 0
    for m in archive:
        if m["role"] != "tool" or "lines 1-" not in (m.get("content") or ""):
            continue
        content = m["content"]
        assert "cut to fit the context window" not in content, content[-300:]
        if "handle '" in content:
            handle = content.split("handle '")[1].split("'")[0]
            content = (project.sessions()[0] / "results" / f"{handle}.txt").read_text(encoding="utf-8")
        assert any((project.root / n).read_text(encoding="utf-8") in content for n in names), content[:300]
        reads += 1
    assert reads >= len(names)


# ---------------------------------------------------------------- 6. the window the server states


def test_window_stated_by_the_server_is_used(
    small_backend: Backend, shared_root: Path, tmp_path: Path
) -> None:
    """No context_window configured: clio reads llama-server's -c from /v1/models before its first
    request, so a 2,048-token server gets the lean profile at once instead of a rejection."""
    project = RealProject(shared_root, tmp_path / "home", small_backend).reset(**SETTINGS)
    config = project.root / ".clio" / "config.yaml"
    config.write_text(
        "".join(
            line + "\n" for line in config.read_text().splitlines() if not line.startswith("context_window")
        ),
        encoding="utf-8",
    )
    r = project.run("Say hello in five words.")
    assert r.returncode in (0, CAP_EXIT), r.stderr
    assert "the endpoint serves a 2,048-token context window" in " ".join(r.stderr.split())
    paths = [e.path for e in project.proxy.exchanges]
    assert paths[0].endswith("/models") and paths[1].endswith("/chat/completions"), paths
    chats = project.proxy.chat()
    assert all(e.status == 200 for e in chats), [e.status for e in chats]
    assert [t["function"]["name"] for t in chats[0].body["tools"]] == [
        "file_operations",
        "version_control",
        "terminal_operations",
    ]
