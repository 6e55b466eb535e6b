"""``--output json`` and ``--output stream-json``: a one-shot turn as JSON on stdout, for scripts.

- ``json``: one object when the run ends (:func:`JsonUI.result`): ``answer``, ``session_id``,
  ``usage`` (prompt, completion and total tokens of the turn's requests), ``tool_calls`` (name,
  arguments, ok), ``files_changed``, ``stop_reason`` (``done``, ``max_iterations``, ``refused``,
  ``stuck``, ``interrupted`` or ``error``), ``exit_code`` and, on an error, ``error``.
- ``stream-json``: one object per line as things happen, each with a ``type``: ``session``,
  ``text`` (a streamed piece of the answer), ``assistant`` (a finished message: ``final`` says
  whether it is the answer), ``tool_call``, ``tool_result``, ``diff``, ``notice``, and last
  ``result`` (the object above). The shapes follow what users of Claude Code's
  ``--output-format stream-json`` and ``codex exec --json`` script against: typed events, a
  final result.

Tool arguments and results pass through the app's redactor first (stdout of a script often ends
up in CI logs). Human progress still goes to stderr.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import IO, Any

RESULT_CHARS = 2000  # of a tool result in a tool_result event

STOP_REASONS = ("done", "max_iterations", "refused", "stuck", "interrupted", "error")


class JsonUI:
    """A TurnUI that records the turn and, in stream mode, writes each event as it happens."""

    def __init__(self, out: IO[str], *, stream: bool, redact: Callable[[str], str]) -> None:
        self.out = out
        self.stream = stream
        self.redact = redact
        self.final_text = ""
        self.tool_calls: list[dict[str, Any]] = []
        self.files: list[str] = []
        self._pending: dict[str, Any] = {}

    def emit(self, event: dict[str, Any]) -> None:
        if self.stream:
            self.out.write(json.dumps(event, ensure_ascii=False) + "\n")
            self.out.flush()

    # -- TurnUI ----------------------------------------------------------------------------------
    def pause(self) -> None:
        pass

    def waiting(self) -> None:
        pass

    def text(self, delta: str) -> None:
        if delta:
            self.emit({"type": "text", "text": delta})

    def answer_done(self, content: str, *, interrupted: bool, final: bool) -> None:
        if final:
            self.final_text = content
        if content or interrupted:
            self.emit({"type": "assistant", "text": content, "final": final, "interrupted": interrupted})

    def tool_start(self, name: str, args: dict[str, Any]) -> None:
        clean = json.loads(self.redact(json.dumps(args, ensure_ascii=False)))
        self._pending = {"name": name, "arguments": clean}
        self.emit({"type": "tool_call", **self._pending})

    def tool_done(self, name: str, ok: bool, result: str) -> None:
        call = {**(self._pending or {"name": name, "arguments": {}}), "ok": ok}
        self.tool_calls.append(call)
        self._pending = {}
        shown = self.redact(result[:RESULT_CHARS])
        self.emit({"type": "tool_result", "name": name, "ok": ok, "result": shown, "truncated": len(result) > RESULT_CHARS})

    def notice(self, text: str) -> None:
        self.emit({"type": "notice", "text": text})

    def diff(self, diff: str, left: int) -> None:
        path = _diff_path(diff)
        if path and path not in self.files:
            self.files.append(path)
        self.emit({"type": "diff", "path": path, "diff": self.redact(diff), "more_lines": left})

    # -- the end ---------------------------------------------------------------------------------
    def result(
        self,
        *,
        session_id: str | None,
        usage: list[dict[str, int]],
        stop_reason: str,
        exit_code: int,
        error: str | None = None,
    ) -> dict[str, Any]:
        prompt = sum(int(u.get("prompt_tokens") or 0) for u in usage)
        completion = sum(int(u.get("completion_tokens") or 0) for u in usage)
        out: dict[str, Any] = {
            "type": "result",
            "answer": self.final_text,
            "session_id": session_id,
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion, "requests": len(usage)},
            "tool_calls": self.tool_calls,
            "files_changed": self.files,
            "stop_reason": stop_reason,
            "exit_code": exit_code,
        }
        if error is not None:
            out["error"] = error
        return out

    def finish(self, result: dict[str, Any]) -> None:
        """The last line (stream-json) or the one object (json)."""
        if self.stream:
            self.emit(result)
        else:
            self.out.write(json.dumps({k: v for k, v in result.items() if k != "type"}, ensure_ascii=False, indent=2) + "\n")
            self.out.flush()


def _diff_path(diff: str) -> str:
    """The changed file's path from a unified diff's header (``+++ b/p``, or ``--- a/p`` for a deletion)."""
    plus = minus = ""
    for line in diff.splitlines()[:3]:
        if line.startswith("+++ b/"):
            plus = line[6:]
        elif line.startswith("--- a/"):
            minus = line[6:]
    return plus or minus
