"""The projects whose config the user trusts: ``$CLIO_HOME/trusted_projects.json``.

Keyed by the project root's resolved path; each entry holds the sha256 of the project's
``.clio/config.yaml`` bytes the user trusted, so a changed config is untrusted again. Written
atomically under the file's lock (concurrent clio processes never lose each other's grants).

    {"version": 1, "projects": {"/home/me/src/app": {"sha256": "<hex>", "granted": 1767000000.0}}}
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from clio.store.atomic import locked_update, read_json

FILE_NAME = "trusted_projects.json"
VERSION = 1


def _empty() -> dict[str, Any]:
    return {"version": VERSION, "projects": {}}


def _valid(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("projects"), dict)


def project_key(root: Path) -> str:
    return str(Path(root).resolve())


class TrustStore:
    def __init__(self, home: Path, clock: Any = time.time) -> None:
        self.path = Path(home) / FILE_NAME
        self.clock = clock

    def _read(self) -> dict[str, Any]:
        data: dict[str, Any] = read_json(self.path, _empty, validate=_valid)
        return data

    def digest_for(self, root: Path) -> str | None:
        """The config digest the user trusted for this project (None: not trusted)."""
        entry = self._read()["projects"].get(project_key(root))
        if isinstance(entry, dict) and isinstance(entry.get("sha256"), str):
            return str(entry["sha256"])
        return None

    def is_trusted(self, root: Path, digest: str) -> bool:
        return self.digest_for(root) == digest

    def instructions_for(self, root: Path) -> str | None:
        """The digest of the instruction files (AGENTS.md, .clio/instructions.md) the user trusted
        with this project's config (None: not recorded)."""
        entry = self._read()["projects"].get(project_key(root))
        if isinstance(entry, dict) and isinstance(entry.get("instructions"), str):
            return str(entry["instructions"])
        return None

    def grant(self, root: Path, digest: str, instructions: str | None = None) -> None:
        """Trust the project's config with these bytes (replaces an earlier grant), and its
        instruction files with the ``instructions`` digest when given."""
        key = project_key(root)
        entry: dict[str, Any] = {"sha256": digest, "granted": float(self.clock())}
        if instructions is not None:
            entry["instructions"] = instructions

        def update(data: dict[str, Any]) -> dict[str, Any]:
            data["projects"][key] = entry
            data["version"] = VERSION
            return data

        locked_update(self.path, update, _empty, validate=_valid)

    def revoke(self, root: Path) -> bool:
        """Forget the project's grant; False when there was none."""
        key = project_key(root)
        found = False

        def update(data: dict[str, Any]) -> dict[str, Any]:
            nonlocal found
            found = data["projects"].pop(key, None) is not None
            return data

        if not self.path.exists():
            return False
        locked_update(self.path, update, _empty, validate=_valid)
        return found
