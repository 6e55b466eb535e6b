"""The agent loop in-process: a real App (clio/app/app.py) in a test project against the fake server.

Every exit of a turn (an answer, tool rounds then an answer, the iteration cap, an interrupt, each
reactive level after length rejections, a window stated in a rejection, a fatal endpoint error),
and the other doors of the loop (/session trim, /compact, /clear), asserted on the TurnResult, on
what the server received and on what the session archived on disk.
"""

from __future__ import annotations

import json
import math
import re
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from clio.app.app import App
from clio.llm.errors import AuthError, ContextLengthError, LLMError, ModelNotFound
from clio.tools.registry import REGISTRY
from testkit.clio_run import context_text, head_text, typed
from testkit.fakeserver import Fail, FakeServer, Reply
from testkit.scripted import AppFactory, RecordingUI, call

RECOVERY_MARK = "The conversation was shortened to fit the model's context window"
COMPACT_MARK = "Summarise the conversation so far"
SECRET = "sk-proj-" + "Q7vX2mN9pL4kR8sT1wY6zA3bC5dE0fG"  # an OpenAI-style key: redaction must catch it
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


# ---------------------------------------------------------------- helpers


def para(n: int, seed: int) -> str:
    """``n`` distinct words of filler (no two turns alike, nothing a redactor would touch)."""
    return " ".join(f"{WORDS[(i * seed) % len(WORDS)]}{i}" for i in range(n))


def disk_archive(app: App) -> list[dict[str, Any]]:
    """Every message the session wrote to disk, in order."""
    assert app.session is not None and app.session.dir is not None
    out: list[dict[str, Any]] = []
    for chunk in sorted((app.session.dir / "archive").glob("[0-9]*.json")):
        out += json.loads(chunk.read_text(encoding="utf-8"))
    return out


def system_text(body: dict[str, Any]) -> str:
    """The system message and clio's notes after it (memory, thread summary, recovery)."""
    return head_text(body) + "\n" + context_text(body)


def thread_summary(body: dict[str, Any]) -> str:
    m = re.search(r"<thread_summary>\n.*?</thread_summary>", system_text(body), re.S)
    return m.group(0) if m else ""


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


def roles(body: dict[str, Any]) -> list[str]:
    return [str(m["role"]) for m in body["messages"]]


def build_history(app: App, server: FakeServer, turns: int = 3, words: int = 400) -> None:
    """``turns`` plain turns of ``words`` words each way: a window of ~55% of a 16,000-token
    window's limit after three (over level 1's 50%, under the proactive trim's 75%)."""
    for t in range(turns):
        server.script(Reply(text=f"answer {t}: " + para(words, t + 3)))
        app.run_turn(f"question {t}: " + para(words, t + 1))


@pytest.fixture
def notes(project: Path) -> str:
    """A small file the model's read_file calls can read."""
    text = "the notes say: ship on friday\n"
    (project / "notes.txt").write_text(text, encoding="utf-8")
    return text


READ_NOTES = call("file_operations", operation="read_file", path="notes.txt")


class InterruptingUI(RecordingUI):
    """Ctrl-C while the answer streams: raises KeyboardInterrupt from the first text delta shown."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = True

    def text(self, delta: str) -> None:
        super().text(delta)
        if self.armed:
            self.armed = False
            raise KeyboardInterrupt


@contextmanager
def ctrl_c() -> Iterator[Callable[[float], None]]:
    """A real SIGINT to the main thread, ``fire(seconds)`` after it is called (from any thread).

    The handler raises KeyboardInterrupt only while the block runs, so a late timer cannot hit
    pytest itself."""
    armed = threading.Event()
    armed.set()
    timers: list[threading.Timer] = []
    main = threading.main_thread().ident
    assert main is not None and threading.current_thread() is threading.main_thread()

    def handler(signum: int, frame: FrameType | None) -> None:
        if armed.is_set():
            raise KeyboardInterrupt

    def fire(seconds: float) -> None:
        def kill() -> None:
            if armed.is_set():
                signal.pthread_kill(main, signal.SIGINT)

        timer = threading.Timer(seconds, kill)
        timers.append(timer)
        timer.start()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield fire
    finally:
        armed.clear()
        for t in timers:
            t.cancel()
        signal.signal(signal.SIGINT, previous)


# ---------------------------------------------------------------- the exits of a turn


def test_a_plain_answer_streams_archives_and_counts_usage(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    ui = RecordingUI()
    app = app_factory(ui=ui)
    answer = "The answer is forty-two, as the notes say."
    fake_server.script(Reply(text=answer, chunk_chars=6))
    result = app.run_turn("What is the answer?")

    assert (result.content, result.iterations, result.tool_calls, result.trims) == (answer, 1, 0, 0)
    assert not result.interrupted and not result.hit_cap
    [body] = fake_server.chat_requests
    assert roles(body) == ["system", "user"]
    assert typed(body["messages"][-1]["content"]) == "What is the answer?"
    assert tool_names(body) == [t["function"]["name"] for t in app.agent.tools()]
    completion = math.ceil(len(answer) / fake_server.chars_per_token)  # how the server counts
    assert result.usage == [
        {
            "prompt_tokens": fake_server.prompt_tokens(body),
            "completion_tokens": completion,
            "cached_tokens": 0,
        }
    ]
    assert ui.deltas == [answer[i : i + 6] for i in range(0, len(answer), 6)]
    assert ui.of("answer_done") == [(answer, False, True)]
    assert ui.of("waiting") == [()]

    archived = disk_archive(app)
    assert [(m["role"], m["content"]) for m in archived] == [
        ("user", "What is the answer?"),
        ("assistant", answer),
    ]
    assert archived[1]["meta"]["usage"] == result.usage[0]
    assert app.session is not None and app.session.info.usage["requests"] == 1


def test_tool_calls_get_one_result_each_in_the_next_request(
    app_factory: AppFactory, fake_server: FakeServer, notes: str
) -> None:
    ui = RecordingUI()
    app = app_factory(ui=ui)
    calls = [
        {**READ_NOTES, "id": "c_read"},
        {**call("file_operations", operation="read_file", path="missing.txt"), "id": "c_missing"},
        {**call("no_such_tool", x=1), "id": "c_unknown"},
    ]
    fake_server.script(Reply(text="Reading.", tool_calls=calls), Reply(text="We ship on Friday."))
    result = app.run_turn("When do we ship?")

    assert result.content == "We ship on Friday."
    assert (result.iterations, result.tool_calls, result.interrupted, result.hit_cap) == (2, 3, False, False)
    first, second = fake_server.chat_requests
    assert roles(second) == ["system", "user", "assistant", "tool", "tool", "tool"]
    assistant = second["messages"][2]
    assert [c["id"] for c in assistant["tool_calls"]] == ["c_read", "c_missing", "c_unknown"]
    results = second["messages"][3:]
    assert [m["tool_call_id"] for m in results] == ["c_read", "c_missing", "c_unknown"]
    assert notes.strip() in results[0]["content"]
    assert "missing.txt" in results[1]["content"]
    assert "unknown tool 'no_such_tool'" in results[2]["content"]
    # the first request's messages are a prefix of the second's (the loop only appends)
    assert second["messages"][: len(first["messages"])] == first["messages"]

    assert [(n, ok) for n, ok, _ in ui.of("tool_done")] == [
        ("file_operations", True),
        ("file_operations", False),
        ("no_such_tool", False),
    ]
    assert [e[0] for e in ui.events if e[0] in ("tool_start", "tool_done")] == ["tool_start", "tool_done"] * 3
    assert ui.of("answer_done") == [("Reading.", False, False), ("We ship on Friday.", False, True)]
    archived = disk_archive(app)
    assert [m["role"] for m in archived] == ["user", "assistant", "tool", "tool", "tool", "assistant"]
    assert [m["meta"].get("ok") for m in archived[2:5]] == [True, False, False]


def test_the_iteration_cap_stops_the_turn_with_every_call_answered(
    app_factory: AppFactory, fake_server: FakeServer, notes: str
) -> None:
    ui = RecordingUI()
    app = app_factory(ui=ui, max_iterations=3)
    fake_server.responder = lambda body: Reply(tool_calls=[READ_NOTES])  # a model that never stops
    result = app.run_turn("Loop forever.")

    assert result.hit_cap and not result.interrupted
    assert (result.iterations, result.tool_calls, result.content) == (3, 3, "")
    assert len(fake_server.chat_requests) == 3
    assert any("Stopped after 3 tool iterations" in n for n in ui.notices)
    archived = disk_archive(app)
    assert [m["role"] for m in archived] == ["user"] + ["assistant", "tool"] * 3

    # the next turn carries on from there: the server (which rejects unanswered calls) accepts it
    fake_server.responder = None
    fake_server.script(Reply(text="Stopping now."))
    assert app.run_turn("Go on.").content == "Stopping now."
    last = fake_server.chat_requests[-1]
    assert roles(last) == ["system", "user"] + ["assistant", "tool"] * 3 + ["user"]


def test_an_interrupted_answer_is_archived_and_the_next_turn_carries_it(
    app_factory: AppFactory, fake_server: FakeServer, notes: str
) -> None:
    ui = InterruptingUI()
    app = app_factory(ui=ui)
    fake_server.script(
        Reply(tool_calls=[{**READ_NOTES, "id": "c1"}]),
        Reply(text="We ship on Friday, unless the tests fail again.", chunk_chars=8),
    )
    result = app.run_turn("When do we ship?")

    assert result.interrupted and not result.hit_cap
    assert result.content == "We ship "  # what was streamed before Ctrl-C
    assert (result.iterations, result.tool_calls) == (2, 1)
    assert ui.of("answer_done")[-1] == ("We ship ", True, True)
    archived = disk_archive(app)
    assert [m["role"] for m in archived] == ["user", "assistant", "tool", "assistant"]
    assert archived[2]["tool_call_id"] == "c1"
    assert archived[3]["content"] == "We ship " and archived[3]["meta"]["interrupted"] is True

    fake_server.script(Reply(text="Friday."))
    assert app.run_turn("So?").content == "Friday."
    last = fake_server.chat_requests[-1]
    assert roles(last) == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert last["messages"][4]["content"] == "We ship\n\n[interrupted by the user]"  # said to be cut off


def test_ctrl_c_while_tool_calls_stream_answers_every_call_received(
    app_factory: AppFactory, fake_server: FakeServer, notes: str
) -> None:
    """A real SIGINT while the tool calls stream (after the first call's arguments): the calls
    received are archived and each gets an "interrupted" result; none of them runs."""
    ui = RecordingUI()
    app = app_factory(ui=ui)
    second = call("file_operations", operation="read_file", path="other.txt")
    with ctrl_c() as fire:

        def responder(body: dict[str, Any]) -> Reply:
            fake_server.responder = None
            # a chunk every 0.5 s: call 1's head, its arguments (1 s), call 2's head (1.5 s), its
            # arguments, the finish (2.5 s): Ctrl-C at 1.5 s leaves slack either way under load
            fire(1.5)
            return Reply(tool_calls=[READ_NOTES, second], delay=0.5, arg_chunk_chars=1000)

        fake_server.responder = responder
        result = app.run_turn("Read both files.")

    assert result.interrupted and result.tool_calls == 0
    assert ui.of("tool_start") == []  # nothing ran
    archived = disk_archive(app)
    assert archived[1]["role"] == "assistant" and archived[1]["meta"]["interrupted"] is True
    ids = [c["id"] for c in archived[1]["tool_calls"]]
    assert len(ids) >= 1
    results = archived[2:]
    assert [m["role"] for m in results] == ["tool"] * len(ids)
    assert [m["tool_call_id"] for m in results] == ids
    assert all("interrupted" in m["content"] for m in results)

    fake_server.script(Reply(text="Read nothing yet."))
    assert app.run_turn("Well?").content == "Read nothing yet."  # the server validated the history


# ---------------------------------------------------------------- length rejections


@pytest.mark.parametrize("rejections", [1, 2, 3])
def test_each_reactive_level_sends_a_smaller_request_with_the_recovery_message(
    app_factory: AppFactory, fake_server: FakeServer, notes: str, rejections: int
) -> None:
    ui = RecordingUI()
    app = app_factory(ui=ui)  # 16,000-token window: limit 12,000
    build_history(app, fake_server)
    limit = app.window.budget.limit
    assert 0.5 * limit < app.agent.used_tokens() < 0.75 * limit  # the premise: level 1 has to drop
    before = len(fake_server.chat_requests)
    # a turn with three tool rounds, then the endpoint rejects the request (no window stated)
    fake_server.script(
        Reply(tool_calls=[READ_NOTES]),
        Reply(tool_calls=[READ_NOTES]),
        Reply(tool_calls=[READ_NOTES]),
        *[Fail.context_length("ollama", 1, 2, 3)] * rejections,
        Reply(text="Done despite the small window."),
    )
    result = app.run_turn("The final question.")

    assert result.content == "Done despite the small window."
    assert result.trims == rejections and result.tool_calls == 3 and result.iterations == 4
    sent = fake_server.chat_requests[before:]
    assert len(sent) == 3 + rejections + 1
    rejected, retries = sent[3], sent[4:]
    sizes = [fake_server.prompt_tokens(b) for b in [rejected, *retries]]
    assert sizes == sorted(set(sizes), reverse=True), f"each retry must be smaller: {sizes}"
    assert RECOVERY_MARK not in system_text(rejected)
    for level, body in enumerate(retries, start=1):
        assert RECOVERY_MARK in system_text(body)
        assert "The final question." in system_text(body)  # the recovery names the task
        assert body["messages"][-1]["role"] == "tool"  # the unit the model works on is kept
        assert any(typed(str(m.get("content"))) == "The final question." for m in body["messages"])
        assert thread_summary(body), f"level {level}: what was dropped is summarised"
    if rejections >= 1:
        assert sizes[1] <= 0.5 * limit * 1.05  # level 1: half the limit
    if rejections >= 2:
        assert sizes[2] <= 0.25 * limit * 1.05  # level 2: a quarter
        assert roles(retries[1]).count("tool") > 1  # ...which still holds earlier rounds
    if rejections == 3:  # level 3: the task anchor and the last unit only
        assert roles(retries[2]) == ["system", "user", "assistant", "tool"]
    assert app.window.size == 16_000  # nothing stated, nothing learned
    assert ui.notices == []
    # the archive keeps everything the window dropped: 3 turns of 2, then user, 3 rounds of 2, answer
    assert len(disk_archive(app)) == 3 * 2 + 1 + 3 * 2 + 1


def test_a_fourth_rejection_escapes_as_context_length_error(
    app_factory: AppFactory, fake_server: FakeServer, notes: str
) -> None:
    app = app_factory()
    build_history(app, fake_server)
    before = len(fake_server.chat_requests)
    fake_server.script(Reply(tool_calls=[READ_NOTES]), *[Fail.context_length("ollama", 1, 2, 3)] * 4)
    with pytest.raises(ContextLengthError):
        app.run_turn("The final question.")
    sent = fake_server.chat_requests[before:]
    assert len(sent) == 1 + 4
    assert roles(sent[-1]) == ["system", "user", "assistant", "tool"]  # level 3 was tried last
    # the turn's messages are archived, every call answered: the next turn is accepted
    assert [m["role"] for m in disk_archive(app)[-3:]] == ["user", "assistant", "tool"]
    fake_server.script(Reply(text="fits now"))
    assert app.run_turn("Try again.").content == "fits now"


def test_a_rejection_stating_a_smaller_window_is_learned(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    ui = RecordingUI()
    app = app_factory(ui=ui)
    assert (app.window.size, app.agent.profile) == (16_000, "full")
    fake_server.context_limit = 4096  # the server's real gate, OpenAI's wording
    fake_server.script(Reply(text="Read it."))
    result = app.run_turn("Please look at this: " + "word " * 2800)

    assert result.content == "Read it." and result.trims == 1
    rejected, accepted = fake_server.chat_requests
    assert fake_server.prompt_tokens(rejected) > 4096 >= fake_server.prompt_tokens(accepted)
    assert app.window.size == 4096
    assert app.window.source == "stated by the endpoint in a rejection"
    assert app.agent.profile == "lean"  # the full profile's fixed part is over a third of 3,072
    assert tool_names(rejected) == REGISTRY.offered("full")
    assert tool_names(accepted) == REGISTRY.offered("lean")
    assert len(json.dumps(accepted["tools"])) < len(json.dumps(rejected["tools"]))
    [notice] = ui.notices
    assert "4,096 tokens, not 16,000" in notice and "lean tool profile" in notice
    figures = app.context_figures()
    assert (figures["context_window"], figures["profile"]) == (4096, "lean")

    # the next run of the same project starts from the learned window
    app.close()
    again = app_factory()
    assert again.window.size == 4096
    assert again.window.source == "stated by the endpoint in an earlier rejection"


# ---------------------------------------------------------------- fatal errors


@pytest.mark.parametrize(
    ("model", "fail", "error"),
    [
        ("fake-model", Fail.unauthorized(), AuthError),
        ("no-such-model", Fail.not_found_model("no-such-model"), ModelNotFound),
    ],
)
def test_a_fatal_error_escapes_after_the_message_was_archived(
    app_factory: AppFactory, fake_server: FakeServer, model: str, fail: Fail, error: type[LLMError]
) -> None:
    app = app_factory(model=model)
    on_disk_when_sent: list[list[dict[str, Any]]] = []

    def responder(body: dict[str, Any]) -> Fail:
        on_disk_when_sent.append(disk_archive(app))  # read by the server thread as the request arrives
        return fail

    fake_server.responder = responder
    with pytest.raises(error):
        app.run_turn("Hello there")
    assert len(fake_server.chat_requests) == 1  # not retried
    assert fake_server.chat_requests[0]["model"] == model
    [archived] = on_disk_when_sent
    assert [(m["role"], m["content"]) for m in archived] == [("user", "Hello there")]
    assert [m["role"] for m in disk_archive(app)] == ["user"]


# ---------------------------------------------------------------- trim, compact, clear


def test_trim_now_folds_the_oldest_half_into_the_thread_summary(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    app = app_factory()
    empty = app.trim_now()
    assert empty.dropped == 0 and empty.before == empty.after
    build_history(app, fake_server)
    archived = len(disk_archive(app))
    report = app.trim_now()

    assert report.dropped > 0 and report.after < report.before
    assert report.after <= 0.5 * app.window.budget.limit
    figures = app.context_figures()
    assert figures["summary"] is True
    assert figures["window_messages"] == archived - report.dropped
    assert len(disk_archive(app)) == archived  # trimming never touches the archive
    checkpoint = app.paths.memory_dir / "session_progress.md"
    assert "question 2:" in checkpoint.read_text(encoding="utf-8")  # names the latest task

    fake_server.script(Reply(text="still here"))
    app.run_turn("And now?")
    body = fake_server.chat_requests[-1]
    assert "question 0:" in thread_summary(body)  # the dropped task is summarised...
    assert not any(str(m.get("content")).startswith("question 0:") for m in body["messages"])  # ...not sent
    assert roles(body)[-1] == "user" and len(body["messages"]) == 1 + archived - report.dropped + 1


def test_compact_sends_the_compact_prompt_redacted_and_continues_from_the_summary(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    app = app_factory()
    assert app.compact("anything") is None  # nothing to compact yet
    assert fake_server.chat_requests == []
    build_history(app, fake_server, turns=2, words=100)
    before = len(fake_server.chat_requests)
    summary = "SUMMARY: the user asked two questions and got two answers."
    fake_server.script(Reply(text=summary))
    report = app.compact(f"the key {SECRET}")

    assert report is not None and report.after < report.before
    [body] = fake_server.chat_requests[before:]
    ask = body["messages"][-1]
    assert ask["role"] == "user" and ask["content"].startswith(COMPACT_MARK)
    assert "Pay particular attention to: the key" in ask["content"]
    raw = fake_server.requests[-1].raw.decode()
    assert SECRET not in raw and SECRET[:12] not in raw  # the redaction net covered the request
    # the same head as a turn's (system message and tools, for prompt caches), no call wanted
    assert body["tools"] == fake_server.chat_requests[before - 1]["tools"] and body["tool_choice"] == "none"
    assert body["messages"][0] == fake_server.chat_requests[before - 1]["messages"][0] and body["max_tokens"] == 1200
    assert any(m.get("content", "").startswith("question 1:") for m in body["messages"])

    archived = disk_archive(app)
    assert archived[-1]["meta"]["kind"] == "compact" and summary in archived[-1]["content"]
    fake_server.script(Reply(text="carrying on"))
    app.run_turn("Next step?")
    after = fake_server.chat_requests[-1]
    assert summary in json.dumps(after["messages"])
    assert not any(str(m.get("content")).startswith("question 1:") for m in after["messages"])


def test_compact_retries_after_a_length_rejection(app_factory: AppFactory, fake_server: FakeServer) -> None:
    app = app_factory()
    build_history(app, fake_server)
    before = len(fake_server.chat_requests)
    fake_server.script(Fail.context_length("ollama", 1, 2, 3), Reply(text="SUMMARY: three questions."))
    report = app.compact("")

    assert report is not None
    rejected, retried = fake_server.chat_requests[before:]
    assert fake_server.prompt_tokens(retried) < fake_server.prompt_tokens(rejected)
    for body in (rejected, retried):
        assert body["messages"][-1]["content"].startswith(COMPACT_MARK)
        assert "Pay particular attention" not in body["messages"][-1]["content"]
    assert RECOVERY_MARK in system_text(retried)
    assert disk_archive(app)[-1]["meta"]["kind"] == "compact"


def test_compact_without_a_summary_leaves_the_conversation_as_it_was(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    app = app_factory()
    build_history(app, fake_server, turns=1, words=50)
    window = list(app.agent.engine.window)
    archived = disk_archive(app)
    fake_server.script(Reply(text="   "))
    with pytest.raises(ValueError, match="no summary"):
        app.compact("focus")
    assert app.agent.engine.window == window
    assert disk_archive(app) == archived


def test_compact_that_would_not_shrink_the_window_is_not_applied(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    ui = RecordingUI()
    app = app_factory(ui=ui)
    build_history(app, fake_server, turns=1, words=5)
    window = list(app.agent.engine.window)
    archived = disk_archive(app)
    fake_server.script(Reply(text="SUMMARY " + "a long retelling of a short talk " * 60))
    report = app.compact("")

    assert report is not None and not report.applied and report.after >= report.before
    assert app.agent.engine.window == window and app.agent.engine.summary is None
    assert disk_archive(app) == archived  # the summary was not archived either
    assert ui.events[-2:] == [("waiting",), ("pause",)]  # the request's spinner ended with it


def test_clear_window_starts_the_next_request_afresh(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    app = app_factory()
    build_history(app, fake_server, turns=2, words=50)
    app.trim_now()  # leaves a thread summary, which /clear drops too
    app.clear_window()

    figures = app.context_figures()
    assert (figures["window_messages"], figures["summary"], figures["archived_messages"]) == (0, False, 4)
    fake_server.script(Reply(text="fresh start"))
    app.run_turn("New topic.")
    body = fake_server.chat_requests[-1]
    assert roles(body) == ["system", "user"]
    assert typed(body["messages"][-1]["content"]) == "New topic."
    assert thread_summary(body) == ""
    assert len(disk_archive(app)) == 6  # the archive keeps every message


@pytest.mark.parametrize("fake_server", [{"model_info": {"meta": {"n_ctx": 8192}}}], indirect=True)
def test_a_local_endpoint_that_states_its_window_is_asked_for_at_most_the_reply_reserve(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    # a small local model that rambles would otherwise generate until its context is full
    app = app_factory(context_window=None)  # the window comes from the endpoint's model list
    fake_server.script(Reply(text="short"))
    app.run_turn("hello")
    [body] = fake_server.chat_requests
    assert app.window.size == 8192 and app.window.stated_by_endpoint
    assert body["max_tokens"] == app.window.budget.reserve == 2048  # min(4096, window / 4)

    configured = app_factory(context_window=None, max_output_tokens=300)
    fake_server.script(Reply(text="short"))
    configured.run_turn("hello")
    assert fake_server.chat_requests[-1]["max_tokens"] == 300  # the user's setting wins

    guessed = app_factory(context_window=8192)  # a window clio was told, not the server's own
    fake_server.script(Reply(text="short"))
    guessed.run_turn("hello")
    assert "max_tokens" not in fake_server.chat_requests[-1]


def test_a_remote_endpoint_gets_no_cap_unless_configured(app_factory: AppFactory) -> None:
    app = app_factory(context_window=8192)
    assert app.orchestrator is not None
    app.orchestrator.limits = replace(app.orchestrator.limits, cap_replies=False)  # a non-local endpoint's
    app.window.source = "stated by the endpoint in a rejection"
    assert app.orchestrator.reply_cap() is None  # o-series models reject max_tokens; OpenAI bills output
    app.orchestrator.limits = replace(app.orchestrator.limits, max_output_tokens=500)
    assert app.orchestrator.reply_cap() == 500
