"""The environment a question singles out (clio.recall.environments), and the automatic recall's
decision reading it: staging's value is not quoted for a question about production's, nor a
production unit for a question about staging's, by meaning or by the question's own words."""

from __future__ import annotations

import pytest

from clio.recall import auto
from clio.recall.environments import BEFORE_PRODUCTION, PRODUCTION, singled_out, speaks_of
from tests.unit.test_answer_kind import _freqs, _hit


@pytest.mark.parametrize(
    ("question", "env"),
    [
        ("what's the schema registry address in production?", PRODUCTION),
        ("which port does the prod pgbouncer listen on", PRODUCTION),
        ("whats the worker POOL_SIZE on staging?", BEFORE_PRODUCTION),
        ("how many machines does fernly-api-staging run with?", BEFORE_PRODUCTION),
        ("the stg brokers reject our cert again", BEFORE_PRODUCTION),
        # both, or neither: every unit is read
        ("prod is on 2.12, staging too?", None),
        # both named, and the sentence of the first question mark names one: that one is asked
        ("merged to main, it's on staging. whats the deploy-prod tag format again?", PRODUCTION),
        ("what's the schema registry address in prod? I only have the staging one", PRODUCTION),
        ("I only know prod got bumped. what's the sidekiq concurrency on staging? no rush", BEFORE_PRODUCTION),
        ("For the staging Triton, where we upload the models? Is it the same bucket like production?", BEFORE_PRODUCTION),
        ("what's the port; prod or staging? the env example only has one", None),
        # both named, and every mention of one set beside the other: the other is asked
        ("is staging on the same image as prod?", BEFORE_PRODUCTION),
        ("is the staging clickhouse backed up at all, or only prod?", BEFORE_PRODUCTION),
        ("how long do we keep staging backups, same 30 days as in prod or shorter?", BEFORE_PRODUCTION),
        ("what did we set the staging retention to, lower than production?", BEFORE_PRODUCTION),
        ("whats the pgbouncer pool size on prod, not staging", PRODUCTION),
        ("Is production also behind PgBouncer like staging, and what port does the prod database use?", PRODUCTION),
        ("the schema registry address the producers use in production rather than in staging?", PRODUCTION),
        ("I'd like staging to mirror prod, what's the image?", None),  # a wish, not a comparison
        ("same pool size on staging as prod? and what is prod's timeout?", None),  # prod asked too
        ("prod and staging differ somewhere, no idea where", None),  # no question mark
        ("which port does the database listen on?", None),
        ("what did the product team decide about the production line names?", PRODUCTION),
        ("the products page is slow", None),  # "products" is not "prod"
        ("which stage of the pipeline builds the wheels?", None),  # a pipeline's stage
        # the environments before production are one kind: "pre-prod", a test or demo environment
        ("whats the db host on pre-prod?", BEFORE_PRODUCTION),
        ("is preprod on the new image yet?", BEFORE_PRODUCTION),
        ("what port does the bank's SFTP use in their test environment?", BEFORE_PRODUCTION),
        ("whats the sftp port for fjordbanks test env", BEFORE_PRODUCTION),
        ("what SCOUT_PREFIX does the demo env use", BEFORE_PRODUCTION),
        ("which keys go in the Adyen sandbox account?", BEFORE_PRODUCTION),
        ("is the search index prefix different on the demo?", BEFORE_PRODUCTION),  # at a clause's end
        ("which Keycloak client does the scanner app use on UAT?", BEFORE_PRODUCTION),
        ("how do I get it from the test cluster out to production?", None),  # both
        # a test of the code, a local setup or a project is no environment
        ("how was the test db isolation set up for pnpm test:e2e?", None),
        ("creating the dev database fails, which port should it hit?", None),
        ("which test suite covers the dunning job?", None),
        ("Just unboxed a workstation for the sandbox project. Where do I fetch the photos from?", None),
        ("who gives the demo to the sales team on friday?", None),
        # a follow-up read with its task: the follow-up's own environment first
        ("and in production?\nwhat's the schema registry address in staging?", PRODUCTION),
        ("and the port?\nwhat's the schema registry address in staging?", BEFORE_PRODUCTION),
        ("prod and staging both?\nwhat's the schema registry address in staging?", None),
    ],
)
def test_the_environment_a_question_singles_out(question: str, env: str | None) -> None:
    assert singled_out(question) == env


@pytest.mark.parametrize(
    ("env", "unit", "speaks"),
    [
        (BEFORE_PRODUCTION, "In staging the producers use http://schema-registry.data-stg.svc:8081", True),
        (BEFORE_PRODUCTION, "▸ read file deploy/helm/values-staging.yaml\nPOOL_SIZE: 12", True),
        (BEFORE_PRODUCTION, "RDS keeps the production backups 14 days", False),
        (BEFORE_PRODUCTION, "the database listens on 6543 behind pgbouncer", False),  # no environment: production's, as a rule
        (PRODUCTION, "the database listens on 6543 behind pgbouncer", True),
        (PRODUCTION, "Staging talks to postgres through pgbouncer on 6432", False),
        (PRODUCTION, "staging uses 6432, production 6543", True),
        (None, "Staging talks to postgres through pgbouncer on 6432", True),
        # before production, any of its environments: which one is the reader's to judge
        (BEFORE_PRODUCTION, "the pre-prod database is reached through the bastion on 5433", True),
        (BEFORE_PRODUCTION, "Fjordbank's test gateway is b2b-sftp-test.fjordbank.no on port 2222", True),
        (BEFORE_PRODUCTION, "SCOUT_PREFIX=demo_ on the demo box", False),  # "demo box": no word of deployment
        (BEFORE_PRODUCTION, "SCOUT_PREFIX=demo_ on the demo environment", True),
        (BEFORE_PRODUCTION, "the SFTP upload goes to sftp.fjordbank.no on port 22 (production)", False),
        (BEFORE_PRODUCTION, "ran the unit tests against the test db, all green", False),  # the test suite's
        # against production only staging counts: a test environment beside its value is a note
        (PRODUCTION, "port 22 in production; their test environment has its own gateway", True),
        (PRODUCTION, "the sandbox account uses the test keys from 1Password", True),
    ],
)
def test_whether_a_unit_speaks_of_it(env: str | None, unit: str, speaks: bool) -> None:
    assert speaks_of(env, unit) is speaks


STAGING_ANSWER = "In staging the schema registry address is http://schema-registry.data-stg.svc:8081."
PROD_ANSWER = "Production's schema registry is http://schema-registry.data.svc:8081, behind the mesh."


def test_the_other_environments_unit_is_not_quoted_by_meaning_or_words() -> None:
    near = lambda query, units: [0.79] * len(units)  # noqa: E731  (the encoder reads both as near)
    asked = "what's the schema registry address in production?"
    hits = auto.score_hits(asked, [_hit(STAGING_ANSWER, 3), _hit(PROD_ANSWER, 7)], None, _freqs, near)
    assert [h.elsewhere for h in hits] == [True, False]
    assert [h.relevant for h in hits] == [False, True]
    assert "about another environment than the one asked" in hits[0].why()
    words_only = auto.score_hits(asked, [_hit(STAGING_ANSWER, 3)], None, _freqs, None)
    assert words_only[0].score >= 0.65 and not words_only[0].relevant  # every word held: still not
    # staging's own question gets staging's unit, not production's
    staging = auto.score_hits("schema registry address in staging?", [_hit(STAGING_ANSWER, 3), _hit(PROD_ANSWER, 7)], None, _freqs, near)
    assert [h.relevant for h in staging] == [True, False]
    # a test environment's question gets neither production's unit nor one that names none
    test_env = auto.score_hits(
        "what's the schema registry address in the test environment?", [_hit(STAGING_ANSWER, 3), _hit(PROD_ANSWER, 7)], None, _freqs, near
    )
    assert [h.relevant for h in test_env] == [True, False]
    # a question that names no environment reads both
    either = auto.score_hits("what's the schema registry address?", [_hit(STAGING_ANSWER, 3), _hit(PROD_ANSWER, 7)], None, _freqs, near)
    assert all(h.relevant for h in either)
    # production set beside staging: staging's question, production's unit not quoted
    beside = auto.score_hits(
        "is the staging schema registry address the same as prod?", [_hit(STAGING_ANSWER, 3), _hit(PROD_ANSWER, 7)], None, _freqs, near
    )
    assert [h.relevant for h in beside] == [True, False]
