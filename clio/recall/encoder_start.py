"""Starting the user's encoder helper (:mod:`clio.recall.encoder_service`): detached, in its own
session, with an environment that holds none of clio's keys, once per user at a time (a start
lock beside its socket). Imported only by a run that starts one (:meth:`clio.recall.encoder_client.EncoderClient.start`)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from clio.recall.encoder_models import Endpoint

STARTING_S = 60.0  # a lock file younger than this: a helper is starting, do not start another
KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "PYTHONPATH", "SYSTEMROOT")
# for a model the user's endpoint serves: the proxies and certificates its requests take, as clio's
NETWORK_ENV = tuple(
    name for base in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY") for name in (base, base.lower())
) + ("SSL_CERT_FILE", "SSL_CERT_DIR")


def spawn(
    sock: Path, model: str, home: Path, idle_s: float | None, fill: tuple[Path, Path] | None,
    endpoint: Endpoint | None = None, judge: bool = False,
) -> str:  # fmt: skip
    """Start the helper of ``model`` on ``sock``, never waiting for it; ``idle_s``: how long it
    stays without a request (None: its default); ``fill``: the project's (vector cache, index)
    it embeds once up; ``endpoint``: the model is one the user's endpoint serves, whose key the
    helper reads from a pipe; ``judge``: the user's ``recall_judge`` is on, so the helper loads
    its judge as it starts rather than on the first message that asks (which would go without
    it if the judge were not loaded within its wait). The client's state after it: starting (by
    this run or another), or why it could not."""
    if not take_lock(Path(str(sock) + ".lock")):
        return "starting"
    args = [sys.executable, "-m", "clio.recall.encoder_service", "--socket", str(sock), "--home", str(home)]
    args += ["--endpoint", endpoint.base_url, "--remote", endpoint.model] if endpoint else ["--model", model]
    if idle_s is not None:
        args += ["--idle", f"{idle_s:g}"]
    if fill is not None:  # the project's archive embedded once up (its index may be in the making)
        args += ["--fill", str(fill[0]), str(fill[1])]
    if judge:
        args.append("--judge")
    kept = KEPT_ENV + (NETWORK_ENV if endpoint else ())  # none of clio's keys
    env = {k: os.environ[k] for k in kept if k in os.environ}
    # numpy's BLAS on one thread: its pool's threads spin after each scan (a matrix-vector
    # product that one core does in ~2 ms) and took the core the next query's embedding
    # needed, which ran 2x slower for it (16-21 ms instead of 7-9 at 10k messages)
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    try:
        child = subprocess.Popen(
            args,
            cwd="/",
            env=env,
            stdin=subprocess.PIPE if endpoint else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            start_new_session=True,
        )
    except OSError as exc:
        return f"failed to start: {exc}"[:200]
    if endpoint is not None and child.stdin is not None:
        with contextlib.suppress(OSError):  # the endpoint's key: read once by the helper, never in its environment
            child.stdin.write(f"{endpoint.key or ''}\n".encode())
        with contextlib.suppress(OSError):
            child.stdin.close()
    return "starting"


def take_lock(lock: Path) -> bool:
    """Take the start lock (a file made with O_EXCL); a stale one (a helper that died while
    starting) is taken over."""
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            try:
                if time.time() - lock.stat().st_mtime < STARTING_S:
                    return False
                lock.unlink()
            except FileNotFoundError:
                pass
            continue
        except OSError:
            return False
        with contextlib.suppress(OSError):
            os.write(fd, f"{os.getpid()} {time.time():.0f}\n".encode())
        os.close(fd)
        return True
    return False
