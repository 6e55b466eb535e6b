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

from clio.tools import file_edit, file_read, search
from clio.tools.registry import Handler, Lean, ToolContext, dispatch, need, operation_schema, tool

__all__ = ["file_operations"]

_OPS: dict[str, Handler] = {
    "read_file": file_read.read_file,
    "write_file": file_edit.write_file,
    "create_file": file_edit.create_file,
    "append_file": file_edit.append_file,
    "replace_string": file_edit.replace_string,
    "multi_replace_string": file_edit.multi_replace,
    "insert_at_line": file_edit.insert_at_line,
    "delete_file": file_edit.delete_file,
    "rename_file": file_edit.rename_file,
    "create_directory": file_edit.create_directory,
    "list_dir": search.list_dir,
    "file_exists": file_read.file_exists,
    "get_file_info": file_read.file_info,
    "file_search": search.file_search,
    "grep_search": search.grep_search,
    "read_tool_result": file_read.read_tool_result,
}

_INT = {"type": "integer"}
_STR = {"type": "string"}


@tool(
    "file_operations",
    "Project files. Paths relative to project root. Read before editing; replace_string's old_string "
    "must match exactly once. file_search: glob (no '/' = any depth). grep_search: regex.",
    operation_schema(
        list(_OPS),
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
    ),
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
)
def file_operations(ctx: ToolContext, args: dict[str, Any]) -> str:
    for key in ("start_line", "end_line", "offset", "length", "max_results"):
        if args.get(key) is not None:
            args[key] = need(args, key, int)
    return dispatch(_OPS, ctx, args)
