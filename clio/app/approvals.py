"""Approvals: whether a tool action may run, asked the way people can live with.

The app's one :class:`clio.tools.registry.Approver`. In order:

- destructive actions (and a memory write after the turn read untrusted content, and a file
  write outside the project) ask ``[y/N]`` every time, whatever the policy, never covered by an
  *always*; with nobody to ask only ``--yes`` lets them through;
- ``--yes`` and an ``allow`` policy (``approvals:`` in the config; ``shell`` and ``mcp`` are
  always asked under ``--sandbox``) let the others through;
- with nobody to ask (a one-shot run without a terminal) the action is refused and noted for
  the run's exit code (4), and so is a slash command's question (``confirm``: deleting a
  session...) unless ``--yes`` answered it;
- otherwise the user is asked ``[y/n/a/d]`` (in the REPL on a terminal one key answers, no Enter;
  Enter alone is the default, no): yes, no, *always* (this kind of action for the rest
  of the session, never remembered beyond it) or, for a file change, *diff* (the whole change,
  then the question again; an action without a diff is not offered one). A file change shows its diff above the question (the first
  :data:`clio.tools.diffs.SHOWN_LINES` lines).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from clio.config import Settings
    from clio.tools.context import ToolContext
    from clio.tools.diffs import Change

Ask = Callable[[str], "str | None"]
AskKey = Callable[[str, str], "str | None"]  # (question, the keys that answer): one key read, "" for Enter alone
ShowDiff = Callable[[str, int], None]  # (diff text, lines left out)

CHOICES = "[y]es / [n]o / [a]lways {kind} this session"
DIFF_CHOICE = " / [d]iff"


class Approvals:
    def __init__(
        self,
        settings: Settings,
        ask: Ask | None,
        show_diff: ShowDiff,
        context: Callable[[], ToolContext | None],
        on_answer: Callable[[bool], None] = lambda granted: None,
    ) -> None:
        self.settings = settings
        self.ask = ask  # None: nobody to ask
        self.show_diff = show_diff
        self.context = context
        self.always: set[str] = set()  # kinds the user allowed for this session ('a')
        self.on_answer = on_answer  # the user's answer to a tool action (a signal for behaviours)
        self.allowed: Callable[[str], bool] = lambda tool: False  # --allow-tools (clio.tools.policy)
        self.unanswered: list[str] = []  # questions answered no because nobody was there (one-shot: exit 4)
        self.ask_key: AskKey | None = None  # one key answers, no Enter (the REPL on a terminal)

    def confirm(self, question: str) -> bool:
        """A yes/no question (default no); in a one-shot run ``--yes`` answers yes, and without it
        the question is noted as unanswered (the run then exits 4, saying ``--yes`` is needed)."""
        if self.ask is None:
            if not self.settings.yes:
                self.unanswered.append(" ".join(question.split()))
            return self.settings.yes
        answer = self._ask(f"{question} [y/N] ", "yn")
        return answer is not None and answer.strip().lower() in ("y", "yes")

    def _ask(self, question: str, keys: str) -> str | None:
        """The answer: one of ``keys`` pressed (Enter alone: "", the default) where a key can be
        read alone, else a line."""
        if self.ask_key is not None:
            return self.ask_key(question, keys)
        return self.ask(question) if self.ask is not None else None

    def __call__(self, kind: str, summary: str, *, destructive: bool = False) -> bool:
        s = self.settings
        if destructive:
            if self.ask is None:  # nobody to ask: only --yes lets it through
                return s.yes or self._unasked(kind, summary)
            self._show_proposed()
            if kind == "memory":  # a write to memory after the turn read untrusted content
                return self.confirm(f"⚠ after reading files or command output, {summary}\nAllow?")
            if kind == "outside":  # the file tool writing outside the project (no --sandbox)
                return self._answered(self.confirm(f"⚠ write outside the project: {summary}\nAllow?"))
            return self._answered(self.confirm(f"⚠ destructive {kind}: {summary}\nRun it?"))
        ctx = self.context()
        if s.yes or kind in self.always or (ctx is not None and ctx.tool and self.allowed(ctx.tool)):
            return True
        policy = getattr(s.approvals, kind, "ask")
        if kind in ("shell", "mcp") and s.sandbox:  # MCP servers run outside the sandbox: always asked
            policy = "ask"
        if policy == "allow":
            return True
        if self.ask is None:
            return self._unasked(kind, summary)
        return self._answered(self._choose(kind, summary))

    def _answered(self, granted: bool) -> bool:
        self.on_answer(granted)
        return granted

    def _choose(self, kind: str, summary: str) -> bool:
        change = self._show_proposed()
        choices = CHOICES.format(kind=kind) + (DIFF_CHOICE if change is not None else "")
        question = f"{kind}: {summary}\nAllow? {choices} "
        while True:
            answer = self._ask(question, "ynad" if change is not None else "yna")
            word = (answer or "").strip().lower()
            if word in ("y", "yes"):
                return True
            if word in ("a", "always"):
                self.always.add(kind)
                return True
            if word in ("d", "diff") and change is not None:
                self.show_diff(change.diff, 0)
                continue
            if word in ("d", "diff"):
                question = f"(no diff for this action) Allow? {choices} "
                continue
            return False  # n, empty, anything else, Ctrl-C/EOF (None)

    def _show_proposed(self) -> Change | None:
        """Show the diff of the write being approved, if any, clipped; mark it as seen."""
        ctx = self.context()
        change = ctx.proposed if ctx is not None else None
        if ctx is None or change is None:
            return None
        from clio.tools.diffs import clip  # (difflib) only when a change is approved

        shown, left = clip(change.diff)
        self.show_diff(shown, left)
        ctx.proposed_shown = True
        return change

    def _unasked(self, kind: str, summary: str) -> bool:
        """Refuse an action nobody is there to approve, and note it (one-shot exit code 4)."""
        ctx = self.context()
        if ctx is not None:
            ctx.refused.append(f"{kind}: {summary}")
        return False


class Questions:
    """The questions clio puts to the user (approvals, ``request_input``, confirmations): through
    ``ask`` (None: nobody to ask, a one-shot run without a terminal), with the screen's spinner or
    streamed text paused first; Ctrl-C or Ctrl-D is no answer."""

    def __init__(self, ask: Ask | None, err: Console, pause: Callable[[], None]) -> None:
        self.ask = ask
        self.err = err
        self.pause = pause

    def prompt(self, question: str) -> str | None:
        if self.ask is None:
            return None
        self.pause()
        try:
            answer = self.ask(question)
            return str(answer) if answer is not None else None
        except (EOFError, KeyboardInterrupt):
            return None

    def key(self, question: str, keys: str) -> str | None:
        """A question one key answers, through ``ask.one_key(question, keys)`` (the REPL's, on a
        terminal); None: no answer."""
        one_key = getattr(self.ask, "one_key", None)
        if one_key is None:
            return self.prompt(question)
        self.pause()
        try:
            answer = one_key(question, keys)
            return str(answer) if answer is not None else None
        except (EOFError, KeyboardInterrupt):
            return None

    def ask_user(self, question: str) -> str | None:
        """The model's question (``user_collaboration``), shown, then the user's answer."""
        if self.ask is None:
            return None
        self.err.print(Text(question, style="bold"))
        return self.prompt("answer> ")
