"""Redaction of clio's logs (``--debug``): every record passes the one redactor before it is printed.

Debug logs carry what clio and its libraries do: urllib3 logs the endpoint's URLs, the MCP
client its messages. A handler-level filter redacts the formatted message of every record, whichever
library logged it, so a secret never reaches the log even at the debug level.
"""

from __future__ import annotations

import logging

from clio.safety.redact import Redactor


class RedactingFilter(logging.Filter):
    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # a library's bad format string: keep what it gave, redacted
            text = str(record.msg)
        record.msg, record.args = self.redactor.redact(text)[0], None
        return True


def redact_logs(redactor: Redactor, logger: logging.Logger | None = None) -> None:
    """Put the redacting filter on every handler of ``logger`` (the root logger by default)."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter(redactor))
