"""``--output json`` and ``--output stream-json``: a one-shot turn as JSON on stdout, for scripts.

- ``json``: one object when the run ends (:func:`JsonUI.result`): ``answer``, ``session_id``,
  ``usage`` (prompt, completion, cached and total tokens of the turn's requests, their number,
  and ``cost_usd``: dollars where every model's price is known, the judge model's requests at its
  own, else null), ``tool_calls`` (name,
  arguments, ok), ``files_changed``, ``stop_reason`` (``done``, ``max_iterations``, ``refused``,
  ``stuck``, ``interrupted`` or ``error``), ``exit_code``, on an error ``error``, and when the
  run starts a background read-back of memory (clio.app.background) ``background``:
  ``{"consolidation": true, "session_id": ...}``, whose requests are not in ``usage`` but in that
  session's.
- ``stream-json``: one object per line as things happen, each with a ``type``: ``session``,
  ``text`` (a streamed piece of the answer), ``assistant`` (a finished message: ``final`` says
  whether it is the answer), ``tool_call``, ``tool_result``, ``diff``, ``notice``, and last
  ``result`` (the object above). The shapes follow what users of Claude Code's
  ``--output-format stream-json`` and ``codex exec --json`` script against: typed events, a
  final result.

Every string of every event (the answer, tool arguments decoded and each value redacted with
its key in view, results, diffs, notices, errors) passes through the same redactor as the
session archive first: stdout of a script often ends up in CI logs. Streamed ``text`` pieces are
sent a paragraph at a time (up to a blank line; a whole private-key block at a time), so that a
secret split across deltas, or written over several lines (.netrc, a PuTTY key), is seen whole. Human progress still goes to stderr.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import IO, Any

from clio.lazy_re import lazy
from clio.llm import prices

_PEM_OPEN = lazy(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
_PEM_CLOSE = lazy(r"-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")

RESULT_CHARS = 2000  # of a tool result in a tool_result event

STOP_REASONS = ("done", "max_iterations", "refused", "stuck", "interrupted", "error")


class JsonUI:
    """A TurnUI that records the turn and, in stream mode, writes each event as it happens."""

    def __init__(self, out: IO[str], *, stream: bool, redact_obj: Callable[[Any], Any]) -> None:
        self.out = out
        self.stream = stream
        self.redact_obj = redact_obj  # a JSON-like value with every string redacted
        self._text = ""  # streamed text not sent yet (an unfinished line or private-key block)
        self.final_text = ""
        self.tool_calls: list[dict[str, Any]] = []
        self.files: list[str] = []
        self._pending: dict[str, Any] = {}
        self.cost_usd: float | None = None  # what the run's requests cost where every price is known (clio.llm.prices.Bill)

    def emit(self, event: dict[str, Any]) -> None:
        if self.stream:
            if event.get("type") != "text":
                self._flush_text()
            self.out.write(json.dumps(self.redact_obj(event), ensure_ascii=False) + "\n")
            self.out.flush()

    def _flush_text(self, *, whole: bool = True) -> None:
        """Send the buffered streamed text: all of it, or (``whole=False``) its complete
        paragraphs outside an unfinished private-key block."""
        if not self._text:
            return
        if whole:
            cut = len(self._text)
        else:
            cut = self._text.rfind("\n\n") + 2 if "\n\n" in self._text else 0
            opened = _PEM_OPEN.search(self._text)
            if opened and not _PEM_CLOSE.search(self._text, opened.end()):
                cut = min(cut, opened.start())
            if cut <= 0:
                return
        piece, self._text = self._text[:cut], self._text[cut:]
        self.out.write(json.dumps(self.redact_obj({"type": "text", "text": piece}), ensure_ascii=False) + "\n")
        self.out.flush()

    # -- TurnUI ----------------------------------------------------------------------------------
    def pause(self) -> None:
        pass

    def waiting(self) -> None:
        pass

    def text(self, delta: str) -> None:
        if delta and self.stream:
            self._text += delta
            self._flush_text(whole=False)

    def answer_done(self, content: str, *, interrupted: bool, final: bool) -> None:
        if final:
            self.final_text = content
        if content or interrupted:
            self.emit({"type": "assistant", "text": content, "final": final, "interrupted": interrupted})

    def tool_start(self, name: str, args: dict[str, Any]) -> None:
        self._pending = {"name": name, "arguments": self.redact_obj(args)}
        self.emit({"type": "tool_call", **self._pending})

    def tool_done(self, name: str, ok: bool, result: str) -> None:
        call = {**(self._pending or {"name": name, "arguments": {}}), "ok": ok}
        self.tool_calls.append(call)
        self._pending = {}
        shown = self.redact_obj(result)[:RESULT_CHARS]  # whole first: a secret across the cut is still seen
        self.emit({"type": "tool_result", "name": name, "ok": ok, "result": shown, "truncated": len(result) > RESULT_CHARS})

    def notice(self, text: str) -> None:
        self.emit({"type": "notice", "text": text})

    def diff(self, diff: str, left: int) -> None:
        path = _diff_path(diff)
        if path and path not in self.files:
            self.files.append(path)
        self.emit({"type": "diff", "path": path, "diff": diff, "more_lines": left})

    # -- the end ---------------------------------------------------------------------------------
    def result(
        self,
        *,
        session_id: str | None,
        usage: list[dict[str, int]],
        stop_reason: str,
        exit_code: int,
        error: str | None = None,
        background: str | None = None,
    ) -> dict[str, Any]:
        """The run's result. ``background``: the session a read-back child was started for, after
        this object (clio.app.background): its requests are not in ``usage`` but in that session's."""
        summed = prices.total(usage)
        out: dict[str, Any] = {
            "type": "result",
            "answer": self.final_text,
            "session_id": session_id,
            "usage": {
                **{k: summed[k] for k in prices.TOKEN_KEYS},
                "total_tokens": summed["prompt_tokens"] + summed["completion_tokens"],
                "requests": summed["requests"],
                "cost_usd": round(self.cost_usd, 6) if self.cost_usd is not None else None,
            },
            "tool_calls": self.tool_calls,
            "files_changed": self.files,
            "stop_reason": stop_reason,
            "exit_code": exit_code,
        }
        if error is not None:
            out["error"] = error
        if background is not None:
            out["background"] = {"consolidation": True, "session_id": background}
        redacted: dict[str, Any] = self.redact_obj(out)
        return redacted

    def finish(self, result: dict[str, Any]) -> None:
        """The last line (stream-json) or the one object (json)."""
        if self.stream:
            self.emit(result)
        else:
            clean = self.redact_obj({k: v for k, v in result.items() if k != "type"})
            self.out.write(json.dumps(clean, ensure_ascii=False, indent=2) + "\n")
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
