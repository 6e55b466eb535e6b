"""Importing this module registers the built-in tool families with ``REGISTRY``."""

from __future__ import annotations

from clio.tools import files, git, terminal, todos, user

__all__ = ["files", "git", "terminal", "todos", "user"]
