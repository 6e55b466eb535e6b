"""The context engine facade: long simulated sessions against the fake server's counting and validation."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

import clio.tools.builtin  # noqa: F401  (the tools declare what their operations do: clio.actions)
from clio.agent.prompt import to_api
from clio.context.engine import ContextEngine
from clio.context.tokens import TokenEstimator
from clio.context.trim import Budget
from clio.messages import api_view
from clio.tools.registry import REGISTRY
from testkit.fakeserver_sse import count_prompt_tokens, validate_request

SYSTEM = [{"role": "system", "content": "You are clio, a terminal coding agent. Be brief and exact. " * 30}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {"type": "object", "properties": {"operation": {"type": "string"}}},
        },
    }
    for name in ("file_operations", "terminal_operations", "version_control")
]
ORIGINAL = "ORIGINAL TASK: port the tokenizer to Rust"


class Sim:
    """A scripted session: user requests, tool calls with large outputs, usage by the server formula."""

    def __init__(
        self,
        *,
        window: int = 8000,
        ratio: float = 3.2,
        seed: int = 1,
        sizes: tuple[int, ...] = (300, 1500, 4000, 9000, 30_000),
    ) -> None:
        self.rng = random.Random(seed)
        self.sizes = sizes  # tool output sizes; the largest are far over the whole window
        self.ratio = ratio
        self.budget = Budget(window)
        self.engine = ContextEngine(TokenEstimator("local-model"), self.budget, actions=REGISTRY.actions())
        self.seq = 0
        self.archive: list[dict[str, Any]] = []  # every message, as the session store keeps them
        self.requests: list[list[dict[str, Any]]] = []
        self.trimmed: list[bool] = []
        self.usage: list[int] = []

    def add(self, msg: dict[str, Any]) -> dict[str, Any]:
        msg["meta"] = {"seq": self.seq}
        self.seq += 1
        self.archive.append(msg)
        self.engine.append(msg)
        return msg

    def request(self) -> list[dict[str, Any]]:
        prepared = self.engine.prepare(SYSTEM, TOOLS)
        sent = [api_view(m) for m in prepared.messages]
        problem = validate_request({"messages": sent})
        assert problem is None, problem
        usage = count_prompt_tokens({"messages": sent, "tools": TOOLS}, self.ratio)
        self.engine.observe(prepared.messages, TOOLS, usage)
        self.requests.append(sent)
        self.trimmed.append(prepared.trimmed)
        self.usage.append(usage)
        return sent

    def tool_turn(self, i: int) -> None:
        size = self.rng.choice(self.sizes)
        path = f"src/module_{i}.py"
        cid = f"call_{i}"
        args = {"operation": "read_file", "path": path}
        self.add(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": "file_operations", "arguments": json.dumps(args)},
                    }
                ],
            }
        )
        self.add(
            {"role": "tool", "tool_call_id": cid, "content": f"# {path}\n" + "code line\n" * (size // 10)}
        )

    def run(self, turns: int, every: int = 12) -> None:
        for turn in range(turns):
            if turn % every == 0:
                self.add({"role": "user", "content": ORIGINAL if turn == 0 else f"request {turn}: continue"})
            self.tool_turn(turn)
            self.request()


def test_prepare_without_pressure_sends_everything_unchanged() -> None:
    eng = ContextEngine(TokenEstimator("m"), Budget(100_000))
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    for m in msgs:
        eng.append(m)
    p = eng.prepare(SYSTEM, TOOLS)
    assert p.messages == SYSTEM + msgs and not p.trimmed and p.dropped == []
    assert p.tokens == eng.used_tokens(SYSTEM, TOOLS) == eng.estimator.count_request(SYSTEM + msgs, TOOLS)


def test_a_300_turn_session_on_an_8k_window_never_exceeds_the_limit() -> None:
    sim = Sim(window=8000, ratio=3.2)
    sim.run(300)
    assert max(sim.usage) <= sim.budget.limit
    assert sum(sim.trimmed) >= 20  # it really was under pressure
    assert abs(sim.engine.estimator.chars_per_token - 3.2) < 0.05  # learned the server's ratio
    last = sim.requests[-1]
    assert last[0] == api_view(SYSTEM[0])
    assert "<thread_summary>" in last[1]["content"]
    assert ORIGINAL in last[1]["content"]  # the original task survives every trim
    assert "src/module_0.py" in last[1]["content"]  # so does the first file read
    assert any(m.get("role") == "user" for m in last)  # the anchor
    first_trim = sim.trimmed.index(True)
    for req in sim.requests[first_trim:]:  # once there is a summary, every request carries it
        assert req[1]["role"] == "user" and req[1]["content"].startswith("<clio_context>\n[clio's notes")
        assert "<thread_summary>" in req[1]["content"] and req[0] == api_view(SYSTEM[0])  # the head stays
        assert ORIGINAL in req[1]["content"]
        assert sum(m["role"] == "user" for m in req) >= 1
    s = sim.engine.summary
    assert s is not None and s.messages_compressed + len(sim.engine.window) == sim.seq


def test_between_trims_each_request_extends_the_previous_one_byte_for_byte() -> None:
    sim = Sim(window=16_000, ratio=3.5, seed=4)
    sim.run(150)
    extended = 0
    for i in range(1, len(sim.requests)):
        prev, cur = sim.requests[i - 1], sim.requests[i]
        prev_json = json.dumps(prev, separators=(",", ":"))
        cur_json = json.dumps(cur, separators=(",", ":"))
        if not sim.trimmed[i]:
            assert cur_json.startswith(prev_json[:-1]), f"request {i} rewrote its prefix"
            extended += 1
        else:  # a trim changes the summary, right after the system prompt, which stays identical
            assert cur[0] == prev[0] and "<thread_summary>" in cur[1]["content"]
    assert extended > len(sim.requests) // 2
    assert sum(sim.trimmed) >= 3


def test_reactive_levels_shrink_with_a_recovery_message_after_the_summary() -> None:
    sim = Sim(window=32_000, ratio=3.0, seed=2, sizes=(2000,))
    sim.run(60)
    assert sim.engine.used_tokens(SYSTEM, TOOLS) > sim.budget.target * sim.budget.limit
    sizes = []
    for level in (1, 2, 3):
        p = sim.engine.reactive(level, SYSTEM, TOOLS, "Current task: request 48: continue")
        sent = [api_view(m) for m in p.messages]
        assert validate_request({"messages": sent}) is None
        assert p.messages[0] is SYSTEM[0]
        notes = p.messages[1]  # clio's notes: the summary, then the recovery text
        assert notes["meta"]["kind"] == "context" and "request 48" in notes["content"]
        assert notes["content"].index("<thread_summary>") < notes["content"].index("Current task: request 48")
        assert p.tokens <= {1: 0.5, 2: 0.25, 3: 0.25}[level] * sim.budget.limit
        sizes.append(p.tokens)
    assert sizes[0] > sizes[1] > sizes[2]
    window = sim.engine.window
    assert window[0]["role"] == "user" and window[0]["content"] == "request 48: continue"
    assert validate_request({"messages": to_api(p.messages)}) is None  # notes joined to that message
    assert window[-1]["role"] == "tool" and len(window) == 3  # anchor + last unit
    again = sim.engine.prepare(SYSTEM, TOOLS)
    assert "Current task: request 48" in again.messages[1]["content"]  # stays until the next trim


def test_state_round_trip_resumes_the_same_request() -> None:
    sim = Sim(window=8000, ratio=3.2, seed=3)
    sim.run(60)
    state = json.loads(json.dumps(sim.engine.state()))
    all_msgs = [{"role": "user", "content": "no seq"}, *sim.archive]  # from_state picks by seq
    est = TokenEstimator.from_state("local-model", sim.engine.estimator.state())
    back = ContextEngine.from_state(est, sim.budget, state, all_msgs)
    assert [m["meta"]["seq"] for m in back.window] == state["window_seqs"]
    assert back.summary == sim.engine.summary
    assert back.prepare(SYSTEM, TOOLS).messages == sim.engine.prepare(SYSTEM, TOOLS).messages


def test_damaged_state_puts_everything_in_the_window_and_the_first_prepare_trims_it() -> None:
    sim = Sim(window=8000, ratio=3.2, seed=5)
    sim.run(80)
    eng = ContextEngine.from_state(
        TokenEstimator("m", 3.2), Budget(8000), {"window_seqs": "garbage"}, sim.archive
    )
    assert eng.window == sim.archive and eng.summary is None
    p = eng.prepare(SYSTEM, TOOLS)
    assert p.trimmed and p.tokens <= eng.budget.limit
    assert eng.summary is not None and eng.summary.original_task == ORIGINAL
    assert len(p.dropped) + len(eng.window) == len(sim.archive)


def test_force_trim_and_clear() -> None:
    sim = Sim(window=100_000, ratio=3.2, seed=6)
    sim.run(30)
    before = sim.engine.used_tokens(SYSTEM, TOOLS)
    p = sim.engine.force_trim(SYSTEM, TOOLS, target=0.05)
    assert p.trimmed and p.dropped and p.tokens < before
    assert sim.engine.summary is not None and ORIGINAL in sim.engine.summary.original_task
    sim.engine.clear()
    assert sim.engine.window == [] and sim.engine.summary is None
    assert sim.engine.prepare(SYSTEM, TOOLS).messages == SYSTEM


@pytest.mark.parametrize("ratio", [2.5, 4.5])
def test_usage_learning_keeps_a_tight_window_valid_at_other_ratios(ratio: float) -> None:
    sim = Sim(window=8000, ratio=ratio, seed=7)
    sim.run(120)
    assert max(sim.usage[3:]) <= sim.budget.limit


def test_the_incremental_path_gives_the_same_requests_as_a_full_recount() -> None:
    quick, full = Sim(window=12_000, ratio=3.3, seed=8), Sim(window=12_000, ratio=3.3, seed=8)
    for turn in range(120):
        for sim in (quick, full):
            if turn % 9 == 0:
                sim.add({"role": "user", "content": f"request {turn}"})
            if turn % 25 == 7:  # a stray result and an unanswered call: repaired on either path
                sim.add({"role": "tool", "tool_call_id": "nobody", "content": "stray"})
            sim.tool_turn(turn)
            if turn % 25 == 7:
                sim.add({"role": "assistant", "content": None, "tool_calls": [_call(f"lost{turn}")]})
        full.engine.window = list(full.engine.window)  # a new list object forces the full path
        assert quick.request() == full.request()
        assert quick.usage[-1] == full.usage[-1]
        assert quick.engine.prepare(SYSTEM, TOOLS).tokens == full.engine.estimator.count_request(
            full.engine.fixed(SYSTEM) + full.engine.window, TOOLS
        )


def _call(cid: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": "terminal_operations", "arguments": "{}"}}


def test_a_turn_without_trim_only_measures_the_new_messages() -> None:
    sim = Sim(window=1_000_000, ratio=3.3, seed=9, sizes=(500,))
    sim.run(200)
    assert sum(sim.trimmed) == 0 and len(sim.engine.window) > 400
    measured: list[dict[str, Any]] = []
    real = sim.engine.estimator.size_of

    def counting(msg: dict[str, Any]) -> int:
        measured.append(msg)
        return real(msg)

    sim.engine.estimator.size_of = counting  # type: ignore[method-assign]
    sim.tool_turn(999)
    sim.engine.prepare(SYSTEM, TOOLS)
    new = sim.engine.window[-2:]
    assert all(any(m is n for m in measured) for n in new)
    assert len(measured) <= len(SYSTEM) + 2  # the system prompt and the two new messages, not the window
