"""The user's ``recall_judge_model`` asked which of a message's units the automatic recall quotes:
one bounded request to the user's own endpoint (the same base URL and key as every request), its
text through the redaction net, its usage added to the session's. The request and the reply's
reading are pure (:mod:`clio.recall.model_judge`); here are the request and what a failure means.

A failure never stops the turn: the packaged decision stands for that message, and ``/context``
says why. A failure that will not mend by itself (no such model, the key refused, the request
refused) turns the judge off for the rest of the run, told once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from clio.llm.client import LLMClient
from clio.llm.endpoint import Endpoint
from clio.llm.errors import AuthError, BadRequest, LLMError, ModelNotFound
from clio.recall import model_judge

if TYPE_CHECKING:
    from clio.config import Settings

TIMEOUT_S = 15.0  # seconds the endpoint may go without a byte of the judge's reply
MAX_TOKENS = 64  # the reply is one line; a model that thinks aloud first gets this much room
# errors that the next message would meet again: the judge is off for the rest of the run
LASTING = (AuthError, ModelNotFound, BadRequest)


class ModelJudge:
    def __init__(
        self,
        endpoint: Endpoint,
        redact: Callable[[str], str],
        notice: Callable[[str], None] | None = None,
    ) -> None:
        """``endpoint``: the user's, naming the judge's model, without retries (a message waits
        for one answer at most); ``redact``: the run's redaction of outgoing text."""
        self.model = endpoint.model
        self.client = LLMClient(endpoint, backoff=0.0)
        self.redact = redact
        self.notice = notice
        self.off = ""  # why the judge is off for the rest of the run

    @classmethod
    def of(cls, s: Settings, redact: Callable[[str], str], notice: Callable[[str], None] | None = None) -> ModelJudge | None:
        """The judge ``recall_judge_model`` names, on the user's endpoint with the user's key (no
        retries, :data:`TIMEOUT_S` for a byte); None when it names none."""
        if not s.recall_judge_model:
            return None
        return cls(Endpoint(s.endpoint(), s.require_key(), s.recall_judge_model, TIMEOUT_S, 0), redact, notice)

    def __call__(
        self, query: str, texts: list[str], add_usage: Callable[[dict[str, int]], None] | None
    ) -> tuple[list[int] | None, str]:
        """(the indexes of the ``texts`` to quote, most useful first, or None: no answer to go by;
        what ``/context`` tells of it)."""
        if self.off:
            return None, f"{self.model}: off for this run ({self.off})"
        messages = [dict(m, content=self.redact(m["content"])) for m in model_judge.messages(query, texts)]
        started = time.perf_counter()
        try:
            result = self.client.chat(messages, None, max_tokens=MAX_TOKENS)
        except LASTING as exc:
            self.off = self._lasting(exc)
            if self.notice is not None:
                self.notice(f"recall_judge_model {self.model}: {self.off}; the automatic recall decides without it for the rest of this run.")
            return None, f"{self.model}: {self.off}; the packaged decision stood"
        except (LLMError, OSError) as exc:
            return None, f"{self.model}: {_sentence(exc)}; the packaged decision stood"
        ms = round((time.perf_counter() - started) * 1000)
        if result.usage is not None and add_usage is not None:
            add_usage(result.usage.as_dict())
        picks = model_judge.read(result.content, len(texts))
        if picks is None:
            said = " ".join(result.content.split())[:80]
            return None, f"{self.model} answered {said!r}, not a QUOTE line ({ms} ms); the packaged decision stood"
        named = ", ".join(model_judge.LETTERS[i] for i in picks) or "none"
        return picks, f"{self.model} named {named} of {model_judge.LETTERS[: len(texts)]} ({ms} ms)"


    def _lasting(self, exc: BaseException) -> str:
        """What an error the next message would meet again says, in the judge's terms (the client's
        own sentence for the turn's model would point at ``--model``)."""
        where = self.client.base_url
        if isinstance(exc, ModelNotFound):
            return f"{where} has no model {self.model!r}: name one it serves in recall_judge_model"
        if isinstance(exc, AuthError):
            return f"{where} refused the key for {self.model!r}"
        return _sentence(exc)


def _sentence(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200].rstrip(".")
