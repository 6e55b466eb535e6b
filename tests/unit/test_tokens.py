"""Token estimator: the server's counting formula, learning the ratio, caching, tiktoken offline."""

from __future__ import annotations

import json
import math
import os
import random
import threading
from pathlib import Path
from typing import Any

import pytest
import tiktoken

from clio.context import tokens as tk
from clio.context.tokens import TokenEstimator
from clio.llm import encoding as enc_mod
from clio.llm.encoding import load_encoding
from testkit.fakeserver_sse import count_prompt_tokens

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "file_operations",
            "description": "Read and edit files.",
            "parameters": {"type": "object", "properties": {"operation": {"type": "string"}}},
        },
    }
]


def call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def server_usage(msgs: list[dict[str, Any]], tools: list[dict[str, Any]] | None, ratio: float) -> int:
    """What the fake server reports as prompt_tokens for these messages."""
    body: dict[str, Any] = {"messages": msgs}
    if tools:
        body["tools"] = tools
    return count_prompt_tokens(body, ratio)


def synthetic_request(rng: random.Random, n: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are clio. " * rng.randint(5, 50)}]
    for i in range(n):
        msgs.append({"role": "user", "content": "fix the bug " * rng.randint(1, 40)})
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    call(f"c{i}", "file_operations", {"operation": "read_file", "path": f"f{i}.py"})
                ],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": "x = 1\n" * rng.randint(1, 500)})
    return msgs


def byte_encoding() -> tiktoken.Encoding:
    """A real tiktoken Encoding that needs no download: one token per byte."""
    return tiktoken.Encoding(
        name="bytes",
        pat_str=r"[\s\S]",
        mergeable_ranks={bytes([i]): i for i in range(256)},
        special_tokens={},
    )


class CountingEncoding:
    def __init__(self) -> None:
        self.calls = 0

    def encode(self, text: str, disallowed_special: Any = ()) -> list[int]:
        self.calls += 1
        return list(range(len(text.split())))


# ---------------------------------------------------------------- the formula
def test_counts_follow_the_server_formula_at_the_ratio_in_use() -> None:
    est = TokenEstimator("qwen2.5-coder", chars_per_token=4.0)
    a = {"role": "user", "content": "a" * 40}
    b = {"role": "assistant", "content": None, "tool_calls": [call("c1", "file_operations", {"path": "x"})]}
    args_len = len(json.dumps({"path": "x"}))
    assert est.count_message(a) == 10 + 3
    assert est.count_message(b) == math.ceil((len("file_operations") + args_len) / 4) + 3
    assert est.count_messages([a, b]) == math.ceil((40 + 15 + args_len) / 4) + 6 + 3
    compact = json.dumps(TOOLS, separators=(",", ":"))
    assert est.count_tools(TOOLS) == math.ceil(len(compact) / 4)
    assert est.count_tools([]) == 0
    assert est.chars_of([a, b], TOOLS) == 40 + 15 + args_len + len(compact)
    assert est.count_request([a, b], TOOLS) == server_usage([a, b], TOOLS, 4.0)


def test_multimodal_text_parts_and_none_content_count() -> None:
    est = TokenEstimator("m", chars_per_token=2.0)
    msg = {
        "role": "user",
        "content": [{"type": "text", "text": "abcd"}, {"type": "image_url", "image_url": {}}],
    }
    assert est.count_message(msg) == 2 + 3
    assert est.count_message({"role": "assistant", "content": None}) == 3


def test_default_ratio_is_the_conservative_one_for_code() -> None:
    est = TokenEstimator("unknown-model")
    assert est.chars_per_token == tk.DEFAULT_RATIO == 3.5
    assert not est.exact and est.samples == 0


# ---------------------------------------------------------------- learning
@pytest.mark.parametrize("server_ratio", [2.2, 3.1, 4.0, 5.7])
def test_learning_converges_to_the_server_ratio(server_ratio: float) -> None:
    rng = random.Random(7)
    est = TokenEstimator("llama3")
    errors = []
    for turn in range(40):
        msgs = synthetic_request(rng, 1 + turn % 6)
        usage = server_usage(msgs, TOOLS, server_ratio)
        errors.append(abs(est.count_request(msgs, TOOLS) - usage) / usage)
        est.observe(msgs, TOOLS, usage)
    assert est.samples == 40
    assert abs(est.chars_per_token - server_ratio) / server_ratio < 0.01
    assert max(errors[5:]) < 0.01  # after a few samples, predictions match the server within 1%


def test_moving_average_follows_a_change_of_server() -> None:
    rng = random.Random(3)
    est = TokenEstimator("m")
    for _ in range(5):
        msgs = synthetic_request(rng, 3)
        est.observe(msgs, None, server_usage(msgs, None, 3.0))
    assert abs(est.chars_per_token - 3.0) < 0.05
    msgs = synthetic_request(rng, 3)
    est.observe(msgs, None, server_usage(msgs, None, 6.0))
    one_step = est.chars_per_token
    assert 3.5 < one_step < 4.5  # smoothed, not jumped
    for _ in range(20):
        msgs = synthetic_request(rng, 3)
        est.observe(msgs, None, server_usage(msgs, None, 6.0))
    assert abs(est.chars_per_token - 6.0) < 0.05


def test_absurd_samples_are_ignored_and_ratios_clamped() -> None:
    est = TokenEstimator("m")
    msgs = [{"role": "user", "content": "x" * 1000}]
    est.observe(msgs, None, 5)  # fewer tokens than the overheads
    est.observe(msgs, None, 0)
    est.observe(msgs, None, True)
    est.observe(msgs, None, None)  # type: ignore[arg-type]
    est.observe(msgs, None, 6 + 10_000)  # 0.1 chars per token: a measurement error
    assert est.samples == 0 and est.chars_per_token == tk.DEFAULT_RATIO
    est.observe(msgs, None, 6 + 50)  # 20 chars per token: plausible sample, clamped to 12
    assert est.samples == 1 and est.chars_per_token == tk.MAX_RATIO
    assert TokenEstimator("m", chars_per_token=0.2).chars_per_token == tk.MIN_RATIO


def test_state_round_trip_and_damaged_state() -> None:
    rng = random.Random(1)
    est = TokenEstimator("m")
    for _ in range(3):
        msgs = synthetic_request(rng, 2)
        est.observe(msgs, None, server_usage(msgs, None, 2.5))
    back = TokenEstimator.from_state("m", json.loads(json.dumps(est.state())))
    assert back.chars_per_token == pytest.approx(est.chars_per_token, abs=1e-3)
    assert back.samples == 3
    for bad in (
        None,
        "x",
        {"chars_per_token": "fast"},
        {"chars_per_token": float("nan")},
        {"chars_per_token": -1},
    ):
        fresh = TokenEstimator.from_state("m", bad)
        assert fresh.chars_per_token == tk.DEFAULT_RATIO and fresh.samples == 0
    assert TokenEstimator.from_state("m", {"chars_per_token": 99}).chars_per_token == tk.MAX_RATIO


# ---------------------------------------------------------------- exact mode and caching
def test_exact_mode_counts_with_the_encoding_and_still_learns() -> None:
    est = TokenEstimator("gpt-4o", encoding=byte_encoding())
    assert est.exact
    msg = {"role": "user", "content": "héllo"}  # 6 bytes
    assert est.count_message(msg) == 6 + 3
    assert est.count_text("<|endoftext|>") == 13  # special tokens are counted as text, not rejected
    assert est.count_messages([msg, msg]) == 12 + 6 + 3
    rng = random.Random(2)
    msgs = synthetic_request(rng, 2)
    est.observe(msgs, TOOLS, server_usage(msgs, TOOLS, 3.3))
    assert abs(est.chars_per_token - 3.3) < 0.05


def test_recounting_the_same_messages_does_not_encode_again() -> None:
    enc = CountingEncoding()
    est = TokenEstimator("gpt-4o", encoding=enc)
    rng = random.Random(5)
    msgs = synthetic_request(rng, 50)
    first = est.count_messages(msgs)
    encoded = est.encode_calls
    assert encoded == enc.calls > 0
    for _ in range(10):
        assert est.count_messages(msgs) == first
        est.count_request(msgs, None)
    assert enc.calls == encoded  # every string came from the cache
    msgs.append({"role": "user", "content": "one more message here"})
    est.count_messages(msgs)
    assert enc.calls == encoded + 1  # only the new string was encoded


# ---------------------------------------------------------------- loading encodings
@pytest.fixture
def fresh_cache() -> Any:
    enc_mod.clear_encoding_cache()
    yield
    enc_mod.clear_encoding_cache()


def test_models_unknown_to_tiktoken_get_no_encoding(
    fresh_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    called = []
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: called.append(name))
    for model in ("qwen2.5-coder:7b", "llama3.1", "mistral-small", "deepseek-coder"):
        assert load_encoding(model, None) is None
    assert called == []
    assert enc_mod.encoding_name("gpt-4o") == "o200k_base"
    assert enc_mod.encoding_name("openai/gpt-4o-mini") == "o200k_base"


def test_a_failed_load_returns_none_and_is_not_retried(
    fresh_cache: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = []

    def fail(name: str) -> Any:
        calls.append(name)
        raise ConnectionError("offline")

    monkeypatch.setattr(tiktoken, "get_encoding", fail)
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    assert load_encoding("gpt-4o", tmp_path) is None
    assert load_encoding("gpt-4o-mini", tmp_path) is None  # same encoding: remembered failure
    assert calls == ["o200k_base"]
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(tmp_path)


def test_a_hanging_download_is_abandoned(fresh_cache: None, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    calls = []

    def hang(name: str) -> Any:
        calls.append(name)
        release.wait(30)
        return byte_encoding()

    monkeypatch.setattr(tiktoken, "get_encoding", hang)
    try:
        assert load_encoding("gpt-4", None, timeout=0.2) is None
        assert load_encoding("gpt-4", None, timeout=0.2) is None
        assert calls == ["cl100k_base"]
    finally:
        release.set()


def test_a_loaded_encoding_is_kept(fresh_cache: None, monkeypatch: pytest.MonkeyPatch) -> None:
    enc = byte_encoding()
    calls: list[str] = []

    def load(name: str) -> Any:
        calls.append(name)
        return enc

    monkeypatch.setattr(tiktoken, "get_encoding", load)
    assert load_encoding("gpt-4o", None) is enc
    assert load_encoding("gpt-4o", None) is enc
    assert calls == ["o200k_base"]


def test_real_tiktoken_here_degrades_without_raising(
    fresh_cache: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    enc = load_encoding("gpt-4o", tmp_path, timeout=10)
    if enc is not None:  # a machine with the encoding cached or online
        assert len(enc.encode("hello world")) == 2
    est = TokenEstimator("gpt-4o", encoding=enc)
    assert est.count_text("hello world") > 0
