"""Whether a read-back's digest says something of its session (clio.memory.digest_check), and the
read-back setting aside one that does not (clio.app.consolidate), with real stores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clio.app.consolidate import Consolidator
from clio.memory.digest_check import grounded
from clio.memory.ltm_store import LtmStore
from clio.messages import make
from clio.prompts import load_prompt
from clio.safety.redact import Redactor
from clio.store.sessions import SessionStore

PROMPT = load_prompt("consolidate.md")
SESSION = [
    make("user", "staging can't reach postgres after the deploy, check deploy/staging/values.yaml"),
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "file_operations", "arguments": json.dumps({"operation": "read_file", "path": "deploy/staging/values.yaml"})}},
    ]},  # fmt: skip
    {"role": "tool", "tool_call_id": "c1", "content": "db:\n  host: pg-staging.internal\n  port: 5432"},
    make("assistant", "Postgres sits behind PgBouncer there: I set the port to 6432."),
    make("user", "thanks, that works"),
    make("assistant", "Good."),
]
GOOD = (
    "Staging reached Postgres on 5432 but PgBouncer on pg-staging.internal listens on 6432; "
    "values.yaml fixed. Symptoms / other words: the test environment cannot reach its database."
)


@pytest.mark.parametrize(
    "digest",
    [
        GOOD,
        "PgBouncer port 6432 for staging.",  # short, in the session's words
        "The values.yaml of staging now says 6432.",  # a name only a tool call and its result said
    ],
)
def test_a_digest_in_the_sessions_own_words_is_kept(digest: str) -> None:
    assert grounded(digest, SESSION, PROMPT)


@pytest.mark.parametrize(
    "digest",
    [
        "Thank you for your help! I'm glad I could assist you. If you have any other questions, feel free to ask.",
        "You're welcome! If you have any more questions or need further assistance, feel free to ask.",
        # the prompt's own instructions, copied
        "The session settled: decisions and their reasons, causes of bugs and their fixes, values, names.",
        "Staging port 6432. Symptoms / other words: how someone might ask about it later in other words.",
        "Symptoms: How do I ask about this later in different words?",
        "The session ended after the deploy.",  # words of the session, none of them its own
        "Kafka consumer lag fixed by raising max.poll.records to 500.",  # another session's, or made up
    ],
)
def test_a_pleasantry_the_prompts_words_or_nothing_of_the_session_is_not(digest: str) -> None:
    assert not grounded(digest, SESSION, PROMPT)


def test_the_read_back_sets_such_a_digest_aside_and_keeps_the_rest(tmp_path: Path) -> None:
    ltm_store, sessions = LtmStore(tmp_path / "ltm.json"), SessionStore(tmp_path / "sessions")
    s = sessions.create("m")
    for m in SESSION:
        s.append(m)
    asked: list[str] = []

    def model(reply: dict[str, Any]) -> Any:
        def ask(prompt: str, max_tokens: int) -> str:
            asked.append(prompt)
            return json.dumps(reply)

        return ask

    entry = {"type": "discovery", "fact": "staging Postgres is reached through PgBouncer on port 6432"}
    pleasantry = "You're welcome! I'm glad I could help. If you have any more questions, feel free to ask."
    out = Consolidator(ltm_store, sessions, Redactor("standard"), max_chars=lambda: 8_000).run(
        s, model({"entries": [entry], "digest": pleasantry})
    )
    assert asked and out.digest_aside and not out.digest
    assert "set its digest aside (it said nothing of the session)" in out.describe()
    assert sessions.info(s.id).digests == [] and sessions.info(s.id).consolidated == len(SESSION)
    assert entry["fact"] in [e.fields.get("fact") for e in ltm_store.all()]  # the entries are kept

    s.append(make("user", "and the worker queue uses Redis db 2, note that"))
    s.append(make("assistant", "Noted: the worker queue is on Redis db 2."))
    out = Consolidator(ltm_store, sessions, Redactor("standard"), max_chars=lambda: 8_000).run(
        s, model({"entries": [], "digest": "Worker queue on Redis db 2. Symptoms / other words: background jobs broker."}), force=True
    )
    assert out.digest and not out.digest_aside
    assert [d.text for d in sessions.info(s.id).digests] == ["Worker queue on Redis db 2. Symptoms / other words: background jobs broker."]
    s.close()
