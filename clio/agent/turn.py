"""What the turn loop (:mod:`clio.agent.orchestrator`) talks to and hands back: the session it
appends to, the screen it reports to, the events it reports to the running clio, its settings,
and a turn's and a trim's results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from clio.messages import Message, tool_call_args

if TYPE_CHECKING:
    from clio.config import Settings


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
    # the part of ``usage`` the judge model's requests spent, by the model's name (clio.llm.prices.Bill)
    judged: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass
class TrimReport:
    before: int  # estimated prompt tokens before
    after: int
    dropped: int = 0  # messages folded into the thread summary
    applied: bool = True  # False: /compact's summary would not have shrunk the window, left unused


WORKING_FILES = 20  # the latest paths the session's tool calls named, for memory ranking


def working_files(messages: list[Message], limit: int = WORKING_FILES) -> list[str]:
    """The paths a session's tool calls named, newest first (what memory is ranked against)."""
    files: list[str] = []
    for m in reversed(messages):
        for call in m.get("tool_calls") or []:
            path = tool_call_args(call).get("path")
            if isinstance(path, str) and path not in files:
                files.append(path)
        if len(files) >= limit:
            break
    return files


class TurnEvents(Protocol):
    """What the loop reports to the running clio (the app implements it). Each event carries what
    its handler needs (the task, the working files), so a handler never calls back into the loop."""

    def turn_started(self, task: str) -> None:
        """The user's message is on disk and nothing is sent yet (MCP servers up, memory ranked)."""

    def recall(self, user: Message, task: str) -> Message | None:
        """What the archive brings back for the user's message (``task``: the thread summary's)."""

    def trimming(self, iteration: int, task: str) -> None:
        """A trim is about to drop messages (the progress checkpoint)."""

    def trimmed(self, task: str, files: list[str]) -> None:
        """A trim is done and a new thread began (memory re-ranked for the new situation)."""

    def recovery_text(self, task: str) -> str:
        """What tells the model where it was after a length rejection (todos, git, the task)."""


class NoEvents:
    """Events nobody listens to (a loop built alone, in tests and benches)."""

    def turn_started(self, task: str) -> None:
        return None

    def recall(self, user: Message, task: str) -> Message | None:
        return None

    def trimming(self, iteration: int, task: str) -> None:
        return None

    def trimmed(self, task: str, files: list[str]) -> None:
        return None

    def recovery_text(self, task: str) -> str:
        return ""


@dataclass(frozen=True)
class LoopSettings:
    """The loop's own settings, read from the user's once (:meth:`of`)."""

    max_iterations: int = 40
    tool_recovery: bool = True  # run tool calls a model wrote as text
    temperature: float | None = None
    max_output_tokens: int | None = None
    tool_choice: str | None = None  # "required" applies to a turn's first request; later ones are auto
    # without a configured max_output_tokens, a local endpoint that stated its own window is asked
    # for at most the reply reserve (a small model that rambles otherwise generates until its
    # context is full: minutes)
    cap_replies: bool = False

    @classmethod
    def of(cls, settings: Settings) -> LoopSettings:
        s = settings
        return cls(
            s.max_iterations, s.tool_call_recovery, s.temperature, s.max_output_tokens, s.tool_choice,
            s.is_local_endpoint(),
        )  # fmt: skip
