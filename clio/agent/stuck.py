"""Stuck detection: the same tool call giving the same result again, within one turn.

Small models loop: the same ``write_file`` forty times, the same ``read_file`` eighteen. A call
is the same when its tool name and its arguments (as canonical JSON) are; the result is the same
when its text is. A repeat is not refused in advance (a file may have changed in between, so a
repeated read may legitimately differ): the call runs, and only when its result is identical to
the earlier one does the guard step in: the first repeat keeps its result behind a one-line note
(a small model may need it; Qwen2.5-Coder-0.5B lost its way in a 2k window when it was taken
away), later repeats get a short tool error instead of the result, which also keeps the repeated
text out of the context. After :data:`STOP_AFTER` repeats in one
turn the loop stops the turn with a one-line reason. Pure: no I/O; one guard per turn.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

STOP_AFTER = 3  # repeats in one turn before the turn stops


def call_key(name: str, arguments: str) -> str:
    """The identity of a call: its name and its arguments as canonical JSON (raw text if not JSON)."""
    try:
        args = json.dumps(json.loads(arguments or "{}"), sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        args = arguments
    return f"{name}\x00{args}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


@dataclass
class RepeatGuard:
    """What one turn's calls returned; :meth:`observe` after each call."""

    stop_after: int = STOP_AFTER
    seen: dict[str, tuple[str, int]] = field(default_factory=dict)  # key -> (result digest, step)
    repeats: int = 0
    last_label: str = ""

    def observe(self, name: str, arguments: str, result: str, step: int, label: str = "") -> str | None:
        """None for a new call, or one whose result changed; otherwise the tool error that
        replaces the repeated result."""
        key, digest = call_key(name, arguments), _digest(result)
        earlier = self.seen.get(key)
        self.seen[key] = (digest, step)
        if earlier is None or earlier[0] != digest:
            return None
        self.repeats += 1
        self.last_label = label or name
        left = self.stop_after - self.repeats
        then = f"{left} more repeat(s) and the turn stops." if left > 0 else "The turn stops here."
        if self.repeats == 1:  # the first repeat keeps its result (a small model may need it again)
            return (
                f"[Repeated call: the same {name} call already ran at step {earlier[1]} of this turn and "
                f"gave exactly this result. Use it; do not call it again. {then}]\n{result}"
            )
        return (
            f"Repeated call: {name} with these same arguments already ran at step {earlier[1]} of this "
            f"turn and gave exactly this result; it is unchanged and already in the conversation above. "
            f"Do not call it again: use that result, or do something different. {then}"
        )

    @property
    def stuck(self) -> bool:
        return self.repeats >= self.stop_after

    def reason(self, interactive: bool = True) -> str:
        """The one line that ends the turn; what to do next depends on whether anyone can reply."""
        then = (
            "Send another message to continue, or rephrase the task."
            if interactive
            else "Rerun with a rephrased or narrower request, or go on in the REPL with: clio --resume"
        )
        return f"Stopped: the model repeated the same call ({self.last_label}) {self.repeats} times with the same result. {then}"
