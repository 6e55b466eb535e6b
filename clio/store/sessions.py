"""Sessions on disk: meta, the YaRN archive in fixed-size chunks, and the STM window state.

Layout of one session, ``.clio/sessions/<id>/``:
- ``session.json``   meta (name, model, dates, counts, usage, the consolidation markers)
- ``archive/NNNNNN.json``  every message ever, in chunks of :data:`CHUNK` (a JSON list each)
- ``stm.json``       the window state (which archived messages are in the window, the summary)
- ``results/``, ``todos.json``  written by tools

A damaged ``session.json`` is moved aside (reported through the damaged-file hook) and rebuilt
from what is left: the id from the folder, the times from the id and the files, the message
count from the archive, the name and model from the damaged copy when still readable there
(else the name is made again from the first user message). Session names go through the
store's ``redact`` (the secret redactor) whenever they are set or read.

Appending rewrites only the last chunk and the small meta file, so the cost of a turn does
not grow with the session's length. Each write of a ``session.json`` (and a deletion) is noted
in the folder's change journal, ``.clio/sessions/.changes`` (:mod:`clio.store.changes`), so the
recall index looks at the sessions written since, not at all of them. Every write is atomic. A ``SessionStore(None)`` keeps
everything in memory and writes nothing (incognito).
"""

from __future__ import annotations

import builtins
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from clio.messages import Message
from clio.store.atomic import atomic_write_json, read_json
from clio.store.changes import note, plain_name
from clio.store.session_info import SessionInfo, is_meta, new_session_id
from clio.store.session_lock import lock, try_lock, unlock
from clio.store.session_names import Redact, clean_name, name_from
from clio.store.session_repair import from_damaged, id_time, is_number, is_session

CHUNK = 64


class SessionNotFound(LookupError):
    pass


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_atime_ns, st.st_mtime_ns


def _is_dict(v: Any) -> bool:
    return isinstance(v, dict)


def _is_list(v: Any) -> bool:
    return isinstance(v, list)


class Session:
    """An open session. Messages are appended through :meth:`append` (the one way in)."""

    def __init__(
        self,
        info: SessionInfo,
        messages: list[Message],
        *,
        lock_fd: int | None = None,
        materialized: bool = True,
        redact: Redact | None = None,
        keep_time: bool = False,
    ) -> None:
        self.info = info
        self.messages = messages  # the whole archive, in order
        self.thread = max((int(m.get("meta", {}).get("thread", 0)) for m in messages), default=0)
        self._lock_fd = lock_fd
        self._materialized = materialized  # a new session reaches disk with its first message
        self.transform: Callable[[Message], Message] | None = None  # e.g. secret redaction before disk
        self.redact = redact  # applied to the session's name (None: names kept as given)
        # a copy read back in the background (SessionStore.read): what it writes (the consolidation
        # marker, usage) never makes the session look more recently used than it is
        self.keep_time = keep_time

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def dir(self) -> Path | None:
        return self.info.path

    @property
    def persistent(self) -> bool:
        return self.info.path is not None

    # -- writing ---------------------------------------------------------------------------------
    def append(self, msg: Message) -> Message:
        """Give the message its sequence number and put it on disk before returning it."""
        if self.transform is not None:
            msg = self.transform(msg)
        meta = dict(msg.get("meta") or {})
        meta["seq"] = len(self.messages)
        meta.setdefault("ts", time.time())
        meta["thread"] = self.thread
        msg["meta"] = meta
        self.messages.append(msg)
        self.info.message_count = len(self.messages)
        self.info.updated = time.time()
        if not self.info.name and msg.get("role") == "user" and isinstance(msg.get("content"), str):
            self.info.name = clean_name(name_from(msg, self.redact), None)
        self._write_chunk(meta["seq"] // CHUNK)
        self.save_meta()
        return msg

    def replace(self, msg: Message) -> None:
        """Rewrite an archived message in place (e.g. to mark it interrupted)."""
        seq = int(msg["meta"]["seq"])
        self.messages[seq] = msg
        self._write_chunk(seq // CHUNK)
        self.info.updated = time.time()  # derived indexes (recall) notice the change
        self.save_meta()

    def new_thread(self) -> int:
        """Start a new thread (after a trim): later messages carry the new number."""
        self.thread += 1
        return self.thread

    def _materialize(self) -> bool:
        """Create the session's folder (and take its lock) on the first write. False: in memory only."""
        if self.dir is None:
            return False
        if not self._materialized:
            self._lock_fd = self._claim_dir()
            self._materialized = True
            atomic_write_json(self.dir / "session.json", self.info.to_dict())
            note(self.dir.parent, self.dir.name)
        return True

    def _claim_dir(self) -> int:
        """Create the session's folder and take its lock, never another session's: ids are
        second-stamped with four hex digits, so two sessions started in the same second (parallel
        scripts, a test's loop) can draw the same one. A folder held by another process, or
        holding another session (:func:`is_session`), makes this one draw a fresh id; any other is
        this session's (a tool may have written its results there before the first message
        reached disk)."""
        assert self.info.path is not None
        for _ in range(100):
            path = self.info.path
            path.mkdir(parents=True, exist_ok=True)
            if not is_session(path):
                fd = try_lock(path)
                if fd is not None:
                    if not is_session(path):  # written by the holder just gone
                        return fd
                    unlock(fd)
            self.info.id = new_session_id(self.info.created)
            self.info.path = path.parent / self.info.id
        raise OSError(f"could not create a new session folder in {self.info.path.parent}")

    def _write_chunk(self, index: int) -> None:
        if not self._materialize() or self.dir is None:
            return
        part = self.messages[index * CHUNK : (index + 1) * CHUNK]
        atomic_write_json(self.dir / "archive" / f"{index:06d}.json", part)

    def save_meta(self) -> None:
        if not (self._materialized and self.dir is not None):
            return
        path = self.dir / "session.json"
        before = _stamp(path) if self.keep_time else None
        atomic_write_json(path, self.info.to_dict())
        if before is not None:  # SessionStore.recent orders by this file's mtime: keep it
            os.utime(path, ns=before)
        note(self.dir.parent, self.dir.name)  # the recall index looks at this session again

    def save_state(self, state: dict[str, Any]) -> None:
        if self._materialized and self.dir is not None:
            atomic_write_json(self.dir / "stm.json", state)

    def load_state(self) -> dict[str, Any]:
        if self.dir is None:
            return {}
        return read_json(self.dir / "stm.json", dict, validate=_is_dict)

    def add_usage(self, usage: dict[str, int], judge_model: str = "") -> None:
        """One request's usage; ``judge_model``: the judge model's request, kept apart too, to be
        priced at its own model's price."""
        parts = [self.info.usage] + ([self.info.judged.setdefault(judge_model, {})] if judge_model else [])
        for part in parts:
            for k, v in usage.items():
                part[k] = part.get(k, 0) + int(v)
            part["requests"] = part.get("requests", 0) + 1
        self.save_meta()

    def rename(self, name: str) -> None:
        self.info.name = clean_name(name, self.redact)
        self._materialize()
        self.save_meta()

    def close(self) -> None:
        if self._lock_fd is not None:
            fd, self._lock_fd = self._lock_fd, None
            unlock(fd)


class SessionStore:
    """All sessions of a project. ``SessionStore(None)`` writes nothing (incognito)."""

    def __init__(self, sessions_dir: Path | None, *, redact: Redact | None = None) -> None:
        self.dir = sessions_dir
        self.redact = redact  # the secret redactor, for session names (None: names kept as they are)
        self.rebuilt: list[str] = []  # ids whose session.json was rebuilt from the archive

    # -- listing ---------------------------------------------------------------------------------
    def list(self) -> list[SessionInfo]:
        if self.dir is None or not self.dir.is_dir():
            return []
        out = []
        for d in self.dir.iterdir():
            if d.name.startswith("."):
                continue  # a session being deleted
            if d.is_dir() and is_session(d):
                try:
                    out.append(self.info(d.name))
                except SessionNotFound:
                    continue  # deleted between the listing and the read
        out.sort(key=lambda i: (i.updated, i.id), reverse=True)
        return out

    def holds_messages(self, other_than: str | None = None) -> bool:
        """Whether a session other than ``other_than`` holds a message, stopping at the first that
        does (in a project with history, the first read: :meth:`list` reads and cleans every
        session's ``session.json``)."""
        if self.dir is None or not self.dir.is_dir():
            return False
        with os.scandir(self.dir) as entries:
            names = [e.name for e in entries if not e.name.startswith(".") and e.name != other_than]
        for sid in names:
            try:
                if self.info(sid, clean=False).message_count:
                    return True
            except SessionNotFound:
                continue
        return False

    def recent(self, limit: int) -> builtins.list[SessionInfo]:
        """The ``limit`` most recently written sessions, newest first, reading only their
        ``session.json`` (a stat of each folder otherwise: cheap with thousands of sessions)."""
        if self.dir is None or not self.dir.is_dir():
            return []
        stamped = []
        with os.scandir(self.dir) as entries:
            for e in entries:
                if e.name.startswith("."):
                    continue  # a session being deleted
                try:
                    stamped.append((os.stat(f"{e.path}/session.json").st_mtime, e.name))  # no Path: every run, every session
                except OSError:
                    continue  # no session.json: not written by a finished turn yet (list() rebuilds those)
        stamped.sort(reverse=True)
        out = []
        for _, sid in stamped[:limit]:
            try:
                out.append(self.info(sid))
            except SessionNotFound:
                continue
        return out

    def info(self, session_id: str, *, clean: bool = True) -> SessionInfo:
        """One session's info; ``clean=False`` leaves its name as stored (a caller that only
        counts is spared the redaction)."""
        if self.dir is None or not plain_name(session_id):
            raise SessionNotFound(session_id)
        d = self.dir / session_id
        meta = d / "session.json"
        if not is_session(d):
            raise SessionNotFound(session_id)
        data = read_json(meta, lambda: None, validate=is_meta)
        if data is None:  # damaged (moved aside and reported) or lost: rebuild it from the archive
            info = self._rebuild(d)
        else:
            info = SessionInfo.from_dict(data, d)
        if clean and self.redact is not None:
            info.name = clean_name(info.name, self.redact)
        return info

    def _rebuild(self, d: Path) -> SessionInfo:
        """session.json made again from the folder: see the module docstring."""
        messages = list(self.iter_messages(d.name))
        files = [p for p in (d / "archive").glob("*.json")] if (d / "archive").is_dir() else []
        files += [p for p in (d / "stm.json", d / "todos.json") if p.exists()]
        mtimes = [p.stat().st_mtime for p in files]
        metas = [m["meta"] for m in messages if isinstance(m.get("meta"), dict)]
        stamps = [float(meta["ts"]) for meta in metas if is_number(meta.get("ts"))]
        created = id_time(d.name) or min(stamps + mtimes, default=d.stat().st_mtime)
        old = from_damaged(d)
        name = str(old.get("name") or "")
        if not name:
            first = next((m for m in messages if m.get("role") == "user"), None)
            if first is not None and isinstance(first.get("content"), str):
                name = name_from(first, self.redact)
        info = SessionInfo(
            id=d.name,
            name=clean_name(name, self.redact),
            model=str(old.get("model") or ""),
            created=created,
            updated=max([created, *stamps, *mtimes]),
            message_count=len(messages),
            path=d,
        )
        try:
            atomic_write_json(d / "session.json", info.to_dict(), make_folder=False)
        except FileNotFoundError:  # deleted meanwhile (by another process): nothing to repair
            raise SessionNotFound(d.name) from None
        note(d.parent, d.name)
        self.rebuilt.append(d.name)
        return info

    def iter_messages(self, session_id: str) -> Iterator[Message]:
        if self.dir is None:
            return
        adir = self.dir / session_id / "archive"
        if not adir.is_dir():
            return
        for chunk in sorted(p for p in adir.glob("*.json") if not p.name.startswith(".")):
            if ".damaged-" in chunk.name:
                continue
            yield from read_json(chunk, list, validate=_is_list)

    def find(self, ref: str) -> SessionInfo:
        """An id, a unique id prefix, a name (case-insensitive), or a unique name substring."""
        sessions = self.list()
        ref_l = ref.strip().lower()
        for pick in (
            lambda s: s.id == ref,
            lambda s: s.name.lower() == ref_l,
        ):
            hits = [s for s in sessions if pick(s)]
            if hits:
                return hits[0]
        for pick in (lambda s: s.id.startswith(ref), lambda s: ref_l in s.name.lower()):
            hits = [s for s in sessions if pick(s)]
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                names = ", ".join(f"{s.id} ({s.name})" for s in hits[:5])
                raise SessionNotFound(f"'{ref}' matches several sessions: {names}")
        raise SessionNotFound(f"no session matches '{ref}' (see clio --sessions)")

    # -- opening ---------------------------------------------------------------------------------
    def create(self, model: str) -> Session:
        now = time.time()
        info = SessionInfo(id=new_session_id(now), model=model, created=now, updated=now)
        if self.dir is not None:
            while (self.dir / info.id).exists():  # taken this second; a race is caught at first write
                info.id = new_session_id(now)
            info.path = self.dir / info.id
            return Session(info, [], materialized=False, redact=self.redact)
        return Session(info, [], redact=self.redact)

    def open(self, session_id: str) -> Session:
        info = self.info(session_id)
        assert info.path is not None
        fd = lock(info.path)
        messages = list(self.iter_messages(session_id))
        for i, m in enumerate(messages):  # seq is the position: heal anything odd
            m.setdefault("meta", {})["seq"] = i
        info.message_count = len(messages)
        return Session(info, messages, lock_fd=fd, redact=self.redact)

    def read(self, session_id: str) -> Session:
        """The session as it is on disk, without its lock (read only: clio.app.background reads a
        session back while the user may resume it, and takes the lock only to write). What it
        writes keeps the session's recency: ``updated`` is only moved by a message, and
        session.json keeps its modification time (the order of :meth:`list` and :meth:`recent`,
        so ``--resume`` alone, is the user's, never the read-back's)."""
        info = self.info(session_id)
        messages = list(self.iter_messages(session_id))
        info.message_count = len(messages)
        return Session(info, messages, redact=self.redact, keep_time=True)

    def take(self, session_id: str) -> int:
        """The session's lock for a moment (a file descriptor, released by closing it: an opener
        meanwhile waits for it); SessionBusy when another process has it."""
        info = self.info(session_id)
        assert info.path is not None
        return lock(info.path, brief=True)

    def delete(self, session_id: str) -> None:
        info = self.info(session_id)
        assert info.path is not None
        fd = lock(info.path)  # refuse to delete a session another process has open
        try:
            # Out of sight first, in one rename: removed file by file under its own name, a half-
            # deleted session (its archive still there, session.json gone) would be "repaired" by
            # another process listing sessions meanwhile, and the removal would then fail.
            gone = info.path.with_name(f".deleting-{info.path.name}-{os.getpid()}")
            os.rename(info.path, gone)
            note(info.path.parent, info.path.name)
            shutil.rmtree(gone)
        finally:
            os.close(fd)
