"""clio.llm.prices (the dated table, the user's prices, matching model names) and /cost's per-turn
sums (clio.commands.cost.turn_usage)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clio.commands.cost import turn_usage
from clio.llm.prices import PRICES_DATE, Bill, describe, price_for, total


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o-mini", (0.15, 0.60)),
        ("gpt-4o-2024-08-06", (2.50, 10.0)),
        ("openai/gpt-4o-mini", (0.15, 0.60)),
        ("claude-sonnet-4-20250514", (3.0, 15.0)),
        ("anthropic/claude-sonnet-4", (3.0, 15.0)),
        ("gpt-4o-mini-latest", (0.15, 0.60)),
    ],
)
def test_known_models_match_the_longest_entry(model: str, expected: tuple[float, float]) -> None:
    price = price_for(model)
    assert price is not None and (price.input, price.output) == expected
    assert price.source == f"built-in price of {PRICES_DATE}"


@pytest.mark.parametrize("model", ["o3-pro", "qwen2.5-coder:7b", "fake-model", "gpt-4oo"])
def test_unknown_models_have_no_price(model: str) -> None:
    assert price_for(model) is None


@pytest.mark.parametrize(
    ("endpoint", "priced"),
    [
        (None, True),  # the default endpoint: OpenAI
        ("https://api.openai.com/v1", True),
        ("https://openrouter.ai/api/v1", True),
        ("https://api.deepseek.com/v1", True),
        ("http://127.0.0.1:8080/v1", False),  # llama-server --alias gpt-4o-mini on this machine
        ("http://localhost:11434/v1", False),
        ("http://[::1]:8000/v1", False),
        ("https://llm.internal.example.com/v1", False),  # somebody's gateway: its bill is not the list
        ("https://api.openai.com.evil.example/v1", False),
        ("https://user:secret@proxy.example/v1", False),
    ],
)
def test_the_built_in_table_applies_only_where_list_prices_are_billed(endpoint: str | None, priced: bool) -> None:
    price = price_for("gpt-4o-mini", None, endpoint)
    assert (price is not None) == priced
    mine = price_for("gpt-4o-mini", {"gpt-4o-mini": {"input": 1, "output": 2}}, endpoint)
    assert mine is not None and mine.source == "configured"  # the user's prices: on any endpoint
    line = describe(Bill({"requests": 1}, "gpt-4o-mini", {}), None, endpoint)
    assert ("$" in line) == priced and "secret" not in line


def test_configured_prices_win_and_cached_defaults_to_input() -> None:
    mine = price_for("gpt-4o-mini", {"gpt-4o-mini": {"input": 1, "output": 2}})
    assert mine is not None and (mine.input, mine.output, mine.cached, mine.source) == (1.0, 2.0, 1.0, "configured")
    half = price_for("local", {"local": {"in": 1, "out": 2}})  # the short keys too
    assert half is not None and half.output == 2.0
    assert price_for("x", {"x": {"input": "free"}}) is None  # without numbers: unknown, never a guess


def test_cost_counts_cached_tokens_at_the_cached_price() -> None:
    price = price_for("gpt-4o-mini")
    assert price is not None
    usage = {"prompt_tokens": 1_000_000, "cached_tokens": 400_000, "completion_tokens": 100_000}
    assert price.cost(usage) == pytest.approx(0.09 + 0.03 + 0.06)
    assert "$0.1800 (gpt-4o-mini" in describe(Bill({**usage, "requests": 1}, "gpt-4o-mini", {}), None)
    assert describe(Bill({"requests": 2}, "m", {}), None).endswith("no price known for m (set prices: in your config)")


def test_the_judge_models_requests_are_priced_at_its_own_price() -> None:
    prices = {"big": {"input": 10, "output": 30}, "small": {"input": 1, "output": 2}}
    turn = {"prompt_tokens": 1_000_000, "completion_tokens": 100_000, "cached_tokens": 0, "requests": 2}
    judge = {"prompt_tokens": 500_000, "completion_tokens": 10_000, "cached_tokens": 0, "requests": 3}
    both = total([turn, judge])
    both["requests"] = 5
    bill = Bill(both, "big", {"small": judge})
    assert bill.own() == turn
    dollars, unpriced = bill.cost(prices, None)
    assert dollars == pytest.approx(10 + 3 + 0.5 + 0.02) and unpriced == ""
    line = describe(bill, prices)
    assert "$13.52 (big, configured; the judge model small at its own)" in line, line
    assert "1,500,000 tokens in" in line and "5 requests" in line
    # a judge model with no known price: no total, and it is named (never priced as the turn model)
    dollars, unpriced = Bill(both, "big", {"tiny": judge}).cost(prices, None)
    assert dollars is None and unpriced == "tiny"
    assert "no price known for tiny" in describe(Bill(both, "big", {"tiny": judge}), prices)
    # only the judge model's requests (the turn failed before its own): its price alone is asked
    assert Bill(judge, "unpriced-turn-model", {"small": judge}).cost(prices, None)[0] == pytest.approx(0.52)


def test_turn_usage_sums_each_turns_requests() -> None:
    u = {"prompt_tokens": 10, "completion_tokens": 2, "cached_tokens": 5}
    messages = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": None, "meta": {"usage": u}},
        {"role": "tool", "content": "r", "tool_call_id": "1"},
        {"role": "assistant", "content": "done", "meta": {"usage": u}},
        {"role": "user", "content": "two (interrupted before an answer)"},
        {"role": "user", "content": "three"},
        {"role": "assistant", "content": "ok", "meta": {"usage": u}},
    ]
    assert turn_usage(messages) == [("one", total([u, u])), ("three", total([u]))]


def test_prices_in_the_config_layers(tmp_path: Path) -> None:
    from clio.config import load_settings

    home, proj = tmp_path / "home", tmp_path / "proj" / ".clio"
    home.mkdir()
    proj.mkdir(parents=True)
    (home / "config.yaml").write_text("prices:\n  mine: {input: 1, output: 2}\n")
    (proj / "config.yaml").write_text("prices:\n  mine: {input: 0, output: 0}\n")
    s, _ = load_settings(home, proj, {}, env={})
    assert s.prices == {"mine": {"input": 1, "output": 2}}  # a project's prices need trust
    assert s.project is not None and "prices" in s.project.ignored
    (home / "config.yaml").write_text("prices: cheap\n")
    s, warnings = load_settings(home, None, {}, env={})
    assert s.prices == {} and any("prices must map model names" in w for w in warnings)
