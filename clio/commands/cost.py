"""``/cost``: tokens in, out and cached, and money where the model's price is known, for the
session and per turn.

The session's totals are the ones ``session.json`` keeps (every request: turns, /compact,
consolidation, memory upkeep), so they cover a resumed session from its start. Per turn: the
usage each assistant message keeps in its meta, summed per user message. Money uses the price
of the session's current model (clio.llm.prices: the user's ``prices:``, else the dated table where
the endpoint bills list prices; none for a server on this machine or another endpoint), and the
judge model's requests (``recall_judge_model``), which the session keeps apart by model, that
model's own price; they are shown on a line of their own, not in a turn's.
"""

from __future__ import annotations

import json
from typing import Any

from rich.markup import escape

from clio.commands.registry import CommandContext, command
from clio.llm.prices import USAGE_KEYS, Bill, describe, money, price_for, total
from clio.messages import Message

TURNS_SHOWN = 10


def turn_usage(messages: list[Message]) -> list[tuple[str, dict[str, int]]]:
    """(the user's words, the summed usage of the turn's requests), turn by turn."""
    turns: list[tuple[str, list[dict[str, int]]]] = []
    for m in messages:
        if m.get("role") == "user":
            turns.append((str(m.get("content") or ""), []))
            continue
        usage = (m.get("meta") or {}).get("usage") if m.get("role") == "assistant" else None
        if turns and isinstance(usage, dict):
            turns[-1][1].append({k: int(v) for k, v in usage.items() if isinstance(v, (int, float))})
    return [(text, total(usages)) for text, usages in turns if usages]


def cost_figures(app: CommandContext) -> dict[str, Any]:
    app.settle_model(strict=False)  # a one-shot run with no model chosen: the endpoint's one
    session = app.session
    model = app.settings.model
    price = price_for(model, app.settings.prices, app.settings.endpoint())
    usage = dict(session.info.usage) if session is not None else {}
    usage = {k: int(usage.get(k, 0)) for k in USAGE_KEYS}
    judged = {m: {k: int(u.get(k, 0)) for k in USAGE_KEYS} for m, u in session.info.judged.items()} if session is not None else {}
    turns = turn_usage(session.messages) if session is not None else []
    prices, endpoint = app.settings.prices, app.settings.endpoint()

    def cost(u: dict[str, int], by: str = model) -> float | None:
        dollars = Bill(u, by, {}).cost(prices, endpoint)[0]
        return round(dollars, 6) if dollars is not None else None

    whole = Bill(usage, model, judged).cost(prices, endpoint)[0]
    return {
        "model": model,
        "price_source": price.source if price is not None else None,
        "session": {**usage, "cost_usd": round(whole, 6) if whole is not None else None},
        "turns": [{"request": text[:80], **u, "cost_usd": cost(u)} for text, u in turns],
        # the judge model's requests (a part of the session's), by model, each at its own price
        "judge_model": {m: {**u, "cost_usd": cost(u, m)} for m, u in judged.items()},
    }


def usage_words(u: dict[str, Any]) -> str:
    """ "1,200 in (800 cached, 67%), 40 out, 2 req": one row of /cost."""
    return (
        f"{u['prompt_tokens']:,} in ({u['cached_tokens']:,} cached{pct(u)}), "
        f"{u['completion_tokens']:,} out, {u['requests']} req"
    )


def pct(u: dict[str, Any]) -> str:
    """ ", 42%": the cached share of a turn's prompt tokens ('' when nothing was cached)."""
    cached, prompt = int(u.get("cached_tokens") or 0), int(u.get("prompt_tokens") or 0)
    return f", {100 * cached / prompt:.0f}%" if cached and prompt else ""


@command("cost", "tokens and money spent in this session, in total and per turn", "/cost [--json]")
def cost_cmd(app: CommandContext, arg: str) -> None:
    figures = cost_figures(app)
    if "--json" in arg.split():
        app.console.file.write(json.dumps(figures) + "\n")
        return
    model, endpoint = figures["model"], app.settings.endpoint()
    judged = figures["judge_model"]
    bill = Bill(figures["session"], model, judged)
    app.console.print(escape(f"session: {describe(bill, app.settings.prices, endpoint)}"), soft_wrap=True)
    for name, u in judged.items():
        cost = f"  {money(u['cost_usd'])}" if u["cost_usd"] is not None else ""
        app.console.print(escape(f"  the judge model {name} (recall_judge_model): {usage_words(u)}{cost}"), soft_wrap=True)
    turns = figures["turns"]
    if not turns:
        if not judged:
            app.console.print("No request has been sent in this session yet.")
        return
    shown = turns[-TURNS_SHOWN:]
    if len(turns) > len(shown):
        app.console.print(f"last {len(shown)} of {len(turns)} turns:")
    for i, t in enumerate(shown, len(turns) - len(shown) + 1):
        words = " ".join(str(t["request"]).split())[:40]
        cost = f"  {money(t['cost_usd'])}" if t["cost_usd"] is not None else ""
        app.console.print(escape(f"  {i}. {words!r}: {usage_words(t)}{cost}"), soft_wrap=True)
    other = figures["session"]["requests"] - sum(t["requests"] for t in turns) - sum(u["requests"] for u in judged.values())
    if other > 0:
        app.console.print(f"  (+{other} request(s) outside turns: /compact, memory upkeep, consolidation)")
