"""Core slash commands: /help /exit /model /context /stats /todo /clear /compact."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from clio.commands.registry import COMMANDS, CommandError, ExitRequested, command
from clio.tools.todos import format_todos
from clio.wording import plural

if TYPE_CHECKING:
    from clio.commands.registry import CommandContext


@command("help", "list commands", "/help [command]")
def help_cmd(app: CommandContext, arg: str) -> None:
    from rich.table import Table  # ~15 ms: only when a table is shown

    name = arg.strip().lstrip("/")
    if name:
        cmd = COMMANDS.get(name)
        if cmd is None:
            raise CommandError(f"No command /{name}; /help lists them.")
        app.console.print(f"[bold]{escape(cmd.usage)}[/bold]  {escape(cmd.help)}")
        if cmd.subcommands:
            app.console.print("subcommands: " + ", ".join(cmd.subcommands))
        return
    table = Table(box=None, show_header=False)
    for n in sorted(COMMANDS):
        table.add_row(f"[bold]{escape(COMMANDS[n].usage)}[/bold]", escape(COMMANDS[n].help))
    app.console.print(table)


@command("exit", "leave clio", aliases=("quit",))
def exit_cmd(app: CommandContext, arg: str) -> None:
    raise ExitRequested()


@command("model", "show or switch the model", "/model [name] [--force]")
def model_cmd(app: CommandContext, arg: str) -> None:
    words = arg.split()
    force = "--force" in words
    names = [w for w in words if w != "--force"]
    if len(names) > 1:
        raise CommandError("Usage: /model [name] [--force]")
    if not names:
        try:  # first: with no model chosen, the endpoint's one model becomes the model
            models, failed = app.list_models(), None
        except Exception as exc:  # the listing is a courtesy; the endpoint may not offer it
            models, failed = [], exc
        app.console.print(f"model: [bold]{app.settings.model}[/bold] at {app.settings.endpoint()}")
        if failed is not None:
            app.err.print(f"could not list the endpoint's models: {failed}", markup=False)
            return
        if models:
            app.console.print("available: " + ", ".join(models))
        return
    name = names[0]
    if not force:
        _check_listed(app, name)
    app.switch_model(name)
    window = app.context_figures()["context_window"]
    app.console.print(f"model set to [bold]{name}[/bold] (window {window:,} tokens)")


def _check_listed(app: CommandContext, name: str) -> None:
    """Refuse a name the endpoint's model list does not have (a typo), when it has a list."""
    try:
        models = app.list_models()
    except Exception:  # no list to check against: take the name as given
        return
    if not models or name in models:
        return
    import difflib

    close = difflib.get_close_matches(name, models, n=3, cutoff=0.5)
    known = f"did you mean {', '.join(close)}?" if close else f"it lists: {', '.join(models[:12])}"
    more = "" if close or len(models) <= 12 else f" (and {len(models) - 12} more)"
    raise CommandError(
        f"The endpoint has no model '{name}'; {known}{more} (/model {name} --force uses it anyway)."
    )


@command("context", "show the context window, tokens in use and the learned ratio", "/context [--json]")
def context_cmd(app: CommandContext, arg: str) -> None:
    figures = app.context_figures()
    if "--json" in arg.split():
        app.console.file.write(json.dumps(figures) + "\n")
        return
    used, window = int(figures["used_tokens"]), int(figures["context_window"])  # type: ignore[call-overload]
    pct = 100 * used / max(window, 1)
    app.console.print(
        f"context: [bold]{used:,}[/bold] of {window:,} tokens ({pct:.1f}%), model {figures['model']}"
        f" (window {figures['window_source']})"
    )
    app.console.print(
        f"  {figures['chars_per_token']} chars/token ({figures['ratio_samples']} samples"
        f"{', tiktoken' if figures['exact_tokenizer'] else ''}); "
        f"fixed part {figures['fixed_tokens']:,} tokens, notes after it {figures['notes_tokens']:,}; "
        f"trims at {figures['proactive_at_tokens']:,}"
    )
    app.console.print(
        f"  {figures['profile']} profile: {plural(len(figures['tools']), 'tool')}"  # type: ignore[arg-type]
        + (
            f" (the full profile's fixed part would be {figures['full_fixed_tokens']:,} tokens)"
            if figures["profile"] == "lean"
            else ""
        )
    )
    cache = figures.get("cache")
    if isinstance(cache, dict) and cache.get("session_prompt_tokens"):
        app.console.print(cache_line(cache), markup=False)
    if figures.get("mcp_tool_tokens"):
        app.console.print(
            f"  MCP tools' schemas: {figures['mcp_tool_tokens']:,} tokens of the fixed part (/mcp)"
        )
    app.console.print(
        f"  window {plural(int(figures['window_messages']), 'message')} of {figures['archived_messages']} archived"  # type: ignore[call-overload]
        + (f"; summary after {figures['trims']} trim(s)" if figures["summary"] else "")
    )
    _print_recall(app, figures.get("recall"))


def cache_line(cache: dict[str, int]) -> str:
    """The prompt cache as the endpoint reported it: the last request's share and the session's."""
    last, last_cached = cache["last_prompt_tokens"], cache["last_cached_tokens"]
    total, cached = cache["session_prompt_tokens"], cache["session_cached_tokens"]
    if not cached:
        return (
            f"  prompt cache: the endpoint reported no cached tokens ({total:,} prompt tokens this session)"
        )
    return (
        f"  prompt cache: last request {last_cached:,} of {last:,} tokens cached ({share(last_cached, last)}); "
        f"this session {cached:,} of {total:,} ({share(cached, total)})"
    )


def share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def _print_recall(app: CommandContext, last: Any) -> None:
    """What the automatic recall brought back for the latest message, and why."""
    if not isinstance(last, dict):
        return
    state = last.get("state", "?")
    if state in ("on", "off"):
        app.console.print(f"  automatic recall: {state}" + (" (nothing asked yet)" if state == "on" else ""), markup=False)
        return
    timing = f" in {last['ms']} ms" if last.get("ms") else ""
    app.console.print(f"  automatic recall for the latest message: {state}{timing}", markup=False)
    for hit in last.get("recalled") or []:
        where = "this session" if hit.get("current_session") else f"session {hit.get('session')}"
        seqs = hit.get("seqs") or [hit.get("seq")]
        numbers = ", ".join(f"#{n}" for n in seqs)
        app.console.print(f"    {where} {numbers} ({hit.get('date')}): {hit.get('why')}", markup=False)
    best = last.get("best_rejected")
    if state == "nothing relevant" and isinstance(best, dict):
        app.console.print(f"    best candidate left out: {best.get('why')}", markup=False)
    if last.get("why"):
        app.console.print(f"    {last['why']}", markup=False)
    if last.get("judge_model"):
        app.console.print(f"    judge model (recall_judge_model): {last['judge_model']}", markup=False)
    if last.get("encoder"):
        app.console.print(f"    sentence encoder: {last['encoder']}", markup=False)


@command("stats", "usage of this session", "/stats")
def stats_cmd(app: CommandContext, arg: str) -> None:
    from rich.table import Table  # ~15 ms: only when a table is shown

    session = app.session
    assert session is not None
    u = session.info.usage
    calls = sum(len(m.get("tool_calls") or []) for m in session.messages)
    table = Table(box=None, show_header=False)
    table.add_row("requests", f"{u.get('requests', 0):,}")
    table.add_row("prompt tokens", f"{u.get('prompt_tokens', 0):,}")
    table.add_row("cached prompt tokens", f"{u.get('cached_tokens', 0):,}")
    table.add_row("completion tokens", f"{u.get('completion_tokens', 0):,}")
    table.add_row("messages", f"{len(session.messages):,}")
    table.add_row("tool calls", f"{calls:,}")
    table.add_row("secrets redacted", f"{app.redacted_total:,}")
    app.console.print(table)


@command("todo", "show the session's todo list", "/todo")
def todo_cmd(app: CommandContext, arg: str) -> None:
    items = app.todos()
    app.console.print(format_todos(items) if items else "No todos in this session.")


@command("clear", "empty the conversation window (the archive keeps every message)", "/clear")
def clear_cmd(app: CommandContext, arg: str) -> None:
    app.clear_window()
    app.console.clear()
    app.console.print("Conversation window cleared; the session archive still holds every message.")


@command(
    "compact", "ask the model to summarise the conversation and continue from the summary", "/compact [focus]"
)
def compact_cmd(app: CommandContext, arg: str) -> None:
    try:
        report = app.compact(arg)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if report is None:
        app.console.print("Nothing to compact yet.")
        return
    if not report.applied:
        app.console.print(
            f"Not compacted: the model's summary would take {report.after:,} tokens where the conversation"
            f" takes {report.before:,}; the conversation is unchanged."
        )
        return
    app.console.print(
        f"Compacted the conversation: {report.before:,} -> {report.after:,} tokens "
        f"({report.before - report.after:,} freed)."
    )
