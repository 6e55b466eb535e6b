"""docs/commands.md describes the real command registry (issue 27: /memory compact and /trust were
missing, /session show promised a cost, /memory prune named a threshold the code does not use)."""

from __future__ import annotations

import re
from pathlib import Path

import clio.commands.builtin  # noqa: F401  (registers the commands)
from clio.commands.registry import COMMANDS
from clio.memory import lifecycle

DOC = (Path(__file__).resolve().parents[2] / "docs" / "commands.md").read_text(encoding="utf-8")
ROWS = [ln for ln in DOC.splitlines() if ln.startswith("| `/")]


def _cells() -> list[str]:
    """The first cell of every row of the table (the commands as written)."""
    return [row.split(" | ")[0] for row in ROWS]


def test_every_command_and_subcommand_has_a_row() -> None:
    cells = _cells()
    for name, cmd in COMMANDS.items():
        mine = [c for c in cells if re.search(rf"`/{name}\b", c)]
        assert mine, f"/{name} has no row in docs/commands.md"
        for sub in cmd.subcommands:
            assert any(re.search(rf"\b{sub}\b", c) for c in mine), f"/{name} {sub} is not in docs/commands.md"
        for alias in cmd.aliases:
            assert f"`/{alias}`" in DOC, f"/{alias} (alias of /{name}) is not in docs/commands.md"


def test_every_row_names_a_real_command() -> None:
    for cell in _cells():
        for name in re.findall(r"`/(\w+)", cell):
            assert name in COMMANDS or any(name in c.aliases for c in COMMANDS.values()), cell


def test_the_figures_the_doc_gives_are_the_codes() -> None:
    row = next(r for r in ROWS if r.startswith("| `/memory prune"))
    assert f"below {lifecycle.PRUNE_SCORE:g}" in row and f"default {lifecycle.PRUNE_UNUSED_DAYS:g}" in row
    show = next(r for r in ROWS if r.startswith("| `/session show`"))
    assert "cost" not in show  # /session show prints no cost
