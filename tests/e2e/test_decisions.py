"""Issue 16 end to end: what the user decided survives every trim, through the INSTALLED clio.

A long session in a 6,000-token window against the fake server (testkit/fakeserver.py, the only
test double): the user states a decision, a constraint and a decision they later reverse in the
first turns, then many turns read large modules (each turn trims).  After at least ten trims the
last request's ``<thread_summary>`` still carries the decision and the constraint, which have long
left the window, and the reversed decision is gone from it while its replacement is there.
The scenario helpers are those of tests/e2e/test_context.py (testkit/long_session.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from testkit.clio_run import without_context
from testkit.fakeserver import FakeServer
from testkit.fakeserver_sse import validate_request
from testkit.long_session import (
    SERVER_RATIO,
    Clio,
    Project,
    ScriptedModel,
    Step,
    answer,
    big,
    last_user,
    ok,
    page,
    read,
    rejected,
    shell,
    summary_of,
)

WINDOW = 6000
DECISION = "We will use pgbouncer in transaction mode."
CONSTRAINT = "The public API of src/mod00.py must stay backwards compatible."
EARLIER = "We'll use requests for the HTTP client."
LATER = "Actually, we'll use httpx for the HTTP client."
FILLER = [  # requests that decide nothing: none may show up as established
    "Review {a} for missing-key handling.",
    "Print {c} with cat and page through it.",
    "Use grep to find the callers, then read {a}.",
    "Never mind the warnings, read {a}.",
    "Must we keep the helpers in {a}? Read it first.",
]


def turns(n_filler: int) -> list[tuple[str, str, list[Step]]]:
    out: list[tuple[str, str, list[Step]]] = [
        (
            "d00",
            "Original task: make the config loader in src/mod00.py tolerate missing keys. Read it first.",
            [read("src/mod00.py"), answer("The loader reads keys without defaults.")],
        ),
        ("d01", DECISION, [answer("Noted: pgbouncer in transaction mode.")]),
        ("d02", CONSTRAINT, [read("src/mod01.py"), answer("Noted; I will not change its signatures.")]),
        ("d03", EARLIER, [answer("Noted: requests.")]),
    ]
    for i in range(n_filler):
        a, c = f"src/mod{(i + 2) % 30:02d}.py", big(i + 2)
        text = FILLER[i % len(FILLER)].format(a=a, c=c)
        steps: list[Step] = [shell(f"cat {c}"), page] if "{c}" in FILLER[i % len(FILLER)] else [read(a)]
        out.append((f"f{i:02d}", text, [*steps, answer("Done; nothing to change there.")]))
        if i == 3:  # the reversal, early enough that it too leaves the window
            out.append(("d04", LATER, [answer("Switching to httpx.")]))
    return out


@dataclass
class Run:
    project: Project
    server: FakeServer
    model: ScriptedModel
    requests: list[dict[str, Any]]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    tmp = tmp_path_factory.mktemp("e2e_decisions")
    project = Project(tmp / "proj")
    plan = turns(22)
    model = ScriptedModel({tag: steps for tag, _, steps in plan})
    server = FakeServer(model, chars_per_token=SERVER_RATIO, context_limit=WINDOW, validate=True).start()
    try:
        clio = Clio(project, server, tmp / "home", window=WINDOW)
        for n, (tag, text, _) in enumerate(plan):
            ok(clio(f"[{tag}] {text}", resume=n > 0))
        yield Run(project, server, model, server.chat_requests)
    finally:
        server.stop()


def window_text(body: dict[str, Any]) -> str:
    """The conversation's text: every message but the head and clio's notes in front of the first."""
    return "\n".join(
        without_context(str(m.get("content") or "")) for m in body["messages"] if m.get("role") != "system"
    )


def test_the_session_ran_and_trimmed_many_times(run: Run) -> None:
    assert run.model.problems == []
    assert [validate_request(b) for b in run.requests if validate_request(b)] == []
    assert not any(rejected(run.server, b) for b in run.requests)
    summary = run.project.stm()["summary"]
    assert summary is not None and summary["trims"] >= 10, summary and summary["trims"]


def test_decision_and_constraint_survive_ten_trims(run: Run) -> None:
    last = run.requests[-1]
    text = summary_of(last)
    print("\n" + text)
    assert f"- decision: [d01] {DECISION}" in text
    assert f"- constraint: [d02] {CONSTRAINT}" in text
    # they left the window long ago: the summary is what carries them
    assert DECISION not in window_text(last) and CONSTRAINT not in window_text(last)
    # and every request since the statements were trimmed carried them
    since = [b for b in run.requests if DECISION not in window_text(b) and summary_of(b)]
    first = next(i for i, b in enumerate(run.requests) if b is since[0])
    assert all(DECISION in summary_of(b) and CONSTRAINT in summary_of(b) for b in run.requests[first:])


def test_a_reversed_decision_is_replaced_by_the_newer(run: Run) -> None:
    text = summary_of(run.requests[-1])
    assert f"- decision: [d04] {LATER}" in text
    assert EARLIER not in text  # not in the established list, nor anywhere else in the summary
    assert EARLIER not in window_text(run.requests[-1])
    # while both were only in the summary, the earlier one was there until the later arrived
    had_earlier = [b for b in run.requests if EARLIER in summary_of(b)]
    assert had_earlier and all(LATER not in summary_of(b) for b in had_earlier)


def test_filler_requests_are_not_recorded_as_established(run: Run) -> None:
    summary = run.project.stm()["summary"]
    statements = [item[2] for item in summary["established"]]
    assert statements == [f"[d01] {DECISION}", f"[d02] {CONSTRAINT}", f"[d04] {LATER}"]
    assert last_user(run.requests[-1]).startswith("[f21]")
