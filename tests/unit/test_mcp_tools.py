"""clio mcp's table of tools (clio/mcp/tools.py): what the stdio server lists is what the SDK would
derive from the HTTP server's signatures, and arguments are checked as the SDK's pydantic would."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from clio.mcp import tools
from clio.mcp.http_server import build_server
from clio.mcp.memory_ops import MemoryOps
from clio.memory.ltm_store import LtmStore
from clio.memory.notes import NoteStore
from clio.safety.redact import Redactor


def sdk_listing(*, ltm: bool) -> list[dict[str, Any]]:
    ops = MemoryOps(LtmStore(None), NoteStore(None), lambda: None, Redactor("standard"), True, 500, len, lambda: 0.0)
    listed = asyncio.run(build_server(ops, ltm=ltm).list_tools())
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed]


@pytest.mark.parametrize("ltm", [True, False])
def test_the_table_lists_what_the_sdk_derives_from_the_http_servers_signatures(ltm: bool) -> None:
    ours = [t.listing() for t in tools.offered(ltm=ltm).values()]
    assert ours == sdk_listing(ltm=ltm)


def test_arguments_are_checked_like_pydantics_lax_mode() -> None:
    recall = tools.offered(ltm=True)["recall"]
    assert recall.check({"query": "q"}) == {"query": "q", "limit": 10}
    assert recall.check({"query": "q", "limit": "3"})["limit"] == 3  # a numeric string is a number
    assert recall.check({"query": "q", "limit": 4.0})["limit"] == 4
    assert recall.check({"query": "q", "extra": 1}) == {"query": "q", "limit": 10}  # extras are ignored
    for bad, said in (({}, "'query' is required"), ({"query": 5}, "'query' should be a string"),
                      ({"query": "q", "limit": "abc"}, "'limit' should be a whole number"),
                      ({"query": "q", "limit": 2.5}, "'limit' should be a whole number")):  # fmt: skip
        with pytest.raises(tools.BadArguments, match=said):
            recall.check(bad)
    remember = tools.offered(ltm=True)["remember"]
    checked = remember.check({"type": "workflow", "name": "n", "steps": ["a", "b"], "confidence": "0.5"})
    assert checked["steps"] == ["a", "b"] and checked["confidence"] == 0.5 and checked["examples"] is None
    with pytest.raises(tools.BadArguments, match="'steps' should be a list of strings"):
        remember.check({"type": "workflow", "steps": "a"})
    assert tools.offered(ltm=True)["list_entries"].check({"type": None})["type"] is None


def test_no_ltm_offers_only_notes_and_sessions() -> None:
    assert list(tools.offered(ltm=False)) == ["note_read", "note_write", "note_list", "search_sessions"]
