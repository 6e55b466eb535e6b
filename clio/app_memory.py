"""Wiring of the memory tiers into the app: services for tools and commands, prompt blocks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clio.agent.prompt import MemoryBlock

if TYPE_CHECKING:
    from clio.app import App


def open_memory_services(app: App) -> None:
    """Register the memory stores in ``app.services`` (none are written in incognito)."""


def memory_blocks(app: App) -> list[MemoryBlock]:
    """The prompt blocks long-term memory and preferences contribute, ranked per task."""
    return []
