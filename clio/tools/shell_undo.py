"""Undo for shell commands: what a command created, changed or deleted under the project is kept
in the turn's snapshots (store/snapshots.py), so ``/undo`` puts it back like the file tool's changes.

Before each command, a bounded scan of the project (:data:`MAX_FILES` files; ``.git``, ``.clio``
and dependency/cache folders skipped) notes each file's size and mtime, and takes what an undo
would need of its content:
- a file git tracks whose content is what the index holds: nothing is copied, git's object
  store has it (``git ls-files -s`` gives the blob, read back only if the command changes it);
- any other file (untracked, ignored, changed since the index, or no git at all) up to
  :data:`MAX_COPY_BYTES` is copied into memory, untracked-not-ignored files first, within
  :data:`MAX_COPY_TOTAL` per command.
After the command the scan runs again; each path whose size or mtime changed, that appeared or
that vanished is kept (its content from before, or "no copy" with why), unless its content is the
same. Not covered (docs/safety.md, "Undo"): files outside the project, in the skipped folders,
beyond the scan bound, large or past the copy budget (named as such by /undo), folders and
symlinks, and every other side effect (processes, network, databases, git's own state).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from clio.store.snapshots import Snapshots
from clio.tools.git_env import git_env

MAX_FILES = 20_000
MAX_COPY_BYTES = 1_000_000
MAX_COPY_TOTAL = 32_000_000
MAX_KEPT = 5_000  # paths kept for one command (a build writing more: the rest is not undoable)
MAX_STORED = 400  # before-images written per command (a file each: a checkout of thousands would take
# minutes); past it a changed file is named as having no copy rather than make the command slow
SKIP_DIRS = frozenset(
    {".git", ".clio", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"}
)

Stat = tuple[int, int]  # (mtime_ns, size)


@dataclass
class Scan:
    stats: dict[str, Stat] = field(default_factory=dict)  # relative path -> (mtime_ns, size)
    copies: dict[str, bytes] = field(default_factory=dict)  # content taken before the command
    blobs: dict[str, str] = field(default_factory=dict)  # tracked files as the index holds them: git blob id
    complete: bool = True  # False: the scan stopped at MAX_FILES


def _walk(root: Path) -> tuple[dict[str, Stat], bool]:
    stats: dict[str, Stat] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not os.path.islink(path):
                stats[os.path.relpath(path, root)] = (st.st_mtime_ns, st.st_size)
            if len(stats) >= MAX_FILES:
                return stats, False
    return stats, True


def _run_git(root: Path, env: dict[str, str], *args: str) -> bytes | None:
    try:
        proc = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _git(root: Path, env: dict[str, str], *args: str) -> list[str] | None:
    out = _run_git(root, env, *args)
    return None if out is None else [p for p in out.decode("utf-8", errors="surrogateescape").split("\0") if p]


def _git_state(root: Path) -> tuple[dict[str, str], set[str], set[str]]:
    """(clean tracked path -> blob id, untracked paths not ignored, tracked paths changed since the index)."""
    if not (root / ".git").exists():
        return {}, set(), set()
    env = git_env(root)
    staged = _git(root, env, "ls-files", "-s", "-z")
    dirty = _git(root, env, "diff-files", "--name-only", "-z")
    others = _git(root, env, "ls-files", "--others", "--exclude-standard", "-z")
    if staged is None or dirty is None or others is None:
        return {}, set(), set()
    blobs: dict[str, str] = {}
    for line in staged:
        meta, _, path = line.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[2] == "0" and parts[0] in ("100644", "100755"):
            blobs[path] = parts[1]
    changed = set(dirty)
    return {p: b for p, b in blobs.items() if p not in changed}, set(others), changed


def before(root: Path) -> Scan:
    """The project as it is before a shell command (see the module's docstring)."""
    stats, complete = _walk(root)
    blobs, untracked, changed = _git_state(root)
    scan = Scan(stats, {}, {p: b for p, b in blobs.items() if p in stats}, complete)
    rest = [p for p in stats if p not in scan.blobs]
    rest.sort(key=lambda p: (p not in untracked and p not in changed, p))  # not ignored first
    budget = MAX_COPY_TOTAL
    for rel in rest:
        size = stats[rel][1]
        if size > MAX_COPY_BYTES or size > budget:
            continue
        try:
            scan.copies[rel] = (root / rel).read_bytes()
        except OSError:
            continue
        budget -= size
    return scan


def _cat_all(root: Path, blobs: list[str]) -> dict[str, bytes]:
    """The contents of git blobs, in one ``git cat-file --batch``."""
    if not blobs:
        return {}
    try:
        proc = subprocess.run(
            ["git", "cat-file", "--batch"], cwd=root, env=git_env(root), input="\n".join(blobs).encode() + b"\n",
            capture_output=True, timeout=60, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return {}
    out, data, at = {}, proc.stdout, 0
    while at < len(data):
        end = data.find(b"\n", at)
        if end < 0:
            break
        head = data[at:end].split()
        if len(head) != 3 or head[1] != b"blob":  # "<id> missing": nothing for that one
            at = end + 1
            continue
        size = int(head[2])
        out[head[0].decode()] = data[end + 1 : end + 1 + size]
        at = end + 1 + size + 1
    return out


def _blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def record(scan: Scan, root: Path, snapshots: Snapshots) -> list[str]:
    """After the command: keep the before-image of every path it changed; returns those paths."""
    stats, _complete = _walk(root)
    touched = sorted(
        {p for p in scan.stats if stats.get(p) != scan.stats[p]} | {p for p in stats if p not in scan.stats}
    )
    items: list[tuple[Path, bytes | None, bool]] = []  # (path, content before, existed)
    stored = 0
    from_git = _cat_all(root, sorted({scan.blobs[p] for p in touched[:MAX_KEPT] if p in scan.blobs}))
    for rel in touched[:MAX_KEPT]:
        path = root / rel
        if rel not in scan.stats:
            items.append((path, None, False))
            continue
        data = scan.copies.get(rel)
        if data is None and rel in scan.blobs:
            data = from_git.get(scan.blobs[rel])
        try:
            now = path.read_bytes() if path.is_file() else None
        except OSError:
            now = None
        if data is not None and now == data:
            continue  # rewritten with the same content (touch, a formatter with nothing to do)
        if data is not None and rel in scan.blobs and _blob_id(data) != scan.blobs[rel]:
            data = None  # git gave something else than expected: no undo rather than a wrong one
        items.append((path, data if stored < MAX_STORED else None, True))
        stored += data is not None
    snapshots.keep_all(items)
    return [str(p.relative_to(root)) for p, _, _ in items]
