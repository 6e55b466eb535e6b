"""Which behaviours a finished turn actually showed, read from its messages. Pure.

Feedback about a turn (``/good``, ``/bad``, a correction, a denial, ``/undo``) should move the
behaviours the turn *did*, not every behaviour that happened to be in its prompt: blaming "run
the tests after an edit" for a turn that edited nothing teaches a falsehood. For the catalogue's
behaviours whose trace can be read from the tool calls and the answer, :func:`shown` says
``True`` (the turn did it) or ``False`` (it did not, or the turn gave no occasion); behaviours it
cannot tell (the user's own, ``ask-before-deps``) are ``None`` and are judged as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from clio import actions as A
from clio.messages import tool_call_args

Message = dict[str, Any]

EDITS = frozenset({A.WRITE_FILE, A.EDIT_FILE})  # the actions that change a file's content
TEST_RE = re.compile(
    r"\b(pytest|unittest|nose2|tox|nox|jest|vitest|mocha|go test|cargo test|npm (run )?test|yarn test|"
    r"pnpm test|make (check|test)|ctest|rspec|phpunit|mvn test|gradle test)\b"
)
COMMIT_RE = re.compile(r"\bgit\s+commit\b")
FAILED_RE = re.compile(r"^Error:|exit code:?\s*[1-9]", re.MULTILINE)
SHORT_ANSWER = 800  # characters: a final answer up to this long is short
PLAN_MIN = 40  # characters of text before the first edit that count as a stated plan


class _Turn:
    """The facts of one turn the detectors read."""

    def __init__(self, messages: Sequence[Message], actions: A.Actions) -> None:
        self.steps: list[tuple[str, str, dict[str, Any]]] = []  # (tool, action, args) in order
        self.texts_before: list[str] = []  # assistant text seen before each step
        results: dict[str, str] = {}
        for m in messages:
            if m.get("role") == "tool":
                results[str(m.get("tool_call_id"))] = str(m.get("content") or "")
        self.failed_then_said = []  # for each failed step: did the next assistant message say something
        said = ""
        pending_failure = False
        self.final = ""
        for m in messages:
            if m.get("role") != "assistant":
                continue
            text = str(m.get("content") or "").strip()
            if pending_failure:
                self.failed_then_said.append(bool(text))
                pending_failure = False
            said += text
            calls = m.get("tool_calls") or []
            if not calls:
                self.final = text
            for c in calls:
                name = str((c.get("function") or {}).get("name") or "")
                args = tool_call_args(c)
                self.steps.append((name, A.action_of(actions, name, args), args))
                self.texts_before.append(said)
                if FAILED_RE.search(results.get(str(c.get("id")), "")):
                    pending_failure = True

    def edits(self) -> list[int]:
        return [i for i, (_, action, _) in enumerate(self.steps) if action in EDITS]

    def command(self, i: int) -> str:
        _, action, args = self.steps[i]
        return str(args.get("command") or "") if action == A.RUN_COMMAND else ""


def _tests_after_edit(t: _Turn) -> bool:
    edits = t.edits()
    return bool(edits) and any(TEST_RE.search(t.command(i)) for i in range(edits[0] + 1, len(t.steps)))


def _plan_first(t: _Turn) -> bool:
    edits = t.edits()
    return bool(edits) and len(t.texts_before[edits[0]].strip()) >= PLAN_MIN


def _short_answers(t: _Turn) -> bool:
    return bool(t.final) and len(t.final) <= SHORT_ANSWER


def _commit_each_change(t: _Turn) -> bool:
    commits = [
        i
        for i, (_, action, _) in enumerate(t.steps)
        if action == A.COMMIT or COMMIT_RE.search(t.command(i))
    ]
    return bool(t.edits()) and bool(commits)


def _read_before_edit(t: _Turn) -> bool:
    edits = t.edits()
    if not edits:
        return False
    read: set[str] = set()
    for i, (_, action, args) in enumerate(t.steps):
        path = str(args.get("path") or "")
        if action == A.READ_FILE:
            read.add(path)
        elif i in edits and action != A.WRITE_FILE and path not in read:
            return False
    return True


def _small_diffs(t: _Turn) -> bool:
    edits = t.edits()
    return bool(edits) and all(t.steps[i][1] != A.WRITE_FILE for i in edits)


def _explain_errors(t: _Turn) -> bool:
    return bool(t.failed_then_said) and all(t.failed_then_said)


DETECTORS: dict[str, Callable[[_Turn], bool]] = {
    "tests-after-edit": _tests_after_edit,
    "plan-first": _plan_first,
    "short-answers": _short_answers,
    "commit-each-change": _commit_each_change,
    "read-before-edit": _read_before_edit,
    "small-diffs": _small_diffs,
    "explain-errors": _explain_errors,
}


def shown(
    active: Sequence[str], messages: Sequence[Message], actions: A.Actions = A.NONE
) -> dict[str, bool | None]:
    """For each behaviour of ``active``: whether the turn (its messages after the user's) showed
    it, or None where that cannot be told from the messages. ``actions``: what each tool operation
    does (clio.actions; the registry's table)."""
    turn = _Turn(messages, actions)
    return {sid: (DETECTORS[sid](turn) if sid in DETECTORS else None) for sid in active}


def judged(active: Sequence[str], messages: Sequence[Message], actions: A.Actions = A.NONE) -> list[str]:
    """The behaviours feedback about this turn should move: those it showed, and those that
    cannot be told (judged as before); never one the turn gave no sign of."""
    return sorted(sid for sid, did in shown(active, messages, actions).items() if did is not False)
