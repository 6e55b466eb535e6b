"""Which runs leave a read-back child (clio.app.background.pending), in-process with real Apps
against the fake server: a session whose unconsolidated part is not worth a read-back (a lone
question) is noted as checked (``session.json`` ``checked``) and no longer counts as pending, so
the next runs start no child for it; more messages in it later make it count again, and the
read-back then covers the whole unconsolidated part. The read-back itself is
``background.run``, the child's own code, run here in-process."""

from __future__ import annotations

import json
import os
from pathlib import Path

from clio.app import background
from clio.app.app import App
from clio.store.sessions import SessionStore
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import AppFactory, consolidation_requests, latest_user

QUESTION = "which port does the staging database listen on again?"
FOLLOW_UP = "and the production one?"
DECISION = "We will use pgbouncer in transaction mode for the billing database."


def meta(project: Path, sid: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((project / ".clio" / "sessions" / sid / "session.json").read_text())
    return data


def ended(factory: AppFactory, app: App) -> str:
    """The run is over: its session let go of (as clio does before it starts a child)."""
    assert app.session is not None
    factory.apps.remove(app)
    app.close()
    return app.session.id


def asked(app_factory: AppFactory, fake_server: FakeServer, text: str, answer: str, **kw: object) -> App:
    app = app_factory(**kw)  # type: ignore[arg-type]
    fake_server.script(Reply(text=answer))
    app.run_turn(text)
    return app


def test_a_lone_question_is_noted_checked_and_not_pending_on_the_next_run(
    app_factory: AppFactory, fake_server: FakeServer, project: Path
) -> None:
    first = asked(app_factory, fake_server, QUESTION, "5433.")
    assert not background.pending(first)
    sid = ended(app_factory, first)
    assert (meta(project, sid)["consolidated"], meta(project, sid)["checked"]) == (0, 2)  # nothing read into memory

    second = asked(app_factory, fake_server, "what is two plus two?", "Four.")
    assert not background.pending(second)  # the first session counted here before: a child each run
    assert meta(project, ended(app_factory, second))["checked"] == 2
    assert consolidation_requests(fake_server) == []


def test_a_run_that_needs_no_mark_writes_none(app_factory: AppFactory, fake_server: FakeServer, project: Path) -> None:
    app = asked(app_factory, fake_server, QUESTION, "5433.")
    assert not background.pending(app)
    assert app.session is not None and app.session.dir is not None
    path = app.session.dir / "session.json"
    stamp = path.stat().st_mtime_ns
    assert not background.pending(app)  # judged already: not written again
    assert path.stat().st_mtime_ns == stamp
    ended(app_factory, app)

    worth = asked(app_factory, fake_server, DECISION, "Noted.")
    assert worth.session is not None and worth.session.dir is not None
    path = worth.session.dir / "session.json"
    stamp = path.stat().st_mtime_ns
    assert background.pending(worth)  # its child reads it: no mark, no write
    assert path.stat().st_mtime_ns == stamp and worth.session.info.checked == 0


def test_the_session_resumed_with_a_second_question_is_pending_and_read_back_whole(
    app_factory: AppFactory, fake_server: FakeServer, project: Path
) -> None:
    first = asked(app_factory, fake_server, QUESTION, "5433.")
    assert not background.pending(first)
    settings, paths, sid = first.settings, first.paths, ended(app_factory, first)
    background.run(settings, paths, sid, True)  # a child for it all the same (a REPL's upkeep)
    assert consolidation_requests(fake_server) == []
    assert meta(project, sid)["consolidated"] == 0  # judged, not read: the marker stays where it was

    again = app_factory(resume=sid)
    fake_server.script(Reply(text="5432."))
    again.run_turn(FOLLOW_UP)
    assert background.pending(again)  # two questions: a conversation
    settings, paths = again.settings, again.paths
    ended(app_factory, again)
    background.run(settings, paths, sid, False)  # the child's work, in this process

    (request,) = consolidation_requests(fake_server)
    quoted = latest_user(request)[0]
    assert QUESTION in quoted and FOLLOW_UP in quoted and "5433." in quoted  # the whole unconsolidated part
    assert meta(project, sid)["consolidated"] == 4
    assert f"from session {sid}" in (project / ".clio" / background.LOG_NAME).read_text()


def test_an_old_session_json_without_the_mark_loads_and_is_judged_once(
    app_factory: AppFactory, fake_server: FakeServer, project: Path
) -> None:
    first = asked(app_factory, fake_server, QUESTION, "5433.")
    sid = ended(app_factory, first)  # pending never asked: a run of a clio before the mark
    path = project / ".clio" / "sessions" / sid / "session.json"
    old = json.loads(path.read_text())
    old.pop("checked", None)
    path.write_text(json.dumps(old))

    info = SessionStore(project / ".clio" / "sessions").info(sid)
    assert (info.message_count, info.consolidated, info.checked) == (2, 0, 0) and info.unread()

    second = asked(app_factory, fake_server, "what is two plus two?", "Four.")
    assert background.pending(second)  # never judged: its child reads it
    settings, paths, current = second.settings, second.paths, ended(app_factory, second)
    stamp = os.stat(path).st_mtime_ns
    background.run(settings, paths, current, False)
    assert consolidation_requests(fake_server) == []  # a lone question: no request...
    assert (meta(project, sid)["consolidated"], meta(project, sid)["checked"]) == (0, 2)  # ...noted
    assert os.stat(path).st_mtime_ns == stamp  # and the session no more recent than it was

    third = asked(app_factory, fake_server, "and three plus three?", "Six.")
    assert not background.pending(third)


def test_incognito_writes_no_mark(app_factory: AppFactory, fake_server: FakeServer, project: Path) -> None:
    app = asked(app_factory, fake_server, QUESTION, "5433.", incognito=True)
    assert not background.pending(app)
    assert not (project / ".clio" / "sessions").exists()
