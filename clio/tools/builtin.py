"""Importing this module registers every built-in tool with ``REGISTRY`` (one spec per module).

The order of registration is the order of the schemas in every request: keep it.
"""

from __future__ import annotations

# isort: off
from clio.tools import files, git, terminal, todos, user
from clio.tools import memory, prefs

# isort: on

__all__ = ["files", "git", "memory", "prefs", "terminal", "todos", "user"]
