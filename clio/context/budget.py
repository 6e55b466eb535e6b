"""The budget of a request and every share of it, pure: numbers in, numbers out.

A request may take the context window minus the reserve for the reply (the *limit*). Every
other block that scales with the window is a share of that limit, defined here and nowhere
else, so a small window shrinks all of them together:

- the fixed part (system prompt + tool schemas) of the full profile: at most ``FIXED_SHARE``,
  else the lean profile is used (``clio.agent.window``);
- injected long-term memory ``LTM_SHARE`` and preferences ``PREFS_SHARE`` (and their settings);
- learned behaviours ``SKILLS_SHARE`` (at most ``SKILLS_MAX_TOKENS``);
- project instructions ``INSTRUCTIONS_SHARE``; the recovery text's task anchor ``TASK_SHARE``;
- the rendered thread summary ``SUMMARY_SHARE`` (150-1,500 tokens);
- the automatic recall block of a user message ``RECALL_SHARE`` (and its setting);
- a tool result kept inline: a third (``RESULT_PARTS``) (1,000-8,000 characters; longer ones are stored).

``clio.agent.window.Window`` owns the live budget and hands these figures to the engine, the
prompt builder and the tools.
"""

from __future__ import annotations

from dataclasses import dataclass

FIXED_SHARE = 1 / 3
LTM_SHARE = 1 / 10
PREFS_SHARE = 1 / 40
SKILLS_SHARE = 1 / 50
SKILLS_MAX_TOKENS = 250
INSTRUCTIONS_SHARE = 1 / 4
NOMINAL_CHARS_PER_TOKEN = 3.5  # the estimator's prior (clio.context.tokens.DEFAULT_RATIO)
TASK_SHARE = 1 / 8
TASK_MAX_CHARS = 2000
ATTACHMENT_SHARE = 0.25  # @file attachments of one message
CONSOLIDATION_SHARE = 0.35  # of the prompt budget: one end-of-session request
CONSOLIDATION_MAX_CHARS = 24_000
RECALL_SHARE = 1 / 20
SUMMARY_SHARE = 1 / 8
SUMMARY_MIN_TOKENS, SUMMARY_MAX_TOKENS = 150, 1500
RESULT_PARTS = 3  # a tool result kept inline takes at most a third of the budget
RESULT_CHARS = 8000  # the storing limit of tool results in large windows
MIN_RESULT_CHARS = 1000  # the least, however small the window


@dataclass
class Budget:
    """Token budget of one request: the window minus what is reserved for the reply."""

    context_window: int
    reserve_output: int | None = None
    proactive_at: float = 0.75
    target: float = 0.40

    def __post_init__(self) -> None:
        if not isinstance(self.context_window, int) or self.context_window <= 0:
            raise ValueError(f"context_window must be a positive integer, got {self.context_window!r}")
        if self.reserve_output is None:
            self.reserve_output = min(4096, self.context_window // 4)
        if not 0 <= self.reserve_output < self.context_window:
            raise ValueError(
                f"reserve_output must be between 0 and the context window ({self.context_window}), "
                f"got {self.reserve_output}"
            )
        if not 0 < self.target <= self.proactive_at <= 1:
            raise ValueError(
                f"need 0 < target <= proactive_at <= 1, got {self.target} and {self.proactive_at}"
            )

    @classmethod
    def for_window(cls, window: int, max_output_tokens: int | None = None) -> Budget:
        """The budget of ``window`` with the configured reply reserve, or the default where that
        would take half the window or more (a 4,096-token reply setting meeting a 4,096-token server)."""
        reserve = max_output_tokens
        if reserve is not None and reserve >= window // 2:
            reserve = None
        return cls(window, reserve_output=reserve)

    @property
    def reserve(self) -> int:
        return self.reserve_output or 0

    @property
    def limit(self) -> int:
        """Most tokens a prompt may take: the context window minus the reserved reply."""
        return self.context_window - self.reserve

    def shares(self, chars_per_token: float) -> Shares:
        return Shares(self.limit, chars_per_token)


@dataclass(frozen=True)
class Shares:
    """What each block may take of a prompt budget of ``limit`` tokens."""

    limit: int
    chars_per_token: float

    def _chars(self, share: float) -> int:
        return int(self.limit * share * self.chars_per_token)

    def fits_full(self, full_fixed_tokens: int) -> bool:
        """Whether the full profile's fixed part fits in its share (else: the lean profile)."""
        return full_fixed_tokens <= FIXED_SHARE * self.limit

    def ltm_tokens(self, configured: int) -> int:
        return max(0, min(configured, int(self.limit * LTM_SHARE)))

    def prefs_tokens(self, configured: int) -> int:
        return max(0, min(configured, int(self.limit * PREFS_SHARE)))

    def skills_tokens(self) -> int:
        return max(0, min(SKILLS_MAX_TOKENS, int(self.limit * SKILLS_SHARE)))

    def instructions_chars(self) -> int:
        """The project instructions' cap, at a nominal ratio rather than the learned one: it is part
        of the request's head, which must not change when the ratio is learned anew (a resume)."""
        return int(self.limit * INSTRUCTIONS_SHARE * NOMINAL_CHARS_PER_TOKEN)

    def attachment_chars(self) -> int:
        """Characters the files a message attaches with @path may take, all together."""
        return self._chars(ATTACHMENT_SHARE)

    def task_chars(self) -> int:
        return min(TASK_MAX_CHARS, self._chars(TASK_SHARE))

    def recall_chars(self, configured: int) -> int:
        """Characters the automatic recall block of one user message may take."""
        return int(max(0, min(configured, int(self.limit * RECALL_SHARE))) * self.chars_per_token)

    def summary_chars(self) -> int:
        tokens = max(SUMMARY_MIN_TOKENS, min(SUMMARY_MAX_TOKENS, int(self.limit * SUMMARY_SHARE)))
        return int(tokens * self.chars_per_token)

    def consolidation_chars(self) -> int:
        """The session text one consolidation request may carry (``Orchestrator.ask`` refuses a
        prompt over half the budget; this stays well under it)."""
        return min(CONSOLIDATION_MAX_CHARS, self._chars(CONSOLIDATION_SHARE))

    def result_chars(self) -> int:
        return max(MIN_RESULT_CHARS, min(RESULT_CHARS, int(self.limit * self.chars_per_token / RESULT_PARTS)))
