"""The tool profile and what scales with the window (clio/agent/profile.py), without a server.

The lean profile exists so a small window (2k-4k tokens, common with local models) has room for
the conversation: these tests pin what it sends, what it refuses, and the rule that picks it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import clio.app_memory  # noqa: F401  (registers memory_operations and preferences)
import clio.tools.builtin  # noqa: F401
from clio.agent.profile import (
    FIXED_SHARE,
    chars_for,
    choose_profile,
    scaled_budget,
)
from clio.agent.prompt import PromptBuilder
from clio.memory.tokens import TokenEstimator
from clio.tools.registry import REGISTRY, Lean, Tool, ToolContext
from clio.tools.results import MIN_RESULT_CHARS, RESULT_CHARS, maybe_store, page_chars, result_chars_for


def compact(schemas: list[dict[str, Any]]) -> int:
    return len(json.dumps(schemas, separators=(",", ":")))


# ---------------------------------------------------------------- the lean schemas


def test_lean_profile_offers_files_shell_and_git_only() -> None:
    assert REGISTRY.offered("lean") == ["file_operations", "version_control", "terminal_operations"]
    assert len(REGISTRY.offered("full")) == 7
    assert [s["function"]["name"] for s in REGISTRY.schemas("lean")] == REGISTRY.offered("lean")


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


def test_lean_schemas_cost_a_quarter_of_the_full_ones() -> None:
    full, lean = compact(REGISTRY.schemas("full")), compact(REGISTRY.schemas("lean"))
    assert lean * 4 < full, (lean, full)


def test_a_lean_form_naming_what_the_tool_lacks_is_refused() -> None:
    def handler(ctx: ToolContext, args: dict[str, Any]) -> str:
        return ""

    params = {"type": "object", "properties": {"operation": {"type": "string", "enum": ["a", "b"]}}}
    ok = Tool("t", "d", params, handler, Lean("d", ("a",)))
    assert ok.schema("lean")["function"]["parameters"]["properties"]["operation"]["enum"] == ["a"]
    for lean in (Lean("d", ("c",)), Lean("d", ("a",), ("path",)), Lean("d", ("a",), ("operation",))):
        with pytest.raises(ValueError, match="unknown parameters or operations"):
            Tool("t", "d", params, handler, lean).schema("lean")
    needs_cmd = {
        "type": "object",
        "properties": {"operation": {"type": "string", "enum": ["a"]}, "cmd": {"type": "string"}},
        "required": ["operation", "cmd"],
    }
    with pytest.raises(ValueError, match=r"leaves out required parameters: \['cmd'\]"):
        Tool("t", "d", needs_cmd, handler, Lean("d", ("a",))).schema("lean")
    kept = Tool("t", "d", needs_cmd, handler, Lean("d", ("a",), ("cmd",))).schema("lean")
    assert kept["function"]["parameters"]["required"] == ["operation", "cmd"]
    with pytest.raises(ValueError, match="unknown tool profile"):
        REGISTRY.schemas("tiny")


def test_a_tool_not_offered_does_not_run(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path)
    text, ok = REGISTRY.run(ctx, "todo_operations", {"operation": "read"}, "lean")
    assert not ok and "unknown tool 'todo_operations'" in text
    assert "file_operations" in text and "memory_operations" not in text
    text, ok = REGISTRY.run(ctx, "todo_operations", {"operation": "read"}, "full")
    assert ok, text
    (tmp_path / "a.txt").write_text("alpha\n")
    text, ok = REGISTRY.run(ctx, "file_operations", {"operation": "read_file", "path": "a.txt"}, "lean")
    assert ok and "alpha" in text


# ---------------------------------------------------------------- choosing


def test_choose_profile_by_the_fixed_share_of_the_budget() -> None:
    assert pytest.approx(1 / 3) == FIXED_SHARE
    assert choose_profile("auto", 6000, 2000) == "full"  # exactly a third
    assert choose_profile("auto", 6000, 2001) == "lean"
    assert choose_profile("auto", 1792, 1830) == "lean"  # llama-server -c 2048, 256 reserved
    assert choose_profile("auto", 124_000, 1830) == "full"
    assert choose_profile("full", 1792, 1830) == "full"  # the user's word wins
    assert choose_profile("lean", 124_000, 10) == "lean"
    with pytest.raises(ValueError, match="profile must be one of"):
        choose_profile("small", 1000, 10)


def test_budgets_scale_down_in_small_windows_only() -> None:
    assert scaled_budget(1200, 124_000, 1 / 10) == 1200
    assert scaled_budget(1200, 1792, 1 / 10) == 179
    assert scaled_budget(300, 1792, 1 / 40) == 44
    assert chars_for(1792, 1 / 8, 3.5) == 784
    assert chars_for(124_000, 1 / 8, 3.5, 2000) == 2000


def test_full_fixed_part_exceeds_a_third_of_a_2k_window_and_lean_fits(tmp_path: Path) -> None:
    est = TokenEstimator("unknown-local-model")  # no tiktoken encoding: the default ratio
    prompt = PromptBuilder(tmp_path, tmp_path)

    def fixed(profile: str) -> int:
        text = prompt.static_text(profile)
        return est.count_messages([{"role": "system", "content": text}]) + est.count_tools(
            REGISTRY.schemas(profile)
        )

    limit_2k = 2048 - 512  # the default reply reserve is a quarter of the window
    assert choose_profile("auto", limit_2k, fixed("full")) == "lean"
    assert fixed("lean") < limit_2k / 3, fixed("lean")
    assert choose_profile("auto", 8192 - 2048, fixed("full")) == "full"


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
    assert result_chars_for(124_000, 3.5) == RESULT_CHARS
    assert result_chars_for(1792, 3.3) == 1971
    assert result_chars_for(300, 3.3) == MIN_RESULT_CHARS
    ctx = ToolContext(root=tmp_path, session_dir=tmp_path / "s", result_chars=result_chars_for(1792, 3.3))
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
    from clio.app_model import budget_for

    assert budget_for(32768, 4096).reserve == 4096
    assert budget_for(4096, 256).reserve == 256
    assert budget_for(4096, 4096).reserve == 1024  # would leave no room for the prompt
    assert budget_for(2048, 1024).reserve == 512
    assert budget_for(2048, None).limit == 1536
