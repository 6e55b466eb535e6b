"""What a request's fixed part may cost: the tool profile and the budgets that scale with the window.

The fixed part of every request (system prompt + tool schemas) is paid on every call and never
trimmed. With the full profile it is about 1,800 tokens: nothing in a 128k window, most of a
4k one. So clio measures it against the prompt budget (the window minus the reply reserve):

- ``full``: every tool with its whole schema and the full system prompt;
- ``lean``: a short system prompt and only the tools that declare a lean form (files, shell,
  git), with fewer operations and parameters (``clio.tools.registry.Lean``).

``auto`` (the default) takes ``full`` while its fixed part fits in ``FIXED_SHARE`` of the budget,
else ``lean``. The other per-request blocks scale with the budget the same way: injected memory,
project instructions, stored-result previews (``clio.tools.results.result_chars_for``), the
thread summary (``clio.memory.context``) and the recovery text's task anchor.
"""

from __future__ import annotations

from clio.tools.registry import PROFILES

PROFILE_SETTINGS = ("auto", *PROFILES)
FIXED_SHARE = 1 / 3  # the most of the prompt budget the full fixed part may take before going lean
LTM_SHARE = 1 / 10  # injected long-term memory: at most this share of the budget (and its setting)
PREFS_SHARE = 1 / 40  # injected preferences
INSTRUCTIONS_SHARE = 1 / 4  # project instructions (.clio/instructions.md, AGENTS.md), all together
TASK_SHARE = 1 / 8  # the task anchor repeated in the recovery message
TASK_MAX_CHARS = 2000


def choose_profile(setting: str, limit: int, full_fixed_tokens: int) -> str:
    """``full`` or ``lean`` for a prompt budget of ``limit`` tokens."""
    if setting in PROFILES:
        return setting
    if setting != "auto":
        raise ValueError(f"profile must be one of {PROFILE_SETTINGS}, got {setting!r}")
    return "full" if full_fixed_tokens <= FIXED_SHARE * limit else "lean"


def scaled_budget(configured: int, limit: int, share: float) -> int:
    """A token budget that is ``configured`` in a large window and ``share`` of ``limit`` in a small one."""
    return max(0, min(configured, int(limit * share)))


def chars_for(limit: int, share: float, chars_per_token: float, most: int | None = None) -> int:
    """``share`` of the prompt budget in characters (at most ``most``)."""
    n = int(limit * share * chars_per_token)
    return n if most is None else min(most, n)
