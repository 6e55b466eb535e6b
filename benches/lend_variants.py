"""Variants of the refine stage that lends a hit's score to the messages beside it, for the benches'
``--lend`` (an experiment, never the product: ``clio.recall.refine.expand`` is swapped in this
process only). docs/memory.md, "The neighbour stage, restricted five ways".

Each lender (one of the best ``EXPAND_TOP`` candidates) lends to its previous and next message of
the session, as ``refine.expand`` does; a variant only refuses some of those loans: it runs the
product's own stage with the refused neighbours hidden from it. A loan stays
*inside* the lender's exchange when it goes to the next message and that one opens no unit, or
to the previous message and the lender opens none (a user's message or a digest opens one:
``clio.recall.query.UNIT_ROLES``, as ``clio.recall.units.exchange`` reads them).

- ``shipped``: every loan (``refine.expand`` itself).
- ``off``: none (the stage's weights 0).
- ``within``: only loans inside the lender's exchange.
- ``outside``: only loans across the exchange's edge.
- ``replies-across``: inside as shipped; across the edge only from a question to its reply
  (a lender that asks, to the next message).
- ``candidates-across``: inside as shipped; across the edge only to a message that was a
  candidate already (lent score alone never brings a new exchange in).
- ``steps-across``: as shipped, except no loan across the edge of an exchange that ends in agent
  work: the side of the edge that closes an exchange (the lender for a loan to the next message,
  the neighbour for a loan to the previous one) is a tool step, or comes right after one. An
  exchange in which the agent worked holds its ask, steps and answer; the message after it opens
  another task. A conversation without tools (LoCoMo) lends as shipped.
"""

from __future__ import annotations

from typing import Any

import clio.recall.refine as refine
from clio.recall.query import UNIT_ROLES
from clio.recall.units import Part, calls

MODES = ("shipped", "off", "within", "outside", "replies-across", "candidates-across", "steps-across")
_SHIPPED = refine.expand

Pair = tuple[refine.Candidate | None, refine.Candidate | None]


def inside(lender: refine.Candidate, n: refine.Candidate, after: bool) -> bool:
    """Whether the loan from ``lender`` to its neighbour ``n`` (the next message when ``after``)
    stays inside the lender's exchange."""
    return (n if after else lender).role not in UNIT_ROLES


def step(c: refine.Candidate | None) -> bool:
    """A tool's result, or an assistant's message that makes tool calls."""
    return c is not None and (c.role == "tool" or calls(Part(c.seq, c.role, c.body)))


def lends(mode: str, lender: refine.Candidate, n: refine.Candidate, after: bool, held: bool, closes: bool) -> bool:
    """Whether ``mode`` lets ``lender`` lend to its neighbour ``n`` (``held``: ``n`` was a
    candidate; ``closes``: the side of the edge that closes an exchange ends agent work)."""
    if mode == "off":
        return False
    if inside(lender, n, after):
        return mode != "outside"
    if mode == "within":
        return False
    if mode == "replies-across":
        return after and refine.asks(lender.body)
    if mode == "candidates-across":
        return held
    if mode == "steps-across":
        return not closes
    return True


def expand_with(mode: str) -> Any:
    """``refine.expand`` (the same signature) shown only the neighbours ``mode`` lets it lend to."""

    def expand(
        cands: list[refine.Candidate],
        neighbours: refine.Neighbours,
        answer: float = refine.ANSWER_WEIGHT,
        adjacent: float = refine.NEIGHBOUR_WEIGHT,
        top: int = refine.EXPAND_TOP,
    ) -> list[refine.Candidate]:
        held = {c.id for c in cands}

        def allowed(lenders: list[refine.Candidate]) -> dict[int, Pair]:
            around = neighbours(lenders)
            closing: dict[int, bool] = {}  # steps-across: whether a message closes agent work
            if mode == "steps-across":
                for c in lenders:
                    closing[c.id] = step(c) or step(around.get(c.id, (None, None))[0])
                before = [p for c in lenders if c.role in UNIT_ROLES and (p := around.get(c.id, (None, None))[0]) is not None]
                further = neighbours(before) if before else {}
                for p in before:
                    closing[p.id] = step(p) or step(further.get(p.id, (None, None))[0])

            def keep(c: refine.Candidate, n: refine.Candidate | None, after: bool) -> refine.Candidate | None:
                closes = closing.get(c.id if after else n.id, False) if n is not None else False
                return n if n is not None and lends(mode, c, n, after, n.id in held, closes) else None

            kept: dict[int, Pair] = {}
            for c in lenders:
                prev, nxt = around.get(c.id, (None, None))
                kept[c.id] = (keep(c, prev, False), keep(c, nxt, True))
            return kept

        return _SHIPPED(cands, allowed, answer, adjacent, top)

    return expand


def use(mode: str) -> None:
    """Make ``mode`` the stage this process's searches run."""
    if mode not in MODES:
        raise SystemExit(f"--lend: one of {', '.join(MODES)}")
    refine.expand = _SHIPPED if mode == "shipped" else expand_with(mode)
