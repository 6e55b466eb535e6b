"""What a tool's handler gets (:class:`ToolContext`, with the session's :class:`Services`), the
error it raises (:class:`ToolError`) and the helpers handlers share (:func:`need`,
:func:`declined`, :func:`redacted_args`).

Built once per session by the app; a handler reads the project root, asks approvals and the
user through it, and reaches the stores it needs through ``ctx.service(name)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from clio.safety.hide import Private

if TYPE_CHECKING:
    from clio.memory.behaviours import Behaviours
    from clio.memory.ltm_store import LtmStore
    from clio.memory.notes import NoteStore
    from clio.memory.prefs_store import PrefStore
    from clio.safety.redact import Redactor
    from clio.store.sessions import Session, SessionStore
    from clio.store.snapshots import Snapshots
    from clio.tools.diffs import Change


class ToolError(Exception):
    """A failure the model should read and act on (bad argument, refused action...)."""


class Approver(Protocol):
    def __call__(self, kind: str, summary: str, *, destructive: bool = False) -> bool:
        """Ask whether an action may run. ``kind`` is 'write', 'shell', 'git'..."""
        ...


class Asker(Protocol):
    def __call__(self, question: str) -> str | None:
        """Ask the user a question; None when no user is present (one-shot mode)."""
        ...


def _always(kind: str, summary: str, *, destructive: bool = False) -> bool:
    return True


def _nobody(question: str) -> str | None:
    return None


class Recall(Protocol):
    def search(
        self,
        query: str,
        max_sessions: int = 5,
        max_results: int = 10,
        *,
        with_text: bool = False,
        skip_quoted: bool = False,
        lexical: bool = False,
        nearby: Callable[[], Sequence[int]] | None = None,
    ) -> list[dict[str, Any]]:
        """Ranked hits (units, :mod:`clio.recall.units`) from everything archived in the project
        that the request does not carry: past sessions, and the running session's messages that
        left the window. ``lexical``: bm25 alone (no embedding model loaded). ``nearby()``: index
        row ids found by meaning (the encoder helper), whose units follow the words' results."""
        ...

    def frequencies(self, words: list[str]) -> tuple[dict[str, int], int]:
        """How many indexed messages hold each word, and how many messages are indexed."""
        ...

    def drop_digest(self, session_id: str, through: int) -> bool:
        """Take a session's digest (the one covering its first ``through`` messages) out of the
        index; False when it held none."""
        ...

    def said_to_other_questions(self, reply: str, asked: list[str]) -> bool:
        """Whether that very reply answered other questions than ``asked``, word for word."""
        ...


@dataclass
class Services:
    """The stores and objects tools may use, built by the app; None where a session has none."""

    redactor: Redactor | None = None  # the one redactor: tools that persist what they get redact it
    sessions: SessionStore | None = None
    session: Session | None = None
    ltm: LtmStore | None = None
    notes: NoteStore | None = None
    prefs: PrefStore | None = None
    recall: Recall | None = None
    snapshots: Snapshots | None = None  # before-images of the files each turn changes (/undo)
    skills: Behaviours | None = None  # learned behaviours (clio.memory.behaviours)
    todos_mem: list[dict[str, Any]] | None = None  # the todo list when nothing is written (incognito)
    # entries of one faded topic -> the fields of one summary entry written by the model, or None
    ltm_compactor: Callable[[list[Any]], dict[str, Any] | None] | None = None



SERVICE_NAMES = frozenset(f for f in Services.__dataclass_fields__)


@dataclass
class ToolContext:
    """Everything a tool may touch. Built once per session by the app."""

    root: Path  # the project root; relative paths resolve against it
    session_dir: Path | None = None  # where large results are stored (None: keep in memory)
    approve: Approver = _always
    ask_user: Asker = _nobody
    sandbox: bool = False  # confine file and git operations to root; shell commands in the OS sandbox
    sandbox_network: bool = False  # the user allows network use to sandboxed shell commands
    plan: bool = False  # plan mode: shell commands run in the read-only kernel sandbox (terminal.py)
    hidden: tuple[str, ...] = ()  # paths no shell command may read ($CLIO_HOME; sandboxed: credential stores)
    # what no tool reads or writes, sandbox or not: $CLIO_HOME and the credential stores (tools/paths.py)
    private: Private = field(default_factory=Private.default)
    # untrusted text the system prompt itself carries (an untrusted project's AGENTS.md, foreign
    # memory): it taints every turn, as a read file would (clio.memory.provenance)
    prompt_sources: Callable[[], list[str]] = lambda: []
    interactive: bool = True  # False in one-shot mode
    yes: bool = False  # --yes given
    project_trusted: bool = False  # the user trusts this project's config (clio --trust)
    services: Services = field(default_factory=Services)
    stored_results: dict[str, str] = field(default_factory=dict)  # handle -> text when session_dir is None
    result_chars: int = 8000  # results longer than this are stored, the model gets a preview (results.py)
    created_files: set[str] = field(default_factory=set)  # resolved paths the file tool created this session
    refused: list[str] = field(default_factory=list)  # actions of this turn refused with nobody to ask (one-shot)
    proposed: Change | None = None  # the diff of the write being approved (the approver may show it)
    proposed_shown: bool = False  # set by the approver when the user saw that diff
    changes: list[tuple[Change, bool]] = field(default_factory=list)  # made by the running call (diff, seen)
    tool: str = ""  # the tool of the running call (approvals: --allow-tools)

    def keeps_unconfirmed(self) -> bool:
        """Whether memory proposed after reading outside content may be kept (marked) although
        nobody confirms it: a person is there (the REPL), or the user trusts the project."""
        return self.interactive or self.project_trusted

    def service(self, name: str) -> Any:
        """The named service, or a ToolError saying it is not available in this session."""
        value = getattr(self.services, name, None) if name in SERVICE_NAMES else None
        if value is None:
            raise ToolError(f"{name} is not available in this session")
        return value


def need(args: dict[str, Any], key: str, kind: type | tuple[type, ...] = str) -> Any:
    """A required argument, or a ToolError naming it."""
    if key not in args or args[key] is None:
        raise ToolError(f"'{key}' is required for operation '{args.get('operation')}'")
    val = args[key]
    if kind is int and isinstance(val, str) and val.strip().lstrip("-").isdigit():
        return int(val)
    if not isinstance(val, kind) or (kind is int and isinstance(val, bool)):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise ToolError(f"'{key}' must be a {names}")
    return val


def declined(ctx: ToolContext, action: str, hint: str = "Do not retry it unchanged.") -> ToolError:
    """The error for an action the approver refused, worded for who (if anyone) refused it."""
    if not ctx.interactive and not ctx.yes:
        return ToolError(
            f"not allowed: {action}. No user is present to approve it (one-shot mode): "
            "the user can rerun clio with --yes to allow such actions. Continue without it."
        )
    return ToolError(f"the user declined: {action}. {hint}")


def redacted_args(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Arguments with secrets redacted, for tools that persist what they are given (memory)."""
    redactor = ctx.services.redactor
    if redactor is None:
        return args
    clean, _hits = redactor.redact_obj(args)
    return clean if isinstance(clean, dict) else args
