"""The REPL's input history (``.clio/history``) with secrets redacted before they reach the file.

A line typed with a key in it (``export OPENAI_API_KEY=sk-...``, a pasted ``.env``) is recalled
with the up arrow in the running session as typed, but the file keeps the placeholder instead
of the secret, as the session archive does. Each entry is redacted whole (a multi-line paste
is one entry), so a secret split over lines is still seen.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from prompt_toolkit.history import FileHistory

__all__ = ["RedactingFileHistory"]


class RedactingFileHistory(FileHistory):
    """A ``FileHistory`` whose ``store_string`` writes the redacted entry (``redact=None``: as typed)."""

    def __init__(self, filename: str | os.PathLike[str], redact: Callable[[str], str] | None = None) -> None:
        super().__init__(os.fspath(filename))
        self.redact = redact

    def store_string(self, string: str) -> None:
        super().store_string(self.redact(string) if self.redact is not None else string)
