"""The user's real encoder helper (clio.recall.encoder_service) as tests and benches leave it: a
run started it in their own $CLIO_HOME, and it would stay loaded until its idle time passes."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clio.recall.encoder_models import Endpoint


def stop_helper(home: Path, endpoint: Endpoint | None = None) -> None:
    """Stop the helper listening in ``home`` (``$CLIO_HOME``), if one answers; ``endpoint``: the
    helper of that endpoint's model (``recall_embeddings``)."""
    from clio.recall.encoder_client import EncoderClient

    with contextlib.suppress(OSError, ValueError):
        os.kill(EncoderClient(home, home, endpoint=endpoint).ping(2.0), signal.SIGTERM)
