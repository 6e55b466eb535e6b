"""Importing this module registers every slash command."""

from clio.commands import (  # noqa: F401
    agents_md,
    changes,
    core,
    cost,
    mcp,
    memory,
    modes,
    prefs,
    session,
    skills,
    trust,
    undo,
)
