"""What ``/context`` shows: the window's figures as the running session stands (pure reading)."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clio.agent.orchestrator import Orchestrator
    from clio.agent.window import Window
    from clio.app.auto_recall import AutoRecall
    from clio.config import Settings
    from clio.store.sessions import Session


def context_figures(
    orch: Orchestrator,
    w: Window,
    mcp_names: Collection[str],
    session: Session | None,
    settings: Settings,
    auto_recall: AutoRecall,
) -> dict[str, object]:
    system, tools = orch.prompt.system(), orch.tools()
    est, budget, summary = w.estimator, w.budget, orch.engine.summary
    head = est.count_messages([orch.prompt.head()]) + est.count_tools(tools)
    return {
        "context_window": budget.context_window,
        "window_source": w.source,
        "used_tokens": orch.engine.used_tokens(system, tools),
        "chars_per_token": round(est.chars_per_token, 3),
        "ratio_samples": est.samples,
        "exact_tokenizer": est.exact,
        "limit_tokens": budget.limit,
        "reserve_output": budget.reserve,
        "proactive_at_tokens": int(budget.limit * budget.proactive_at),
        "fixed_tokens": head,  # the head: system message and tools, the same in every request
        "notes_tokens": est.count_messages(orch.engine.fixed(system)) - est.count_messages(system[:1]),
        "profile": orch.profile,
        "tools": [t["function"]["name"] for t in tools],
        "mcp_tool_tokens": est.count_tools([t for t in tools if t["function"]["name"] in mcp_names]),
        "full_fixed_tokens": w.full_fixed_tokens,
        "window_messages": len(orch.engine.window),
        "archived_messages": len(session.messages) if session else 0,
        "summary": summary is not None,
        "trims": summary.trims if summary is not None else 0,
        "model": settings.model,
        "recall": auto_recall.describe(orch.engine.window),
        "cache": cache_figures(session),
    }


def cache_figures(session: Session | None) -> dict[str, int]:
    """Prompt and cached tokens the endpoint reported: the last request's and the session's."""
    last: dict[str, object] = {}
    if session is not None:
        for m in reversed(session.messages):
            usage = (m.get("meta") or {}).get("usage") if m.get("role") == "assistant" else None
            if isinstance(usage, dict):
                last = usage
                break
    total = session.info.usage if session is not None else {}
    return {
        "last_prompt_tokens": _int(last.get("prompt_tokens")),
        "last_cached_tokens": _int(last.get("cached_tokens")),
        "session_prompt_tokens": _int(total.get("prompt_tokens")),
        "session_cached_tokens": _int(total.get("cached_tokens")),
    }


def _int(v: object) -> int:
    return int(v) if isinstance(v, (int, float)) else 0
