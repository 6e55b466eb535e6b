"""A remark (clio.recall.remarks): a message that asks nothing and reports no trouble tells the
model where things stand; the automatic recall does not search for it. A question anywhere in the
message, or a mark of trouble, keeps it searched."""

from __future__ import annotations

import pytest

from clio.recall import auto_turn, relevance, remarks


@pytest.mark.parametrize(
    "text",
    [
        "deploy's out, watching fly logs for a bit",
        "priya approved the DHL mapping PR, merging after lunch",
        "kamal deploy running, grabbing coffee",
        "helm upgrade on staging done, watching grafana for a bit",
        "ok priya signed the new scratch definition, moving on",
        "flashing the bench unit now, back in 5",
        "the producer logs are too verbose at info level",  # an opinion: no trouble reported
        "dana approved it btw",  # two own words about the moment
        "it segfaults",  # likewise: the thing at hand
        "hm still broken on my end",
        # a state come back is no trouble
        "ci is green again, merging the billing PR",
        "integration tests passing again, thanks. lunch",
        # opened as news, asking nothing, the news itself naming nothing gone wrong
        "fyi im moving the reminders scheduler over to bullmq later today so pls dont touch apps/api/src/reminders",
        "heads up tom is resizing ash-worker-01 tonight so horizon will be down for ten minutes",
        "Heads up: I'm splitting the invoice PDF rendering out of billing/pdf.py, don't touch it",
        "just so you know, the finance team reviews the invoice layout next week, but no rush on our side",
        "PSA: the staging certs rotate on friday",
        # news whose question words sit inside its clauses, asking nothing (stop 96)
        "fyi I'm restarting the staging workers at noon when the queue is empty, so expect a gap in the dashboards",
        "heads up, I turned the nightly export off for tonight, so if anyone asks why the report is missing, that's on purpose",
        "just so you know, I'm offline tomorrow, so ping dana if anyone needs to know where the release notes live",
        # more openings of news, and "just so you know" before a question word of its own (stop 97)
        "For context, the data team is relabelling the images from the line where the new camera went in",
        "for context on what I'm doing this week: I'm reading the wallet code before I change anything, so bear with me",
        "context: I'm pairing with dana on the billing export today, she decides what we ship",
        "Background - the mobile team decides how the push service works now, we only consume its events",
        "fwiw the admin page felt sluggish this morning but i think it was my vpn, just flagging",
        "Just so you know where I'm at: I'll be on the claim timeline feature for the rest of the week",
        "just so you know what I changed: the retry moved into the client and the worker only logs now",
    ],
)
def test_a_remark(text: str) -> None:
    assert remarks.is_remark(text, relevance.own_words(text))
    assert auto_turn.plan(text, text) == ("", auto_turn.A_REMARK)


@pytest.mark.parametrize(
    "text",
    [
        # asked anywhere: a question mark, a question word, an auxiliary leading a clause
        "merged to main and staging has it. how do i trigger the prod deploy",
        "a clinic manager asks what's the earliest time patients get our nudges",
        "dana approved it, is the rate limit live now",
        "remind me the naming convention for prisma models",
        # trouble: a failure, a negation, again, still, an error's name, an HTTP status, a report
        "the enricher consumer group is lagging on events.raw",
        "resuming from last.ckpt resets the learning rate warmup",
        "the internal test build I sideloaded shows real customer data, it should point at the test backend",
        "a customer says the parcel page claims it arrived two hours after the courier handed it over",
        "devices reboot with TG1WDT_SYS_RST after the wifi drops",
        "partner api answers 429 since the tier change",
        "checkout throws InvalidSignatureError on the new webhook secret",
        "users keep getting logged out in prod",
        "the nightly export is failing again",
        "green again but the e2e job still flakes",
        # short: a terse ask without a question mark is left to the rules before
        "staging db port",
        "the dunning job",
        # a noun phrase, whatever its length, may be a terse ask
        "[recall] staging database port",
        "staging database port for pgbouncer",
        "the dunning job schedule in celery beat",
        # news that asks, or whose news is trouble: the archive may hold its answer
        "fyi the deploy went out fine, btw what was the flag for the canary",
        "heads up, the nightly job failed again, what fixed it last time",
        "heads up, prod is down again",
        "fyi the invoice sync failed twice last night",
        "heads up: checkout throws InvalidSignatureError since the rotation",
        "fyibar keeps timing out on staging",  # not "fyi"
        # news with a question: a question word or an auxiliary leading a clause, a question mark
        "fyi, what port does the staging redis use",
        "heads up the release is out, and which flag did we use for the canary",
        "fyi the cache is warm. is the purge command still the same",
        "fyi the cache is warm. remind me the purge command",
        "heads up the release is out when you get a minute?",
        # the new openings ask, or report trouble, as news does (stop 97)
        "for context, what port does the staging redis use",
        "context: the invoice sync failed again last night, what fixed it last time",
        "fwiw the nightly export is still failing on staging",
        "just so you know where the staging db lives?",
        "background jobs keep failing on the worker since the deploy",  # "background" opens nothing here
        "contextvars leak between requests in the async handler",
    ],
)
def test_not_a_remark(text: str) -> None:
    assert not remarks.is_remark(text, relevance.own_words(text))


def test_an_order_read_as_a_remark_is_told_as_an_order() -> None:
    """Neither a question nor trouble: not searched, and /context says it is an order."""
    assert auto_turn.plan("please bump the staging database port to 6544", "") == ("", auto_turn.AN_ORDER)


def test_a_short_follow_up_is_still_read_with_its_task() -> None:
    """In the REPL a follow-up of few own words is searched with its task, as before."""
    query, why = auto_turn.plan("dana approved it btw", "which port does the staging database use?")
    assert why == "" and query.startswith("dana approved it btw\n")


@pytest.mark.parametrize(
    "text",
    [
        "I'm reworking the checkout form this afternoon, so please keep your hands off web/checkout.tsx for now",
        "tom is on the ledger migration until friday, so don't touch db/migrations and hold off on schema changes",
        "keep the PR small please, only the export changes, no drive-by refactors",
        "Today I finish the webhook retries. Keep the existing specs green and leave the Stripe client alone.",
        "pairing with ana on the importer this week; ping me first before you change anything under importer/",
        "dont merge anything into release/2.3 till QA signs off, if the smoke tests fail just note it",
        "I'm on the importer all week, so I'll keep the integration tests on the real broker; dont touch RabbitConfig",
        "please no new dependencies in the api package, we want to keep the lockfile as it is",
        "rerun the unit tests when he pushes the fix, but don't touch the overtime calculator",  # "when": a condition
        # stop 96: more of their forms
        "no schema changes this week, the DBA reviews the migration plan on thursday",
        "keep the billing refactor out of this PR, it goes in its own branch",
        "let's keep the mobile changes separate from the api work from now on",
        "focus only on the export endpoint today, the admin screens can wait",
        "I don't want anyone touching the payments module until the audit is done",
        "small PR please, no dependency bumps and no formatting sweeps over the SQL files",
    ],
)
def test_ground_rules_are_a_remark(text: str) -> None:
    """Ground rules for the work (what not to touch, what to keep as it is, when to ask first)
    ask nothing the archive answers, whatever trouble their conditions name: not searched."""
    assert remarks.ground_rules(text)
    assert remarks.is_remark(text, relevance.own_words(text))
    assert auto_turn.plan(text, text)[0] == ""


@pytest.mark.parametrize(
    "text",
    [
        # a question anywhere: a question mark, a question word, a leading auxiliary or "when"
        "don't touch the redis settings, which eviction policy did we pick",
        "don't touch the redis settings, same eviction policy as staging?",
        "hands off the cron for now. why did we move it to 3am",
        "when do we usually deploy, dont deploy on fridays",
        "is it fine to keep the migration small or does tom want one per table",
        "leave the billing module alone and tell me which port the worker listens on",
        "keep it small but remind me the flag we used for the canary",
        # a first clause that names a failure is a report the archive may answer
        "the invoice sync keeps timing out, dont touch the cron until we know why",
        "prod deploy failed again, never deploy on friday lol",
        "checkout throws InvalidSignatureError, don't change the webhook secret yet",
        "pgbouncer 1.21 crashes on reload. don't change the pool size yet",  # "1.21" ends no clause
        # no ground rule: a plain statement of trouble ("won't" is one), or an ask
        "the container won't start",
        "the worker won't deploy, it never merges the config",
        "the nightly export is failing again",
        "staging database port for pgbouncer",
        # "keep" before a verb's -ing form tells trouble, not a rule; "focus" as a noun likewise
        "users keep getting kicked out of their accounts on the live site",
        "i keep getting logged out of staging after every deploy",
        "the search input loses focus on mobile safari after the first letter",
    ],
)
def test_not_ground_rules(text: str) -> None:
    assert not remarks.ground_rules(text)


def test_ground_rules_asked_past_the_first_300_characters() -> None:
    """The question is looked for in the whole message, the rule in its first 300 characters."""
    head = "I'm reworking the invoice layout today, so please keep your hands off invoices/pdf.py. " + "x " * 120
    assert remarks.ground_rules(head)
    assert not remarks.ground_rules(head + "which template did we settle on")


@pytest.mark.parametrize(
    "text",
    ["folks with apple handsets don't receive a single one of our pings, google ones work",
     "jobs are timing out waiting for a db connection from the pool since the concurrency bump",
     "the payments sandbox is unreachable from the staging cluster",
     "adding instances for the sale exhausted the database client capacity",
     "after adding extra web instances, sql handles ran out", "the newsletter blast reached zero people"],
)  # fmt: skip
def test_trouble_told_in_the_forms_the_reader_missed_is_no_remark(text: str) -> None:
    """Stop 99's third rule: a negation after someone else's subject, a timeout in -ing, a service
    out of reach, a resource used up, a count of nothing: trouble, so the report is searched."""
    assert remarks.reports_trouble(text)
    assert not remarks.is_remark(text, relevance.own_words(text))
    assert auto_turn.plan(text, "")[0] == text


@pytest.mark.parametrize(
    "text",
    ["please don't regenerate anything in the openapi folder this afternoon, I'm on it",
     "I don't want schema changes going out before the marathon weekend, so hold the refactor",
     "deployed the new pricing page to staging, looks fine on my phone"],
)  # fmt: skip
def test_a_rule_or_a_wish_in_dont_is_no_trouble(text: str) -> None:
    """"don't" after "please", "I", "we" or "you" lays down a rule or says a wish, no report."""
    assert not remarks.reports_trouble(text)


@pytest.mark.parametrize(
    "text",
    ["four-card experiments always die after a fixed duration",
     "the realtime oban queue is backing up again, predictions on the api are ~40 min stale",
     "webhooks are piling up again"],
)  # fmt: skip
def test_a_failure_in_its_base_form_or_a_backlog_again_is_trouble(text: str) -> None:
    """Stop 99's fourth rule: "die" is read as "dies" and "died" are, and "up again" after a verb
    ("backing up again", "piling up again") is trouble again, not a state come back."""
    assert remarks.reports_trouble(text)
    assert auto_turn.plan(text, "")[0] == text


@pytest.mark.parametrize("text", ["the site is up again, merging", "staging is up again, thx"])
def test_up_again_is_still_a_state_come_back(text: str) -> None:
    assert not remarks.reports_trouble(text)
