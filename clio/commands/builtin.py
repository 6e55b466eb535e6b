"""Importing this module registers every slash command."""

from clio.commands import core, mcp, memory, prefs, session, skills, trust, undo  # noqa: F401
