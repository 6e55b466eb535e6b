"""The one registry of slash commands.

Adding a command is one decorated function ``handler(app, arg) -> None`` where ``arg``
is the text after the command name and ``app`` is the narrow :class:`CommandContext` (the
running App is one; a test may pass its own). Families with subcommands (``/session show``)
parse ``arg`` themselves with :func:`split_sub`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rich.console import Console

    from clio.agent.turn import TrimReport, TurnResult
    from clio.app.consolidate import Outcome
    from clio.config import Settings
    from clio.paths import Paths
    from clio.store.sessions import Session, SessionStore
    from clio.store.snapshots import Restored
    from clio.tools.context import Services


class CommandContext(Protocol):
    """What a slash command may see and do: output, settings, stores, the session, and a few
    operations of the agent. Nothing else of the App is reachable from a command."""

    console: Console
    err: Console
    settings: Settings
    paths: Paths
    services: Services
    sessions: SessionStore
    writes: bool  # False in incognito
    redacted_total: int

    @property
    def session(self) -> Session | None: ...

    def confirm(self, question: str) -> bool: ...
    def open_session(self, resume: str | None = None) -> Session: ...
    def switch_model(self, name: str) -> None: ...
    def list_models(self) -> list[str]: ...
    def settle_model(self, *, strict: bool = True) -> None: ...
    def context_figures(self) -> dict[str, object]: ...
    def mcp_status(self) -> list[dict[str, object]]: ...
    def trim_now(self) -> TrimReport: ...
    def compact(self, focus: str) -> TrimReport | None: ...
    def clear_window(self) -> None: ...
    def todos(self) -> list[dict[str, Any]]: ...
    def consolidate(self, *, force: bool = False) -> Outcome | None: ...
    def undo(self, turns: int) -> list[Restored]: ...
    def set_plan(self, on: bool) -> None: ...
    def redraw_behaviours(self) -> None: ...
    def run_turn(self, text: str, meta: dict[str, Any] | None = None) -> TurnResult: ...


class CommandError(Exception):
    """A slash command could not run; the message is shown to the user as is."""


class ExitRequested(Exception):
    """Raised by /exit."""


CommandHandler = Callable[[CommandContext, str], None]


@dataclass
class Command:
    name: str
    help: str
    usage: str
    handler: CommandHandler
    subcommands: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()

    def accepts(self, arg: str) -> bool:
        """False for arguments the usage line rules out: any, when it names none ("/stats"); any
        but its flags, when it names only optional flags ("/context [--json]"). Commands with
        free arguments or subcommands check their own."""
        spec = self.usage.split()[1:] if self.usage.startswith(f"/{self.name}") else None
        if spec is None or self.subcommands:
            return True
        flags = {t.strip("[]") for t in spec}
        if not all(t.startswith("[--") and t.endswith("]") for t in spec):
            return True
        return all(word in flags for word in arg.split())


COMMANDS: dict[str, Command] = {}
_ALIASES: dict[str, str] = {}


def command(
    name: str, help: str, usage: str = "", subcommands: tuple[str, ...] = (), aliases: tuple[str, ...] = ()
) -> Callable[[CommandHandler], CommandHandler]:
    def deco(fn: CommandHandler) -> CommandHandler:
        COMMANDS[name] = Command(name, help, usage or f"/{name}", fn, subcommands, aliases)
        for a in aliases:
            _ALIASES[a] = name
        return fn

    return deco


def lookup(name: str) -> Command | None:
    name = _ALIASES.get(name, name)
    return COMMANDS.get(name)


def split_sub(arg: str) -> tuple[str, str]:
    """'show extra words' -> ('show', 'extra words')."""
    arg = arg.strip()
    if not arg:
        return "", ""
    head, _, rest = arg.partition(" ")
    return head.lower(), rest.strip()


def run_command(app: CommandContext, line: str) -> None:
    """Run one '/name args' line. Raises CommandError for unknown commands."""
    text = line.strip()
    if text.startswith("/"):
        text = text[1:]
    name, _, arg = text.partition(" ")
    cmd = lookup(name.lower())
    if cmd is None:
        known = ", ".join("/" + n for n in sorted(COMMANDS))
        raise CommandError(f"Unknown command /{name}. Known commands: {known}.")
    if not cmd.accepts(arg):
        raise CommandError(f"Usage: {cmd.usage}")
    cmd.handler(app, arg.strip())
