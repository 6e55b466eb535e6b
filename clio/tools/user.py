"""``user_collaboration``: ask the user a question mid-turn (no user in one-shot mode)."""

from __future__ import annotations

from typing import Any

from clio.tools.registry import Handler, ToolContext, ToolError, dispatch, need, operation_schema, tool

__all__ = ["NO_USER", "user_collaboration"]

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


_OPS: dict[str, Handler] = {"request_input": _request_input}


@tool(
    "user_collaboration",
    "Ask the user a question when you cannot proceed without their decision.",
    operation_schema(list(_OPS), {"question": {"type": "string"}}, ["question"]),
)
def user_collaboration(ctx: ToolContext, args: dict[str, Any]) -> str:
    return dispatch(_OPS, ctx, args)
