"""Importing this module registers every slash command."""

from clio.commands import core, mcp, memory, prefs, session, trust, undo  # noqa: F401
