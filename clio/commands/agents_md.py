"""``/init``: a model turn that looks at the repository and writes an ``AGENTS.md`` for it
(clio/prompts/init.md). The write goes through the file tool like any other: shown as a diff,
approved (or refused) like any write, undone by ``/undo``."""

from __future__ import annotations

from clio.commands.registry import CommandContext, command
from clio.messages import prompt_meta
from clio.prompts import load_prompt

NEW = "write an AGENTS.md for this repository, the instructions coding agents read before they work here."
UPDATE = (
    "this repository has an AGENTS.md already: read it, then bring it up to date with what the repository "
    "holds now, keeping what is still true."
)


@command("init", "look at the repository and write an AGENTS.md for it (a model turn; the write asks)", "/init")
def init_cmd(app: CommandContext, arg: str) -> None:
    exists = (app.paths.root / "AGENTS.md").is_file()
    text = load_prompt("init.md").format(
        task=UPDATE if exists else NEW,
        operation="read it, then write_file or replace_string" if exists else "create_file",
    )
    app.run_turn(text, prompt_meta("init"))  # clio's words in the user's role: never read as the user's
