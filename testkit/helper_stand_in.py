"""A stand-in for clio's encoder helper: a listener on the helper's unix socket that answers as a
test says, to see what a run sends it and how the run takes a helper that misbehaves (hangs,
answers an older protocol, is gone mid-request). The real helper is tested as itself elsewhere."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any


def stand_in_helper(path: Path, answer: Callable[[Any], object]) -> socket.socket:
    """Listen on ``path`` (``clio.recall.encoder_readiness.socket_path(home)``) and call
    ``answer(file)`` for each connection, on a thread of its own (the file reads the request's
    lines and writes the answers); close the returned socket to stop it."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)

    def one(conn: socket.socket) -> None:
        with conn, conn.makefile("rwb") as f:
            answer(f)

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=one, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return listener
