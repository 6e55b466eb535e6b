"""Long-term memory by meaning (issue 14, part 3), end to end through the INSTALLED clio and the fake
server, with the shipped embedding table.

- Ranking: a project's memory holds an old entry worded unlike the task (no shared word) among
  more newer unrelated entries than a prompt carries. The first request of a new session carries
  it (one-shot and REPL); with ``CLIO_SEMANTIC=0`` (lexical ranking) it does not, so the test
  can fail.
- Dedup: two reworded duplicates the words miss are asked about in the consolidation request (and
  merged only because the model says so); two facts that differ in one identifier are not asked
  about and both stay. With ``CLIO_SEMANTIC=0`` no pair is asked about.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clio.memory.ltm_store import LtmStore
from testkit.clio_run import run_clio, system_text
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import ScriptedModel, consolidation_requests, turn_requests
from tests.e2e.test_repl_pty import Spawn, spawn  # noqa: F401  (the pty fixture)

POOL = "the database pool times out under load"
TASK = "why is the DB connection slow?"
FILLER = [
    "the frontend uses tailwind with a custom colour palette in theme.js",
    "release notes are written in docs/changelog.md under an unreleased heading",
    "storybook runs on port 6006 for the component library",
    "the onboarding wizard has five steps defined in onboarding/steps.ts",
    "dark mode is toggled by a class on the html element",
    "icons come from the heroicons package, outline style",
    "the marketing site is a separate astro project in site/",
    "typescript strict mode is on for the web package",
    "keyboard shortcuts are registered in one hook, useShortcuts",
    "the date picker component wraps react-day-picker",
    "eslint runs with the airbnb config",
    "the settings page groups options into account, billing and notifications tabs",
    "toast notifications disappear after four seconds",
    "the font is inter, self-hosted from public/fonts",
    "the sidebar collapses below 768 pixels wide",
    "forms are validated with zod schemas shared with the backend",
    "screenshots for the docs are taken with playwright",
    "the pricing table reads its plans from plans.json",
    "the landing page hero image is served in avif and webp",
    "the help center articles are fetched from the cms at build time",
]
REWORDED = ("deploys go through the staging cluster first", "we always ship to staging before production")
ONE_ID = (
    "the granite service stores its sessions under /var/lib/granite",
    "the cobalt service stores its sessions under /var/lib/cobalt",
)
DECISION = "We decided that the worker pool size stays at 8 from now on."
NEXT = "Write the worker settings."
SEMANTIC_OFF = {"CLIO_SEMANTIC": "0"}


def seed_ranking(project: Path) -> None:
    clock = [1_700_000_000.0]
    store = LtmStore(project / ".clio" / "ltm.json", clock=lambda: clock[0])
    store.add("discovery", fact=POOL)
    clock[0] += 30 * 86400  # a month later: more unrelated entries than the 15 discoveries injected
    for fact in FILLER:
        store.add("discovery", fact=fact)
        clock[0] += 1


@pytest.mark.parametrize(("env", "carried"), [({"CLIO_SEMANTIC": None}, True), (SEMANTIC_OFF, False)])
def test_first_request_carries_the_entry_that_matches_the_task_by_meaning(
    fake_server: FakeServer, project: Path, home: Path, env: dict[str, str | None], carried: bool
) -> None:
    seed_ranking(project)
    fake_server.responder = lambda body: Reply(text="ok")
    r = run_clio(["-p", TASK], server=fake_server, project=project, home=home, env_extra=env)
    assert r.returncode == 0, r.stderr
    (first,) = turn_requests(fake_server, TASK)
    system = system_text(first)
    assert FILLER[-1] in system  # memory is injected either way (the newest entries)
    assert (POOL in system) is carried, system[-2500:]
    assert "semantic recall off" not in r.stderr  # loaded fine, or switched off by the user: silent


@pytest.mark.parametrize(("env", "carried"), [({}, True), ({"CLIO_SEMANTIC": "0"}, False)])
def test_in_the_repl_the_first_request_carries_it_too(
    spawn: Spawn, fake_server: FakeServer, project: Path, env: dict[str, str], carried: bool  # noqa: F811
) -> None:
    seed_ranking(project)
    fake_server.responder = lambda body: Reply(text="Pool answer.")
    term = spawn(env=env)
    term.prompt()  # the table loads in the background from here; the ranking waits for the message
    term.type(TASK)
    term.expect(r"Pool answer\.")
    term.prompt()
    (first,) = turn_requests(fake_server, TASK)
    assert (POOL in system_text(first)) is carried
    term.child.sendeof()
    assert term.wait_exit() == 0


@pytest.fixture
def model() -> ScriptedModel:
    m = ScriptedModel()
    m.on(DECISION, Reply(text="Noted: 8 workers."))
    return m


def entries(project: Path) -> list[dict[str, Any]]:
    data = json.loads((project / ".clio" / "ltm.json").read_text(encoding="utf-8"))
    return list(data["entries"])


def ids_by_fact(project: Path) -> dict[str, str]:
    return {e["fact"]: e["id"] for e in entries(project) if e["type"] == "discovery"}


@pytest.mark.parametrize("env", [{"CLIO_SEMANTIC": None}, SEMANTIC_OFF])
def test_reworded_duplicates_go_to_the_model_and_one_identifier_keeps_facts_apart(
    fake_server: FakeServer, model: ScriptedModel, project: Path, home: Path, env: dict[str, str | None]
) -> None:
    server = fake_server
    server.responder = model
    store = LtmStore(project / ".clio" / "ltm.json")
    for fact in (*REWORDED, *ONE_ID):
        store.add("discovery", fact=fact)
    ids = ids_by_fact(project)
    assert len(ids) == 4  # the words alone merged nothing
    a, b = ids[REWORDED[0]], ids[REWORDED[1]]
    # the model merges the pair if it is asked about it (it answers the same either way)
    pairs = [{"a": a, "b": b, "decision": "merge"}]
    model.consolidation = Reply(text=json.dumps({"entries": [], "pairs": pairs}))

    for text in (DECISION, NEXT):  # the second run reads the first back into memory
        r = run_clio(["-p", text], server=server, project=project, home=home, env_extra=env)
        assert r.returncode == 0, r.stderr
    (asked,) = consolidation_requests(server)
    prompt = str(asked["messages"][-1]["content"])
    listed = prompt.split("may be one fact", 1)[1].split("Reply with one JSON", 1)[0]
    assert ids[ONE_ID[0]] not in listed and ids[ONE_ID[1]] not in listed  # another identifier: not asked
    facts = ids_by_fact(project)
    assert ONE_ID[0] in facts and ONE_ID[1] in facts  # both facts kept
    if env.get("CLIO_SEMANTIC") is None:
        assert f'"{a}"' in listed and f'"{b}"' in listed and REWORDED[1] in listed
        assert REWORDED[0] not in facts and facts[REWORDED[1]] == a  # merged on the model's word: newer wording
        merged = next(e for e in entries(project) if e["id"] == a)
        assert REWORDED[0] in json.dumps(merged.get("history"))  # the older wording kept in its history
    else:
        assert "(none)" in listed  # lexical: the pair is not found, so not asked
        assert REWORDED[0] in facts and REWORDED[1] in facts
