"""A server whose real window is smaller than clio was told: clio learns it from the rejection,
keeps it for the model in .clio/token_ratios.json, and the next run is not rejected again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from testkit.clio_run import run_clio
from testkit.fakeserver import FakeServer, Reply


def _responder(body: dict[str, Any]) -> Reply:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(text="The file is long.")
    return Reply(
        tool_calls=[
            {"name": "file_operations", "arguments": {"operation": "read_file", "path": f"part{i}.txt"}}
            for i in range(4)
        ]
    )


def test_learned_window_is_kept_for_the_next_run(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    # four ~7 KB reads (each under the 8 KB large-result limit): over the server's real 6,000-token
    # window once they are all in the request
    for n in range(4):
        (project / f"part{n}.txt").write_text(
            "".join(f"line {i}: " + "lorem ipsum dolor " * 6 + "\n" for i in range(60))
        )
    server = FakeServer(_responder, chars_per_token=3.3, context_limit=6000).start()
    try:
        flags = ["--model", "fake-model", "--context-window", "16000"]
        first = run_clio([*flags, "-p", "read the parts"], server=server, project=project, home=home)
        assert first.returncode == 0, first.stderr
        n_first = len(server.turn_requests)  # the run's turn (a read-back it left aside)
        # tool call, the rejected request with the file in it, the retry that fits
        assert n_first == 3
        assert server.prompt_tokens(server.chat_requests[1]) > 6000
        assert "context window is 6,000 tokens, not 16,000" in " ".join(first.stderr.split())
        ratios = json.loads((project / ".clio" / "token_ratios.json").read_text())
        assert ratios["fake-model"]["context_window"] == 6000, ratios
        assert ratios["fake-model"]["samples"] >= 1  # learning the ratio kept the window, and vice versa

        second = run_clio(
            [*flags, "--resume", "-p", "read the parts again"],
            server=server,
            project=project,
            home=home,
        )
        assert second.returncode == 0, second.stderr
        assert "context window is" not in second.stderr  # not rejected again: the window was remembered
        later = server.turn_requests[n_first:]
        assert len(later) == 2  # the tool call and the answer, no rejected attempt in between
        for body in later:
            assert server.prompt_tokens(body) <= 6000
    finally:
        server.stop()
