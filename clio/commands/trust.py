"""``/trust``: trust this project's ``.clio/config.yaml`` (its risky settings), or revoke it.

/trust          show the settings that need trust, ask, record the config's digest
/trust revoke   forget the trust; its risky settings are ignored again

Trust takes effect from the next start of clio (the running settings are not changed).
Uses only ``settings``, ``paths``, ``console``, ``err`` and ``confirm`` of the context.
"""

from __future__ import annotations

from rich.text import Text

from clio.commands.registry import CommandContext, CommandError, command, split_sub
from clio.config import ConfigError, inspect_project
from clio.project_config import describe_risky
from clio.safety.visible import escape_invisible
from clio.store.trust import TrustStore

USAGE = "/trust [revoke]"
SUBCOMMANDS = ("revoke",)


def _say(app: CommandContext, text: str, style: str = "") -> None:
    app.console.print(Text(text, style=style))


@command("trust", "trust this project's config (endpoint, approvals...)", USAGE, subcommands=SUBCOMMANDS)
def trust_command(app: CommandContext, arg: str) -> None:
    sub, _rest = split_sub(arg)
    store = TrustStore(app.paths.home)
    if sub == "revoke":
        _revoke(app, store)
    elif sub in ("", "show"):
        _trust(app, store)
    else:
        raise CommandError(f"Unknown subcommand '{escape_invisible(sub)}'. Usage: {USAGE}")


def _revoke(app: CommandContext, store: TrustStore) -> None:
    if app.settings.incognito:
        raise CommandError("Incognito writes nothing: trust cannot be revoked in this run.")
    if store.revoke(app.paths.root):
        _say(
            app,
            "Trust revoked. From the next start, this project's settings that need trust are ignored "
            "(and asked about again).",
        )
    else:
        _say(app, "This project was not trusted.")


def _trust(app: CommandContext, store: TrustStore) -> None:
    try:
        proj = inspect_project(app.paths.home, app.paths.clio_dir, app.settings)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    if proj is None or not proj.risky:
        _say(app, "Nothing to trust: this project's config asks for no setting that needs trust.")
        return
    where = escape_invisible(str(proj.path))
    if store.is_trusted(app.paths.root, proj.digest):
        _say(app, f"This project's config ({where}) is trusted; it sets:")
        for line in describe_risky(proj.risky):
            _say(app, f"  {line}")
        _say(app, "/trust revoke to undo.", "dim")
        return
    if app.settings.incognito:
        raise CommandError("Incognito writes nothing: trust cannot be recorded in this run.")
    changed = store.digest_for(app.paths.root) is not None
    if changed:
        _say(app, "This project's config changed since you trusted it.", "yellow")
    _say(app, f"This project's config ({where}) asks for settings that only you may make:")
    for line in describe_risky(proj.risky):
        _say(app, f"  {line}")
    if not app.confirm("Trust it as it is now? (takes effect from the next start of clio)"):
        _say(
            app,
            "Not trusted: these settings stay ignored (/trust in the REPL or clio --trust to trust them).",
        )
        return
    store.grant(app.paths.root, proj.digest)
    _say(
        app,
        "Trusted. Its settings take effect from the next start of clio; if the file changes, "
        "clio asks again. /trust revoke to undo.",
    )
