"""Where the user's encoder helper of a model listens, and whether it can run here: the packages
it needs, and why it could not start when it failed recently (then an installed stronger model
gives way to MiniLM for a day). The standard library only: read on every run that may ask the
helper (:mod:`clio.recall.encoder_client`), by the helper itself (:mod:`clio.recall.encoder_service`
writes its failure beside its socket) and by ``clio encoder``."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from clio.recall.encoder_models import ENV_SWITCH, MINILM, EncoderModel

FAILED_RETRY_S = 86_400.0  # after a helper could not start, try again a day later (or after an upgrade)
ENDPOINT_RETRY_S = 600.0  # ... an endpoint's model ten minutes later (a local server not started yet)
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux


def socket_path(home: Path, model: EncoderModel = MINILM) -> Path:
    """Where the user's helper of ``model`` listens: in ``$CLIO_HOME``, or a private temp folder
    when too long."""
    path = home / model.socket_name
    if len(os.fsencode(str(path))) <= MAX_SOCKET_PATH:
        return path
    import hashlib
    import tempfile

    folder = Path(tempfile.gettempdir()) / f"clio-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    st = os.lstat(folder)
    if not os.path.isdir(folder) or os.path.islink(folder) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise OSError(f"{folder} is not a private folder of this user")
    digest = hashlib.sha256(os.fsencode(str(home.resolve()))).hexdigest()[:16]
    return folder / f"{Path(model.socket_name).stem}-{digest}.sock"


def installed(model: EncoderModel = MINILM) -> str | None:
    """None when the packages ``model`` needs are installed, else why not (no import: a spec
    look-up; an installed model's files are checked by the helper). A model the user's endpoint
    serves needs numpy and the HTTP library only."""
    import importlib.util

    needed = ("numpy", "urllib3") if model.endpoint else ("onnxruntime", "numpy", "tokenizers")
    for name in (*needed, *((model.packaged,) if model.packaged else ())):
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed"
    return None


def failed_file(sock: Path) -> Path:
    """Beside a helper's socket: why it could not start (written by the helper, one line)."""
    return Path(str(sock) + ".failed")


def recent_failure(sock: Path, model: EncoderModel = MINILM) -> str:
    """Why the helper of socket ``sock`` could not start, when it failed within
    :data:`FAILED_RETRY_S` (an endpoint's model: :data:`ENDPOINT_RETRY_S`), else ''."""
    failed = failed_file(sock)
    with contextlib.suppress(OSError):
        if time.time() - failed.stat().st_mtime < (ENDPOINT_RETRY_S if model.endpoint else FAILED_RETRY_S):
            return failed.read_text(encoding="utf-8", errors="replace").strip()[:200] or "the helper failed"
    return ""


def fallback(home: Path, model: EncoderModel) -> str:
    """Why ``model``, installed, gives way to MiniLM for now ('' when it does not): its helper
    failed within the day (a damaged file), and the user did not name it in CLIO_RECALL_ENCODER."""
    if model is MINILM or os.environ.get(ENV_SWITCH, "").strip().lower() == model.name:
        return ""
    with contextlib.suppress(OSError):
        failed = recent_failure(socket_path(home, model), model)
        if failed:
            return f"{model.label}'s helper failed ({failed}); {MINILM.name} is used"
    return ""
