"""End to end, as an ordinary user: clio's own tools never hand the model clio's secrets.

The installed clio runs ``-p`` as ``$CLIO_TEST_USER`` (testkit/unprivileged.py) with its own HOME
and CLIO_HOME, against the fake server, whose scripted model asks ``file_operations`` for
``$CLIO_HOME/memory.key`` (the key that signs long-term memory), ``$CLIO_HOME/mcp_token``, a
``~/.git-credentials``, a symlink inside the project pointing at the key, and lists, searches and
greps the home folder that holds them all. Each read is refused with one line; the listing and
the searches skip them; none of the secrets reaches a request, the archive, stdout or stderr. The
control: an ordinary file beside them in the home folder is read, listed, found and grepped.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import pytest

from testkit.clio_run import tool_results
from testkit.fakeserver import FakeServer, Reply
from testkit.unprivileged import User, UserTree, run_clio_as


def _call(cid: str, **args: Any) -> dict[str, Any]:
    return {"name": "file_operations", "id": cid, "arguments": args}


def _plant(tree: UserTree) -> dict[str, str]:
    """clio's memory key and MCP token, a git credential store, a link to the key, a control file."""
    key = secrets.token_bytes(32).hex()
    found = {
        "memory.key": key,
        "mcp_token": secrets.token_urlsafe(32),
        ".git-credentials": "ghp_" + secrets.token_hex(18),
    }
    (tree.clio_home / "memory.key").write_text(json.dumps({"key": key, "created": time.time()}))
    (tree.clio_home / "memory.key").chmod(0o600)
    (tree.clio_home / "mcp_token").write_text(found["mcp_token"] + "\n")
    (tree.home / ".git-credentials").write_text(f"https://me:{found['.git-credentials']}@github.com\n")
    (tree.home / "notes.txt").write_text("control line: plain notes\n")
    (tree.project / "README.md").write_text("# a project\n")
    (tree.project / "innocent.txt").symlink_to(tree.clio_home / "memory.key")
    return found


def _leaked(text: str, secret: str) -> bool:
    return secret in text or secret[:16] in text


@pytest.mark.parametrize("sandbox", [False, True], ids=["no-sandbox", "sandbox"])
def test_the_model_cannot_read_clio_home_or_credential_stores(user: User, tree: UserTree, sandbox: bool) -> None:
    found = _plant(tree)
    reads = {
        "c_key": "~/.clio/memory.key",
        "c_token": str(tree.clio_home / "mcp_token"),
        "c_cred": "~/.git-credentials",
        "c_link": "innocent.txt",
        "c_dotdot": "../.clio/./memory.key",
    }
    listings = {  # over the home folder that holds them (outside the project: not under --sandbox)
        "c_list": {"operation": "list_dir", "path": "~"},
        "c_find": {"operation": "file_search", "path": "~", "pattern": "*"},
        "c_grep": {"operation": "grep_search", "path": "~", "pattern": "[a-z0-9]"},
        "c_plain": {"operation": "read_file", "path": "~/notes.txt"},
    }
    calls = [_call(cid, operation="read_file", path=path) for cid, path in reads.items()]
    calls += [_call(cid, **args) for cid, args in listings.items()] if not sandbox else []
    server = FakeServer().start()
    try:
        server.script(Reply(tool_calls=calls), Reply(text="Done."))
        flags = ["--sandbox"] if sandbox else []
        res = run_clio_as(user, tree, [*flags, "-p", "Look around"], server=server)
    finally:
        server.stop()
    assert res.returncode == 0, res.stderr
    results = tool_results(server.chat_requests[1])
    expected = {
        "c_key": "Error: refused: ~/.clio is clio's own folder (its keys); no tool reads it",
        "c_token": "Error: refused: ~/.clio is clio's own folder (its keys); no tool reads it",
        "c_cred": "Error: refused: ~/.git-credentials is one of your credential stores; no clio tool reads it",
        "c_link": "Error: refused: ~/.clio is clio's own folder (its keys); no tool reads it",
        "c_dotdot": "Error: refused: ~/.clio is clio's own folder (its keys); no tool reads it",
    }
    for cid, line in expected.items():
        assert results[cid] == line, (cid, results[cid])
    if not sandbox:  # the control: what is not private is listed, found, grepped and read
        assert "notes.txt" in results["c_list"] and "proj/" in results["c_list"], results["c_list"]
        assert ".clio" not in results["c_list"] and ".git-credentials" not in results["c_list"]
        assert "not listed: 2 private paths" in results["c_list"], results["c_list"]
        assert "notes.txt" in results["c_find"] and "README.md" in results["c_find"], results["c_find"]
        assert "git-credentials" not in results["c_find"] and "memory.key" not in results["c_find"]
        assert "notes.txt:1: control line: plain notes" in results["c_grep"], results["c_grep"]
        assert "private path" in results["c_grep"], results["c_grep"]
        assert "control line: plain notes" in results["c_plain"]
    bodies = "\n".join(json.dumps(b) for b in server.chat_requests)
    on_disk = "\n".join(
        p.read_text(encoding="utf-8", errors="replace") for p in (tree.project / ".clio").rglob("*") if p.is_file()
    )
    assert "refused: ~/.clio is clio's own folder" in on_disk  # the archive holds the refusals
    for name, secret in found.items():
        for where, text in (("requests", bodies), ("archive", on_disk), ("stdout", res.stdout), ("stderr", res.stderr)):
            assert not _leaked(text, secret), f"{name} leaked into {where}"
