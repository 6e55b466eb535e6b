"""Memory is ranked by the user's actual task from the first request of a session (issue 14, part 1).

Through the installed clio and the fake server: a project's long-term memory holds 20 older entries
about distinct subjects and 20 newer unrelated ones (more than the 15 discoveries injected at most).
A new session's first request must carry the older entry that matches its task; before this was
fixed memory was ranked when the session was attached, with no task, so the newest entries won.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clio.memory.ltm_store import LtmStore
from testkit.clio_run import run_clio, system_text
from testkit.fakeserver import FakeServer, Reply

SUBJECTS = [
    ("kafka", "the kafka consumer group rebalances when max.poll.interval.ms is exceeded"),
    ("redis", "redis keys for sessions expire after 30 minutes via the sess: prefix"),
    ("alembic", "alembic migrations must be generated with --autogenerate from models/"),
    ("nginx", "nginx proxies /api to the gunicorn socket at /run/app.sock"),
    ("celery", "celery beat schedules live in scheduler/beat.py, not in settings"),
    ("terraform", "terraform state is stored in the s3 bucket infra-state-prod"),
    ("webpack", "webpack builds the frontend bundle into static/dist with contenthash names"),
    ("sentry", "sentry sampling is 0.2 in production and 1.0 in staging"),
    ("grpc", "grpc stubs are regenerated with make protos after editing proto/"),
    ("oauth", "oauth tokens are refreshed by the middleware in auth/refresh.py"),
]
FILLER = [f"the build step number {i} prints a progress line to the console" for i in range(20)]


def seed(project: Path) -> None:
    clock = [1_700_000_000.0]
    store = LtmStore(project / ".clio" / "ltm.json", clock=lambda: clock[0])
    for _subject, fact in SUBJECTS * 2:  # 20 older entries (each subject twice, reworded)
        store.add("discovery", fact=fact if clock[0] < 1_700_000_010 else f"{fact} (confirmed)")
        clock[0] += 1
    clock[0] += 30 * 86400  # a month later: 20 newer entries about something else
    for fact in FILLER:
        store.add("discovery", fact=fact)
        clock[0] += 1


@pytest.mark.parametrize(("subject", "fact"), SUBJECTS[:5])
def test_first_request_of_a_new_session_carries_the_entry_that_matches_the_task(
    fake_server: FakeServer, project: Path, home: Path, subject: str, fact: str
) -> None:
    seed(project)
    fake_server.responder = lambda body: Reply(text="ok")
    task = f"Why does our {subject} setup misbehave? Look at how {subject} is configured."
    result = run_clio(["-p", task], server=fake_server, project=project, home=home)
    assert result.returncode == 0, result.stderr
    first = fake_server.chat_requests[0]
    system = system_text(first)
    assert fact.split(" ", 3)[-1][:40] in system, system[-3000:]
    others = [f for s, f in SUBJECTS if s != subject]
    assert sum(f.split(" ", 3)[-1][:40] in system for f in others) < len(others)  # ranked, not all
