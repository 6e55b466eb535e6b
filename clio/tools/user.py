"""``user_collaboration``: ask the user a question mid-turn (no user in one-shot mode)."""

from __future__ import annotations

from typing import Any

from clio import actions as A
from clio.tools.context import ToolContext, ToolError, need
from clio.tools.registry import register
from clio.tools.spec import OWN, Op, ToolSpec

__all__ = ["NO_USER", "SPEC"]

NO_USER = (
    "No user is present (one-shot mode), so the question was not asked. Proceed on your best "
    "judgement and state the assumptions you make in your answer."
)


def _request_input(ctx: ToolContext, args: dict[str, Any]) -> str:
    question = need(args, "question").strip()
    if not question:
        raise ToolError("'question' is empty")
    answer = ctx.ask_user(question)
    if answer is None:
        return NO_USER
    if not answer.strip():
        return "The user gave an empty answer."
    return f"The user answered: {answer}"


SPEC = register(ToolSpec(
    "user_collaboration",
    "Ask the user a question when you cannot proceed without their decision.",
    # the answer is the user's own words: not outside content
    {"request_input": Op(_request_input, OWN, outside=False, action=A.ASK_USER)},
    {"question": {"type": "string"}},
    required=("question",),
    label=("question",),
    aliases=("ask",),
))  # fmt: skip
