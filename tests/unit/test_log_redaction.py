"""Debug logs pass the redactor: a secret logged by any library never reaches the log stream."""

from __future__ import annotations

import io
import logging

from clio.safety.logs import redact_logs
from clio.safety.redact import Redactor

KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"


def test_a_secret_in_a_debug_record_is_redacted_whichever_logger_wrote_it() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger("clio-test-root")
    root.handlers, root.propagate = [handler], False
    root.setLevel(logging.DEBUG)
    redact_logs(Redactor("standard"), root)
    redact_logs(Redactor("standard"), root)  # twice adds no second filter
    child = logging.getLogger("clio-test-root.openai._base_client")
    child.debug("Request options: %s", {"json_data": {"messages": [{"content": f"key {KEY}"}]}})
    child.debug("plain line with sha 3f786850e387550fdab836ed7e6dc881de23001b")
    out = stream.getvalue()
    assert KEY not in out and "[REDACTED:" in out
    assert "3f786850e387550fdab836ed7e6dc881de23001b" in out  # look-alikes pass
    assert len(handler.filters) == 1


def test_without_the_filter_the_secret_would_be_logged() -> None:  # the control: the test can fail
    stream = io.StringIO()
    log = logging.getLogger("clio-test-control")
    log.handlers, log.propagate = [logging.StreamHandler(stream)], False
    log.setLevel(logging.DEBUG)
    log.debug("key %s", KEY)
    assert KEY in stream.getvalue()
