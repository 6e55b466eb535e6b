"""Cost and usage (issue 27) through the installed clio: the one-shot run's usage line on stderr,
``usage`` in ``--output json`` with cached tokens and dollars, ``/cost`` per session and per turn,
kept with the session so that ``/cost`` after ``--resume`` covers the whole of it, with a price the
user configured (the built-in table's list prices never apply to a server on this machine, where
the fake server is: tests/e2e/test_local_server.py; tests/unit/test_prices.py for the table)."""

from __future__ import annotations

import json
from pathlib import Path

from testkit.clio_run import run_clio
from testkit.fakeserver import FakeServer, Reply
from testkit.fakeserver_sse import make_usage


def test_one_shot_line_json_usage_and_cost_after_resume(fake_server: FakeServer, project: Path, home: Path) -> None:
    fake_server.script(
        Reply(text="first", usage=make_usage(1_000_000, 100_000, 400_000)),
        Reply(text="second", usage=make_usage(2_000, 1_000, 1_000)),
    )
    (home / "config.yaml").write_text(  # gpt-4o-mini's list prices, as the user's own; no read-back
        "prices:\n  gpt-4o-mini: {input: 0.15, output: 0.60, cached: 0.075}\nconsolidate: false\n", encoding="utf-8"
    )  # (its request, after the answer, would count in the session's usage: test_consolidation.py)
    r = run_clio(["--model", "gpt-4o-mini", "-p", "count the lines"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stderr.splitlines() if ln.startswith("clio: usage: "))
    # 600k uncached * 0.15 + 400k cached * 0.075 + 100k out * 0.60 per million = 0.09 + 0.03 + 0.06
    assert "1,000,000 tokens in (400,000 cached, 40%), 100,000 out, 1 request; $0.1800 (gpt-4o-mini, configured)" in line

    j = run_clio(
        ["--model", "gpt-4o-mini", "--resume", "--output", "json", "-p", "and the words"],
        server=fake_server, project=project, home=home,
    )  # fmt: skip
    assert j.returncode == 0, j.stderr
    usage = json.loads(j.stdout)["usage"]
    assert usage == {
        "prompt_tokens": 2_000, "completion_tokens": 1_000, "cached_tokens": 1_000, "total_tokens": 3_000,
        "requests": 1, "cost_usd": round((1_000 * 0.15 + 1_000 * 0.075 + 1_000 * 0.60) / 1e6, 6),
    }  # fmt: skip

    c = run_clio(["--model", "gpt-4o-mini", "--resume", "-p", "/cost --json"], server=fake_server, project=project, home=home)
    assert c.returncode == 0, c.stderr
    figures = json.loads(c.stdout)
    assert figures["session"]["prompt_tokens"] == 1_002_000 and figures["session"]["cached_tokens"] == 401_000
    assert figures["session"]["requests"] == 2 and [t["request"] for t in figures["turns"]] == [
        "count the lines", "and the words",
    ]  # fmt: skip
    assert abs(figures["session"]["cost_usd"] - (0.18 + usage["cost_usd"])) < 1e-6
    text = run_clio(["--model", "gpt-4o-mini", "--resume", "-p", "/cost"], server=fake_server, project=project, home=home)
    assert "session: 1,002,000 tokens in (401,000 cached, 40%), 101,000 out, 2 requests; $0.18" in text.stdout
    assert "1. 'count the lines': 1,000,000 in (400,000 cached, 40%), 100,000 out, 1 req  $0.1800" in text.stdout


def test_configured_price_and_an_unknown_model(fake_server: FakeServer, project: Path, home: Path) -> None:
    fake_server.script(Reply(text="a", usage=make_usage(10_000, 1_000, 0)), Reply(text="b", usage=make_usage(10, 1, 0)))
    r = run_clio(["--model", "fake-model", "-p", "hello"], server=fake_server, project=project, home=home)
    assert "no price known for fake-model at 127.0.0.1:" in r.stderr and "(set prices: in your config)" in r.stderr
    (home / "config.yaml").write_text("model: fake-model\nprices:\n  fake-model: {input: 1, output: 10}\n", encoding="utf-8")
    c = run_clio(["--resume", "-p", "/cost"], server=fake_server, project=project, home=home)
    assert c.returncode == 0, c.stderr
    assert "10,000 tokens in (0 cached), 1,000 out, 1 request; $0.0200 (fake-model, configured)" in c.stdout
    j = run_clio(["--output", "json", "-p", "again"], server=fake_server, project=project, home=home)
    assert json.loads(j.stdout)["usage"]["cost_usd"] == round((10 * 1 + 1 * 10) / 1e6, 6)
