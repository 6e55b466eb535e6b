"""What this machine's clio wrote, told apart from what someone else put there.

A random key in ``$CLIO_HOME/memory.key`` (owner-only, made on first use) signs each record clio
writes with HMAC-SHA256 over its canonical JSON. A record that is not signed with this key (a
``.clio/ltm.json`` committed to a repository, copied from another machine, edited by hand) is
*foreign*. The key never leaves ``$CLIO_HOME``, which no shell command clio runs can read
(clio/safety/hide.py), so neither the repository nor a command's output can forge a signature.

The file also records when the key was made: ``created`` (epoch seconds), which the migration of
records written before signing existed compares with a file's ctime (clio/memory/ltm_store.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

__all__ = ["KEY_NAME", "Signer"]

KEY_NAME = "memory.key"


class Signer:
    """Signs and checks records with the machine's key; ``folder=None``: an in-memory key (incognito)."""

    def __init__(self, key: bytes, created: float) -> None:
        self._key = key
        self.created = created

    @classmethod
    def open(cls, folder: Path | None, *, create: bool = True) -> Signer:
        """The key under ``folder`` ($CLIO_HOME), made (owner-only) when missing or unreadable.
        ``create=False`` (read-only runs) writes nothing: without a key, a throwaway one (so
        nothing on disk counts as signed)."""
        if folder is None:
            return cls(secrets.token_bytes(32), time.time())
        path = folder / KEY_NAME
        loaded = cls._load(path)
        if loaded is not None:
            return loaded
        if not create:
            return cls(secrets.token_bytes(32), time.time())
        folder.mkdir(parents=True, exist_ok=True)
        key, created = secrets.token_bytes(32), time.time()
        data = json.dumps({"key": key.hex(), "created": created}).encode()
        tmp = folder / f".{KEY_NAME}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # never replaces a key another process made meanwhile
        except FileExistsError:
            pass
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return cls._load(path) or cls(key, created)

    @classmethod
    def _load(cls, path: Path) -> Signer | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            key = bytes.fromhex(data["key"])
            created = float(data["created"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if len(key) < 16:
            return None
        with contextlib.suppress(OSError):
            if path.stat().st_mode & 0o077:
                path.chmod(0o600)
        return cls(key, created)

    def sign(self, record: dict[str, Any]) -> str:
        """The signature of ``record`` (its ``sig`` field, if any, left out)."""
        body = {k: v for k, v in record.items() if k != "sig"}
        canon = json.dumps(body, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=str)
        return hmac.new(self._key, canon.encode(), hashlib.sha256).hexdigest()

    def valid(self, record: Any) -> bool:
        """Whether ``record`` carries this machine's signature."""
        if not isinstance(record, dict) or not isinstance(record.get("sig"), str):
            return False
        return hmac.compare_digest(record["sig"], self.sign(record))
