"""A one-time line under the REPL's banner: the stronger sentence encoder the user may install.

The automatic recall brings back a fact asked in other words far more often with all-mpnet-base-v2
than with the MiniLM clio ships (docs/memory.md, "A stronger sentence encoder": reworded facts
14 -> 19 of 24 on the reported sets), but that model is a download the user chooses
(``clio encoder install mpnet``), and nothing else tells them it exists. So the REPL says so once
per user, where it would pay: a project with history (:data:`MIN_SESSIONS` archived sessions),
MiniLM in use because nothing stronger is installed, and no model named in ``CLIO_RECALL_ENCODER``
(the user chose). Never in a one-shot run (its output is for scripts), in incognito (it writes
nothing) or with the automatic recall or its encoder off. The mark that it was shown is a file in
``$CLIO_HOME``, written before the line is printed: a failed write shows nothing.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from clio.recall.encoder_models import DEFAULT, ENV_SWITCH, MODELS, EncoderModel, is_installed
from clio.store.atomic import atomic_write_json

MIN_SESSIONS = 10  # archived sessions in the project before the tip is worth a line
MARK = "encoder-tip.json"  # in $CLIO_HOME: the tip was shown (when, which model)


def stronger(home: Path) -> EncoderModel | None:
    """The strongest model the user could install and has not (None: nothing left to offer)."""
    left = [m for m in MODELS.values() if m.wheels and not is_installed(m, home)]
    return max(left, key=lambda m: m.dim, default=None)


def worth_offering(in_use: str, env_choice: str, sessions: int) -> bool:
    """Pure: the decision, given the model in use, ``CLIO_RECALL_ENCODER`` as set and the
    project's archived sessions (counted up to :data:`MIN_SESSIONS`)."""
    return in_use == DEFAULT and not env_choice.strip() and sessions >= MIN_SESSIONS


def count_sessions(sessions_dir: Path, other_than: str | None, limit: int = MIN_SESSIONS) -> int:
    """The session folders in ``sessions_dir`` other than ``other_than``, counted up to ``limit``
    (a listing, no file read: this runs at every REPL start)."""
    n = 0
    try:
        with os.scandir(sessions_dir) as entries:
            for e in entries:
                if e.name.startswith(".") or e.name == other_than or not e.is_dir(follow_symlinks=False):
                    continue
                n += 1
                if n >= limit:
                    break
    except OSError:
        return 0
    return n


def tip_line(model: EncoderModel) -> str:
    return (
        f"tip: automatic recall finds more of what was said here in other words with a stronger "
        f"model: clio encoder install {model.name} (a {model.download_mb} MB download). Shown once."
    )


def offer(
    home: Path, sessions_dir: Path, current: str | None, in_use: str | None, env: dict[str, str] | None = None
) -> str | None:
    """The line to print under the banner, once per user, or None. ``in_use``: the name of the
    model the automatic recall's helper runs (None: no encoder, nothing to offer)."""
    mark = home / MARK
    if in_use is None or mark.exists():
        return None
    model = stronger(home)
    env_choice = (os.environ if env is None else env).get(ENV_SWITCH, "")
    if model is None or not worth_offering(in_use, env_choice, count_sessions(sessions_dir, current)):
        return None
    try:
        atomic_write_json(
            mark, {"shown": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "offered": model.name}, durable=False
        )
    except OSError:
        return None  # shown only when it will not be shown again
    return tip_line(model)
