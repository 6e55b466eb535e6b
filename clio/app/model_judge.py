"""The user's ``recall_judge_model`` asked which of a message's units the automatic recall quotes,
and in what order the memory tool shows its results: one bounded request each to the user's own
endpoint (the same base URL and key as every request), its text through the redaction net, its
usage added to the session's and kept apart by model (priced at its own price). The requests and
the replies' reading are pure (:mod:`clio.recall.model_judge`, :mod:`clio.recall.model_order`);
here are the requests and what a failure means.

A failure never stops the turn: the packaged decision stands for that message (``/context`` says
why), the search's order for that search. A failure that will not mend by itself (no such model,
the key refused, the request refused) turns the judge off for the rest of the run, told once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from clio.llm.client import LLMClient
from clio.llm.endpoint import Endpoint
from clio.llm.errors import AuthError, BadRequest, LLMError, ModelNotFound
from clio.llm.prices import total
from clio.recall import model_judge, model_order

if TYPE_CHECKING:
    from clio.agent.turn import TurnResult
    from clio.config import Settings
    from clio.store.sessions import Session

TIMEOUT_S = 15.0  # seconds the endpoint may go without a byte of the judge's reply
MAX_TOKENS = 64  # the reply is one line; a model that thinks aloud first gets this much room
ORDER_MAX_TOKENS = 160  # an order's line names up to thirty numbers
# errors that the next message would meet again: the judge is off for the rest of the run
LASTING = (AuthError, ModelNotFound, BadRequest)


class ModelJudge:
    def __init__(
        self,
        endpoint: Endpoint,
        redact: Callable[[str], str],
        notice: Callable[[str], None] | None = None,
        session: Callable[[], Session | None] | None = None,
    ) -> None:
        """``endpoint``: the user's, naming the judge's model, without retries (a message waits
        for one answer at most); ``redact``: the run's redaction of outgoing text; ``session``: the
        running session, whose usage each request adds to."""
        self.model = endpoint.model
        self.client = LLMClient(endpoint, backoff=0.0)
        self.redact = redact
        self.notice = notice
        self.session = session
        self.off = ""  # why the judge is off for the rest of the run
        self._spent: list[dict[str, int]] = []  # usage since the turn's result took it (charge)

    @classmethod
    def of(
        cls,
        s: Settings,
        redact: Callable[[str], str],
        notice: Callable[[str], None] | None = None,
        session: Callable[[], Session | None] | None = None,
    ) -> ModelJudge | None:
        """The judge ``recall_judge_model`` names, on the user's endpoint with the user's key (no
        retries, :data:`TIMEOUT_S` for a byte); None when it names none."""
        if not s.recall_judge_model:
            return None
        return cls(Endpoint(s.endpoint(), s.require_key(), s.recall_judge_model, TIMEOUT_S, 0), redact, notice, session)

    def __call__(self, query: str, texts: list[str]) -> tuple[list[int] | None, str]:
        """(the indexes of the ``texts`` to quote, most useful first, or None: no answer to go by;
        what ``/context`` tells of it)."""
        reply, why, ms = self._ask(model_judge.messages(query, texts), MAX_TOKENS, "the packaged decision stood")
        if reply is None:
            return None, why
        picks = model_judge.read(reply, len(texts))
        if picks is None:
            said = " ".join(reply.split())[:80]
            return None, f"{self.model} answered {said!r}, not a QUOTE line ({ms} ms); the packaged decision stood"
        named = ", ".join(model_judge.LETTERS[i] for i in picks) or "none"
        return picks, f"{self.model} named {named} of {model_judge.LETTERS[: len(texts)]} ({ms} ms)"

    def order(self, query: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The memory tool's ``hits`` (searched with their ``texts``), the first
        :data:`clio.recall.model_order.ORDER_UNITS` read by the model, those it names first; as
        they were when it gives no answer to go by."""
        head = hits[: model_order.ORDER_UNITS]
        if len(head) < 2:
            return hits
        passages = [model_order.hit_passage(h) for h in head]
        reply, _, _ = self._ask(model_order.order_messages(query, passages), ORDER_MAX_TOKENS, "the search's order stood")
        picks = model_order.read_order(reply, len(head)) if reply is not None else None
        return hits if picks is None else model_order.ordered(head, picks) + hits[len(head) :]

    def _ask(self, messages: list[dict[str, str]], max_tokens: int, fallback: str) -> tuple[str | None, str, int]:
        """(the reply's text, '', ms), or (None, why not, 0): a failure told in the judge's terms,
        and ``fallback`` (what stood instead)."""
        if self.off:
            return None, f"{self.model}: off for this run ({self.off})", 0
        messages = [dict(m, content=self.redact(m["content"])) for m in messages]
        started = time.perf_counter()
        try:
            result = self.client.chat(messages, None, max_tokens=max_tokens)
        except LASTING as exc:
            self.off = self._lasting(exc)
            if self.notice is not None:
                self.notice(f"recall_judge_model {self.model}: {self.off}; the automatic recall and the memory tool go without it for the rest of this run.")
            return None, f"{self.model}: {self.off}; {fallback}", 0
        except (LLMError, OSError) as exc:
            return None, f"{self.model}: {_sentence(exc)}; {fallback}", 0
        if result.usage is not None:
            usage = result.usage.as_dict()
            self._spent.append(usage)  # the turn's usage line and JSON count its request too
            session = self.session() if self.session is not None else None
            if session is not None:
                session.add_usage(usage, judge_model=self.model)
        return result.content, "", round((time.perf_counter() - started) * 1000)

    def spent(self) -> list[dict[str, int]]:
        """The usage of its requests since the last call (the turn's result takes them)."""
        taken, self._spent = self._spent, []
        return taken

    def charge(self, result: TurnResult) -> None:
        """Its requests since the last call put into the turn's ``result``: first in its usage (the
        automatic recall's came before the turn's), and apart, priced at this model's price."""
        taken = self.spent()
        if taken:
            result.usage[:0] = taken
            result.judged[self.model] = total(taken)

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
