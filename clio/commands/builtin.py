"""Importing this module registers every slash command."""

from clio.commands import core, session  # noqa: F401
