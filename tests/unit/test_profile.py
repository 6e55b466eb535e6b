"""The tool profile and what scales with the window (clio/context/budget.py, clio/agent/window.py),
without a server.

The lean profile exists so a small window (2k-4k tokens, common with local models) has room for
the conversation: these tests pin what it sends, what it refuses, and the rule that picks it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import clio.tools.builtin  # noqa: F401  (registers every tool)
from clio.agent.prompt import PromptBuilder
from clio.agent.window import Window
from clio.config import Settings
from clio.context.budget import FIXED_SHARE, MIN_RESULT_CHARS, RESULT_CHARS, Budget, Shares
from clio.context.tokens import TokenEstimator
from clio.store.model_state import ModelStateStore
from clio.tools.context import ToolContext
from clio.tools.registry import REGISTRY
from clio.tools.results import maybe_store, page_chars
from clio.tools.spec import Lean, Op, ToolSpec


def compact(schemas: list[dict[str, Any]]) -> int:
    return len(json.dumps(schemas, separators=(",", ":")))


# ---------------------------------------------------------------- the lean schemas


def test_lean_profile_offers_files_shell_git_and_recall_only() -> None:
    assert sorted(REGISTRY.offered("lean")) == sorted(
        ["file_operations", "version_control", "terminal_operations", "memory_operations"]
    )
    assert len(REGISTRY.offered("full")) == 7
    assert [s["function"]["name"] for s in REGISTRY.schemas("lean")] == REGISTRY.offered("lean")
    (memory,) = [s["function"] for s in REGISTRY.schemas("lean") if s["function"]["name"] == "memory_operations"]
    assert memory["parameters"]["properties"]["operation"]["enum"] == ["recall_sessions"]
    assert set(memory["parameters"]["properties"]) == {"operation", "query"}


def test_lean_schemas_are_subsets_of_the_full_ones() -> None:
    full = {s["function"]["name"]: s["function"] for s in REGISTRY.schemas("full")}
    for schema in REGISTRY.schemas("lean"):
        fn = schema["function"]
        whole = full[fn["name"]]
        lean_props, full_props = fn["parameters"]["properties"], whole["parameters"]["properties"]
        assert set(lean_props) < set(full_props), fn["name"]
        assert set(lean_props["operation"]["enum"]) <= set(full_props["operation"]["enum"])
        assert set(fn["parameters"]["required"]) <= set(whole["parameters"]["required"])
        assert "operation" in fn["parameters"]["required"]
        for key, prop in lean_props.items():
            assert "description" not in prop, (fn["name"], key)
            assert prop["type"] == full_props[key]["type"]
        assert len(fn["description"]) < len(whole["description"])


TINY_LIMIT = 2048 - 512  # a 2k window's prompt budget (the reply reserve is a quarter)
SMALL_LIMIT = 4096 - 1024  # a 4k window's


def test_lean_schemas_cost_a_quarter_of_the_full_ones() -> None:
    full, lean = compact(REGISTRY.schemas("full")), compact(REGISTRY.schemas("lean", TINY_LIMIT))
    assert lean * 4 < full, (lean, full)


def test_recall_is_offered_in_the_lean_profile_where_it_fits() -> None:
    """From a 4k window the lean profile keeps a way to recall (the recall operation alone);
    at 2k the fixed part has no room for it and automatic recall works alone."""
    assert "memory_operations" in REGISTRY.offered("lean", SMALL_LIMIT)
    assert "memory_operations" not in REGISTRY.offered("lean", TINY_LIMIT)
    recall = compact(REGISTRY.schemas("lean", SMALL_LIMIT)) - compact(REGISTRY.schemas("lean", TINY_LIMIT))
    assert 0 < recall < 300, recall


def test_a_lean_form_naming_what_the_tool_lacks_is_refused() -> None:
    def handler(ctx: ToolContext, args: dict[str, Any]) -> str:
        return ""

    ops = {"a": Op(handler, "read", outside=True), "b": Op(handler, "read", outside=True)}
    ok = ToolSpec("t", "d", ops, lean=Lean("d", ("a",)))
    assert ok.schema("lean")["function"]["parameters"]["properties"]["operation"]["enum"] == ["a"]
    for lean in (Lean("d", ("c",)), Lean("d", ("a",), ("path",)), Lean("d", ("a",), ("operation",))):
        with pytest.raises(ValueError, match="unknown parameters or operations"):
            ToolSpec("t", "d", ops, lean=lean).schema("lean")
    one = {"a": ops["a"]}
    cmd = {"cmd": {"type": "string"}}
    with pytest.raises(ValueError, match=r"leaves out required parameters: \['cmd'\]"):
        ToolSpec("t", "d", one, cmd, ("cmd",), lean=Lean("d", ("a",))).schema("lean")
    kept = ToolSpec("t", "d", one, cmd, ("cmd",), lean=Lean("d", ("a",), ("cmd",))).schema("lean")
    assert kept["function"]["parameters"]["required"] == ["operation", "cmd"]
    with pytest.raises(ValueError, match="unknown tool profile"):
        REGISTRY.schemas("tiny")


def test_a_tool_not_offered_does_not_run(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path)
    text, ok = REGISTRY.run(ctx, "todo_operations", {"operation": "read"}, "lean", TINY_LIMIT)
    assert not ok and "unknown tool 'todo_operations'" in text
    assert "file_operations" in text and "memory_operations" not in text  # no room for recall at 2k
    text, ok = REGISTRY.run(ctx, "todo_operations", {"operation": "read"}, "full")
    assert ok, text
    (tmp_path / "a.txt").write_text("alpha\n")
    text, ok = REGISTRY.run(ctx, "file_operations", {"operation": "read_file", "path": "a.txt"}, "lean")
    assert ok and "alpha" in text


# ---------------------------------------------------------------- choosing


def window(profile: str = "auto", size: int = 6000, full_fixed: int = 2000) -> Window:
    """A real Window with nothing stored, whose full fixed part costs ``full_fixed`` tokens."""
    w = Window(Settings(model="unknown-local-model", profile=profile, context_window=size), ModelStateStore(None))
    w.measure_full_with(lambda est, cap: full_fixed)
    return w


def test_choose_profile_by_the_fixed_share_of_the_budget() -> None:
    assert pytest.approx(1 / 3) == FIXED_SHARE
    assert Shares(6000, 3.5).fits_full(2000)  # exactly a third
    assert not Shares(6000, 3.5).fits_full(2001)
    w = window(size=8000, full_fixed=2000)  # limit 6000
    assert (w.budget.limit, w.profile) == (6000, "full")
    assert window(size=8000, full_fixed=2001).profile == "lean"
    assert window(size=2048, full_fixed=1830).profile == "lean"  # llama-server -c 2048
    assert window(size=128_000, full_fixed=1830).profile == "full"
    assert window("full", size=2048, full_fixed=1830).profile == "full"  # the user's word wins
    assert window("lean", size=128_000, full_fixed=10).profile == "lean"


def test_a_stated_window_re_chooses_the_profile_and_tells_the_listeners() -> None:
    w = window(size=32_768, full_fixed=1830)
    seen: list[tuple[int, str, int]] = []
    w.subscribe(lambda win: seen.append((win.size, win.profile, win.shares.result_chars())))
    assert seen == [(32_768, "full", RESULT_CHARS)]
    note = w.use(2048, "stated by the endpoint's model list")
    assert "lean tool profile" in note and w.source == "stated by the endpoint's model list"
    assert seen[-1][:2] == (2048, "lean") and seen[-1][2] < RESULT_CHARS
    assert w.use(1900, "again") == ""  # already lean: no second note


def test_budgets_scale_down_in_small_windows_only() -> None:
    big, small = Shares(124_000, 3.5), Shares(1792, 3.5)
    assert big.ltm_tokens(1200) == 1200
    assert small.ltm_tokens(1200) == 179
    assert small.prefs_tokens(300) == 44
    assert small.task_chars() == 784
    assert big.task_chars() == 2000
    assert big.summary_chars() == int(1500 * 3.5) and small.summary_chars() == int(224 * 3.5)


def test_full_fixed_part_exceeds_a_third_of_a_2k_window_and_lean_fits(tmp_path: Path) -> None:
    est = TokenEstimator("unknown-local-model")  # no tiktoken encoding: the default ratio
    prompt = PromptBuilder(tmp_path, tmp_path)

    def fixed(profile: str) -> int:
        text = prompt.static_text(profile)
        return est.count_messages([{"role": "system", "content": text}]) + est.count_tools(
            REGISTRY.schemas(profile, limit_2k)
        )

    limit_2k = TINY_LIMIT
    assert not Shares(limit_2k, 3.5).fits_full(fixed("full"))
    assert fixed("lean") < limit_2k / 3, fixed("lean")
    assert Shares(8192 - 2048, 3.5).fits_full(fixed("full"))


# ---------------------------------------------------------------- the system prompt


def test_lean_system_prompt_names_no_tool_it_does_not_offer(tmp_path: Path) -> None:
    prompt = PromptBuilder(tmp_path, tmp_path)
    full, lean = prompt.static_text("full"), prompt.static_text("lean")
    assert str(tmp_path) in lean and len(lean) * 2 < len(full)
    for name in ("todo_operations", "memory_operations", "recall_sessions"):
        assert name in full and name not in lean
    system = prompt.system()[0]["content"]
    prompt.set_profile("lean")
    assert prompt.system()[0]["content"] == lean != system


def test_long_project_instructions_are_cut_with_a_note(tmp_path: Path) -> None:
    (tmp_path / ".clio").mkdir()
    (tmp_path / ".clio" / "instructions.md").write_text("Use tabs.\n" + "rule. " * 400)
    (tmp_path / "AGENTS.md").write_text("Run make test.\n")
    whole = PromptBuilder(tmp_path, tmp_path).static_text("lean")
    assert "Run make test." in whole and whole.count("rule.") == 400
    cut = PromptBuilder(tmp_path, tmp_path, instructions_max_chars=500).static_text("lean")
    assert "Use tabs." in cut and cut.count("rule.") < 90
    assert "more characters: read .clio/instructions.md for the rest]" in cut
    assert "Run make test." not in cut  # no room left for the second file


# ---------------------------------------------------------------- stored results


def test_result_limit_scales_with_the_window(tmp_path: Path) -> None:
    assert Shares(124_000, 3.5).result_chars() == RESULT_CHARS
    assert Shares(1792, 3.3).result_chars() == 1971
    assert Shares(300, 3.3).result_chars() == MIN_RESULT_CHARS
    ctx = ToolContext(root=tmp_path, session_dir=tmp_path / "s", result_chars=Shares(1792, 3.3).result_chars())
    text = "".join(f"{i:04d} river stone cloud maple\n" for i in range(250))  # 7,250 chars
    preview = maybe_store(ctx, "file_operations", text)
    assert len(preview) < ctx.result_chars, len(preview)
    handle = preview.split("handle '")[1].split("'")[0]
    assert (tmp_path / "s" / "results" / f"{handle}.txt").read_text() == text
    page, ok = REGISTRY.run(
        ctx, "file_operations", {"operation": "read_tool_result", "handle": handle}, "lean"
    )
    assert ok
    body = page.split("\n", 1)[1]
    assert body == text[: page_chars(ctx)] and len(page) < ctx.result_chars  # a page is never stored again
    assert maybe_store(ctx, "file_operations", page) == page


def test_a_reply_reserve_that_does_not_fit_the_window_falls_back_to_the_default() -> None:
    assert Budget.for_window(32768, 4096).reserve == 4096
    assert Budget.for_window(4096, 256).reserve == 256
    assert Budget.for_window(4096, 4096).reserve == 1024  # would leave no room for the prompt
    assert Budget.for_window(2048, 1024).reserve == 512
    assert Budget.for_window(2048, None).limit == 1536
