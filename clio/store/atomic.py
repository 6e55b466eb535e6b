"""Atomic writes, inter-process locks and quarantine of damaged files.

The one place that knows how a file reaches disk:
- ``atomic_write_*``: temp file in the same folder, fsync, rename, fsync of the folder,
  so a process killed at any moment leaves either the old or the new file.
- ``FileLock``: an advisory ``flock`` on ``<file>.lock`` shared by every clio process.
- ``read_json``: a file that does not parse is moved aside to a named copy
  (``name.damaged-<time>.json``) and reported through ``on_damaged``; the caller
  carries on with its default.
- folders are made with ``clio.paths.ensure_dir``: a ``.clio`` folder gets its ``.gitignore``.
- ``locked_update``: read-modify-write under the lock, so concurrent agents never
  lose each other's updates.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import secrets
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from clio.lazy_re import lazy
from clio.paths import ensure_dir

T = TypeVar("T")

DamagedHook = Callable[[Path, Path], None]  # (original path, where it was moved)

_damaged_hooks: list[DamagedHook] = []


def add_damaged_hook(hook: DamagedHook) -> None:
    """Register a process-wide reporter for damaged files (the UI prints one line)."""
    if hook not in _damaged_hooks:
        _damaged_hooks.append(hook)


def remove_damaged_hook(hook: DamagedHook) -> None:
    if hook in _damaged_hooks:
        _damaged_hooks.remove(hook)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(
    path: Path, data: bytes, *, durable: bool = True, clio_state: bool = True, make_folder: bool = True
) -> None:
    """``clio_state=False`` for writes on the user's behalf (the file tool): a ``.clio`` folder on
    the way then gets no ``.gitignore`` (incognito writes nothing of clio's own).
    ``make_folder=False``: a missing folder is FileNotFoundError, not made again (a repair must
    not bring back what another process just deleted)."""
    path = Path(path)
    if make_folder and clio_state:
        ensure_dir(path.parent)
    elif make_folder:
        path.parent.mkdir(parents=True, exist_ok=True)
    entry: Path | None = None
    if clio_state or _JOURNAL is None:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    else:  # the user's tree: the temp's name is journaled first, so a kill -9 leaves nothing unswept
        fd, tmp, entry = _journaled_temp(path, _JOURNAL)
    try:
        try:
            mode = os.stat(path).st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644 & ~_umask()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        if entry is not None:
            with contextlib.suppress(OSError):
                entry.unlink()
    if durable:
        _fsync_dir(path.parent)


# --- temp files in the user's tree: journaled, swept on the next start -----------------------

_JOURNAL: Path | None = None
_STRAY = lazy(r"^\.[^/]+\.(\d+)-[0-9a-f]{8}\.tmp$")


def journal_writes(folder: Path | None) -> None:
    """Journal the temp files of writes in the user's tree (``clio_state=False``) under ``folder``
    (``.clio/inflight``); None: not at all (incognito writes nothing of clio's own)."""
    global _JOURNAL
    _JOURNAL = folder


def _journaled_temp(path: Path, journal: Path) -> tuple[int, str, Path]:
    journal.mkdir(parents=True, exist_ok=True)
    pid, token = os.getpid(), secrets.token_hex(4)
    tmp = str(path.parent / f".{path.name}.{pid}-{token}.tmp")
    entry = journal / f"{pid}-{token}"
    entry.write_text(tmp, encoding="utf-8")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except BaseException:
        entry.unlink()
        raise
    return fd, tmp, entry


def sweep_stray_temps(journal: Path, root: Path) -> list[Path]:
    """Remove the temp files that writes of dead clio processes left in the user's tree (an
    interrupted atomic write, e.g. ``src/.f13.py.4242-1a2b3c4d.tmp``); returns those removed.
    Only journaled paths inside ``root`` with clio's temp name are touched, never anything else."""
    removed: list[Path] = []
    try:
        entries = list(journal.iterdir())
    except OSError:
        return removed
    if not entries:
        return removed
    from clio.processes import alive  # only when a write was journaled (not on every start)

    real_root = os.path.realpath(root)
    for entry in entries:
        pid = entry.name.split("-", 1)[0]
        if not pid.isdigit() or alive(int(pid)):
            continue
        with contextlib.suppress(OSError, UnicodeDecodeError):
            stray = Path(entry.read_text(encoding="utf-8").strip())
            m = _STRAY.match(stray.name)
            inside = os.path.realpath(stray.parent).startswith(real_root + os.sep) or os.path.realpath(stray.parent) == real_root
            if m and m.group(1) == pid and inside and stray.is_file() and not stray.is_symlink():
                stray.unlink()
                removed.append(stray)
        with contextlib.suppress(OSError):
            entry.unlink()
    return removed


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(
    path: Path, text: str, *, durable: bool = True, clio_state: bool = True, make_folder: bool = True
) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), durable=durable, clio_state=clio_state, make_folder=make_folder)


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1, sort_keys=False) + "\n"


def atomic_write_json(path: Path, data: Any, *, durable: bool = True, make_folder: bool = True) -> None:
    atomic_write_text(path, dumps(data), durable=durable, make_folder=make_folder)


def quarantine(path: Path) -> Path:
    """Move a damaged file aside to a named copy and return where it went."""
    path = Path(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.stem}.damaged-{stamp}{path.suffix}")
    n = 1
    while True:
        try:  # link + unlink never overwrites a copy another process just made
            os.link(path, target)
            break
        except FileExistsError:
            target = path.with_name(f"{path.stem}.damaged-{stamp}-{n}{path.suffix}")
            n += 1
    os.unlink(path)
    return target


def read_json(
    path: Path,
    default: Callable[[], T],
    *,
    validate: Callable[[Any], bool] | None = None,
    on_damaged: DamagedHook | None = None,
) -> T:
    """Load JSON; a missing file gives ``default()``, a damaged one is quarantined first."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return default()
    try:
        data = json.loads(raw.decode("utf-8-sig"))
        if validate is not None and not validate(data):
            raise ValueError("unexpected shape")
    except (ValueError, UnicodeDecodeError):
        try:
            if path.read_bytes() != raw:  # replaced meanwhile by another process: read the new file
                return read_json(path, default, validate=validate, on_damaged=on_damaged)
            moved = quarantine(path)
        except FileNotFoundError:  # another process moved it aside first
            return read_json(path, default, validate=validate, on_damaged=on_damaged)
        hooks = [on_damaged] if on_damaged else list(_damaged_hooks)
        for hook in hooks:
            hook(path, moved)
        return default()
    return data


class FileLock:
    """An exclusive inter-process lock on ``<path>.lock`` (flock; released when the process dies)."""

    def __init__(self, path: Path, timeout: float = 30.0) -> None:
        self.lock_path = Path(str(path) + ".lock")
        self.timeout = timeout
        self._fd: int | None = None
        self._depth = 0

    def acquire(self) -> None:
        if self._fd is not None:
            self._depth += 1
            return
        ensure_dir(self.lock_path.parent)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise TimeoutError(
                        f"could not lock {self.lock_path} within {self.timeout:.0f}s"
                    ) from None
                # short random naps: a long backoff lets the releasing process win every time
                time.sleep(random.uniform(0.0005, 0.003))
        self._fd = fd
        self._depth = 1

    def release(self) -> None:
        if self._fd is None:
            return
        self._depth -= 1
        if self._depth > 0:
            return
        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def locked_update(
    path: Path,
    update: Callable[[T], T],
    default: Callable[[], T],
    *,
    validate: Callable[[Any], bool] | None = None,
    on_damaged: DamagedHook | None = None,
    lock_timeout: float = 30.0,
) -> T:
    """Read the file under the lock, apply ``update`` to what is on disk, write it atomically.

    ``update`` receives the current on-disk value (merge your change into it) and
    returns the value to write. Returns what was written. Waiting longer than ``lock_timeout``
    seconds for the lock raises TimeoutError.
    """
    path = Path(path)
    with FileLock(path, lock_timeout):
        current = read_json(path, default, validate=validate, on_damaged=on_damaged)
        new = update(current)
        atomic_write_json(path, new)
        return new
