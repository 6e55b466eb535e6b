"""The one registry of tools the model can call.

A tool is one :class:`clio.tools.spec.ToolSpec`, declared beside its code and registered with
:func:`register` (which checks it is complete). Handlers raise ``ToolError`` with a sentence the
model can act on; the registry turns that (and any crash) into the one result every tool call
gets. What clio derives from the specs is asked of the registry: the schemas of a profile, the
short names (:meth:`Registry.aliases`), whether a result is outside content
(:meth:`Registry.brings_outside`), each operation's action (:meth:`Registry.actions`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from clio.tools.context import ToolError
from clio.tools.spec import PROFILES, ToolSpec, check

if TYPE_CHECKING:
    from clio.actions import Actions
    from clio.tools.context import ToolContext


Gate = Callable[[ToolSpec, dict[str, Any]], "str | None"]  # (tool, arguments) -> why it may not run now


def _never(name: str) -> bool:
    return False


def _open(tool: ToolSpec, args: dict[str, Any]) -> str | None:
    return None


class Registry:
    def __init__(self) -> None:
        self._tools: dict[str, ToolSpec] = {}
        self.hidden: Callable[[str], bool] = _never  # not offered at all (--deny-tools; clio.tools.policy)
        self.gate: Gate = _open  # why a call may not run now (--deny-tools, plan mode)

    def add(self, t: ToolSpec) -> None:
        self._tools[t.name] = t

    def copy(self) -> Registry:
        """A registry with the same tools, for a session that adds its own (MCP servers' tools)."""
        out = Registry()
        out._tools = dict(self._tools)
        out.hidden, out.gate = self.hidden, self.gate
        return out

    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def aliases(self) -> dict[str, str]:
        """Short name -> tool name, for --allow-tools and --deny-tools ("shell", "files"...)."""
        return {a: t.name for t in self._tools.values() for a in t.aliases}

    def brings_outside(self, name: str, operation: str) -> bool:
        """Whether a result of ``name``'s ``operation`` brings outside content into the turn: true
        unless the tool declares it does not (an unknown tool or operation reads the outside world)."""
        t = self._tools.get(name)
        return t is None or t.brings_outside(operation)

    def actions(self) -> Actions:
        """(tool, operation) -> what it does in clio's words (clio.actions), for what reads turns."""
        return {(t.name, name): op.action for t in self._tools.values() for name, op in t.ops.items() if op.action}

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
        refused = self.gate(t, args)
        if refused is not None:
            return f"Error: {refused}", False
        ctx.tool = name
        try:
            return t(ctx, args), True
        except ToolError as exc:
            return f"Error: {exc}", False
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # a bug or an OS error: report it, keep the loop alive
            return f"Error: {name} failed: {type(exc).__name__}: {exc}", False


REGISTRY = Registry()


def register(spec: ToolSpec, registry: Registry | None = None) -> ToolSpec:
    """Check ``spec`` is complete (:func:`clio.tools.spec.check`) and add it to ``registry``
    (``REGISTRY``: a tool module calls this once, at import)."""
    into = REGISTRY if registry is None else registry
    taken = into.aliases()
    clash = [a for a in spec.aliases if a in taken and taken[a] != spec.name]
    if clash or (spec.name in into.names() and into.get(spec.name) is not spec):
        raise ValueError(f"tool {spec.name}: its name or aliases {clash} are taken by another tool")
    into.add(check(spec))
    return spec
