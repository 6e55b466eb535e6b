"""Counts in words (issue 27: "1 messages", "(1 lines)", "1 files match")."""

from __future__ import annotations

from pathlib import Path

from clio.wording import plural


def test_plural_agrees_with_the_count() -> None:
    assert plural(1, "line") == "1 line"
    assert plural(0, "line") == "0 lines"
    assert plural(2_500, "message") == "2,500 messages"
    assert plural(1, "entry", "entries") == "1 entry" and plural(3, "entry", "entries") == "3 entries"


def test_tool_results_say_one_line_and_one_file(tmp_path: Path) -> None:
    import json

    import clio.tools.builtin  # noqa: F401  (registers the tools)
    from clio.tools.context import ToolContext
    from clio.tools.registry import REGISTRY

    ctx = ToolContext(root=tmp_path)
    out, ok = REGISTRY.run(ctx, "file_operations", json.dumps({"operation": "write_file", "path": "a.py", "content": "x\n"}))
    assert ok and out == "created a.py (1 line, 2 bytes)"
    out, ok = REGISTRY.run(ctx, "file_operations", json.dumps({"operation": "file_search", "pattern": "*.py"}))
    assert ok and out.splitlines()[0] == "1 file matches '*.py'"
    out, ok = REGISTRY.run(ctx, "file_operations", json.dumps({"operation": "list_dir"}))
    assert ok and out.splitlines()[0] == "./ (1 entry)"
