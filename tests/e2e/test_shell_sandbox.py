"""End to end: the installed ``clio --sandbox --yes -p`` runs scripted shell commands in the OS sandbox.

The fake server scripts ``terminal_operations`` calls that try to write and delete outside the
project and to read clio's API key; what is checked is the disk afterwards and the tool results
clio sent back. A run without ``--sandbox`` (same calls, same ``--yes``) is the control.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from clio.safety.containment import landlock_abi
from testkit.clio_run import run_parallel, tool_results
from testkit.fakeserver import FakeServer, Reply

pytestmark = pytest.mark.skipif(
    landlock_abi() < 1, reason="this kernel has no Landlock (Linux >= 5.13, in the LSM list)"
)


def sh(call_id: str, command: str) -> dict[str, Any]:
    return {
        "name": "terminal_operations",
        "arguments": {"operation": "execute", "command": command},
        "id": call_id,
    }


def _calls(outside: Path) -> list[dict[str, Any]]:
    return [
        sh("call_write_out", f"echo pwned > {outside}/written.txt"),
        sh("call_rm_out", f"rm -rf {outside}/victim"),
        sh("call_write_in", "echo fine > inside.txt && cat inside.txt"),
        sh("call_key", 'echo "key=[$OPENAI_API_KEY]"; echo $OPENAI_API_KEY | base64'),
    ]


def test_sandbox_yes_cannot_write_outside(tmp_path: Path, home: Path) -> None:
    runs: list[tuple[FakeServer, Path, Path]] = []
    try:
        for name in ("boxed", "free"):
            outside = tmp_path / f"outside-{name}"
            (outside / "victim").mkdir(parents=True)
            (outside / "victim" / "keep.txt").write_text("precious\n", encoding="utf-8")
            proj = tmp_path / f"proj-{name}"
            proj.mkdir()
            server = FakeServer().start()
            server.script(Reply(tool_calls=_calls(outside)), Reply(text="Done."))
            runs.append((server, proj, outside))
        boxed, free = run_parallel(
            {"args": ["--sandbox", "--yes", "-p", "Clean up"], "server": runs[0][0], "project": runs[0][1],
             "home": home},
            {"args": ["--yes", "-p", "Clean up"], "server": runs[1][0], "project": runs[1][1], "home": home},
        )  # fmt: skip

        # --sandbox --yes: nothing outside the project changed; inside works
        server, proj, outside = runs[0]
        assert boxed.returncode == 0, boxed.stderr
        assert not (outside / "written.txt").exists()
        assert (outside / "victim" / "keep.txt").read_text(encoding="utf-8") == "precious\n"
        assert (proj / "inside.txt").read_text(encoding="utf-8") == "fine\n"
        results = tool_results(server.chat_requests[1])
        assert "Permission denied" in results["call_write_out"], results["call_write_out"]
        assert "Permission denied" in results["call_rm_out"], results["call_rm_out"]
        assert results["call_write_in"].startswith("fine\n") and results["call_write_in"].endswith(
            "exit code: 0"
        )
        for r in (server.chat_requests[1]["messages"][-1]["content"], results["call_key"]):
            assert "test-key" not in r
            assert base64.b64encode(b"test-key").decode()[:8] not in r
        assert "key=[]" in results["call_key"]

        # the control: the same calls with --yes but no --sandbox do reach outside
        server, proj, outside = runs[1]
        assert free.returncode == 0, free.stderr
        assert (outside / "written.txt").read_text(encoding="utf-8") == "pwned\n"
        assert not (outside / "victim").exists()
        # the key is scrubbed without the sandbox too
        assert "key=[]" in tool_results(server.chat_requests[1])["call_key"]
    finally:
        for server, _, _ in runs:
            server.stop()
