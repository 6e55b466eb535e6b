"""``clio encoder`` and ``clio encoder stop``: which sentence encoder the automatic recall runs,
whether its helper runs and what it holds, whether its judge reads and what a read costs on this
CPU; and letting this user's helpers go now (:mod:`clio.app.encoder_install` installs and removes
models)."""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clio.processes import alive
from clio.recall.cpu_kind import Cpu, this_cpu
from clio.recall.encoder_models import MODELS, EncoderModel, Endpoint, is_installed, unreadable

if TYPE_CHECKING:
    from clio.recall.encoder_client import EncoderClient


@dataclass(frozen=True)
class Configured:
    """What the user's config and environment say for the encoder (a project's cannot say it)."""

    endpoint: Endpoint | None = None  # the endpoint's embedding model ``recall_embeddings`` names
    judge: bool = True  # ``recall_judge``


def configured(home: Path) -> Configured:
    """The user's ``recall_embeddings`` and ``recall_judge``; the defaults when the config cannot
    be read (clio says why when it starts)."""
    from clio.config import load_settings

    try:
        settings, _ = load_settings(home, None, {})
    except Exception:  # a config clio cannot read says so when clio starts
        return Configured()
    return Configured(settings.embeddings_endpoint(), settings.recall_judge)


def status(home: Path, endpoint: Endpoint | None = None, judge: bool = True, cpu: Cpu | None = None) -> str:
    """The models, whether each is installed, the one the helper runs, and its judge."""
    from clio.recall.encoder_client import EncoderClient
    from clio.recall.encoder_readiness import ENDPOINT_RETRY_S

    client = EncoderClient(home, home, endpoint=endpoint)
    use: EncoderModel | str = client.model if client.off_reason is None else client.off_reason
    lines = []
    for model in MODELS.values():
        blocked = unreadable(model, home)
        if blocked:
            here = f"not usable: {blocked}"
        else:
            here = "installed" if is_installed(model, home) else f"not installed (clio encoder install {model.name})"
        mark = "*" if use is model else " "
        lines.append(f"{mark} {model.name:<7} {model.description}: {here}")
    wanted = client.wanted
    if wanted.endpoint:
        mark = "*" if isinstance(use, EncoderModel) and use.endpoint else " "
        how = "not calibrated yet" if math.isinf(wanted.cosine_ask) else f"calibrated, threshold {wanted.cosine_ask:.2f}"
        lines.append(f"{mark} {wanted.label} at {wanted.endpoint} (recall_embeddings): {how}")
    lines.append(f"in use: {use.label}" if isinstance(use, EncoderModel) else f"in use: none, {use}")
    if isinstance(use, EncoderModel):
        if client.fallback:
            fix = (
                f"it is tried again after {ENDPOINT_RETRY_S / 60:g} minutes"
                if wanted.endpoint
                else f"`clio encoder install {wanted.name}` again if a file was damaged"
            )
            lines.append(f"but {client.fallback}; {fix}")
        got = helper_status(client)
        lines.append(helper_line(got))
        lines.append(judge_line(use, judge, got, this_cpu() if cpu is None else cpu))
    return "\n".join(lines)


def helper_status(client: EncoderClient) -> dict[str, Any] | None:
    """The running helper's answer to a ping, or None when none answers."""
    try:
        return client.status(0.5)
    except (OSError, ValueError):
        return None


def helper_line(got: dict[str, Any] | None) -> str:
    """Whether the helper of the model in use runs, the memory it holds, and how long it stays
    without a request."""
    if got is None:
        return "its helper: not running (the first run in a project with history starts it)"
    idle = got.get("idle_s")
    stays = f", leaves after {float(idle) / 60:g} idle minutes" if isinstance(idle, (int, float)) else ""
    rss = got.get("rss")
    holds = f", {rss / 2**20:,.0f} MiB" if isinstance(rss, int) and not isinstance(rss, bool) else ""
    return f"its helper: running (pid {got.get('pid')}, {got.get('model')}{holds}){stays}"


def judge_line(model: EncoderModel, judge: bool, got: dict[str, Any] | None, cpu: Cpu) -> str:
    """Whether the helper's judge reads each searched message's best units, what a read has cost
    here lately, and, on an x86 CPU without VNNI, that it is slower here and how to turn it off."""
    if model.verdict is None:
        return f"its judge: none for {model.label} (the decision goes by the words and the cosine)"
    if not judge:
        return "its judge: off (recall_judge: false)"
    if got is None:
        how = "on (recall_judge): the helper loads it as it starts"
    elif got.get("judge") is not True:
        how = "on (recall_judge), not loaded yet (the first searched message loads it)"
    else:
        reads, median = got.get("judged"), got.get("judge_ms")
        if isinstance(reads, int) and reads > 0 and isinstance(median, (int, float)):
            how = f"on (recall_judge), {median:.0f} ms a searched message (the median of its latest reads; {reads:,} since the helper started)"
        else:
            how = "on (recall_judge), loaded, no message read yet"
    if cpu.vnni is False:
        how += (
            f"; this CPU ({cpu.name}) has no VNNI, on which the judge is several times slower:"
            " recall_judge: false in $CLIO_HOME/config.yaml turns it off"
        )
    return f"its judge: {how}"


STOP_WAIT_S = 5.0  # a helper notices its socket gone within a second (encoder_service.serve)


def stop(home: Path, endpoint: Endpoint | None = None) -> str:
    """Stop this user's helpers now, each model's (and the endpoint's), and say which: a helper
    whose socket is gone leaves within a second and frees its memory, as after ``remove``; no
    signal is sent (its pid could be another process's by then). The next run in a project with
    history starts one again."""
    from clio.recall.encoder_client import EncoderClient

    said: list[str] = []
    seen: set[Path] = set()
    for model in (None, *MODELS.values()):
        client = EncoderClient(home, home, endpoint=endpoint, model=model)  # None: the one in use
        where = client.path()
        if where in seen:
            continue
        seen.add(where)
        try:
            got = client.status(1.0)
        except (OSError, ValueError):
            continue
        pid = got.get("pid")
        with contextlib.suppress(FileNotFoundError):
            where.unlink()
        if not isinstance(pid, int) or isinstance(pid, bool):
            continue
        deadline = time.monotonic() + STOP_WAIT_S
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = "stopped" if not alive(pid) else f"told to leave (still running after {STOP_WAIT_S:g} s)"
        said.append(f"clio: the encoder helper (pid {pid}, {got.get('model')}) {left}")
    if not said:
        return "clio: no encoder helper is running"
    return "\n".join([*said, "the next run in a project with history starts it again"])
