"""Before-images of the files the file tool changes, turn by turn, so ``/undo`` can put them back.

clio's own snapshots: they work outside git and never touch the user's index. For each turn,
the first time the file tool is about to change a path it keeps what the path held (its bytes,
or that it did not exist); after each change it notes the hash of what clio left there, so an
undo can tell a file someone changed since (then it asks, or skips).

Where: ``<session>/snapshots/index.json`` (the turns and their files, and the turns /undo put back,
which ``/undo N`` still counts) and ``blobs/<sha256>``
(content-addressed bytes), written atomically. Bounds: a file over :data:`MAX_FILE_BYTES` is
not kept (its undo says so); past :data:`MAX_TOTAL_BYTES` the oldest turns are dropped.
Secrets: a before-image in which the redactor finds a secret is kept in memory only, never
written (its undo works in this run, and says why not after a restart). Incognito (no session
folder): everything in memory.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clio.store.atomic import atomic_write_bytes, atomic_write_json, read_json

if TYPE_CHECKING:
    from clio.safety.redact import Redactor

MAX_FILE_BYTES = 2_000_000
MAX_TOTAL_BYTES = 50_000_000
KEPT_TURNS = 200


def sha(data: bytes | None) -> str:
    return "" if data is None else hashlib.sha256(data).hexdigest()


@dataclass
class Kept:
    """One path's state before a turn changed it."""

    path: str  # absolute
    existed: bool
    blob: str = ""  # sha256 of the before-image ("" when it did not exist)
    size: int = 0
    where: str = "disk"  # "disk" | "memory" (held a secret) | "none" (too large to keep) | "lost" (a
    # shell command changed it and no copy was taken before: tools/shell_undo.py)
    after: str = ""  # sha256 of what clio left there at the end of its last change in the turn

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Turn:
    turn: int  # the position of the turn's user message in the session
    files: list[Kept] = field(default_factory=list)

    def find(self, path: str) -> Kept | None:
        return next((k for k in self.files if k.path == path), None)


@dataclass
class Restored:
    path: str
    outcome: str  # "restored" | "deleted" | "skipped: ..."


class Snapshots:
    def __init__(self, folder: Path | None, redactor: Redactor | None = None) -> None:
        self.folder = folder
        self.redactor = redactor
        self.memory: dict[str, bytes] = {}  # blobs held in memory only
        self.undone: list[int] = []  # the turns /undo put back, oldest first (forgotten, but counted)
        self.turns: list[Turn] = self._load()
        self.current: int | None = None

    # -- recording -------------------------------------------------------------------------------
    def begin(self, turn: int) -> None:
        """A new turn starts (its user message is at ``turn``); its changes are kept together."""
        self.current = turn

    def keep(self, path: Path) -> None:
        """Before a change to ``path``: keep what it holds, once per turn."""
        if self.current is None:
            return
        if path.is_dir():  # a folder that exists (deleting an empty one): nothing to keep
            return
        if self._add(path, _read(path), path.is_file()):
            self._save()

    def keep_all(self, items: list[tuple[Path, bytes | None, bool]]) -> None:
        """After a shell command: (path, what it held before or None when no copy was taken,
        whether it existed) for each path the command changed, each noted as left now."""
        if self.current is None or not items:
            return
        turn = self._turn()
        known = {k.path: k for k in turn.files}
        for path, data, existed in items:
            kept = known.get(str(path))
            if kept is None:
                self._add(path, data, existed, durable=False, turn=turn)  # many at once: one fsync, the index's
                kept = turn.files[-1]
            kept.after = sha(_read(path))
        self._save()

    def _add(
        self, path: Path, data: bytes | None, existed: bool, *, durable: bool = True, turn: Turn | None = None
    ) -> bool:
        """Keep ``data`` as ``path``'s before-image in this turn, unless it is kept already
        (``turn`` given: the caller checked)."""
        key = str(path)
        if turn is None:
            turn = self._turn()
            if turn.find(key) is not None:
                return False
        kept = Kept(key, existed, size=len(data or b""))
        if data is None and existed:
            kept.where = "lost"
        elif data is not None:
            kept.blob = sha(data)
            if len(data) > MAX_FILE_BYTES:
                kept.where = "none"
            elif self._secret(data) or self.folder is None:
                kept.where = "memory"
                self.memory[kept.blob] = data
            else:
                self._write_blob(kept.blob, data, durable=durable)
        turn.files.append(kept)
        return True

    def after(self, path: Path) -> None:
        """After a change to ``path``: note what clio left there."""
        if self.current is None:
            return
        kept = self._turn().find(str(path))
        if kept is not None:
            kept.after = sha(_read(path))
            self._save()

    # -- undo ------------------------------------------------------------------------------------
    def last(self, n: int) -> list[Turn]:
        """Of the last ``n`` turns that changed files (those /undo put back counted too, so that
        ``/undo`` twice never reaches further back than the last turn), the ones still kept,
        newest first."""
        kept = {t.turn: t for t in self.turns if t.files}
        recent = sorted({*kept, *self.undone}, reverse=True)[:n]
        return [kept[turn] for turn in recent if turn in kept]

    def already_undone(self, n: int) -> tuple[int, bool]:
        """How many of the last ``n`` turns that changed files /undo put back already, and whether
        an earlier turn's changes are still kept (what ``/undo n+1`` would reach)."""
        kept = {t.turn for t in self.turns if t.files}
        recent = sorted({*kept, *self.undone}, reverse=True)
        done = sum(1 for turn in recent[:n] if turn not in kept)
        return done, any(turn in kept for turn in recent[n:])

    def changed_since(self, kept: Kept) -> bool:
        """Whether someone changed the file after clio's last change to it in that turn."""
        return sha(_read(Path(kept.path))) != kept.after

    def restore(self, turn: Turn, kept: Kept) -> Restored:
        path = Path(kept.path)
        if not kept.existed:
            if path.is_file() or path.is_symlink():
                path.unlink()
            elif path.is_dir():
                try:
                    path.rmdir()  # a folder clio created, if still empty
                except OSError:
                    return Restored(kept.path, "skipped: the folder clio created is not empty")
            return Restored(kept.path, "deleted")
        data = self._blob(kept)
        if data is None:
            return Restored(kept.path, f"skipped: {missing_reason(kept)}")
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode: int | None = path.stat().st_mode & 0o7777
        except OSError:
            mode = None
        atomic_write_bytes(path, data, clio_state=False)
        if mode is not None:
            path.chmod(mode)
        return Restored(kept.path, "restored")

    def before(self, kept: Kept) -> bytes | None:
        """What the path held before that turn changed it (None: it did not exist, or no copy)."""
        return self._blob(kept) if kept.existed else None

    def forget(self, turn: Turn) -> None:
        """Drop an undone turn (its files are back); it is remembered as undone."""
        self.turns = [t for t in self.turns if t is not turn]
        if turn.files and turn.turn not in self.undone:
            self.undone = [*self.undone, turn.turn][-KEPT_TURNS:]
        self._save()

    # -- storage ---------------------------------------------------------------------------------
    def _turn(self) -> Turn:
        assert self.current is not None
        if not self.turns or self.turns[-1].turn != self.current:
            self.turns.append(Turn(self.current))
        return self.turns[-1]

    def _secret(self, data: bytes) -> bool:
        if self.redactor is None:
            return False
        return bool(self.redactor.redact(data.decode("utf-8", errors="replace"))[1])

    def _blob(self, kept: Kept) -> bytes | None:
        if kept.blob in self.memory:
            return self.memory[kept.blob]
        if kept.where != "disk" or self.folder is None:
            return None
        try:
            return (self.folder / "blobs" / kept.blob).read_bytes()
        except OSError:
            return None

    def _write_blob(self, digest: str, data: bytes, *, durable: bool = True) -> None:
        assert self.folder is not None
        target = self.folder / "blobs" / digest
        if not target.exists():
            atomic_write_bytes(target, data, durable=durable)

    def _load(self) -> list[Turn]:
        if self.folder is None:
            return []
        data: dict[str, Any] = read_json(self.folder / "index.json", lambda: {"turns": []}, validate=_valid)
        turns = []
        for t in data.get("turns", []):
            files = [Kept(**{k: f[k] for k in Kept.__dataclass_fields__ if k in f}) for f in t.get("files", [])]
            turns.append(Turn(int(t.get("turn", 0)), files))
        undone = data.get("undone")
        if isinstance(undone, list):
            self.undone = [int(n) for n in undone if isinstance(n, int) and not isinstance(n, bool)]
        return turns

    def _save(self) -> None:
        self._bound()
        if self.folder is None:
            return
        data = {
            "turns": [{"turn": t.turn, "files": [k.to_dict() for k in t.files]} for t in self.turns],
            "undone": self.undone,
        }
        atomic_write_json(self.folder / "index.json", data)

    def _bound(self) -> None:
        """Drop the oldest turns past the size or count bound, and blobs nothing refers to."""
        def total() -> int:
            return sum(k.size for t in self.turns for k in t.files if k.where == "disk")

        dropped = False
        while len(self.turns) > 1 and (total() > MAX_TOTAL_BYTES or len(self.turns) > KEPT_TURNS):
            self.turns.pop(0)
            dropped = True
        if dropped and self.folder is not None and (self.folder / "blobs").is_dir():
            used = {k.blob for t in self.turns for k in t.files}
            for blob in (self.folder / "blobs").iterdir():
                if blob.name not in used:
                    blob.unlink(missing_ok=True)


def missing_reason(kept: Kept) -> str:
    """Why a before-image cannot be had."""
    if kept.where == "none":
        return f"it was over {MAX_FILE_BYTES // 1_000_000} MB, so no copy was kept"
    if kept.where == "memory":
        return "it held a secret, so its copy was kept in memory only, by the run that changed it"
    if kept.where == "lost":
        return "a shell command changed it and clio had no copy from before (large, or past what it copies per command)"
    return "its copy is missing"


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return None


def _valid(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("turns"), list)
