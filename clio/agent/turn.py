"""What the turn loop (:mod:`clio.agent.orchestrator`) talks to and hands back: the session it
appends to, the screen it reports to, the hooks the app gives it, and a turn's and a trim's
results."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from clio.messages import Message


class SessionLog(Protocol):
    """What the loop needs of a session: the archive it appends to and the state it saves."""

    messages: list[Message]

    def append(self, msg: Message) -> Message: ...
    def new_thread(self) -> int: ...
    def save_state(self, state: dict[str, Any]) -> None: ...
    def add_usage(self, usage: dict[str, int]) -> None: ...


class TurnUI(Protocol):
    def waiting(self) -> None: ...
    def pause(self) -> None: ...  # stop whatever waiting() or text() left on screen
    def text(self, delta: str) -> None: ...
    def answer_done(self, content: str, *, interrupted: bool, final: bool) -> None: ...
    def tool_start(self, name: str, args: dict[str, Any]) -> None: ...
    def tool_done(self, name: str, ok: bool, result: str) -> None: ...
    def notice(self, text: str) -> None: ...
    def diff(self, diff: str, left: int) -> None: ...


@dataclass
class TurnResult:
    content: str = ""
    iterations: int = 0
    interrupted: bool = False
    hit_cap: bool = False
    stuck: str = ""  # why the turn was stopped for repeating itself (clio.agent.stuck)
    tool_calls: int = 0
    trims: int = 0
    usage: list[dict[str, int]] = field(default_factory=list)


@dataclass
class TrimReport:
    before: int  # estimated prompt tokens before
    after: int
    dropped: int = 0  # messages folded into the thread summary
    applied: bool = True  # False: /compact's summary would not have shrunk the window, left unused


@dataclass
class Hooks:
    """I/O the loop triggers but does not own (the app provides them)."""

    before_trim: Callable[[int], None] = lambda iteration: None  # write the progress checkpoint
    after_trim: Callable[[], None] = lambda: None  # re-rank memory into the system prompt
    recovery_text: Callable[[], str] = lambda: ""  # todos + git + task anchor
    turn_started: Callable[[], None] = lambda: None  # the user's message is on disk; nothing sent yet
    # what the archive brings back for the user's message (clio.app.auto_recall), or None
    recall: Callable[[Message], Message | None] = lambda user: None
