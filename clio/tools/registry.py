"""The one registry of tools the model can call.

A tool is one decorated function ``handler(ctx, args) -> str``. Each tool family is a
single function-calling tool with an ``operation`` parameter (the CLIO convention), so
the schemas sent with every request stay compact. Handlers raise ``ToolError`` with a
sentence the model can act on; the registry turns that (and any crash) into the one
result every tool call gets.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

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
    ) -> list[dict[str, Any]]:
        """Ranked hits from everything archived in the project that the request does not carry:
        past sessions, and the running session's messages that left the window."""
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
    hidden: tuple[str, ...] = ()  # paths no shell command may read ($CLIO_HOME; sandboxed: credential stores)
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


Handler = Callable[[ToolContext, dict[str, Any]], str]
Gate = Callable[[str, dict[str, Any]], "str | None"]  # (tool, arguments) -> why it may not run now


def _never(name: str) -> bool:
    return False


def _open(name: str, args: dict[str, Any]) -> str | None:
    return None

PROFILES = ("full", "lean")


@dataclass(frozen=True)
class Lean:
    """A tool's form in the lean profile (small context windows): a shorter description, fewer
    operations, only the named parameters, no parameter descriptions. A tool without one is not
    offered in that profile."""

    description: str
    operations: tuple[str, ...]
    properties: tuple[str, ...] = ()
    min_limit: int = 0  # offered only where the prompt budget has this many tokens (0: always)


@dataclass
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler
    lean: Lean | None = None

    def schema(self, profile: str = "full") -> dict[str, Any]:
        if profile == "lean" and self.lean is not None:
            description, parameters = self.lean.description, self._lean_parameters(self.lean)
        else:
            description, parameters = self.description, self.parameters
        return {
            "type": "function",
            "function": {"name": self.name, "description": description, "parameters": parameters},
        }

    def _lean_parameters(self, lean: Lean) -> dict[str, Any]:
        props: dict[str, Any] = self.parameters.get("properties", {})
        required: list[str] = self.parameters.get("required", [])
        unknown = [op for op in lean.operations if op not in props.get("operation", {}).get("enum", [])]
        unknown += [k for k in lean.properties if k not in props or k == "operation"]
        if unknown:
            raise ValueError(f"lean form of {self.name} names unknown parameters or operations: {unknown}")
        missing = [k for k in required if k != "operation" and k not in lean.properties]
        if missing:
            raise ValueError(f"lean form of {self.name} leaves out required parameters: {missing}")
        out: dict[str, Any] = {"operation": {"type": "string", "enum": list(lean.operations)}}
        for key in lean.properties:
            out[key] = {k: v for k, v in props[key].items() if k != "description"}
        return {"type": "object", "properties": out, "required": list(required)}

    def offered(self, profile: str, limit: int | None = None) -> bool:
        """Whether the model gets this tool in ``profile`` with a prompt budget of ``limit``
        tokens (None: any budget)."""
        if profile != "lean":
            return True
        if self.lean is None:
            return False
        return limit is None or limit >= self.lean.min_limit


class Registry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self.hidden: Callable[[str], bool] = _never  # not offered at all (--deny-tools; clio.tools.policy)
        self.gate: Gate = _open  # why a call may not run now (--deny-tools, plan mode)

    def add(self, t: Tool) -> None:
        self._tools[t.name] = t

    def copy(self) -> Registry:
        """A registry with the same tools, for a session that adds its own (MCP servers' tools)."""
        out = Registry()
        out._tools = dict(self._tools)
        out.hidden, out.gate = self.hidden, self.gate
        return out

    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def offered(self, profile: str = "full", limit: int | None = None) -> list[str]:
        """The names of the tools offered to the model in ``profile`` (with a prompt budget of
        ``limit`` tokens: a lean form may need room, see :class:`Lean`)."""
        return [n for n, t in self._tools.items() if t.offered(profile, limit) and not self.hidden(n)]

    def schemas(self, profile: str = "full", limit: int | None = None) -> list[dict[str, Any]]:
        """The tool schemas sent with every request in ``profile`` ("full" or "lean")."""
        if profile not in PROFILES:
            raise ValueError(f"unknown tool profile {profile!r}; use one of {PROFILES}")
        return [t.schema(profile) for n, t in self._tools.items() if t.offered(profile, limit) and not self.hidden(n)]

    def run(
        self,
        ctx: ToolContext,
        name: str,
        raw_args: str | dict[str, Any],
        profile: str = "full",
        limit: int | None = None,
    ) -> tuple[str, bool]:
        """Run one call; returns (result text, ok). Never raises for tool failures.

        Only tools offered in ``profile`` run: a model may not call what it was not given."""
        t = self._tools.get(name)
        if t is None or not t.offered(profile, limit):
            return (
                f"Error: unknown tool '{name}'. Available tools: {', '.join(self.offered(profile, limit))}.",
                False,
            )
        if isinstance(raw_args, dict):
            args = raw_args
        else:
            try:
                args = json.loads(raw_args or "{}")
            except ValueError as exc:
                return f"Error: the arguments are not valid JSON ({exc}). Send a JSON object.", False
            if not isinstance(args, dict):
                return "Error: the arguments must be a JSON object.", False
        refused = self.gate(name, args)
        if refused is not None:
            return f"Error: {refused}", False
        ctx.tool = name
        try:
            return t.handler(ctx, args), True
        except ToolError as exc:
            return f"Error: {exc}", False
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # a bug or an OS error: report it, keep the loop alive
            return f"Error: {name} failed: {type(exc).__name__}: {exc}", False


REGISTRY = Registry()


def tool(
    name: str, description: str, parameters: dict[str, Any], *, lean: Lean | None = None
) -> Callable[[Handler], Handler]:
    """Register a tool: ``@tool("file_operations", "...", {json schema}, lean=Lean(...))``.

    ``lean`` is its form for small context windows; without it the tool is left out there."""

    def deco(fn: Handler) -> Handler:
        t = Tool(name, description, parameters, fn, lean)
        if lean is not None:
            t.schema("lean")  # a lean form naming what the tool lacks fails at import, not mid-session
        REGISTRY.add(t)
        return fn

    return deco


def operation_schema(
    operations: list[str], properties: dict[str, Any], required: list[str] | None = None
) -> dict[str, Any]:
    """A compact schema: an ``operation`` enum plus the union of the operations' parameters."""
    props: dict[str, Any] = {"operation": {"type": "string", "enum": operations}}
    props.update(properties)
    return {"type": "object", "properties": props, "required": ["operation", *(required or [])]}


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


def dispatch(ops: dict[str, Handler], ctx: ToolContext, args: dict[str, Any]) -> str:
    op = args.get("operation")
    if not isinstance(op, str) or op not in ops:
        raise ToolError(f"unknown operation {op!r}; use one of: {', '.join(ops)}")
    return ops[op](ctx, args)
