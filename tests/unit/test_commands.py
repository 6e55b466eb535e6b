"""Slash commands in-process: ``run_command(app, "/context --json")`` against a real App (clio/app/app.py)
in a test project, the fake server as the endpoint. What a command prints, what it changes in the
app and the session, and what it sends (or does not send) to the server.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import clio.commands.builtin  # noqa: F401  (registers the commands)
from clio.app.app import App
from clio.commands.registry import COMMANDS, CommandError, ExitRequested, run_command
from clio.store.session_info import Digest
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import AppFactory, call, console_text

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def para(n: int, seed: int) -> str:
    return " ".join(f"{WORDS[(i * seed) % len(WORDS)]}{i}" for i in range(n))


def out(app: App) -> str:
    return console_text(app.console)


def run(app: App, line: str) -> str:
    """Run one command line; what it printed on the console (only this command's output)."""
    start = len(out(app))
    run_command(app, line)
    return out(app)[start:]


def context_json(app: App) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run(app, "/context --json"))
    return data


def chat_count(server: FakeServer) -> int:
    return len(server.chat_requests)


def history(app: App, server: FakeServer, turns: int, words: int) -> None:
    for t in range(turns):
        server.script(Reply(text=f"answer {t}: " + para(words, t + 3)))
        app.run_turn(f"question {t}: " + para(words, t + 1))


# ---------------------------------------------------------------- /context


def test_context_json_matches_the_app(app_factory: AppFactory, fake_server: FakeServer) -> None:
    app = app_factory()
    data = context_json(app)
    assert data == json.loads(json.dumps(app.context_figures()))
    assert (data["context_window"], data["window_source"], data["profile"]) == (
        16_000,
        "set by the test",
        "full",
    )
    assert data["model"] == "fake-model"
    assert data["limit_tokens"] == app.window.budget.limit == 16_000 - data["reserve_output"]
    assert data["tools"] == [t["function"]["name"] for t in app.agent.tools()]
    assert (data["window_messages"], data["archived_messages"], data["summary"]) == (0, 0, False)
    assert chat_count(fake_server) == 0  # /context asks the endpoint nothing

    fake_server.script(Reply(text="hello"))
    app.run_turn("hi")
    data = context_json(app)
    assert (data["window_messages"], data["archived_messages"]) == (2, 2)
    assert data["ratio_samples"] == 1  # learned from the turn's usage report
    assert data["used_tokens"] > data["fixed_tokens"]


def test_context_in_a_small_window_shows_the_lean_profile(app_factory: AppFactory) -> None:
    app = app_factory(context_window=4096)
    data = context_json(app)
    assert (data["context_window"], data["profile"]) == (4096, "lean")
    assert data["full_fixed_tokens"] > data["limit_tokens"] / 3  # why it is lean
    text = run(app, "/context")
    assert "of 4,096 tokens" in text and "set by the test" in text
    assert f"lean profile: {len(data['tools'])} tools" in text
    assert f"{data['full_fixed_tokens']:,} tokens" in text


def test_context_window_from_the_endpoints_model_list(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    fake_server.model_info = {"meta": {"n_ctx": 12_288}}  # llama-server states its -c here
    app = app_factory(context_window=None)
    assert context_json(app)["window_source"] == "the default"
    fake_server.script(Reply(text="ok"))
    app.run_turn("hello")  # the window is asked for before the first request
    data = context_json(app)
    assert (data["context_window"], data["window_source"]) == (12_288, "stated by the endpoint's model list")


# ---------------------------------------------------------------- /session


def test_session_show_name_and_list(app_factory: AppFactory, fake_server: FakeServer) -> None:
    app = app_factory()
    fake_server.script(Reply(text="ok"))
    app.run_turn("Fix the flaky login test")
    session = app.session
    assert session is not None

    shown = run(app, "/session show")
    assert session.id in shown and "fake-model" in shown
    assert "Fix the flaky login test" in shown  # the automatic name
    assert str(session.dir) in shown
    assert run(app, "/session") == shown  # show is the default
    assert "digest" not in shown  # none written yet
    session.info.digests = [Digest(2, f"Settled number {n}: the login test waits for the token.", 1.0e9) for n in range(5)]
    digests = run(app, "/session show")
    assert "Settled number 4" in digests and "Settled number 2" in digests and "Settled number 1" not in digests
    assert "(the newest 3 of 5 digests: /session digests lists them all)" in digests and "through message 2" in digests
    assert "[from file content]" not in digests
    session.info.digests = [Digest(2, "Read from the notes: the token waits 5 s.", 1.0e9, True)]
    marked = " ".join(run(app, "/session show").split())  # the table wraps its long cells
    assert "the token waits 5 s. [from file content]" in marked  # marked as its entries are
    session.info.digests = []

    assert "no digest yet" in run(app, "/session digests")
    session.info.digests = [Digest(2, f"Settled number {n}.", 1.0e9, n == 1) for n in range(3)]
    listed = run(app, "/session digests")
    assert [ln.split(",")[0][:2] for ln in listed.splitlines()] == ["1.", "2.", "3."]
    assert "Settled number 1. [from file content]" in listed and "Settled number 0." in listed
    for bad in ("drop", "drop x", "remove 1", "drop 1 2"):
        with pytest.raises(CommandError, match=r"Usage: /session digests \[drop <n>\]"):
            run(app, f"/session digests {bad}")
    with pytest.raises(CommandError, match="No digest 4: this session has 3 digests."):
        run(app, "/session digests drop 4")
    assert "Kept." in run(app, "/session digests drop 2") and len(session.info.digests) == 3  # nobody said yes
    app.settings.yes = True
    assert "Dropped digest 2 (through message 2)" in run(app, "/session digests drop 2")
    app.settings.yes = False
    assert [d.text for d in session.info.digests] == ["Settled number 0.", "Settled number 2."]
    assert [d.text for d in app.sessions.info(session.id).digests] == ["Settled number 0.", "Settled number 2."]  # on disk
    session.info.digests = []
    session.save_meta()

    odd = "fix [bold]the[/] parser [/red]"  # a name (or a digest) is text, never rich markup
    assert f"Session named '{odd}'." in run(app, f"/session name {odd}")
    assert odd in run(app, "/session show") and odd in run(app, "/session list")
    assert "Session named 'login work'." in run(app, "/session name login work")
    assert session.info.name == "login work"
    assert session.dir is not None
    on_disk = json.loads((session.dir / "session.json").read_text(encoding="utf-8"))
    assert on_disk["name"] == "login work"
    with pytest.raises(CommandError, match="Usage: /session name"):
        run_command(app, "/session name")

    first = session.id
    app.open_session()  # a second session; the first stays on disk
    fake_server.script(Reply(text="ok"))
    app.run_turn("Second task")
    assert app.session is not None and app.session.id != first
    listed = run(app, "/session list")
    lines = [line.strip() for line in listed.splitlines()]
    assert any(line.startswith(f"* {app.session.id}") for line in lines)  # the current one is marked
    assert any(line.startswith(first) and "login work" in line for line in lines)

    switched = run(app, f"/session switch {first}")
    assert app.session is not None and app.session.id == first
    assert "Switched to session" in switched and "2 messages" in switched
    with pytest.raises(CommandError, match="Unknown /session subcommand 'frob'"):
        run_command(app, "/session frob")


def test_session_trim_reports_what_it_folded(app_factory: AppFactory, fake_server: FakeServer) -> None:
    app = app_factory()
    assert "Nothing to trim: the window holds 0 message(s)" in run(app, "/session trim")
    history(app, fake_server, turns=3, words=300)
    before = context_json(app)
    text = run(app, "/session trim")
    after = context_json(app)
    dropped = before["window_messages"] - after["window_messages"]
    assert dropped > 0 and after["summary"] is True
    assert f"Trimmed {dropped} messages into the thread summary" in text
    assert f"{before['used_tokens']:,} -> {after['used_tokens']:,} tokens" in text
    assert after["archived_messages"] == before["archived_messages"] == 6
    with pytest.raises(CommandError, match="Usage: /session trim"):
        run_command(app, "/session trim soon")


# ---------------------------------------------------------------- /clear, /compact, /todo


def test_clear_empties_the_window_but_not_the_archive(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    app = app_factory()
    history(app, fake_server, turns=2, words=20)
    assert "Conversation window cleared" in run(app, "/clear")
    data = context_json(app)
    assert (data["window_messages"], data["archived_messages"]) == (0, 4)
    fake_server.script(Reply(text="fresh"))
    app.run_turn("new topic")
    assert [m["role"] for m in fake_server.chat_requests[-1]["messages"]] == ["system", "user"]


def test_compact_reports_and_continues_from_the_summary(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    app = app_factory()
    assert run(app, "/compact") == "Nothing to compact yet.\n"
    assert chat_count(fake_server) == 0
    history(app, fake_server, turns=2, words=200)
    sent = chat_count(fake_server)
    fake_server.script(Reply(text="SUMMARY: two questions about greek letters."))
    before = context_json(app)["used_tokens"]
    text = run(app, "/compact the letters")
    after = context_json(app)
    assert chat_count(fake_server) == sent + 1
    assert (
        "Pay particular attention to: the letters."
        in fake_server.chat_requests[-1]["messages"][-1]["content"]
    )
    assert f"Compacted the conversation: {before:,} -> {after['used_tokens']:,} tokens" in text
    assert after["used_tokens"] < before and after["window_messages"] == 1

    fake_server.script(Reply(text=""))
    with pytest.raises(CommandError, match="no summary"):
        run_command(app, "/compact")


def test_todo_shows_the_list_the_model_wrote(app_factory: AppFactory, fake_server: FakeServer) -> None:
    app = app_factory()
    assert run(app, "/todo") == "No todos in this session.\n"
    items = ["reproduce the bug", "write the fix"]
    fake_server.script(
        Reply(tool_calls=[call("todo_operations", operation="write", items=items)]),
        Reply(text="planned"),
    )
    app.run_turn("plan it")
    shown = run(app, "/todo")
    assert "1. reproduce the bug" in shown and "2. write the fix" in shown
    assert "(0/2 done)" in shown
    assert [t["content"] for t in app.todos()] == items


# ---------------------------------------------------------------- /help, /model, unknown


def test_help_lists_every_command_and_explains_one(app_factory: AppFactory, fake_server: FakeServer) -> None:
    app = app_factory()
    listing = run(app, "/help")
    for name, cmd in COMMANDS.items():
        assert f"/{name}" in listing and cmd.help in listing, name
    one = run(app, "/help session")
    assert COMMANDS["session"].usage in one and "subcommands: show, list" in one
    with pytest.raises(CommandError, match="No command /nope"):
        run_command(app, "/help nope")
    assert chat_count(fake_server) == 0


def test_help_shows_each_usage_as_written(app_factory: AppFactory) -> None:
    app = app_factory()
    listing = run(app, "/help")
    for name, cmd in COMMANDS.items():
        assert f"/{name}" in listing, name
        # one command's help: the usage as written (brackets and all), however the console wraps it
        assert "".join(cmd.usage.split()) in "".join(run(app, f"/help {name}").split()), name
    assert "/compact [focus]" in listing


@pytest.mark.parametrize("fake_server", [{"model": "fake-model", "api_key": "k"}], indirect=True)
def test_model_lists_the_endpoints_models_and_switches(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    app = app_factory()
    shown = run(app, "/model")
    assert f"model: fake-model at {fake_server.base_url}" in shown
    assert "available: fake-model" in shown
    listing = [r for r in fake_server.requests if r.method == "GET" and r.path.rstrip("/") == "/v1/models"]
    assert len(listing) == 1 and listing[0].headers["authorization"] == "Bearer k"

    with pytest.raises(CommandError, match=r"The endpoint has no model 'fake-modle'; did you mean fake-model\?"):
        run_command(app, "/model fake-modle")  # a typo: the endpoint lists its models
    assert app.settings.model == "fake-model"
    switched = run(app, "/model gpt-4 --force")  # not listed, taken as asked; window from the model table
    assert "model set to gpt-4" in switched and "window 16,000 tokens" in switched
    assert app.settings.model == "gpt-4" and context_json(app)["model"] == "gpt-4"
    fake_server.script(Reply(text="from the other model"))
    assert app.run_turn("hi").content == "from the other model"
    assert fake_server.chat_requests[-1]["model"] == "gpt-4"


def test_model_listing_failure_is_reported_not_raised(
    app_factory: AppFactory, fake_server: FakeServer
) -> None:
    app = app_factory()
    fake_server.api_key = "another-key"  # /v1/models now answers 401
    assert "model: fake-model" in run(app, "/model")
    assert "could not list the endpoint's models" in console_text(app.err)


def test_unknown_commands_and_exit(app_factory: AppFactory) -> None:
    app = app_factory()
    with pytest.raises(CommandError, match=r"Unknown command /frobnicate\. Known commands: .*/context"):
        run_command(app, "/frobnicate now")
    with pytest.raises(ExitRequested):
        run_command(app, "/quit")
