"""Importing this module registers every built-in tool with ``REGISTRY`` (one spec per module).

The order of registration is the order of the schemas in every request: keep it. ``files`` and
``terminal_spec`` declare their tools without importing their code (``spec.Later``): it loads at
a tool's first call.
"""

from __future__ import annotations

# isort: off
from clio.tools import files, git, terminal_spec, todos, user
from clio.tools import memory, prefs

# isort: on

__all__ = ["files", "git", "memory", "prefs", "terminal_spec", "todos", "user"]
