"""A question for a duration, a time of day, a count, a port or a version (clio.recall.answer_kind),
and the automatic recall's decision reading it: a unit on the question's topic that holds no such
answer is not quoted, by meaning or by the question's own words."""

from __future__ import annotations

from typing import Any

import pytest

from clio.recall import auto
from clio.recall.answer_kind import (
    CLOCK,
    COUNT,
    DURATION,
    EMAIL,
    FREQUENCY,
    HOST,
    IP,
    PHONE,
    PORT,
    URL,
    VERSION,
    about_a_tool,
    asked_for,
    holds,
)


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("how long are the production database snapshots kept?", DURATION),
        ("for how long does adyen keep retrying the notifications?", DURATION),
        ("how often does the ERP import run", FREQUENCY),
        ("up to how many hours before the appointment can a patient cancel?", DURATION),
        ("what time at night does the sitemap get regenerated?", CLOCK),
        ("at what hour do the backups start", CLOCK),
        ("how many old releases does envoyer keep?", COUNT),
        ("how much memory does the worker get", COUNT),
        ("when does the dunning job run?", None),  # a day, an event, a time: any answer
        ("after what time do the temp uploads get deleted", FREQUENCY),  # a duration or a time
        # a value the question names: "what"/"which" before it, or a short noun phrase asked
        ("which port does the staging database listen on?", PORT),
        ("grafana's on which port again", PORT),
        ("where do i point psql, host and port?", PORT),
        ("local debug port for the api?", PORT),
        ("which node version do we build with?", VERSION),
        ("mlflow server version?", VERSION),
        ("what's the retention on the seq logs in prod?", DURATION),
        ("whats the lambda timeout set to", DURATION),
        ("ttl on the session cookie?", DURATION),
        ("expiry on the tls certs from our internal CA?", DURATION),
        ("what's the max-age on the CORS preflight", DURATION),
        # the same words in a question of another kind, or in a statement
        ("is the redis port exposed publicly?", None),
        ("why did we bump the timeout on the payment client?", None),
        ("how do I change the ttl on the cache?", None),
        ("how do I find out what version of a helm chart is deployed", None),
        ("where do i find which version of the app a crash report came from", None),
        ("the port forward keeps dropping, any idea?", None),
        ("what's wrong with the port mapping in the compose file?", None),  # about it, not for it
        ("what's the reason we're stuck on an old version of the elastic client?", None),
        ("the internal test version I sideloaded shows real customer data", None),
        ("consul ui port", None),  # no question asked: not read (a noun phrase or an order?)
        ("how do we deploy to staging", None),
        ("the producer logs are too verbose at info level", None),
        # a value with a shape of its own: where a thing is reached, how someone is
        ("whats the schema registry url the producers use in staging again", URL),
        ("what's the JDBC URL for the local oracle container?", URL),
        ("mlflow tracking uri?", URL),
        ("what's the hostname of the production mqtt broker?", HOST),
        ("what host/port does the bank SFTP use in the test environment?", HOST),
        ("which domain do the password reset links point at", HOST),
        ("what's worker-01's public IP? the partner wants it for their whitelist", IP),
        ("which ip address is the printer on", IP),
        ("whats rob's phone number at the vendor?", PHONE),
        ("which email do the dunning alerts go to?", EMAIL),
        # the noun qualifying another: the other is asked
        ("which host port is the postgis container mapped to?", PORT),
        ("where do i point psql, host and port?", PORT),
        ("what email template do we send for a failed payment?", None),
        ("which url format does the partner api expect", None),
        ("what ip range does the office vpn hand out", None),
        # the same words, not asked for
        ("why did the hostname change break the certs?", None),
        ("who has the on-call phone this week?", None),
        ("the url in the reset email is wrong", None),
    ],
)
def test_the_kind_of_answer_a_question_asks_for(question: str, kind: str | None) -> None:
    assert asked_for(question) == kind


@pytest.mark.parametrize(
    ("text", "kind", "held"),
    [
        ("We keep raw events in ClickHouse for 90 days only.", DURATION, True),
        ("tokens expire after 15 min", DURATION, True),
        ("keep them a week, then a fortnight for audits", DURATION, True),
        ("prune with --keep-within 30d", DURATION, True),
        ("retention.ms=604800000", DURATION, True),  # a config key's bare value
        ('"maxAge": 86400', DURATION, True),
        ("CACHE_TTL_SECONDS=300", DURATION, True),
        ("P30D", DURATION, True),
        ("kept forever, gzipped", DURATION, True),
        ("0 3 * * * /usr/local/bin/backup", DURATION, False),  # a schedule, not a duration
        ("0 3 * * * /usr/local/bin/backup", FREQUENCY, True),
        ('schedule: "*/15 * * * *"', FREQUENCY, True),
        ("OnCalendar=*-*-* 00/4:00:00", FREQUENCY, True),
        ("it runs every day after the backup", FREQUENCY, True),
        ("twice a week, on the quiet days", FREQUENCY, True),
        ("the janitor deletes orphaned uploads", FREQUENCY, False),
        ("2 files changed, 14 insertions(+), 3 deletions(-)", DURATION, False),
        ("Two volumes, one per machine; vol_4y5n0e8d2kw1x9jr is attached to 3d8d9e1b294e89", DURATION, False),
        ("as and a day", DURATION, True),
        ("as and", DURATION, False),  # no number read into "a" + "s"
        ("the scheduler starts it at 02:30 London time", CLOCK, True),
        ("every night at 3am", CLOCK, True),
        ("0 3 * * * /usr/local/bin/backup", CLOCK, True),
        ("regenerated every hour on one server", CLOCK, False),
        ("it goes out at 8 in the morning Eastern", CLOCK, True),
        ("queued at half past ten every Tuesday", CLOCK, True),
        ("beat: crontab(hour=7, minute=30)", CLOCK, True),
        ("ORDER_CUTOFF_HOUR=14", CLOCK, True),
        ('schedule_expression = "cron(0 18 ? * MON-FRI *)"', CLOCK, True),
        ("2 files changed, 14 insertions(+), 3 deletions(-)", CLOCK, False),  # five numbers, not a cron line
        ("the report job mails finance the cost export", CLOCK, False),
        ("envoyer keeps 5 releases", COUNT, True),
        ("it keeps three releases", COUNT, True),
        ("it keeps the old releases around", COUNT, False),
        ("#define WDT_TIMEOUT_MS 4000", DURATION, True),  # a key and its value, spaced
        ("access-control-max-age: 86400", DURATION, True),
        (".connectTimeout(10, TimeUnit.SECONDS)", DURATION, True),
        ("api.shopfront.io.\t60\tIN\tA\t52.18.44.10", DURATION, True),  # a DNS record's ttl
        ("we won 5 in a row", DURATION, False),  # not a DNS record: the record's words are upper case
        ("ports:\n  - '5433:5432'", PORT, True),
        ("psql postgres://app@db.internal:6432/app", PORT, True),
        ("the broker has 3 replicas and 6 partitions", PORT, False),
        ("kafka 3.6 on the brokers", PORT, False),  # a version, not a port
        ("We build with node 20 (see .nvmrc).", VERSION, True),
        ('"spring-boot-starter-parent" <version>3.2.1</version>', VERSION, True),
        ("FROM python:slim", VERSION, False),
        ("pinned to the latest LTS", VERSION, True),
        ("the upgrade is tracked in the billing board; the blocker is paper_trail", VERSION, False),
        ("schema registry: http://schema-registry.stg.internal:8081", URL, True),
        ("spring.datasource.url=jdbc:oracle:thin:@localhost:1521/FREEPDB1", URL, True),
        ("point it at mlflow.internal/ and log there", URL, True),
        ("the registry runs in staging, behind the ingress", URL, False),
        ("Readiness: drop rabbit and keep it visible in /actuator/health.", URL, False),  # a path alone
        ("broker: mqtt.prod.thermo.example", HOST, True),
        ("ssh ash-worker-01 and tail the log", HOST, True),
        ("connect to the broker on the prod box", HOST, False),
        ("they whitelisted 203.0.113.7 for us", IP, True),
        ("allow 2001:db8::42 too", IP, True),
        ("daemon RUNNING pid 2311, uptime 0:04:12", IP, False),  # a clock, not IPv6
        ("kronberg only whitelisted worker-01; keep the erp job off worker-02", IP, False),
        ("call him on +49 30 1234 5678", PHONE, True),
        ("(555) 010-4477 is the support line", PHONE, True),
        ("open a ticket in their portal, nobody answers it", PHONE, False),
        ("alerts go to billing-alerts@example.com", EMAIL, True),
        ("ping @dana in #ops", EMAIL, True),
        ("alerts go to the billing channel", EMAIL, False),
        ("anything at all", None, True),
    ],
)
def test_whether_a_text_could_state_that_answer(text: str, kind: str | None, held: bool) -> None:
    assert holds(kind, text) is held


def _hit(text: str, seq: int) -> dict[str, Any]:
    return {"session_id": "s1", "session_name": "ops", "date": "2026-11-01 10:00", "role": "assistant", "seq": seq, "text": text}


def _freqs(words: list[str]) -> tuple[dict[str, int], int]:
    return {w: 3 for w in words}, 1000


NEAR = "I took an on-demand snapshot of the primary's volume before the plants migration."
ANSWER = "Fly keeps the automatic volume snapshots 5 days; on-demand ones until you delete them."


def test_by_meaning_a_unit_is_quoted_for_a_duration_question_only_if_it_could_state_one() -> None:
    question = "how long are the production database snapshots kept?"
    same_cosine = lambda query, units: [0.6] * len(units)  # noqa: E731  (the encoder reads both as near)
    hits = auto.score_hits(question, [_hit(NEAR, 3), _hit(ANSWER, 7)], None, _freqs, same_cosine)
    assert [h.typed for h in hits] == [False, True]
    assert [h.relevant for h in hits] == [False, True]
    assert "holds no answer of the kind asked" in hits[0].why()
    # another kind of question is read as before: both near, both quoted
    other = auto.score_hits("what did we snapshot before the migration?", [_hit(NEAR, 3), _hit(ANSWER, 7)], None, _freqs, same_cosine)
    assert all(h.typed and h.relevant for h in other)


def test_nor_by_the_questions_own_words() -> None:
    """The question's own words do not bring it either: a unit on its topic that could not state the
    answer is the near miss, found by words or by meaning ("what time at night does the sitemap get
    regenerated?" beside the session that built the product feed)."""
    said = "the dunning retries are kept in the dunning_retries table, one row per attempt"
    hits = auto.score_hits("how long are dunning retries kept", [_hit(said, 3)], None, _freqs, None)
    assert hits[0].score >= 0.5 and not hits[0].typed and not hits[0].relevant
    stated = "dunning retries are kept 30 days, then the invoice is written off"
    hits = auto.score_hits("how long are dunning retries kept", [_hit(stated, 3)], None, _freqs, None)
    assert hits[0].typed and hits[0].relevant
    # a port asked for by name: the unit that states one, not the one that only names the service
    named = ["the staging redis runs on the ops box, in docker", "staging redis: redis://ops-1:6380/0"]
    hits = auto.score_hits("which port is the staging redis on?", [_hit(t, i) for i, t in enumerate(named)], None, _freqs, None)
    assert [h.relevant for h in hits] == [False, True]


@pytest.mark.parametrize(
    ("question", "general"),
    [
        # how a library, a standard or a tool behaves: its documentation answers it
        ("does GTFS-realtime have a standard field for crowding per car?", True),
        ("is there a built-in way in liveview to throttle re-renders?", True),
        ("in oban, if i insert a unique job while an identical one runs, does the insert fail? how do i tell", True),
        ("django: does select_related work with reverse foreign keys", True),
        ("whats the difference between useEffect and useLayoutEffect", True),
        ("what's the default transaction isolation level in sql server", True),
        ("what does --no-ff do in git merge", True),
        ("is java's SimpleDateFormat thread-safe?", True),
        ("for the export job: does python's csv module handle embedded newlines inside quoted fields?", True),
        # what a tool does unless told: its documentation
        ("does celery retry a failed task by default?", True),
        ("does sqlalchemy's session expire loaded objects on commit by default", True),
        ("will pg_dump include the large objects by default?", True),
        # the project's own: its past sessions may hold the answer
        ("does our api have a rate limit for partners?", False),
        ("does the ledger service support multi-currency yet?", False),
        ("is there a built-in way in our admin panel to impersonate a user?", False),
        ("in the routing engine, if a stop has no coordinates does it skip the stop?", False),
        ("whats the difference between the staging and preprod clusters again", False),
        ("what's the default page size on the orders endpoint?", False),
        ("what port does fleet-tracker expose in the docker compose setup", False),
        ("how does harbor-sync handle duplicate shipment ids", False),  # a bare name may be the project's
        ("is there a max size on our side?", False),
        ("ops asks: how long can a bus go without phoning home before it disappears from the map?", False),
        ("in prod, is the redis cache shared between the two apps?", False),  # the project's places
        ("does staging have the new index yet?", False),
        ("we're on postgres 15, does it support MERGE?", False),  # "we": read as the project's (cautious)
        ("does our importer skip blank rows by default?", False),
        ("does the worker retry by default?", False),
        ("is compression on by default in prod?", False),  # a setting of the project's
    ],
)
def test_a_question_about_how_a_tool_behaves(question: str, general: bool) -> None:
    assert about_a_tool(question) is general


def test_such_a_question_is_quoted_by_its_own_words_only() -> None:
    """A session that used the library is the near miss of a question about what the library does:
    the encoder's cosine no longer quotes it; the question's own words still do."""
    used = "Made the nightly import an Oban unique job (unique: [period: 3600]) so a retry does not run it twice."
    near = lambda query, units: [0.6] * len(units)  # noqa: E731  (the encoder reads both as near)
    question = "in oban, if i insert a unique job while an identical one is executing, does the insert fail?"
    hits = auto.score_hits(question, [_hit(used, 3)], None, _freqs, near)
    assert hits[0].general and hits[0].score < 0.65 and not hits[0].relevant
    ours = auto.score_hits("how did we make the nightly import a unique job?", [_hit(used, 3)], None, _freqs, near)
    assert not ours[0].general and ours[0].relevant
    words = auto.score_hits("does oban have unique import jobs with a period?", [_hit(used, 3)], None, _freqs, near)
    assert words[0].general and words[0].score >= 0.65 and words[0].relevant
