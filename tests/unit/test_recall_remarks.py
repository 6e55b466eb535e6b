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
