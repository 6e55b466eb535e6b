"""The benches' variants of the refine stage that lends a hit's score to its neighbours
(benches/lend_variants.py): "shipped" is the product's stage, and each restriction refuses the
loans it names and no other, so a figure read with ``--lend`` is the variant it says."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import clio.recall.refine as refine

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benches"))
import lend_variants  # noqa: E402

# an exchange (user ask 1, tool 2, reply 3), then the next exchange's user message 4 and reply 5
ROLES = {1: "user", 2: "tool", 3: "assistant", 4: "user", 5: "assistant"}
BODIES = {1: "where is the deploy key?", 2: "grep ...", 3: "in vault, want me to rotate it?", 4: "no, leave it", 5: "Ok."}


# the same five messages as a conversation without tools (as LoCoMo's): two speakers, turn about
TALK = {1: "user", 2: "assistant", 3: "user", 4: "assistant", 5: "user"}


def run(mode: str, scores: dict[int, float], roles: dict[int, str] = ROLES) -> dict[int, float]:
    """What each message scores after ``mode``'s stage, from the candidates ``scores``."""

    def candidate(i: int, score: float = 0.0) -> refine.Candidate:
        if roles[i] == "call":  # an assistant's message that only calls a tool
            return refine.Candidate(i, "s", "assistant", i, 0.0, "▸ read file infra/vault.hcl", score)
        return refine.Candidate(i, "s", roles[i], i, 0.0, BODIES[i] if roles is ROLES else f"turn {i}?", score)

    def neighbours(lenders: list[refine.Candidate]) -> dict[int, tuple[refine.Candidate | None, refine.Candidate | None]]:
        return {c.id: (candidate(c.id - 1) if c.id > 1 else None, candidate(c.id + 1) if c.id < 5 else None) for c in lenders}

    expand = refine.expand if mode == "product" else lend_variants.expand_with(mode)
    out = expand([candidate(i, s) for i, s in scores.items()], neighbours, 0.6, 0.1, 50)
    return {c.id: round(c.score, 6) for c in out}


@pytest.mark.parametrize("scores", [{3: 1.0}, {1: 1.0, 3: 0.5}, {2: 0.8, 4: 0.3}, {1: 0.2, 2: 0.4, 3: 0.6, 4: 0.8, 5: 1.0}])
def test_shipped_is_the_product_stage(scores: dict[int, float]) -> None:
    assert run("shipped", scores) == run("product", scores)
    assert run("shipped", scores, TALK) == run("product", scores, TALK)


def test_each_variant_refuses_only_the_loans_it_names() -> None:
    # the reply 3 asks ('?'): it lends 0.1 to the tool step 2 (inside) and 0.7 to the next user message 4 (across)
    assert run("shipped", {3: 1.0}) == {3: 1.0, 2: 0.1, 4: 0.7}
    assert run("within", {3: 1.0}) == {3: 1.0, 2: 0.1}
    assert run("outside", {3: 1.0}) == {3: 1.0, 4: 0.7}
    assert run("replies-across", {3: 1.0}) == {3: 1.0, 2: 0.1, 4: 0.7}  # a question's reply, across the edge
    assert run("replies-across", {4: 1.0}) == {4: 1.0, 5: 0.1}  # no reply: nothing back across the edge
    assert run("candidates-across", {3: 1.0}) == {3: 1.0, 2: 0.1}  # 4 was no candidate
    assert run("candidates-across", {3: 1.0, 4: 0.2}) == run("shipped", {3: 1.0, 4: 0.2})
    assert run("off", {3: 1.0}) == {3: 1.0}
    # a user's message lends to the message before it across the edge: the previous exchange's reply
    assert run("within", {4: 1.0}) == {4: 1.0, 5: 0.1}
    assert run("outside", {4: 1.0}) == {4: 1.0, 3: 0.1}


def test_steps_across_keeps_a_worked_exchange_to_itself() -> None:
    # the reply 3 closes an exchange with a tool step (2): it lends nothing to the next task (4),
    # and the next task's message lends nothing back to it; inside the exchange, as shipped
    assert run("steps-across", {3: 1.0}) == {3: 1.0, 2: 0.1}
    assert run("steps-across", {4: 1.0}) == {4: 1.0, 5: 0.1}
    assert run("steps-across", {2: 1.0}) == run("shipped", {2: 1.0})
    # the step may be the assistant's call as well as the tool's result
    calls = {**ROLES, 2: "call"}
    assert run("steps-across", {3: 1.0}, calls) == {3: 1.0, 2: 0.1}
    assert run("shipped", {3: 1.0}, calls) == {3: 1.0, 2: 0.1, 4: 0.7}
    # a conversation without tools lends as shipped, across every edge
    for scores in ({2: 1.0}, {3: 1.0}, {1: 0.3, 4: 1.0}):
        assert run("steps-across", scores, TALK) == run("shipped", scores, TALK)
        assert run("steps-across", scores, TALK) != run("within", scores, TALK)


def test_use_swaps_the_stage_and_puts_it_back() -> None:
    shipped = refine.expand
    try:
        lend_variants.use("off")
        assert refine.expand is not shipped
        lend_variants.use("shipped")
        assert refine.expand is shipped
        with pytest.raises(SystemExit):
            lend_variants.use("sideways")
    finally:
        refine.expand = shipped
