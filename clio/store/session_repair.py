"""Rebuilding a damaged ``session.json`` (see clio.store.sessions): what the folder still tells."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

__all__ = ["from_damaged", "has_archive", "id_time", "is_number"]


def has_archive(d: Path) -> bool:
    adir = d / "archive"
    return adir.is_dir() and any(p.name[:1].isdigit() and ".damaged-" not in p.name for p in adir.iterdir())


def is_session(d: Path) -> bool:
    """Whether folder ``d`` holds a session: its session.json, or an archive to rebuild it from
    (a folder a tool wrote into before the session's first message holds neither)."""
    return (d / "session.json").exists() or has_archive(d)


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def id_time(session_id: str) -> float | None:
    """The creation time a session id carries (local time, see new_session_id)."""
    try:
        return time.mktime(time.strptime(session_id[:15], "%Y%m%d-%H%M%S"))
    except (ValueError, OverflowError):
        return None


_FIELD = re.compile(r'"(name|model)"\s*:\s*("(?:[^"\\\n]|\\.)*")')


def from_damaged(d: Path) -> dict[str, str]:
    """Name and model read out of the newest moved-aside session.json, where still legible."""
    copies = sorted(d.glob("session.damaged-*.json"), key=lambda p: p.stat().st_mtime)
    if not copies:
        return {}
    text = copies[-1].read_bytes().decode("utf-8", errors="replace")
    out: dict[str, str] = {}
    for m in _FIELD.finditer(text):
        try:
            value = json.loads(m[2])
        except ValueError:
            continue
        if isinstance(value, str) and m[1] not in out:
            out[m[1]] = value
    return out
