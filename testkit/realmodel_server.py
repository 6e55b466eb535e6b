"""Start and stop a real llama-server for the `realmodel` tests.

The binary and the verified weights come from ``scripts/real-model.sh`` (see docs/real-model.md):
either ``LLAMA_SERVER`` / ``LLAMA_MODEL`` in the environment, or the ``env`` file the script writes
into its cache (``$CLIO_REALMODEL_CACHE``, default ``~/.cache/clio-realmodel``).

Usage in a test module (``tests/`` is on sys.path under pytest's default import mode)::

    import pytest
    from realmodel_server import llama_server, start_llama_server  # noqa: F401  (fixture)

    pytestmark = pytest.mark.realmodel

    def test_something(llama_server: str) -> None:      # base URL, server at -c 4096 with --jinja
        ...

    def test_small_window() -> None:
        base_url, stop = start_llama_server(ctx_size=2048)
        try:
            ...
        finally:
            stop()

Both skip with "run scripts/real-model.sh first" when the binary or the model is absent.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

MODEL_ALIAS = "qwen"
SKIP_REASON = "real model server not set up: run scripts/real-model.sh first"
HEALTH_TIMEOUT = 120.0

# No proxies for loopback requests, whatever the environment says.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def cache_dir() -> Path:
    raw = os.environ.get("CLIO_REALMODEL_CACHE")
    return Path(raw).expanduser() if raw else Path.home() / ".cache" / "clio-realmodel"


def llama_paths() -> tuple[Path, Path] | None:
    """(llama-server binary, model file) when both exist, else None."""
    values = {k: os.environ.get(k, "") for k in ("LLAMA_SERVER", "LLAMA_MODEL")}
    env_file = cache_dir() / "env"
    if not all(values.values()) and env_file.is_file():
        for line in env_file.read_text(encoding="utf-8").splitlines():
            key, sep, value = line.partition("=")
            if sep and key in values and not values[key]:
                values[key] = value.strip()
    server, model = Path(values["LLAMA_SERVER"]), Path(values["LLAMA_MODEL"])
    if not values["LLAMA_SERVER"] or not values["LLAMA_MODEL"]:
        return None
    if not (server.is_file() and os.access(server, os.X_OK) and model.is_file()):
        return None
    return server, model


def require_llama() -> tuple[Path, Path]:
    """The paths, or skip the calling test with a clear reason."""
    paths = llama_paths()
    if paths is None:
        pytest.skip(SKIP_REASON)
    return paths


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(port: int) -> bool:
    try:
        with _OPENER.open(f"http://127.0.0.1:{port}/health", timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start_llama_server(
    ctx_size: int = 4096,
    jinja: bool = True,
    *,
    threads: int = 2,
    alias: str = MODEL_ALIAS,
    extra_args: tuple[str, ...] = (),
    timeout: float = HEALTH_TIMEOUT,
) -> tuple[str, Callable[[], None]]:
    """Start llama-server on a free loopback port; return ``(base_url, stop)``.

    ``base_url`` ends in ``/v1`` (give it to the openai client; the model name is ``alias``).
    ``jinja=True`` (the server's own default) is needed for ``tools`` at all: with ``--no-jinja``
    llama-server answers any request carrying tools with HTTP 500 "tools param requires --jinja
    flag". ``stop()`` is idempotent and also runs at interpreter exit. Skips the calling test when
    the binary or model is absent; raises RuntimeError (with the server log's tail) when the server
    does not come up.
    """
    server, model = require_llama()
    last_error = ""
    for _attempt in range(3):  # a port taken between free_port() and bind: try another
        port = free_port()
        log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)  # noqa: SIM115
        cmd = [
            str(server), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
            "-c", str(ctx_size), "-t", str(threads), "--no-webui", "--alias", alias,
            "--jinja" if jinja else "--no-jinja", *extra_args,
        ]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log_path = Path(log.name)

        def stop(
            proc: subprocess.Popen[bytes] = proc, log_path: Path = log_path, log: IO[bytes] = log
        ) -> None:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
            with contextlib.suppress(Exception):
                log.close()
            with contextlib.suppress(OSError):
                log_path.unlink()

        atexit.register(stop)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            if _healthy(port):
                return f"http://127.0.0.1:{port}/v1", stop
            time.sleep(0.25)
        last_error = _tail(log_path)
        exited = proc.poll() is not None
        stop()
        if not exited:
            raise RuntimeError(f"llama-server did not become healthy within {timeout:.0f}s:\n{last_error}")
        if "bind" not in last_error.lower() and "address" not in last_error.lower():
            break
    raise RuntimeError(f"llama-server exited during start-up:\n{last_error}")


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    """Base URL of a llama-server (-c 4096, --jinja) shared by one test module; skips when absent."""
    base_url, stop = start_llama_server()
    try:
        yield base_url
    finally:
        stop()
