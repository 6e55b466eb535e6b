"""Opening the shared store for a run: from the user's ``shared_memory`` setting (or
``CLIO_SHARED_MEMORY``; a project's own config only when the user trusts it), for the project
named by its git remote (or ``team_project``), as ``team_author`` (default ``user@machine``).

When it cannot be opened (psycopg missing, no project identity) clio says why in one line and
keeps this checkout's own memory; an unreachable server is not such a case (the shared store
then works from its local copy and queues, :mod:`clio.team.link`).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clio.store.atomic import locked_update, read_json
from clio.team.identity import IdentityError, default_author, project_id
from clio.team.search import entry_vector

if TYPE_CHECKING:
    from clio.config import Settings
    from clio.memory.ltm_store import LtmStore
    from clio.paths import Paths
    from clio.team.link import TeamLink
    from clio.team.notes import SharedNoteStore
    from clio.team.store import SharedLtmStore

Notice = Callable[[str], None]
TOLD = "own-entries-told"  # in .clio/team/: the line about this checkout's own entries was said once


def _valid(data: object) -> bool:
    return isinstance(data, dict) and isinstance(data.get("ignored", []), list)


class Ignored:
    """The authors this user ignores (``$CLIO_HOME/team.json``): private, never shared."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self) -> set[str]:
        data: dict[str, Any] = read_json(self.path, dict, validate=_valid)
        return {str(a) for a in data.get("ignored", [])}

    def set(self, author: str, ignored: bool) -> bool:
        """Ignore (or stop ignoring) ``author``; whether that changed anything."""
        changed: list[bool] = []

        def update(data: dict[str, Any]) -> dict[str, Any]:
            now = [str(a) for a in data.get("ignored", []) or []]
            after = sorted({*now, author}) if ignored else [a for a in now if a != author]
            changed.append(sorted(now) != sorted(after))
            return {**data, "ignored": after}

        locked_update(self.path, update, dict, validate=_valid)
        return changed[-1]


def shared_url(settings: Settings) -> str | None:
    url = (getattr(settings, "shared_memory", None) or "").strip()
    return url or None


def open_link(paths: Paths, settings: Settings, notice: Notice) -> TeamLink | None:
    """The link to the shared store, connecting in the background; None (and one line) when it
    cannot be used here."""
    url = shared_url(settings)
    if url is None:
        return None
    try:
        import psycopg  # noqa: F401  (only to say clearly that it is missing)
    except ImportError:
        notice("clio: shared_memory is set but psycopg is not installed (pip install '.[team]' in clio's checkout); "
               "using this checkout's own memory.")
        return None
    try:
        project = project_id(paths.root, settings.team_project)
    except IdentityError as exc:
        notice(f"clio: shared memory is off here: {exc}.")
        return None
    from clio.team.db import Db
    from clio.team.link import TeamLink

    link = TeamLink(
        Db(url),
        project,
        paths.clio_dir,
        author=(settings.team_author or "").strip() or default_author(),
        origin=f"{socket.gethostname()}:{paths.root}",
        notice=notice,
        vectorize=entry_vector,
    )
    return link


def tell_own_entries(own: LtmStore | None, team_dir: Path, notice: Notice) -> None:
    """Once per checkout, the first time the shared store is used while this checkout's own
    memory holds entries: one line saying they are left out, and how to bring them along."""
    if own is None or not own.enabled or (team_dir / TOLD).exists():
        return
    count = len(own.all())
    if not count:
        return
    notice(
        f"clio: shared memory is on: this checkout's {count} own entr{'y' if count == 1 else 'ies'} "
        "(.clio/ltm.json) are left out while it is, kept on disk; /memory team import brings them to the team's store."
    )
    team_dir.mkdir(parents=True, exist_ok=True)
    (team_dir / TOLD).write_text("yes\n", encoding="utf-8")


def open_shared(
    paths: Paths,
    settings: Settings,
    redact: Callable[[str], str],
    notice: Notice,
    own: LtmStore | None = None,
) -> tuple[SharedLtmStore, SharedNoteStore] | None:
    """(long-term memory, notes) in the shared store, or None: keep the local ones. ``own``: this
    checkout's own long-term memory, which the shared store replaces (kept for ``/memory team import``)."""
    link = open_link(paths, settings, notice)
    if link is None:
        return None
    from clio.team.notes import SharedNoteStore
    from clio.team.store import SharedLtmStore

    tell_own_entries(own, paths.clio_dir / "team", notice)
    ltm = SharedLtmStore(link, paths.clio_dir / "team", redact=redact, ignored=Ignored(paths.home / "team.json"))
    ltm.own = own
    notes = SharedNoteStore(link, paths.memory_dir, redact=redact)
    link.db.connect_in_background()
    return ltm, notes
