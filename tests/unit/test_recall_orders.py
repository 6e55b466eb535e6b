"""Orders of new work read by their form (clio.recall.orders, through relevance.is_task): verbs
no list holds, wishes stated as sentences; and the questions and reports that look like them."""

from __future__ import annotations

import pytest

from clio.recall import orders
from clio.recall import relevance as R


@pytest.mark.parametrize(
    "text",
    ["center the dispatch console map on downtown at zoom 14", "debounce the search input in ProductFilter",
     "widen the sidebar to 280px", "backfill the region column on the stores table", "memoize the tax total",
     "cut it down to three steps", "android: migrate the settings screen to compose",
     "the onboarding modal drags on. shorten it to three steps.",
     "the ledger export should also carry the cost center code for each line",
     "each invoice pdf should show the due date under the total", "i'd love a cmd+k shortcut for the palette",
     "it would be nice if make seed printed how many rows it inserted", "new rule: every endpoint logs a request id",
     "TH-211 add a difficulty filter chip row above the trail list", "KST-91: memoize the route lookup",
     # a listed verb asked: with its object, or asked for politely
     "install the hil rig deps?", "can you rename ShipmentDto to ShipmentView?", "please bump axios to 1.7?",
     "bump react to 19?", "merge main into this branch and fix the conflicts?",
     # the work asked for with "help me": a listed verb after it
     "could you help me write a polite reply to a customer who asked for a refund?",
     "help us write the release notes for 2.4", "can you help me to add a retry to the uploader?"],
)
def test_an_order_is_read_by_its_form_whatever_its_verb(text: str) -> None:
    assert R.is_task(text)


@pytest.mark.parametrize(
    "text",
    [
        # verbs that ask for information, repair a fault, run an operation: the archive may answer
        "locate the code that sends the weekly digest", "explain the retry policy of the mailer",
        "fix the login redirect loop", "restart the worker on staging", "rotate the db credentials",
        # a noun and its verb, a report, a question
        "build is failing with cannot find module", "mark all as delivered on the truck screen errors again",
        "thanks, that looks good", "nice, that did it", "apparently the cron ran twice",
        "port of the staging database?", "list of the cron jobs we run?",  # a noun's phrase, asked
        "update on the staging migration?", "merge strategy for release branches?",  # a listed verb's noun
        "install instructions for the hil rig?", "bump policy for deps?", "port for the staging db?",
        "cache hit ratio on redis?", "merge strategy for release branches, squash or rebase?",
        # a wish with the marks of a report, or asked
        "dark mode should persist but it resets after every refresh",
        "the nightly job should run at 2am, it ran at 5 again", "the spawn timer should reset when the player dies, right? enemies pile up",
        "it should be pointed at the test backend", "the cache should be invalidated on edit",
        "we need to figure out why the export is slow",
        # a later sentence that looks like an order, in a report (a pasted assertion: "posts a ...")
        "windows CI fails: thread 'paths::tests::links' panicked at 'assertion failed: left == right' left: \"posts\\\\a.html\"",
        "the importer broke last night. normalize the skus before matching",
        "ASH-655 why does the export fail?",
        # help asked to understand or find: the archive may answer
        "could you help me understand why the deploy failed last week?", "help me find where we set the retry limit",
        "can you help me with the staging port?",
    ],
)  # fmt: skip
def test_what_looks_like_an_order_but_asks_or_reports_is_not_one(text: str) -> None:
    assert not R.is_task(text)


def test_the_readers_apart() -> None:
    assert orders.imperative(["center", "the", "map"], "center the map")
    assert not orders.imperative(["center", "map"], "center map")  # no determiner: not read
    assert not orders.imperative(["mark", "all", "as", "delivered"], "mark all as delivered fails")
    assert not orders.imperative(["added", "the", "column"], "added the column")  # past tense: a statement
    assert not orders.imperative(["apparently", "the", "cron"], "apparently the cron")  # an adverb
    assert not orders.imperative(["posts", "a", "html"], "posts a html")  # a plural, not an order
    assert orders.imperative(["address", "the", "review"], "address the review")
    assert orders.imperative(["apply", "the", "patch"], "apply the patch")
    assert orders.wishes(["the export should also carry the vat id"])
    assert not orders.wishes(["the export should be faster"])  # "should be": a state, often a report
    assert orders.names_a_subject(["build", "is", "failing"]) and not orders.names_a_subject(["build", "the", "image"])
    assert orders.without_prefix("ios - add haptics") == "add haptics"
    assert orders.without_prefix("what's the port?") == "what's the port?"
    assert orders.without_prefix("TH-211 add a chip row") == "add a chip row"


@pytest.mark.parametrize(
    "text",
    [
        "heads up: I'm splitting the invoice PDF rendering out of billing/pdf.py into its own module this sprint",
        "I'm wiring the back in stock label into the basket page next, reusing the VariantResource field",
        "Today I'm adding the greyed-out marker and the 'last seen N min ago' label to vehicle_marker/1",
        "starting on the welsh templates today: I'll add config/locales/sms.cy.yml and keep the segment short",
        "we're moving the asset build into Bitbucket Pipelines for ASH-719",
        "I'm going to port the csv export to the new writer tomorrow",
        "for the delivery slots follow-up let's keep the hold expiry in a scheduled command rather than a delayed job",
    ],
)  # fmt: skip
def test_the_writers_own_next_work_stated_is_an_order(text: str) -> None:
    """Stop 87 (orders.plans): a statement of what the writer does next asks the archive nothing."""
    assert R.is_task(text)


@pytest.mark.parametrize(
    "text",
    [
        # what the writer sees, repairs or runs: the archive may explain it
        "I'm seeing 'database is locked' in worker.py when two threads save at once",
        "im fixing the flaky upload test now", "I'm going to rerun the lr/wd sweep tonight",
        "I'm debugging the importer now", "I'm releasing 2.3 to the store today",  # debug, release
        # a report in the progressive: no verb of new work
        "I'm hitting a timeout on the staging db connection", "I'm missing the SENTRY_DSN env var on the worker",
        "we're using postgres 14 on staging", "lets take another run at cleaning up ShipmentSearchService",
        "let's check what we decided about the retry policy", "I'm trying to get the hil rig to flash",
        # a plan with a question, or with the marks of a report
        "I'm adding the warehouse name to the search documents. how do the overnight changes reach the index?",
        "I'm moving the asset build to pipelines but the cache step still fails",
        "I'm adding a care tips screen next, what's our image size limit?",
        # not the writer's own next work
        "users keep getting logged out in prod", "I'm not sure the cron ran", "we're on postgres 14",
    ],
)  # fmt: skip
def test_what_sees_repairs_runs_or_asks_is_no_plan(text: str) -> None:
    assert not R.is_task(text)


def test_plans_apart() -> None:
    work = frozenset({"split", "add", "move"})
    assert orders.plans(["heads up:", "I'm splitting the pdf rendering out"], work)
    assert orders.plans(["for the follow-up let's keep the math in the module"], work)  # keep: its own list
    assert orders.plans(["next I'll add the locale file"], work) and orders.plans(["we're moving the build"], work)
    assert not orders.plans(["I'm splitting the pdf rendering out"], frozenset())  # not a verb of new work
    assert not orders.plans(["let's see what the logs say"], work)  # a verb that asks
    assert not orders.plans(["I'm deploying the fix to staging now"], work)  # an operation the archive may describe
    assert not orders.plans(["I'm splitting the module but the tests still fail"], work)  # a report's marks


@pytest.mark.parametrize(
    "text",
    [
        # a chat abbreviation, then news and a question: not an order's verb before "a" / "the"
        "fwiw a customer wants data from three weeks back restored. How far back do our live Postgres snapshots go?",
        "fwiw the comms team asks why certain coaches vanish from the passenger-facing views. What's the threshold?",
        "iirc the staging broker moved. which port is it on now?", "afaik the nightly job posts a summary somewhere, where?",
        # a clause that sets the scene, with no order after it
        "Once the state's new PAYE deduction schedules come out each winter, which shared location should our staff copy them into?",
        "Whenever a release goes live the whole HR office gets thrown back to the login screen at once",
        "whenever the ingest lags, the dashboards go blank. what did we decide the alert threshold is?",
        # a name of code first: what the sentence speaks of, though its first part is a verb
        "build.gradle.kts pins ojdbc11 to 19.23.0.0. Is that deliberate? I wanted 23.x for the JSON type.",
        "test_invoice_pdf is red on CI again, same euro formatting mismatch as before",
        "update_totals.py rounds the tax twice, is that on purpose?",
    ],
)  # fmt: skip
def test_what_opens_a_question_is_no_order(text: str) -> None:
    """Stop 98: a chat abbreviation, a conjunction or a name of code read as an order's verb kept
    questions from being searched at all ("fwiw a customer ...", "once the ...", "build.gradle.kts ...")."""
    assert not R.is_task(text)


@pytest.mark.parametrize(
    "text",
    [
        "once the migration lands, add an index on invoices.customer_id",
        "when you get a chance, write a test for the csv export",
        "if the build is green, bump the version to 2.4",
        "fwiw add a changelog entry for the new export",
        "when a dispatcher reassigns a shipment we need an event on shipment.events, pls add it",
    ],
)  # fmt: skip
def test_the_order_after_a_clause_that_sets_the_scene(text: str) -> None:
    """Stop 98: after "once / when / if ...," the main clause decides: an order there is one."""
    assert R.is_task(text)


def test_a_code_name_first() -> None:
    assert orders.opens_with_a_code_name("build.gradle.kts pins ojdbc11")
    assert orders.opens_with_a_code_name("test_invoice_pdf is red")
    assert orders.opens_with_a_code_name("api/uploads.py, line 40, rounds twice")
    assert not orders.opens_with_a_code_name("build the image")
    assert not orders.opens_with_a_code_name("re-run the flaky test")  # a hyphen alone joins words
    assert not orders.opens_with_a_code_name("")


@pytest.mark.parametrize(
    "text",
    [
        "bump celery concurrency to 10 in deploy/prod/celery.yaml and remind me what max-tasks-per-child we set for the oom kills",
        "I'm writing up our training conventions this afternoon and need the mixed precision setting we standardized on",
        "im adding code that fires a message whenever a parcel gets rerouted, remind me what the agreed approach is",
    ],
)  # fmt: skip
def test_an_order_that_asks_what_was_settled_is_searched(text: str) -> None:
    """Stop 98's second rule: an order that also asks to be told what was settled before is searched
    for that (it was not searched at all)."""
    from clio.recall.auto_turn import plan

    assert orders.asks_the_past(text)
    query = plan(text, text)[0]
    assert query  # searched: by what it asks when that follows the order (below), else whole
    assert query == (orders.asked_after(text) or text)


@pytest.mark.parametrize(
    "text",
    [
        "add a retry to the webhook handler", "bump celery concurrency to 10",
        "we settled in nicely after the move, thanks", "the team we picked for the hackathon is ready",
        # an order that needs what was settled without asking for it: an order, as before
        "add the retry to the webhook handler, with the backoff we agreed on last month",
    ],
)  # fmt: skip
def test_what_asks_nothing_settled_is_no_such_ask(text: str) -> None:
    assert not orders.asks_the_past(text)


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("write a small consumer that replays events that fail validation; what's the dead-letter topic called again?",
         "what's the dead-letter topic called again?"),
        ("add the commercial fleet line to config/fraud.yaml, and what siu_referral_threshold did Graham sign off for personal_auto?",
         "what siu_referral_threshold did Graham sign off for personal_auto?"),
        ("write the onboarding doc for partners, and tell me how many calls per minute a keyed integration gets",
         "tell me how many calls per minute a keyed integration gets"),
        ("add a nearby-routes endpoint using the shapes table; is there already a spatial index on shapes?",
         "is there already a spatial index on shapes?"),
        ("add the retry to the uploader - what backoff did we agree on?", "what backoff did we agree on?"),
        ("Add a CSV export to the ledger page. Which date format did finance want", "Which date format did finance want"),
        # an order that asks to be reminded: searched by the reminder, not the order's words
        ("add the slog handler to the enricher, and remind me why go.mod is still on 1.21.9",
         "remind me why go.mod is still on 1.21.9"),
        ("bump celery concurrency to 10 and remind me what max-tasks-per-child we set",
         "remind me what max-tasks-per-child we set"),
    ],
)  # fmt: skip
def test_a_question_after_an_order_is_searched_by_what_it_asks(text: str, asked: str) -> None:
    """Stop 99's rule: an order followed by a clause that asks something known (a question word
    first, "remind me / tell me" and what, an auxiliary first with its question mark) is searched,
    by that clause and what follows it; the order's words would only dilute the question's."""
    from clio.recall.auto_turn import plan

    assert R.is_task(text)
    assert orders.asked_after(text) == asked
    assert plan(text, "") == (asked, "")


@pytest.mark.parametrize(
    "text",
    [
        # a question about the work at hand: advice, leave, a check
        "add a retry to the uploader; should it be exponential?", "add the index on orders.created_at; is that ok?",
        "rename the nightly job to ledger-sync, ok?", "write a migration for the plants table, what do you think?",
        "add a retry to the uploader, and which file should I put it in?",
        "add a test for the csv parser; can you also update the docs?",
        # one order whose clauses are joined by a bare "and", or whose question mark closes a list of steps
        "Write down for the handover who at Orbitrak fixes feed problems and which NOC address to email out of hours.",
        "Can you write a small script that walks the src directory, finds every TODO comment, and prints them grouped by file?",
        # a condition, not a question
        "split the template rendering from the totals; when you next touch it, keep the public functions",
        "add a retry to the webhook handler",
    ],
)  # fmt: skip
def test_an_order_that_asks_about_its_own_work_stays_an_order(text: str) -> None:
    from clio.recall.auto_turn import AN_ORDER, plan

    assert plan(text, "") == ("", AN_ORDER)


@pytest.mark.parametrize(
    "text",
    ["make e2e just hangs on my laptop, playwright never gets past the first test",
     "clean workstation setup: our core backend crashes at startup, something else holds its socket",
     "build cache on CI is stuck at 90% for every branch"],
)  # fmt: skip
def test_a_listed_verb_before_a_failure_names_what_fails(text: str) -> None:
    """Stop 99's fourth rule: a listed verb first that does not go on to its object, in a first
    clause that says something fails, names the thing (a make target, a label): a report."""
    from clio.recall.auto_turn import plan

    assert orders.fails(text)
    assert not R.is_task(text)
    assert plan(text, "")[0] == text


@pytest.mark.parametrize(
    "text",
    ["add tests for the parser, it crashes on empty input", "build the image and push it",
     "make the export fail loudly when the bucket is missing",
     "bump num_workers in the docker run to 12, and remind me what --shm-size we gave it when the workers died"],
)  # fmt: skip
def test_an_order_that_names_a_failure_stays_an_order(text: str) -> None:
    """Its verb goes on to its object, or the failure is after the first clause: an order."""
    assert R.is_task(text)
