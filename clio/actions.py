"""What a tool call did, in clio's own words, for the modules that read finished turns.

Each tool declares, operation by operation, which of these actions it performs
(:class:`clio.tools.spec.Op`, ``action=``); the registry hands the table to the thread summary
(:mod:`clio.context.yarn`) and to the behaviour detectors (:mod:`clio.memory.shown`), which look
up a call's action instead of knowing tool names. An action names the arguments it carries:

- ``READ_FILE``: ``path``, a file's content was read;
- ``WRITE_FILE``: ``path``, a whole file was written (created or replaced);
- ``EDIT_FILE``: ``path``, part of a file was changed (a replacement, an insertion, an append);
- ``DELETE_FILE``: ``path``;
- ``RENAME_FILE``: ``path`` and ``new_path``;
- ``RUN_COMMAND``: ``command``, a shell command ran;
- ``COMMIT``: a commit was made (its result names it: ``[branch abc1234] message``);
- ``ASK_USER``: ``question``, the user was asked (the result holds the answer).

Pure data: no I/O, no imports of clio.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

READ_FILE = "read_file"
WRITE_FILE = "write_file"
EDIT_FILE = "edit_file"
DELETE_FILE = "delete_file"
RENAME_FILE = "rename_file"
RUN_COMMAND = "run_command"
COMMIT = "commit"
ASK_USER = "ask_user"
ACTIONS = frozenset(
    {READ_FILE, WRITE_FILE, EDIT_FILE, DELETE_FILE, RENAME_FILE, RUN_COMMAND, COMMIT, ASK_USER}
)
CHANGES_FILE = frozenset({WRITE_FILE, EDIT_FILE, DELETE_FILE, RENAME_FILE})

# (tool name, operation) -> action; built by the tool registry (``Registry.actions``)
Actions = Mapping[tuple[str, str], str]
NONE: Actions = {}


def action_of(actions: Actions, name: str, args: Mapping[str, Any]) -> str:
    """The action of a call of tool ``name`` with ``args`` ("" when it declares none)."""
    return actions.get((name, str(args.get("operation") or "")), "")
