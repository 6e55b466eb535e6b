"""The user's real encoder helper (clio.recall.encoder_service) as tests and benches leave it: a
run started it in their own $CLIO_HOME, and it would stay loaded until its idle time passes."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

from testkit.clio_run import running

if TYPE_CHECKING:
    from clio.recall.encoder_client import EncoderClient
    from clio.recall.encoder_models import Endpoint

HELPER_MODULE = "clio.recall.encoder_service"  # as clio.recall.encoder_start runs it: python -m this


def stop_helper(home: Path, endpoint: Endpoint | None = None) -> None:
    """Stop the helper listening in ``home`` (``$CLIO_HOME``), if one answers; ``endpoint``: the
    helper of that endpoint's model (``recall_embeddings``)."""
    from clio.recall.encoder_client import EncoderClient

    with contextlib.suppress(OSError, ValueError):
        os.kill(EncoderClient(home, home, endpoint=endpoint).ping(2.0), signal.SIGTERM)


def helpers_under(root: Path) -> list[int]:
    """The pids of the encoder helpers whose ``$CLIO_HOME`` (their ``--home`` argument) lies
    under ``root``, read from ``/proc``; a helper that has exited but not yet been reaped is gone."""
    root = root.resolve()
    found: list[int] = []
    for proc, args in running(HELPER_MODULE):
        if b"--home" not in args:
            continue
        at = args.index(b"--home") + 1
        if at < len(args) and Path(os.fsdecode(args[at])).resolve().is_relative_to(root):
            found.append(int(proc.name))
    return found


def stop_helpers_under(root: Path, wait_s: float = 5.0) -> list[int]:
    """Stop every encoder helper whose ``$CLIO_HOME`` lies under ``root`` (SIGTERM, then SIGKILL
    for one still there after ``wait_s``): what a test started and did not stop, for instance one
    that was still loading when its test's ``stop_helper`` asked it for its pid. Returns their pids."""
    pids = helpers_under(root)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while pids and time.monotonic() < deadline and set(helpers_under(root)) & set(pids):
        time.sleep(0.05)
    for pid in set(helpers_under(root)) & set(pids):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return pids


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
