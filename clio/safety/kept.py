"""What the command launcher (clio/safety/launcher.py) keeps from one command to the next: the
read-only ``$CLIO_HOME`` namespaces commands join (:class:`Held`), and the walk around the hidden
paths that Landlock's rules come from (:class:`Walks`). Each is dropped or made again as soon as
what it was made from changes; the launcher drops both when the mount table changes.
"""

from __future__ import annotations

import contextlib
import os

from clio.safety.hide import Grant, hidden_set, unchanged, walk
from clio.safety.namespaces import hold

__all__ = ["Held", "Walks"]


def _close(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


class Held:
    """The user and mount namespaces of ``--only-hide --ns`` commands (the hidden folders mounted
    read-only), made once per set of hidden folders and joined by each command
    (clio/safety/namespaces.py ``hold``, ``join``): new namespaces cost each command ~5 ms.
    Dropped whenever the mount table changes (``/proc/self/mounts`` polled), so that commands
    see the mounts of the moment, as with namespaces of their own."""

    MAX = 4

    def __init__(self) -> None:
        self.sets: dict[tuple[tuple[str, int, int], ...], tuple[int, int]] = {}

    @staticmethod
    def key(folders: list[str]) -> tuple[tuple[str, int, int], ...]:
        out = []
        for real in sorted(hidden_set(folders)):
            try:
                st = os.stat(real)
            except OSError:
                continue
            out.append((real, st.st_dev, st.st_ino))  # the folder itself: one made anew is mounted anew
        return tuple(out)

    def get(self, folders: list[str]) -> tuple[int, int] | None:
        key = self.key(folders)
        if key in self.sets:
            self.sets[key] = self.sets.pop(key)  # the most recently used last
        else:
            if len(self.sets) >= self.MAX:  # the least recently used goes (a probe's folder, an old $CLIO_HOME)
                _close(list(self.sets.pop(next(iter(self.sets)))))
            try:
                self.sets[key] = hold(folders)
            except OSError:
                return None  # the command makes its own (and fails the same way: 126)
        return self.sets[key]

    def drop(self) -> None:
        for fds in self.sets.values():
            _close(list(fds))
        self.sets.clear()


class Walks:
    """What Landlock grants around each set of hidden paths (clio/safety/hide.py ``walk``: ~2 ms of
    path resolving), kept while the folders leading to them are unchanged; each command's child
    still checks every path is the same file before granting it. A walk made less than a second
    after a change to one of those folders is not kept (a change in the same clock tick would not
    show in the folder's time)."""

    MAX = 8

    def __init__(self) -> None:
        self.walks: dict[tuple[str, ...], tuple[list[Grant], list[tuple[str, int, int]], tuple[int, ...], list[str]]] = {}

    def get(self, hidden: list[str]) -> tuple[list[Grant], list[str]]:
        """What to grant around ``hidden``, and its real paths."""
        key = tuple(hidden)
        there = self.there(hidden)
        kept = self.walks.get(key)
        if kept is not None and kept[2] == there and unchanged(kept[1]):
            return kept[0], kept[3]
        import time

        started = time.time_ns()
        grants, stamps = walk(hidden)
        real = sorted(hidden_set(hidden))
        self.walks.pop(key, None)
        if all(mtime < started - 1_000_000_000 for _f, _i, mtime in stamps):
            if len(self.walks) >= self.MAX:
                self.walks.pop(next(iter(self.walks)))
            self.walks[key] = (grants, stamps, there, real)
        return grants, real

    @staticmethod
    def there(hidden: list[str]) -> tuple[int, ...]:
        """Each hidden path's inode, 0 where there is none: a credential store made since (in a
        folder the walk granted whole, as it had nothing to hide then) means a new walk."""
        out = []
        for path in hidden:
            try:
                out.append(os.lstat(path).st_ino)
            except OSError:
                out.append(0)
        return tuple(out)
