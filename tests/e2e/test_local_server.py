"""A local server just works (issue 35): without ``--model`` clio uses the one model the server's
``/v1/models`` lists, stops with one line when it lists several, shows no built-in dollar price for
a server on this machine, and its hints name commands that do what they say.

The installed ``clio -p`` against the fake server on 127.0.0.1 (``OPENAI_BASE_URL``), which lists
the models it is given in ``/v1/models``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testkit.clio_run import USAGE_LINE, run_clio, sessions_dir, stderr_lines
from testkit.fakeserver import Fail, FakeServer, Reply
from testkit.fakeserver_sse import make_usage


def model_gets(server: FakeServer) -> int:
    return sum(1 for r in server.requests if r.method == "GET" and r.path.rstrip("/") == "/v1/models")


def usage_line(stderr: str) -> str:
    return next(ln for ln in stderr.splitlines() if ln.startswith(USAGE_LINE))


@pytest.mark.parametrize("fake_server", [{"model": "qwen2.5-coder-7b-instruct"}], indirect=True)
def test_the_one_model_a_server_lists_is_used_and_costs_no_dollars(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    fake_server.script(Reply(text="Hi.", usage=make_usage(1_000, 10, 0)), Reply(text="Again."))
    r = run_clio(["-p", "hi"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Hi.\n"
    assert [body["model"] for body in fake_server.chat_requests] == ["qwen2.5-coder-7b-instruct"]
    assert model_gets(fake_server) == 1  # one request: the model and the window read from the same reply
    line = usage_line(r.stderr)
    port = fake_server.base_url.split(":")[2].split("/")[0]
    assert line == (
        "clio: usage: 1,000 tokens in (0 cached), 10 out, 1 request; "
        f"no price known for qwen2.5-coder-7b-instruct at 127.0.0.1:{port} (set prices: in your config)"
    )
    assert "$" not in r.stderr

    j = run_clio(["--output", "json", "-p", "again"], server=fake_server, project=project, home=home)
    assert j.returncode == 0, j.stderr
    assert json.loads(j.stdout)["usage"]["cost_usd"] is None


def test_no_dollar_price_for_a_loopback_server_even_for_a_priced_model_name(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    """llama-server --alias gpt-4o-mini is not OpenAI's bill: the built-in table does not apply;
    the user's own prices: do, on any endpoint. No /v1/models request when the model and the
    window are both given."""
    fake_server.script(
        Reply(text="a", usage=make_usage(1_000_000, 100_000, 400_000)),
        Reply(text="b", usage=make_usage(1_000_000, 100_000, 400_000)),
    )
    args = ["--model", "gpt-4o-mini", "--context-window", "16384"]
    r = run_clio([*args, "-p", "count"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert "no price known for gpt-4o-mini at 127.0.0.1:" in usage_line(r.stderr)
    assert "$" not in r.stderr
    c = run_clio([*args, "--resume", "-p", "/cost --json"], server=fake_server, project=project, home=home)
    figures = json.loads(c.stdout)
    assert figures["session"]["cost_usd"] is None and figures["price_source"] is None
    text = run_clio([*args, "--resume", "-p", "/cost"], server=fake_server, project=project, home=home)
    assert "$" not in text.stdout and "no price known for gpt-4o-mini at 127.0.0.1:" in text.stdout

    (home / "config.yaml").write_text(
        "prices:\n  gpt-4o-mini: {input: 0.15, output: 0.60, cached: 0.075}\n", encoding="utf-8"
    )
    mine = run_clio([*args, "--resume", "-p", "again"], server=fake_server, project=project, home=home)
    assert "; $0.1800 (gpt-4o-mini, configured)" in usage_line(mine.stderr)
    assert model_gets(fake_server) == 0


@pytest.mark.parametrize("fake_server", [{"models": ["qwen2.5-coder:7b", "llama3.1:8b"]}], indirect=True)
def test_several_models_stop_with_one_line_naming_them(fake_server: FakeServer, project: Path, home: Path) -> None:
    r = run_clio(["-p", "hi"], server=fake_server, project=project, home=home)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    assert stderr_lines(r) == [
        f"clio: the endpoint at {fake_server.base_url} serves 2 models (qwen2.5-coder:7b, llama3.1:8b): "
        "pick one with --model NAME, or model: NAME in your config (clio -p /model lists them)."
    ]
    assert fake_server.chat_requests == [] and model_gets(fake_server) == 1
    assert not sessions_dir(project).exists() or not any(sessions_dir(project).iterdir())
    listed = run_clio(["-p", "/model"], server=fake_server, project=project, home=home)  # the command named
    assert listed.returncode == 0, listed.stderr
    assert "available: llama3.1:8b, qwen2.5-coder:7b" in listed.stdout
    init = run_clio(["-p", "/init"], server=fake_server, project=project, home=home)  # it would send a request
    assert init.returncode == 2 and "serves 2 models" in stderr_lines(init)[0], init.stderr
    assert fake_server.chat_requests == []

    # picking one, by flag or in the config, works and asks the list no more
    fake_server.script(Reply(text="By flag."), Reply(text="By config."))
    flag = run_clio(["--model", "llama3.1:8b", "-p", "hi"], server=fake_server, project=project, home=home)
    assert flag.returncode == 0 and flag.stdout == "By flag.\n", flag.stderr
    (home / "config.yaml").write_text("model: qwen2.5-coder:7b\n", encoding="utf-8")
    config = run_clio(["-p", "hi"], server=fake_server, project=project, home=home)
    assert config.returncode == 0 and config.stdout == "By config.\n", config.stderr
    assert [b["model"] for b in fake_server.chat_requests] == ["llama3.1:8b", "qwen2.5-coder:7b"]


@pytest.mark.parametrize("fake_server", [{"models": []}], indirect=True)
def test_a_server_listing_no_model_keeps_the_default(fake_server: FakeServer, project: Path, home: Path) -> None:
    fake_server.script(Reply(text="ok"))
    r = run_clio(["-p", "hi"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert [b["model"] for b in fake_server.chat_requests] == ["gpt-4o-mini"]


@pytest.mark.parametrize("fake_server", [{"model": "qwen2.5-coder-7b-instruct"}], indirect=True)
def test_a_slash_command_asks_the_model_list_only_when_it_sends_something(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    quiet = run_clio(["-p", "/context --json"], server=fake_server, project=project, home=home)
    assert quiet.returncode == 0, quiet.stderr
    assert fake_server.requests == []  # nothing sent, nothing asked
    fake_server.script(Reply(text="# AGENTS.md"))
    init = run_clio(["-p", "/init"], server=fake_server, project=project, home=home)
    assert init.returncode in (0, 4), init.stderr  # the write needs approval: what matters is the request
    assert [b["model"] for b in fake_server.chat_requests] == ["qwen2.5-coder-7b-instruct"]
    assert model_gets(fake_server) == 1


def test_the_unknown_model_hint_names_a_command_that_lists_the_models(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    fake_server.script(Fail.not_found_model("qwen-typo"))
    r = run_clio(["--model", "qwen-typo", "-p", "hi"], server=fake_server, project=project, home=home)
    assert r.returncode == 6, r.stderr
    line = stderr_lines(r)[-1]
    assert "'qwen-typo' was not found" in line and "clio -p /model lists the endpoint's models" in line
    assert "--input" not in line
    listed = run_clio(["-p", "/model"], server=fake_server, project=project, home=home)  # the command named
    assert listed.returncode == 0, listed.stderr
    assert "available: fake-model" in listed.stdout
    assert len(fake_server.chat_requests) == 1  # listing sent no chat request
