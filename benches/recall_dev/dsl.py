"""The shorthand the hand-written sets are written in (see make_sets.py)."""

from __future__ import annotations

from typing import Any

F, T, G = "file_operations", "terminal_operations", "version_control"
def read(path: str) -> tuple[str, str, dict[str, Any]]:
    return ("c", F, {"operation": "read_file", "path": path})


def run(cmd: str) -> tuple[str, str, dict[str, Any]]:
    return ("c", T, {"command": cmd})


def session(name: str, *steps: tuple[Any, ...]) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = []
    for s in steps:
        if s[0] == "u":
            msgs.append({"role": "user", "content": s[1]})
        elif s[0] == "a":
            msgs.append({"role": "assistant", "content": s[1]})
        elif s[0] == "c":
            msgs.append({"role": "assistant", "content": None, "tool_calls": [{"name": s[1], "arguments": s[2]}]})
        elif s[0] == "r":
            tool = msgs[-1]["tool_calls"][0]["name"]
            msgs.append({"role": "tool", "name": tool, "content": s[1]})
    return {"name": name, "messages": msgs}


def commit(msg: str) -> list[tuple[Any, ...]]:
    return [("c", G, {"operation": "commit", "message": msg}), ("r", f"[main 4f2a9c1] {msg}\n 2 files changed, 14 insertions(+), 3 deletions(-)")]


