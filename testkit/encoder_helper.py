"""The user's real encoder helper (clio.recall.encoder_service) as tests and benches leave it: a
run started it in their own $CLIO_HOME, and it would stay loaded until its idle time passes."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clio.recall.encoder_client import EncoderClient
    from clio.recall.encoder_models import Endpoint


def stop_helper(home: Path, endpoint: Endpoint | None = None) -> None:
    """Stop the helper listening in ``home`` (``$CLIO_HOME``), if one answers; ``endpoint``: the
    helper of that endpoint's model (``recall_embeddings``)."""
    from clio.recall.encoder_client import EncoderClient

    with contextlib.suppress(OSError, ValueError):
        os.kill(EncoderClient(home, home, endpoint=endpoint).ping(2.0), signal.SIGTERM)


def wait_for_judge(client: EncoderClient, timeout_s: float = 60.0) -> None:
    """Until ``client``'s helper has its judge loaded: a score asking for it (``client.judge``
    set) makes it load in a thread; a helper still starting is waited for too."""
    client.judge = True
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if client.status(2.0).get("judge") is True:
                return
            client.score("a message to load the judge", [["a unit"]])
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"the helper's judge did not load within {timeout_s:.0f} s: {client.state}")
