"""The prompt texts (shipped inside the package as ``clio.prompts``) and their one reader."""

from __future__ import annotations

from importlib.resources import files


def load_prompt(name: str) -> str:
    """A prompt text from prompts/ (``system.md``, ``skills.md``...)."""
    return files("clio.prompts").joinpath(name).read_text(encoding="utf-8")
