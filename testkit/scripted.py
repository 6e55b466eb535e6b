"""Test support shared by the end-to-end and in-process tests.

- :class:`ScriptedModel`: the fake server's responder, replies chosen by the request's latest user
  message (used by tests/e2e/test_memory.py and tests/e2e/test_privacy.py);
- :class:`RecordingUI`: a ``clio.agent.turn.TurnUI`` that records what a turn showed;
- :class:`AppFactory`: builds a real ``clio.app.app.App`` in a test's project against the fake server
  (the ``app_factory`` fixture of tests/conftest.py), so the agent loop and the commands can be
  driven in-process. The model is always the fake server's real HTTP endpoint, reached through
  the base URL.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testkit.clio_run import without_context
from testkit.fakeserver import READ_BACK_MARK, Fail, FakeServer, Reply

if TYPE_CHECKING:  # imported when an App is built: the end-to-end tests need none of it
    from rich.console import Console

    from clio.agent.turn import TurnUI
    from clio.app.app import App
    from clio.config import Settings

# ---------------------------------------------------------------- a scripted model


def latest_user(body: dict[str, Any]) -> tuple[str, int]:
    """(text of the request's last user message, number of assistant messages after it)."""
    msgs = body["messages"]
    last = max(i for i, m in enumerate(msgs) if m.get("role") == "user")
    rounds = sum(1 for m in msgs[last + 1 :] if m.get("role") == "assistant")
    return without_context(str(msgs[last].get("content"))), rounds


CONSOLIDATION_MARK = READ_BACK_MARK  # clio/prompts/consolidate.md


def is_consolidation(body: dict[str, Any]) -> bool:
    """Whether a request is clio's session-end consolidation (its text quotes the session, so a
    turn's trigger would match it too)."""
    return latest_user(body)[0].startswith(CONSOLIDATION_MARK)


def turn_requests(server: FakeServer, trigger: str) -> list[dict[str, Any]]:
    """The chat requests of the turn(s) whose user message contains ``trigger``, in order
    (consolidation requests, which quote the session, left out)."""
    return [b for b in server.chat_requests if trigger in latest_user(b)[0] and not is_consolidation(b)]


def consolidation_requests(server: FakeServer) -> list[dict[str, Any]]:
    return [b for b in server.chat_requests if is_consolidation(b)]


def call(name: str, **args: Any) -> dict[str, Any]:
    """One tool call of a scripted ``Reply(tool_calls=[...])``."""
    return {"name": name, "arguments": args}


class ScriptedModel:
    """The fake server's responder: replies chosen by the latest user message of the request.

    ``on(trigger, r0, r1, ...)``: in a turn whose user message contains ``trigger``, the first
    request gets r0, the request after the first tool round r1, and so on. A consolidation
    request gets ``consolidation`` (by default: nothing learned). Anything else gets a plain
    "ok". Safe with several clio processes talking to the server at once.
    """

    def __init__(self) -> None:
        self.turns: dict[str, tuple[Reply | Fail, ...]] = {}
        self.consolidation: Reply | Fail = Reply(text='{"entries": [], "pairs": []}')

    def on(self, trigger: str, *replies: Reply | Fail) -> None:
        self.turns[trigger] = replies

    def __call__(self, body: dict[str, Any]) -> Reply | Fail:
        if is_consolidation(body):
            return self.consolidation
        text, rounds = latest_user(body)
        for trigger, replies in self.turns.items():
            if trigger in text:
                return replies[rounds] if rounds < len(replies) else Reply(text="(script exhausted)")
        return Reply(text="ok")


# ---------------------------------------------------------------- in-process runs


class RecordingUI:
    """A TurnUI that records every event as a tuple: ("waiting",), ("pause",), ("text", delta),
    ("answer_done", content, interrupted, final), ("tool_start", name, args),
    ("tool_done", name, ok, result), ("notice", text), ("diff", text, lines_left_out)."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def waiting(self) -> None:
        self.events.append(("waiting",))

    def pause(self) -> None:
        self.events.append(("pause",))

    def text(self, delta: str) -> None:
        self.events.append(("text", delta))

    def answer_done(self, content: str, *, interrupted: bool, final: bool) -> None:
        self.events.append(("answer_done", content, interrupted, final))

    def tool_start(self, name: str, args: dict[str, Any]) -> None:
        self.events.append(("tool_start", name, args))

    def tool_done(self, name: str, ok: bool, result: str) -> None:
        self.events.append(("tool_done", name, ok, result))

    def notice(self, text: str) -> None:
        self.events.append(("notice", text))

    def diff(self, diff: str, left: int) -> None:
        self.events.append(("diff", diff, left))

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        """The events of one kind, in order, without the kind."""
        return [e[1:] for e in self.events if e[0] == kind]

    @property
    def deltas(self) -> list[str]:
        return [str(e[0]) for e in self.of("text")]

    @property
    def notices(self) -> list[str]:
        return [str(e[0]) for e in self.of("notice")]


def console_text(console: Console) -> str:
    """What was printed on a console made by :class:`AppFactory` (it writes to a StringIO)."""
    file = console.file
    assert isinstance(file, io.StringIO), "not a console of AppFactory"
    return file.getvalue()


_UNSET: Any = object()


class AppFactory:
    """Builds real Apps in ``project`` (with ``$CLIO_HOME`` at ``home``) against ``server``.

    ``factory(**settings)``: model ``fake-model``, key ``k``, the server's base URL, a 16,000-token
    window stated "by the test" unless ``context_window`` is given (None: the model table and the
    endpoint's model list decide), any other :class:`Settings` field as given. Consoles write to
    StringIO (:func:`console_text`). Every App made is closed by :meth:`close_all`.
    """

    def __init__(self, server: FakeServer, project: Path, home: Path) -> None:
        self.server = server
        self.project = project
        self.home = home
        self.apps: list[App] = []

    def settings(self, context_window: int | None = _UNSET, **fields: Any) -> Settings:
        from clio.config import Settings

        s = Settings(base_url=self.server.base_url, api_key="k", model="fake-model")
        s.sources["model"] = "the test"  # chosen, as by --model: the endpoint's list is not asked for one
        s.context_window = 16_000 if context_window is _UNSET else context_window
        if s.context_window is not None:
            s.sources["context_window"] = "the test"
        for name, value in fields.items():
            if not hasattr(s, name):
                raise AttributeError(f"Settings has no field {name!r}")
            setattr(s, name, value)
        return s

    def __call__(
        self,
        *,
        ui: TurnUI | None = None,
        ask: Callable[[str], str | None] | None = None,
        resume: str | None = None,
        interactive: bool = False,
        context_window: int | None = _UNSET,
        **fields: Any,
    ) -> App:
        from rich.console import Console

        from clio.app.app import App
        from clio.paths import resolve_paths

        paths = resolve_paths(str(self.project), str(self.home), env={})
        app = App.start(
            self.settings(context_window, **fields),
            paths,
            resume=resume,
            interactive=interactive,
            console=Console(file=io.StringIO(), width=200, color_system=None, force_terminal=False),
            err=Console(file=io.StringIO(), width=200, color_system=None, force_terminal=False),
            ui=ui if ui is not None else RecordingUI(),
            ask=ask,
        )
        self.apps.append(app)
        return app

    def close_all(self) -> None:
        while self.apps:
            self.apps.pop().close()
