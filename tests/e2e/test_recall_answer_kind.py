"""End to end, issue 32: a question for a duration, a port or a phone number is not given a unit on its topic that
states none (clio.recall.answer_kind), through the installed clio, the fake server and the user's
encoder helper (which does a one-shot run's recall): "how long are the snapshots kept?" beside the
session that took one gets no block, where a question about that session itself still gets it, and
a duration stated in the archive is brought back; "which port is the staging redis on?" beside the
session that set that redis up, in the same words, gets no block, and a port the archive states is
brought back; likewise a phone number asked beside the note that names the person, and a URL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clio.recall.encoder_readiness import installed
from testkit.fakeserver import Reply
from testkit.scripted import latest_user
from tests.e2e.test_recall_encoder import OTHER, asked_before

pytestmark = pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")

SNAPSHOT_ASKED = "before I run the big plants migration on prod, how do i take a snapshot of the production db"
SNAPSHOT_TAKEN = (
    "Two volumes, one per Postgres machine; vol_4y5n0e8d2kw1x9jr is attached to the current primary. "
    "I took an on-demand snapshot of that one: fly volumes snapshots create vol_4y5n0e8d2kw1x9jr."
)
TOKEN_ASKED = "the mobile app logs users out while they are using it, what is going on with the session tokens"
TOKEN_SAID = "Access tokens are signed with the rotating key and expire after 15 min; the app refreshes them on a 401."
REDIS_ASKED = "set up a staging redis for the queue workers on the ops box"
REDIS_SAID = "Started the staging redis in docker on ops-1 with appendonly on; the queue workers read REDIS_URL from the env."
OBAN_ASKED = "make the nightly stop import an oban unique job so that a retry never runs it twice"
OBAN_SAID = (
    "Done: Arrivals.Workers.NightlyImport now declares unique: [period: 3600, states: [:available, "
    ":scheduled, :executing]], so inserting it again while one runs returns the existing job."
)
EXPORTER_ASKED = "add a prometheus exporter to the billing api"
EXPORTER_SAID = "Added yabeda-prometheus; the exporter listens on 9394 on every api host, path /metrics."

CONTACT_ASKED = "who is our contact at the avl vendor when their realtime feed breaks?"
CONTACT_SAID = (
    "Rob Kellerman at Orbitrak runs their gateway. Tickets in their support portal go nowhere; "
    "mail him directly and cc the dispatch lead, he answers within a day."
)
REGISTRY_ASKED = "the producers in staging cannot reach the schema registry, where do they read its address from?"
REGISTRY_SAID = (
    "From SCHEMA_REGISTRY_URL in deploy/staging.env: http://schema-registry.stg.internal:8081. "
    "The staging producers had the old value baked into the image."
)


def responder(body: dict[str, Any]) -> Reply:
    text, _ = latest_user(body)
    if text.startswith(SNAPSHOT_ASKED):
        return Reply(text=SNAPSHOT_TAKEN)
    if text.startswith(TOKEN_ASKED):
        return Reply(text=TOKEN_SAID)
    if text.startswith(REDIS_ASKED):
        return Reply(text=REDIS_SAID)
    if text.startswith(OBAN_ASKED):
        return Reply(text=OBAN_SAID)
    if text.startswith(EXPORTER_ASKED):
        return Reply(text=EXPORTER_SAID)
    if text.startswith(CONTACT_ASKED):
        return Reply(text=CONTACT_SAID)
    if text.startswith(REGISTRY_ASKED):
        return Reply(text=REGISTRY_SAID)
    return Reply(text="Done.")


def test_a_question_for_a_duration_or_a_port_is_quoted_only_what_could_state_one(tmp_path: Path) -> None:
    asked = (SNAPSHOT_ASKED, TOKEN_ASKED, REDIS_ASKED, EXPORTER_ASKED, OBAN_ASKED, *OTHER)
    with asked_before(tmp_path, responder, asked) as clio:
        # about the session itself: quoted (the topic is the same as the next question's)
        about = clio("how do I snapshot the production database volume?")
        assert "vol_4y5n0e8d2kw1x9jr" in about, about
        # the same topic, asked for a duration it never stated: no block
        kept = clio("how long are the production database snapshots kept?")
        assert "<recalled_context>" not in kept, kept
        # a duration the archive states is brought back for a question for one, asked in other words
        lasts = clio("how long is a login token valid in the app before it has to be renewed?")
        assert "15 min" in lasts, lasts
        # the question's own words found the redis session, which never said the port: no block
        redis = clio("which port is the staging redis for the queue workers on?")
        assert "<recalled_context>" not in redis, redis
        # about that session otherwise: quoted
        how = clio("how did we set up the staging redis for the queue workers?")
        assert "ops-1" in how, how
        # a port the archive states is brought back for a question for one
        port = clio("which port does the prometheus exporter of the billing api listen on?")
        assert "9394" in port, port
        # a question about what a library does in general: the session that used it is no answer
        general = clio("in oban, if i enqueue a job while an identical one is still executing, does it fail or hand back the existing one?")
        assert "<recalled_context>" not in general, general
        # the project's own use of it, asked in other words: brought back
        ours = clio("can the nightly stop import end up running twice when it is retried?")
        assert "unique: [period: 3600" in ours, ours


def test_a_question_for_a_phone_number_or_a_url_is_quoted_only_what_could_state_one(tmp_path: Path) -> None:
    with asked_before(tmp_path, responder, (CONTACT_ASKED, REGISTRY_ASKED, *OTHER)) as clio:
        # the session about the person, which never gave a number: no block for his number
        phone = clio("whats rob kellerman's phone number at orbitrak?")
        assert "<recalled_context>" not in phone, phone
        # about that session otherwise: quoted
        who = clio("who do I contact at orbitrak when the avl feed breaks?")
        assert "Kellerman" in who, who
        # a URL the archive states is brought back for a question for one
        url = clio("what's the schema registry url for the staging producers again?")
        assert "schema-registry.stg.internal:8081" in url, url
