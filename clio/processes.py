"""Whether a process still runs, by its pid: for a file a dead clio process left
(:mod:`clio.store.atomic`) and for the encoder helper ``clio encoder stop`` let go
(:mod:`clio.app.encoder_install`)."""

from __future__ import annotations

import os
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether ``pid`` runs: one that answers signal 0 (another user's too), unless it left and
    only waits for its parent to reap it (state Z in ``/proc``: its memory is let go)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc here, or it left just now: it answered the signal
    return stat.rpartition(")")[2].split()[:1] != ["Z"]
