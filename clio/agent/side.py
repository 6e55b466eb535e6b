"""One bounded request outside the conversation (memory upkeep: consolidation, compaction of faded
memory), as a turn's requests are made: through the redaction net, with the client's retries, its
usage added to the session's; the window and the archive are untouched. It needs no turn loop, so
what asks it (the app's memory service) never calls back into one."""

from __future__ import annotations

from collections.abc import Callable

from clio.agent.window import Window
from clio.llm.client import LLMClient
from clio.llm.errors import ContextLengthError
from clio.safety.redact import Redactor

UPKEEP_SYSTEM = "You maintain a coding agent's project memory. Reply exactly in the format asked for."


class SideRequest:
    def __init__(
        self,
        client: LLMClient,
        window: Window,
        redactor: Redactor | None,
        add_usage: Callable[[dict[str, int]], None],
        temperature: float | None = None,
    ) -> None:
        self.client = client
        self.window = window
        self.redactor = redactor
        self.add_usage = add_usage  # the session's usage (its /cost, the run's usage line)
        self.temperature = temperature

    def __call__(self, prompt: str, max_tokens: int) -> str:
        """The model's reply to ``prompt``; "" when it says nothing or the request does not fit."""
        if self.window.estimator.count_text(prompt) > self.window.budget.limit // 2:
            return ""
        text = self.redactor.redact(prompt)[0] if self.redactor is not None else prompt
        messages = [{"role": "system", "content": UPKEEP_SYSTEM}, {"role": "user", "content": text}]
        try:
            result = self.client.chat(messages, None, temperature=self.temperature, max_tokens=max_tokens)
        except ContextLengthError:
            return ""
        if result.usage is not None:
            self.add_usage(result.usage.as_dict())
        return "" if result.interrupted else result.content.strip()
