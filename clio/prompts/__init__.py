"""The prompt texts (shipped inside the package as ``clio.prompts``) and their one reader."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent  # a package installed as files (pip), never a zip: no importlib.resources


def load_prompt(name: str) -> str:
    """A prompt text from prompts/ (``system.md``, ``skills.md``...)."""
    return (HERE / name).read_text(encoding="utf-8")
