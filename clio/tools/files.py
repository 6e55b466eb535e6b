"""``file_operations``: read, write, edit and inspect project files.

This module is the tool itself: its operations table, schema and registration. Reading and
inspecting live in ``clio.tools.file_read``, writing and editing in ``clio.tools.file_edit``,
listing and searching in ``clio.tools.search``. Every path goes through ``resolve_path``
(sandbox confinement, ``clio.tools.paths``), every change through ``ctx.approve("write", ...)``
and reaches disk atomically with the file's mode kept.

Git's folder (any ``.git`` path component, after symlinks are resolved, and the repository's
real git dir when ``.git`` is a pointer file) and clio's own folder (any ``.clio`` component:
settings, instructions, memory, sessions) are protected: a change there could make git run
programs or change how clio runs next time. It needs the user's explicit approval of that
exact change in the REPL (asked as destructive, so neither ``--yes`` nor an ``allow`` policy
answers it) and is always refused in one-shot mode. Files the tool creates are recorded in
``ctx.created_files`` so the commit tool can stage them (and only them) among untracked files.
"""

from __future__ import annotations

from typing import Any

from clio import actions as A
from clio.tools.context import ToolContext, need
from clio.tools.registry import register
from clio.tools.spec import CHANGE, READ, Later, Lean, Op, ToolSpec

__all__ = ["SPEC"]

_INT = {"type": "integer"}
_STR = {"type": "string"}


def _coerce(ctx: ToolContext, args: dict[str, Any]) -> str:
    for key in ("start_line", "end_line", "offset", "length", "max_results"):
        if args.get(key) is not None:
            args[key] = need(args, key, int)
    return SPEC.dispatch(ctx, args)


SPEC = register(ToolSpec(
    "file_operations",
    "Project files. Paths relative to project root. Read before editing; replace_string's old_string "
    "must match exactly once. file_search: glob (no '/' = any depth). grep_search: regex.",
    {
        # reading: the file's text, or its names, is outside content
        "read_file": Op(Later("clio.tools.file_read", "read_file"), READ, outside=True, action=A.READ_FILE),
        # changes: the result only confirms what the model asked for
        "write_file": Op(Later("clio.tools.file_edit", "write_file"), CHANGE, outside=False, action=A.WRITE_FILE),
        "create_file": Op(Later("clio.tools.file_edit", "create_file"), CHANGE, outside=False, action=A.WRITE_FILE),
        "append_file": Op(Later("clio.tools.file_edit", "append_file"), CHANGE, outside=False, action=A.EDIT_FILE),
        "replace_string": Op(Later("clio.tools.file_edit", "replace_string"), CHANGE, outside=False, action=A.EDIT_FILE),
        "multi_replace_string": Op(Later("clio.tools.file_edit", "multi_replace"), CHANGE, outside=False, action=A.EDIT_FILE),
        "insert_at_line": Op(Later("clio.tools.file_edit", "insert_at_line"), CHANGE, outside=False, action=A.EDIT_FILE),
        "delete_file": Op(Later("clio.tools.file_edit", "delete_file"), CHANGE, outside=False, action=A.DELETE_FILE),
        "rename_file": Op(Later("clio.tools.file_edit", "rename_file"), CHANGE, outside=False, action=A.RENAME_FILE),
        "create_directory": Op(Later("clio.tools.file_edit", "create_directory"), CHANGE, outside=False),
        "list_dir": Op(Later("clio.tools.search", "list_dir"), READ, outside=True),  # names: a file can be named anything
        "file_exists": Op(Later("clio.tools.file_read", "file_exists"), READ, outside=False),
        "get_file_info": Op(Later("clio.tools.file_read", "file_info"), READ, outside=False),
        "file_search": Op(Later("clio.tools.search", "file_search"), READ, outside=True),
        "grep_search": Op(Later("clio.tools.search", "grep_search"), READ, outside=True),
        "read_tool_result": Op(Later("clio.tools.file_read", "read_tool_result"), READ, outside=True),
    },
    {
        "path": _STR,
        "content": _STR,
        "start_line": _INT,
        "end_line": _INT,
        "line": {"type": "integer", "description": "insert before this line (1-based)"},
        "old_string": _STR,
        "new_string": _STR,
        "replacements": {
            "type": "array",
            "items": {"type": "object", "properties": {"old_string": _STR, "new_string": _STR}},
        },
        "new_path": _STR,
        "pattern": _STR,
        "include": {"type": "string", "description": "file glob for grep_search"},
        "max_results": _INT,
        "handle": _STR,
        "offset": _INT,
        "length": _INT,
    },
    label=("path", "pattern", "handle"),
    aliases=("files",),
    lean=Lean(
        "Project files (paths relative to the root). replace_string: old_string must match once. "
        "read_tool_result: page a stored result.",
        (
            "read_file",
            "write_file",
            "replace_string",
            "list_dir",
            "file_search",
            "grep_search",
            "read_tool_result",
        ),
        ("path", "content", "old_string", "new_string", "pattern", "handle", "offset"),
    ),
    run=_coerce,
))  # fmt: skip
