"""The user's real encoder helper (clio.recall.encoder_service) as tests and benches leave it: a
run started it in their own $CLIO_HOME, and it would stay loaded until its idle time passes."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path


def stop_helper(home: Path) -> None:
    """Stop the helper listening in ``home`` (``$CLIO_HOME``), if one answers."""
    from clio.recall.encoder_client import EncoderClient

    with contextlib.suppress(OSError, ValueError):
        os.kill(EncoderClient(home, home).ping(2.0), signal.SIGTERM)
