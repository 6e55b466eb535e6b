"""``clio --input TEXT --exit``: one turn (tool loop included), answer on stdout, progress on stderr."""

from __future__ import annotations

import sys

from rich.console import Console

from clio.agent.turn import TurnResult
from clio.app import background
from clio.app.app import App
from clio.config import Settings
from clio.llm.errors import LLMError
from clio.llm.prices import Bill, describe, minus, total
from clio.paths import Paths
from clio.safety.redact import Redactor
from clio.ui.json_output import JsonUI
from clio.ui.render import OneShotUI


def _tty_ask(question: str) -> str | None:
    """Ask on the terminal when there is one (approvals in a one-shot run started by hand)."""
    try:
        with open("/dev/tty", "r+", encoding="utf-8") as tty:
            tty.write(question)
            tty.flush()
            return tty.readline().rstrip("\n")
    except OSError:
        return None


def run_one_shot(
    settings: Settings,
    paths: Paths,
    text: str,
    *,
    resume: str | None,
    out: Console,
    err: Console,
    output: str = "text",
) -> int:
    """One turn; returns the exit code (README: 0 done, 1 a slash command failed, 2 usage,
    3 max_iterations, 4 refused for lack of approval, 5 stuck, 6 the endpoint could not be used,
    130 interrupted)."""
    if text.lstrip().startswith("!"):  # the REPL's `!command`: a script runs its commands itself
        err.print(
            "clio: !command runs a shell command in the REPL only; in a script run it yourself "
            "(its output can go in with --input -), or ask the model to run it.",
            markup=False,
        )
        return 2
    redactor = Redactor(settings.redaction)
    json_ui = (
        JsonUI(out.file, stream=output == "stream-json", redact_obj=lambda v: redactor.redact_obj(v)[0])
        if output != "text"
        else None
    )
    ui = json_ui or OneShotUI(out, err)
    ask = _tty_ask if (sys.stdin.isatty() and sys.stderr.isatty() and not settings.yes) else None
    slash = text.lstrip().startswith("/")  # may send nothing: the model is settled when something is sent
    app = App.start(
        settings, paths, resume=resume, interactive=False, console=out, err=err, ui=ui, ask=ask, settle_model=not slash,
        first="" if slash else text,
    )
    later: str | None = None  # the session to read back once this run has answered (clio.app.background)
    try:
        if slash:
            from clio.commands.dispatch import run_slash  # the commands (~20 modules): only for a slash run
            from clio.commands.registry import ExitRequested

            try:
                spent = dict(app.session.info.usage) if app.session is not None else {}
                judged = {m: dict(u) for m, u in app.session.info.judged.items()} if app.session is not None else {}
                had = len(app.session.messages) if app.session is not None else 0
                if not run_slash(app, text.strip()):
                    return 1
                # /init's turn is read back after it; a command that ran no turn (/memory list)
                # starts nothing and says nothing
                turned = app.session is not None and len(app.session.messages) > had
                if turned and background.pending(app):
                    later = _sid(app)
                # /init, /compact, /memory consolidate ask the model
                _usage_line(app, settings, err, spent, judged, in_background=later is not None)
                if later is not None:
                    err.print(background.NOTICE, markup=False, highlight=False)
                return _outcome(app, TurnResult(), err)[0]  # /init's turn may have had a write refused (4)
            except ExitRequested:  # `clio -p /exit`: nothing left to do
                return 0
        if not text.strip():
            err.print("clio: the input is empty: pass a request with --input TEXT or -p TEXT", markup=False)
            return 2
        if json_ui is not None:
            json_ui.emit({"type": "session", "session_id": app.session.id if app.session else None, "model": settings.model})
        try:
            result = app.run_turn(text)
        except LLMError as exc:
            if json_ui is None:
                raise
            err.print(f"clio: {exc}", markup=False)
            json_ui.finish(
                json_ui.result(session_id=_sid(app), usage=[], stop_reason="error", exit_code=exc.exit_code, error=str(exc))
            )
            return exc.exit_code
        code, reason, why = _outcome(app, result, err)
        if not result.interrupted and background.pending(app):
            later = _sid(app)  # its requests come after this run's usage: the line and JSON say so
        bill = Bill(total(result.usage), settings.model, result.judged)
        _say_usage(err, settings, bill, in_background=later is not None)
        if json_ui is not None:
            json_ui.cost_usd = bill.cost(settings.prices, settings.endpoint())[0]
            json_ui.finish(
                json_ui.result(
                    session_id=_sid(app), usage=result.usage, stop_reason=reason, exit_code=code, error=why, background=later
                )
            )
        if later is not None:
            err.print(background.NOTICE, markup=False, highlight=False)
        return code
    finally:
        app.close()
        if later is not None:  # after close: the child resumes the session this run let go of
            background.spawn(settings, paths, later)


def _say_usage(err: Console, settings: Settings, bill: Bill, *, in_background: bool = False) -> None:
    """The one line a run that sent requests ends with: tokens and, where the prices are known,
    cost. ``in_background``: the run starts a read-back child, whose requests the line cannot count."""
    if bill.usage.get("requests"):
        line = describe(bill, settings.prices, settings.endpoint())
        err.print(f"clio: usage: {line}" + (f"; {background.USAGE_CLAUSE}" if in_background else ""), markup=False, highlight=False)


def _usage_line(
    app: App,
    settings: Settings,
    err: Console,
    before: dict[str, int],
    judged_before: dict[str, dict[str, int]],
    *,
    in_background: bool = False,
) -> None:
    """The usage line of a slash command that sent requests: the session's totals since ``before``
    (``judged_before``: the judge model's part then)."""
    info = app.session.info if app.session is not None else None
    now, judged = (info.usage, info.judged) if info is not None else ({}, {})
    since = {m: minus(u, judged_before.get(m, {})) for m, u in judged.items()}
    _say_usage(err, settings, Bill(minus(now, before), settings.model, since), in_background=in_background)


def _sid(app: App) -> str | None:
    return app.session.id if app.session is not None else None


def _outcome(app: App, result: TurnResult, err: Console) -> tuple[int, str, str | None]:
    """(exit code, stop reason, what went wrong) of the turn; a refused action is named on stderr."""
    if result.interrupted:
        return 130, "interrupted", "interrupted (Ctrl-C)"
    if result.hit_cap:
        return 3, "max_iterations", f"the turn stopped at max_iterations ({app.settings.max_iterations})"
    if result.stuck:
        return 5, "stuck", result.stuck
    unanswered = app.approvals.unanswered
    if unanswered:  # a slash command's question (/session delete...): no means no, said and coded
        more = f" (and {len(unanswered) - 1} more)" if len(unanswered) > 1 else ""
        why = f"not done: nobody was there to answer {unanswered[0]!r}{more}"
        err.print(f"clio: {why}; rerun with --yes to answer yes (or run it in the REPL).", markup=False)
        return 4, "refused", why
    refused = app.tool_ctx.refused if app.tool_ctx is not None else []
    if refused:
        more = f" and {len(refused) - 1} more" if len(refused) > 1 else ""
        why = f"refused for lack of approval: {refused[0]}{more}"
        err.print(f"clio: {why}. Approve it in the REPL (clio), or rerun with --yes where that is enough.", markup=False)
        return 4, "refused", why
    return 0, "done", None
