"""The ``preferences`` tool: the agent records and recalls the user's stable preferences.

Service: ``ctx.services.prefs`` (a :class:`clio.memory.prefs_store.PrefStore`); ``session``
(the running Session) tells whether the current turn read untrusted content.

Preferences are user-wide (they reach the prompt of every project), so the model writes one
(add, update) only with the user's approval: in the REPL it asks through
``ctx.approve("memory", ...)``; in one-shot mode only ``--yes`` approves. A turn that has read
file contents, command output or other outside content (:mod:`clio.memory.provenance`) needs
an explicit yes from a person: in the REPL it asks even under ``--yes``, in one-shot mode it
refuses. recall and apply (which only refreshes a preference's clock) need no approval, and
neither does anything in incognito (kept in memory for the session only, never in a prompt).
"""

from __future__ import annotations

from typing import Any

from clio.memory import provenance
from clio.memory.prefs import TYPES, PrefError, check_score, check_text, describe
from clio.memory.prefs_store import PrefStore
from clio.tools.context import ToolContext, ToolError, need, redacted_args
from clio.tools.registry import REGISTRY, register
from clio.tools.spec import OWN, READ, Op, ToolSpec

DESCRIPTION = (
    "The user's lasting preferences, scored 0-10 (0-1.5: never; 7-10: prefer). add only stable "
    "ones the user actually expressed; silence is not a preference. apply (id) when you follow one."
)
MAX_LIMIT = 50
HINT = "If the user stated it, say so in your answer: they can add it with /prefs add <score> <text>."
REFUSED_ONE_SHOT = (
    "Not saved: preferences apply to every project of this user, so they are saved only with the "
    "user's approval, and nobody can approve in one-shot mode without --yes. " + HINT
)
REFUSED_TAINTED = (
    "Not saved: this turn has read outside content ({sources}); a preference proposed after that "
    "needs a person's explicit approval, which --yes does not give. " + HINT
)
DECLINED = "Not saved: the user declined this preference. Do not propose it again unless the user asks."


def _store(ctx: ToolContext) -> PrefStore:
    store: PrefStore = ctx.service("prefs")
    return store


def _opt_str(args: dict[str, Any], key: str) -> str | None:
    val = args.get(key)
    if val is None or val == "":
        return None
    if not isinstance(val, str):
        raise ToolError(f"'{key}' must be a string")
    return val


def _permit(ctx: ToolContext, store: PrefStore, what: str) -> None:
    """Raise a ToolError unless the user lets the model write the preference ``what``.

    Incognito (``store.path`` None) needs no approval: nothing is written and the session's
    prompt carries no preferences."""
    if store.path is None:
        return
    session: Any = ctx.services.session
    messages = getattr(session, "messages", None)
    sources = [*ctx.prompt_sources(), *provenance.turn_sources(messages, REGISTRY.brings_outside)] if messages is not None else ["unknown turn"]
    if not ctx.interactive:
        if not ctx.yes:
            raise ToolError(REFUSED_ONE_SHOT)
        if sources:
            raise ToolError(REFUSED_TAINTED.format(sources=", ".join(sources)))
        return
    summary = f"save a preference for all your projects: {what}"
    if sources:
        summary += f" (proposed after reading {', '.join(sources)}: check it is really yours)"
    if not ctx.approve("memory", summary, destructive=bool(sources)):  # tainted: asked even under --yes
        raise ToolError(DECLINED)


def _add(ctx: ToolContext, args: dict[str, Any]) -> str:
    store = _store(ctx)
    text = check_text(need(args, "text"))
    score = check_score(need(args, "score", (int, float, str)))
    _permit(ctx, store, f"{text!r} (score {score:g} of 10)")
    added = store.add(text, score, _opt_str(args, "type"), args.get("scenarios"))
    line = describe(added.pref, store.clock())
    if added.merged:
        return f"Already known; re-added (score {added.previous_score:.1f} -> {added.pref.score:.1f}): {line}"
    return f"Added: {line}"


def _update(ctx: ToolContext, args: dict[str, Any]) -> str:
    store = _store(ctx)
    pid = need(args, "id")
    score = args.get("score")
    text = _opt_str(args, "text")
    current = store.get(pid)
    new_text = check_text(text) if text is not None else current.text
    new_score = check_score(score) if score is not None else current.score
    _permit(ctx, store, f"{new_text!r} (score {new_score:g} of 10; was {current.score:g}: {current.text!r})")
    p = store.update(pid, text, score, _opt_str(args, "type"), args.get("scenarios"))
    return f"Updated: {describe(p, store.clock())}"


def _recall(ctx: ToolContext, args: dict[str, Any]) -> str:
    store = _store(ctx)
    limit = args.get("limit", 10)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ToolError(f"'limit' must be an integer from 1 to {MAX_LIMIT}")
    found = store.recall(_opt_str(args, "query"), _opt_str(args, "scenario"), _opt_str(args, "type"), limit)
    if not found:
        return "No preferences match."
    now = store.clock()
    return "\n".join(describe(p, now) for p in found)


def _apply(ctx: ToolContext, args: dict[str, Any]) -> str:
    store = _store(ctx)
    p, refreshed = store.apply(need(args, "id"))
    note = "refreshed" if refreshed else "already refreshed in the last 12 hours"
    return f"Applied {p.id} ({note})."


def _run(ctx: ToolContext, args: dict[str, Any]) -> str:
    try:
        return SPEC.dispatch(ctx, redacted_args(ctx, args))  # preferences land on disk: no secrets
    except PrefError as exc:
        raise ToolError(str(exc)) from None


# the user's own preferences (approved by the user when written): no outside content
SPEC = register(ToolSpec(
    "preferences",
    DESCRIPTION,
    {
        "add": Op(_add, OWN, outside=False),
        "update": Op(_update, OWN, outside=False),
        "recall": Op(_recall, READ, outside=False),
        "apply": Op(_apply, OWN, outside=False),
    },
    {
        "text": {"type": "string"},
        "score": {"type": "number", "description": "0-10"},
        "type": {"type": "string", "enum": list(TYPES)},
        "scenarios": {"type": "array", "items": {"type": "string"}, "description": "e.g. coding, writing"},
        "id": {"type": "string"},
        "query": {"type": "string"},
        "scenario": {"type": "string"},
        "limit": {"type": "integer"},
    },
    label=("query", "text"),
    aliases=("prefs",),
    run=_run,
))  # fmt: skip
