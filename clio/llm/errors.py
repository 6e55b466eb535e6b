"""One exception per kind of endpoint failure, each with one sentence saying what to do."""

from __future__ import annotations


class LLMError(Exception):
    """Base: ``str(exc)`` is a single sentence fit to show the user. A run that stops on one exits
    with ``exit_code`` (README: 6, the endpoint could not be used)."""

    exit_code = 6


class ContextLengthError(LLMError):
    """The endpoint rejected the request for length; the context engine reacts to this one.

    ``window`` and ``requested`` are the token counts the server stated, when it stated them.
    """

    def __init__(self, message: str, window: int | None = None, requested: int | None = None) -> None:
        super().__init__(message)
        self.window = window
        self.requested = requested


class AuthError(LLMError):
    pass


class ModelNotFound(LLMError):
    pass


class BadRequest(LLMError):
    pass


class RateLimited(LLMError):
    pass


class ServerError(LLMError):
    pass


class EndpointUnreachable(LLMError):
    pass
