"""The three trimming stages, pure: a window of messages in, a smaller valid window out.

1. ``proactive``: above ``proactive_at`` of the limit, drop the oldest units until the
   request is back at ``target`` of the limit.
2. ``validate``: just before sending, fit under the limit itself (drop units, then cut
   the largest tool results to head + tail), and repair so no orphan or unanswered
   call leaves.
3. ``reactive``: after the endpoint rejected the request for length, fit to 50%, 25%,
   then the minimum (anchor + last unit).

Never dropped: the latest user message (the task anchor, even when old) and the last
unit (what the model is working on).  Units are never split.  ``fixed`` is everything
in front of the window (system prompt, summary, recovery); it is counted, never cut.
Every stage returns what it dropped, for the thread summary to absorb.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clio.context.budget import Budget
from clio.context.stm import flatten, group_units, latest_user_index, repair
from clio.context.tokens import TokenEstimator
from clio.messages import KIND_RECOVERY, Message, meta

Tools = list[dict[str, Any]] | None

REACTIVE_TARGETS = {1: 0.50, 2: 0.25, 3: 0.25}
MIN_KEEP_CHARS = 400  # a truncated message keeps at least this much of its head and tail
CUT_MARKER = (
    "\n[... {n} characters cut to fit the context window; the session archive keeps the full text ...]\n"
)


@dataclass
class TrimResult:
    window: list[Message]
    dropped: list[Message] = field(default_factory=list)  # in their original order
    truncated: int = 0  # messages whose content was cut

    @property
    def trimmed(self) -> bool:
        return bool(self.dropped) or self.truncated > 0


def request_tokens(est: TokenEstimator, fixed: list[Message], window: list[Message], tools: Tools) -> int:
    return est.count_request(fixed + window, tools)


def drop_units(
    window: list[Message], est: TokenEstimator, fixed: list[Message], tools: Tools, goal: int
) -> TrimResult:
    """Drop the oldest units until the request is at most ``goal`` tokens.

    The anchor's unit and the last unit are kept whatever the goal; the result may
    therefore still be over the goal (``truncate_to_fit`` handles that).
    """
    units = group_units(window)
    if not units:
        return TrimResult(window)
    sizes = [sum(est.size_of(m) for m in u) for u in units]
    counts = [len(u) for u in units]
    fixed_size = sum(est.size_of(m) for m in fixed) + est.size_of_tools(tools)
    size, n = fixed_size + sum(sizes), len(fixed) + sum(counts)
    if est.tokens_from(size, n) <= goal:
        return TrimResult(window)
    protected = {len(units) - 1}
    anchor = latest_user_index(window)
    if anchor is not None:
        target = window[anchor]
        protected |= {i for i, u in enumerate(units) if any(m is target for m in u)}
    drop: set[int] = set()
    for i in range(len(units)):
        if est.tokens_from(size, n) <= goal:
            break
        if i in protected:
            continue
        drop.add(i)
        size -= sizes[i]
        n -= counts[i]
    if not drop:
        return TrimResult(window)
    kept = flatten([u for i, u in enumerate(units) if i not in drop])
    dropped = flatten([u for i, u in enumerate(units) if i in drop])
    return TrimResult(kept, dropped)


def truncate_text(text: str, max_chars: int) -> str:
    """``text`` cut to about ``max_chars``: its head and tail around a marker."""
    if len(text) <= max_chars:
        return text
    keep = max(MIN_KEEP_CHARS, max_chars - len(CUT_MARKER) - 8)
    if keep >= len(text):
        return text
    head = keep * 2 // 3
    tail = keep - head
    return text[:head] + CUT_MARKER.format(n=len(text) - keep) + text[len(text) - tail :]


def _truncatable(msg: Message, roles: tuple[str, ...]) -> bool:
    c = msg.get("content")
    return msg.get("role") in roles and isinstance(c, str) and len(c) > MIN_KEEP_CHARS + len(CUT_MARKER) + 16


def truncate_to_fit(
    window: list[Message],
    est: TokenEstimator,
    fixed: list[Message],
    tools: Tools,
    goal: int,
    *,
    indices: set[int] | None = None,
) -> tuple[list[Message], int]:
    """Cut the largest contents (tool results first, then user/assistant text) until under ``goal``.

    Cut messages are copies with ``meta["truncated"] = True``; the originals (and the
    archive) are untouched.  Returns the new window and how many messages were cut.
    """
    window = list(window)
    cut_idx: set[int] = set()
    for roles in (("tool",), ("user", "assistant")):
        for _ in range(4 * len(window) + 4):
            total = request_tokens(est, fixed, window, tools)
            if total <= goal:
                return window, len(cut_idx)
            cands = [
                i
                for i, m in enumerate(window)
                if (indices is None or i in indices) and _truncatable(m, roles)
            ]
            if not cands:
                break
            i = max(cands, key=lambda j: est.size_of(window[j]))
            msg = window[i]
            content: str = msg["content"]
            msg_tokens = max(1, est.count_message(msg) - 3)
            chars_per_tok = len(content) / msg_tokens
            excess = total - goal + 8
            new_len = int(len(content) - excess * chars_per_tok * 1.05)
            new_content = truncate_text(content, max(0, new_len))
            if new_content == content:
                break
            window[i] = {**msg, "content": new_content, "meta": {**meta(msg), "truncated": True}}
            cut_idx.add(i)
    return window, len(cut_idx)


def proactive(
    window: list[Message], est: TokenEstimator, budget: Budget, fixed: list[Message], tools: Tools
) -> TrimResult:
    """Stage 1: above ``proactive_at`` of the limit, drop oldest units down to ``target``."""
    if request_tokens(est, fixed, window, tools) <= budget.proactive_at * budget.limit:
        return TrimResult(window)
    return drop_units(window, est, fixed, tools, int(budget.target * budget.limit))


def validate(
    window: list[Message], est: TokenEstimator, budget: Budget, fixed: list[Message], tools: Tools
) -> TrimResult:
    """Stage 2: fit under the limit (drop units, then truncate) and repair tool-call pairs."""
    window = repair(window)
    res = drop_units(window, est, fixed, tools, budget.limit)
    kept, n_cut = truncate_to_fit(res.window, est, fixed, tools, budget.limit)
    return TrimResult(repair(kept), res.dropped, n_cut)


def minimal(window: list[Message]) -> TrimResult:
    """Only the anchor and the last unit; everything else is dropped."""
    units = group_units(repair(window))
    if not units:
        return TrimResult([])
    flat = flatten(units)
    anchor_i = latest_user_index(flat)
    anchor = flat[anchor_i] if anchor_i is not None else None
    keep = {len(units) - 1} | {i for i, u in enumerate(units) if any(m is anchor for m in u)}
    return TrimResult(
        flatten([u for i, u in enumerate(units) if i in keep]),
        flatten([u for i, u in enumerate(units) if i not in keep]),
    )


def reactive(
    level: int,
    window: list[Message],
    est: TokenEstimator,
    budget: Budget,
    fixed: list[Message],
    tools: Tools,
) -> TrimResult:
    """Stage 3, after a length rejection: level 1 fits 50% of the limit, 2 fits 25%, 3 keeps the minimum.

    Each level also cuts contents if the kept units alone exceed its goal.
    """
    if level not in REACTIVE_TARGETS:
        raise ValueError(f"reactive level must be 1, 2 or 3, got {level!r}")
    goal = int(REACTIVE_TARGETS[level] * budget.limit)
    window = repair(window)
    if level == 3:
        res = minimal(window)
        last = group_units(res.window)[-1] if res.window else []
        start = len(res.window) - len(last)
        kept, n_cut = truncate_to_fit(
            res.window, est, fixed, tools, goal, indices=set(range(start, len(res.window)))
        )
        kept, more = truncate_to_fit(kept, est, fixed, tools, goal)  # then the anchor, if still needed
        return TrimResult(repair(kept), res.dropped, max(n_cut, more))
    res = drop_units(window, est, fixed, tools, goal)
    kept, n_cut = truncate_to_fit(res.window, est, fixed, tools, goal)
    return TrimResult(repair(kept), res.dropped, n_cut)


def recovery_message(text: str) -> Message:
    """The system message that re-orients the model after a reactive trim."""
    return {"role": "system", "content": text, "meta": {"kind": KIND_RECOVERY}}


def compose_recovery(
    current_task: str | None, *, todos: str = "", git_activity: str = "", summary: str = ""
) -> str:
    """A recovery text: (summary), todo list, recent git activity, and the current task anchor.

    The engine already sends the ``<thread_summary>`` right before the recovery message,
    so ``summary`` is only needed when the recovery is used without the engine.
    """
    parts = [
        "The conversation was shortened to fit the model's context window. "
        "Continue the current task from where it stands; the session archive keeps everything."
    ]
    if summary.strip():
        parts.append(summary.strip())
    if todos.strip():
        parts.append("Todo list:\n" + todos.strip())
    if git_activity.strip():
        parts.append("Recent git activity:\n" + git_activity.strip())
    if current_task and current_task.strip():
        parts.append("Current task: " + current_task.strip())
    return "\n\n".join(parts)
