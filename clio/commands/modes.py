"""``/plan``: read-only plan mode on or off (clio.tools.policy enforces it; clio/prompts/plan.md tells
the model)."""

from __future__ import annotations

from clio.commands.registry import CommandContext, CommandError, command

ON = (
    "Plan mode on: clio reads, searches and runs read-only commands, and proposes changes without "
    "making them (writes and other commands are refused). /plan again to leave it."
)
OFF = "Plan mode off: clio may change files and run commands again (with your approvals)."


@command("plan", "read-only plan mode: the model proposes changes without making them", "/plan [on|off]")
def plan_cmd(app: CommandContext, arg: str) -> None:
    word = arg.strip().lower()
    if word not in ("", "on", "off"):
        raise CommandError("Usage: /plan [on|off] (no argument: toggle)")
    on = (not app.settings.plan) if not word else word == "on"
    app.set_plan(on)
    app.console.print(ON if on else OFF)
