"""A tool, declared once: :class:`ToolSpec` and its operations (:class:`Op`).

Everything clio needs to know about a tool sits in its spec, beside its code:

- its name, description and parameters: the schema the model gets (:meth:`ToolSpec.schema`),
  and its form for small context windows (``lean``, :class:`Lean`): whether it is offered there
  and from which budget;
- per operation (:class:`Op`): the handler; its ``effect`` (it only reads, it changes the
  project, it changes only clio's own state, or a check per call), from which plan mode decides
  (:mod:`clio.tools.policy`); whether its result brings ``outside`` content into the turn, from
  which the provenance of memory written later in the turn follows (:mod:`clio.memory.provenance`);
  and its ``action`` in clio's words (:mod:`clio.actions`), which the thread summary and the
  behaviour detectors read;
- the argument keys that tell a call apart on screen (``label``, :mod:`clio.tools.describe`;
  without them the arguments are shown as JSON);
- its short names for ``--allow-tools``/``--deny-tools`` (``aliases``).

:func:`check` refuses a spec that leaves any of this out; :func:`clio.tools.registry.register`
calls it, so an incomplete tool fails at import, not in a session.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clio.actions import ACTIONS
from clio.tools.context import ToolError

if TYPE_CHECKING:
    from clio.tools.context import ToolContext

Handler = Callable[["ToolContext", dict[str, Any]], str]

READ = "read"  # only reads (files, the repository, clio's stores): runs in plan mode
CHANGE = "change"  # changes the project or runs a program: refused in plan mode
OWN = "own"  # changes only clio's own state (memory, todos) or asks the user: runs in plan mode
EFFECTS = (READ, CHANGE, OWN)
# A per-call effect: None when this call only reads, else why it would change the project: a
# sentence for plan mode's refusal, or "" for the standard one ("... would change the project").
Check = Callable[[dict[str, Any]], "str | None"]
PROFILES = ("full", "lean")


class Later:
    """A handler (or an effect's check) named by its module and function, imported on its first
    call: a tool's code loads when the model first uses the tool, not with every start (its spec,
    which every request sends, is declared without it)."""

    __slots__ = ("_fn", "module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name
        self._fn: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> Any:  # a handler (ctx, args) or a per-call effect check (args)
        if self._fn is None:
            self._fn = getattr(importlib.import_module(self.module), self.name)
        return self._fn(*args)

    def __repr__(self) -> str:
        return f"Later({self.module}.{self.name})"


@dataclass(frozen=True)
class Op:
    """One operation of a tool."""

    run: Handler
    effect: str | Check
    # the result brings outside content into the turn (a file's text or names, a command's
    # output, memory or the archive read back): memory written after it is tainted
    outside: bool
    action: str = ""  # what it does in clio's words (clio.actions); "" when none applies

    def check(self, args: dict[str, Any]) -> str | None:
        """None when this call only reads or touches only clio's own state; else why it would
        change the project ("" for the standard words)."""
        if callable(self.effect):
            return self.effect(args)
        return "" if self.effect == CHANGE else None


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
class ToolSpec:
    """A tool the model can call: one ``operation`` enum over ``ops`` (the CLIO convention, so
    the schemas sent with every request stay compact) plus the union of their ``properties``."""

    name: str
    description: str
    ops: Mapping[str, Op]
    properties: dict[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()  # besides ``operation``
    # argument keys that tell a call apart on screen, most telling first (none: its arguments as JSON)
    label: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # short names for --allow-tools/--deny-tools ("shell", "files")
    lean: Lean | None = None
    # the handler the registry calls (None: dispatch on ``operation``); a custom one (argument
    # coercion, redaction of what is persisted) calls :meth:`dispatch` itself
    run: Handler | None = None

    # -- what the model gets ------------------------------------------------------------------------
    @property
    def parameters(self) -> dict[str, Any]:
        props: dict[str, Any] = {"operation": {"type": "string", "enum": list(self.ops)}}
        props.update(self.properties)
        return {"type": "object", "properties": props, "required": ["operation", *self.required]}

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

    # -- running ------------------------------------------------------------------------------------
    def op(self, args: dict[str, Any]) -> Op | None:
        """The declared operation a call names (None: none, or one this tool does not have)."""
        name = args.get("operation")
        return self.ops.get(name) if isinstance(name, str) else None

    def dispatch(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        op = self.op(args)
        if op is None:
            raise ToolError(f"unknown operation {args.get('operation')!r}; use one of: {', '.join(self.ops)}")
        return op.run(ctx, args)

    def __call__(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        return self.run(ctx, args) if self.run is not None else self.dispatch(ctx, args)

    # -- what the rest of clio derives ---------------------------------------------------------------
    def brings_outside(self, operation: str) -> bool:
        """Whether a result of ``operation`` brings outside content into the turn (true for an
        operation the spec does not declare: the safe answer)."""
        op = self.ops.get(operation)
        return op is None or op.outside


def check(spec: ToolSpec) -> ToolSpec:
    """``spec`` when it declares everything clio derives from it; else ValueError saying what is
    missing (raised at import, when the tool module registers it)."""
    where = f"tool {spec.name or '?'}"
    problems: list[str] = []
    if not spec.name or not spec.description:
        problems.append("a name and a description")
    if not spec.ops:
        problems.append("at least one operation")
    for name, op in spec.ops.items():
        if not callable(op.run):
            problems.append(f"a handler for {name}")
        if not (callable(op.effect) or op.effect in EFFECTS):
            problems.append(f"an effect for {name} (one of {', '.join(EFFECTS)}, or a check per call)")
        if not isinstance(op.outside, bool):
            problems.append(f"whether {name}'s result is outside content (outside=True/False)")
        if op.action and op.action not in ACTIONS:
            problems.append(f"a known action for {name} (clio.actions), not {op.action!r}")
    known = {"operation", *spec.properties}
    problems += [f"label key {k!r} among its parameters" for k in spec.label if k not in known]
    problems += [f"required key {k!r} among its parameters" for k in spec.required if k not in known]
    if problems:
        raise ValueError(f"{where} is incomplete: it needs " + "; ".join(problems))
    if spec.lean is not None:
        spec.schema("lean")  # a lean form naming what the tool lacks fails here too
    return spec
