"""A memory type is one declaration (issue 31): a type without a cap or a decay class fails when
the module declaring it is imported; everything else (ranking caps, decay, the memory tool's
operations and arguments, the prompts' words) is read from the table."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import clio.tools.builtin  # noqa: F401
from clio.memory import ltm_rank
from clio.memory.types import TYPES, storable_nouns
from clio.tools.registry import REGISTRY


def _import(tmp_path: Path, body: str) -> None:
    path = tmp_path / "my_types.py"
    path.write_text("from clio.memory.types import TypeSpec\n" + body, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("my_types", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop("my_types", None)


def test_a_type_without_a_cap_or_a_decay_class_fails_at_import(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="cap"):
        _import(tmp_path, 'NOTE = TypeSpec("n", "Notes", ("note",), (), ("note",), decay="fact")\n')
    with pytest.raises(TypeError, match="decay"):
        _import(tmp_path, 'NOTE = TypeSpec("n", "Notes", ("note",), (), ("note",), cap=5)\n')
    with pytest.raises(ValueError, match="cap of at least 1"):
        _import(tmp_path, 'NOTE = TypeSpec("n", "Notes", ("note",), (), ("note",), decay="fact", cap=0)\n')
    with pytest.raises(ValueError, match="decay class 'forever'"):
        _import(tmp_path, 'NOTE = TypeSpec("n", "Notes", ("note",), (), ("note",), decay="forever", cap=3)\n')
    with pytest.raises(ValueError, match="noun"):
        _import(tmp_path, 'N = TypeSpec("n", "Notes", ("note",), (), ("note",), decay="fact", cap=3, tool_op="add_note")\n')
    _import(tmp_path, 'NOTE = TypeSpec("n", "Notes", ("note",), (), ("note",), decay="note", cap=3)\n')


def test_ranking_and_the_memory_tool_read_the_table() -> None:
    assert {name: t.cap for name, t in TYPES.items()} == ltm_rank.DEFAULT_CAPS
    assert {name: t.decay for name, t in TYPES.items()} == ltm_rank.DECAY_CLASS
    tool = REGISTRY.get("memory_operations")
    assert tool is not None
    adders = {name: t for name, t in TYPES.items() if t.tool_op}
    for name, t in adders.items():
        assert t.tool_op in tool.ops, name
        for field in t.fields:
            assert field in tool.properties, (name, field)
        assert f"{t.tool_op} ({', '.join(t.required)})" in tool.description
        assert t.noun in storable_nouns()


def test_clio_mcp_remember_takes_every_field_of_every_type() -> None:
    import asyncio

    from clio.mcp.http_server import build_server
    from clio.mcp.memory_ops import MemoryOps
    from clio.mcp.tools import offered
    from clio.memory.ltm_store import LtmStore
    from clio.memory.notes import NoteStore
    from clio.safety.redact import Redactor

    ops = MemoryOps(LtmStore(None), NoteStore(None), lambda: None, Redactor("standard"), True, 500, len, lambda: 0.0)
    tools = {t.name: t for t in asyncio.run(build_server(ops, ltm=True).list_tools())}
    params = tools["remember"].input_schema["properties"]  # over HTTP (the SDK)
    stdio_params = offered(ltm=True)["remember"].schema()["properties"]  # over stdio (clio's own)
    for name, t in TYPES.items():
        for field in t.fields:
            assert field in params, f"clio mcp's remember lacks the {name} field {field!r}"
            assert field in stdio_params, f"clio mcp's remember (stdio) lacks the {name} field {field!r}"
