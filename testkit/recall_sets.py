"""The automatic recall's labelled dev sets (``benches/recall_dev/set_*.json``) written as clio
archives them, for the benches that measure recall on them and the tests that check one of their
questions end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from testkit.clio_run import write_archive

SETS = Path(__file__).resolve().parents[1] / "benches" / "recall_dev"
T0 = 1_763_000_000.0  # the first session's day


def load_set(name: str) -> dict[str, Any]:
    """One set (``set_e``): its sessions and its probes (text, kind, session, needles)."""
    data: dict[str, Any] = json.loads((SETS / f"{name}.json").read_text(encoding="utf-8"))
    return data


def archived(messages: list[dict[str, Any]], ts: float) -> list[dict[str, Any]]:
    """A set's messages as clio archives them (tool calls with ids, results naming their tool)."""
    out: list[dict[str, Any]] = []
    pending: list[tuple[str, str]] = []
    for n, m in enumerate(messages):
        msg: dict[str, Any] = {"role": m["role"], "content": m.get("content")}
        if m.get("tool_calls"):
            calls = []
            for k, c in enumerate(m["tool_calls"]):
                cid = f"call_{n}_{k}"
                pending.append((cid, c["name"]))
                args = json.dumps(c.get("arguments") or {})
                calls.append({"id": cid, "type": "function", "function": {"name": c["name"], "arguments": args}})
            msg["tool_calls"] = calls
        if m["role"] == "tool":
            cid, tool = pending.pop(0) if pending else (f"call_{n}", str(m.get("name", "")))
            msg["tool_call_id"] = cid
            msg["meta_tool"] = tool
        meta: dict[str, Any] = {"seq": n, "ts": ts + n * 30}
        if msg.pop("meta_tool", None):
            meta["tool"] = m.get("name")
        msg["meta"] = meta
        out.append(msg)
    return out


def build(data: dict[str, Any], root: Path, first: int = 0) -> dict[str, str]:
    """Write the set's sessions in clio's layout, a day apart, the ``first``-th day on; returns
    session name -> id."""
    ids = {}
    for k, s in enumerate(data["sessions"], start=first):
        sid = f"2025{k % 10000:04d}-{k // 10000:06d}-{k:04x}"
        ts = T0 + k * 86400
        write_archive(root, sid, archived(s["messages"], ts), ts, s["name"], s.get("digests"))
        ids[s["name"]] = sid
    return ids
