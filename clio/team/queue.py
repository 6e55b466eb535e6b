"""Writes waiting for the shared store: one file per operation under ``.clio/team/queue/``.

While the server is unreachable every write (an entry added, forgotten, pinned, used; a note
stored or deleted) becomes an operation with a random id, written atomically (temp + fsync +
rename) as ``<time>-<id>.json``. When the server is back, :meth:`OpQueue.deliver` applies them
oldest first, each in its own transaction that also records its id in ``clio_applied``: an
operation whose id is there already is skipped, so a delivery cut short (or two clios of one
checkout delivering at once) applies each operation exactly once. The file goes after its
transaction commits. A file that does not parse is moved aside (named) and reported, never
dropped.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clio.store.atomic import atomic_write_json, quarantine

Op = dict[str, Any]
_counter = 0  # orders the operations one process queues within one clock tick


def new_op(kind: str, now: float, **data: Any) -> Op:
    return {"op": uuid.uuid4().hex, "kind": kind, "at": now, **data}


class OpQueue:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def put(self, op: Op) -> None:
        """Queue ``op`` (durably); files sort in the order they were written."""
        global _counter
        _counter += 1
        name = f"{time.time_ns():020d}-{_counter:06d}-{op['op']}.json"
        atomic_write_json(self.folder / name, op)

    def files(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return sorted(p for p in self.folder.glob("*.json") if not p.name.startswith(".") and ".damaged-" not in p.name)

    def pending(self) -> list[Op]:
        out = []
        for path in self.files():
            op = self._read(path)
            if op is not None:
                out.append(op)
        return out

    def __len__(self) -> int:
        return len(self.files())

    @staticmethod
    def _read(path: Path) -> Op | None:
        try:
            op = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None  # delivered by another clio of this checkout
        except (OSError, ValueError):
            op = None
        if not isinstance(op, dict) or not isinstance(op.get("op"), str) or not isinstance(op.get("kind"), str):
            try:
                quarantine(path)
            except OSError:
                pass
            return None
        return op

    def deliver(self, apply: Callable[[Op], None], budget_s: float = 30.0) -> int:
        """Apply the queued operations oldest first (``apply`` raises to stop: the server went
        away again); returns how many were delivered now. Stops after ``budget_s`` seconds."""
        done, start = 0, time.monotonic()
        for path in self.files():
            if time.monotonic() - start > budget_s:
                break
            op = self._read(path)
            if op is None:
                continue
            apply(op)
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            done += 1
        return done
