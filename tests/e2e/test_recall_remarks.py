"""End to end, issue 32: a remark, which asks nothing and reports no trouble ("dana approved the
partner rate limit PR, merging after lunch", "deploying it now, brb"), pulls no block, through the
installed clio, the fake server and the user's encoder helper (which does a one-shot run's recall),
though the archive holds sessions with its words; so does news whose question word sits inside a
clause ("fyi I'll deploy ... at noon when the queue is quiet"), a scope laid down ("keep the
... changes out of this PR") and news after more of its openings ("just so you know where I'm at:
...", "for context on what I'm doing this week: ..."); a question about those sessions, or a
report of trouble, still gets its block (clio.recall.remarks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clio.recall.encoder_readiness import installed
from testkit.fakeserver import Reply
from testkit.scripted import latest_user
from tests.e2e.test_recall_encoder import OTHER, asked_before

pytestmark = pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")

APPROVAL_ASKED = "who has to approve a change to the partner rate limits before it ships?"
APPROVAL_SAID = "Dana approves every change to the partner rate-limit tiers; put her on the PR as reviewer."
DEPLOY_ASKED = "how do I deploy the billing api to staging without the full pipeline?"
DEPLOY_SAID = "Deploy it with `make deploy-billing ENV=staging`; it builds the image and rolls the two staging pods."


REPLIES = {APPROVAL_ASKED: APPROVAL_SAID, DEPLOY_ASKED: DEPLOY_SAID}


def responder(body: dict[str, Any]) -> Reply:
    text, _ = latest_user(body)
    return Reply(text=next((said for asked, said in REPLIES.items() if text.startswith(asked)), "Done."))


def test_a_remark_about_the_moment_pulls_no_block(tmp_path: Path) -> None:
    with asked_before(tmp_path, responder, (APPROVAL_ASKED, DEPLOY_ASKED, *OTHER)) as clio:
        for remark in (
            "dana approved it btw",
            "deploying it now, brb",
            "dana approved the partner rate limit PR, merging after lunch",
            "billing api deploy to staging is out, watching the logs for a bit",
            # news whose question word sits inside a clause; a scope laid down (stop 96)
            "fyi I'll deploy the billing api to staging at noon when the queue is quiet, so the pods will roll",
            "keep the partner rate limit changes out of this PR, they get their own branch",
            # news after more of its openings; a question word that is the opening's own (stop 97)
            "just so you know where I'm at: I'm reading the billing api deploy code to staging today, nothing to ship yet",
            "for context on what I'm doing this week: I'm reading how the partner rate limits get approved before I change anything",
        ):
            said = clio(remark)
            assert "<recalled_context>" not in said, said
        # a question about the same sessions: quoted
        who = clio("who approves partner rate limit changes?")
        assert "Dana approves" in who, who
        how = clio("how do we deploy the billing api to staging?")
        assert "make deploy-billing" in how, how
        broken = clio("the billing api deploy to staging fails again without the full pipeline")
        assert "make deploy-billing" in broken, broken


def test_trouble_told_in_the_forms_the_reader_missed_is_searched(tmp_path: Path) -> None:
    """Stop 99's third rule: a report whose only mark of trouble is "don't" after someone else's
    subject, "unreachable" or "zero" was read as a remark and never searched; now it brings back
    the session that settled it. "please don't ..." still lays down a rule and pulls no block."""
    reports = {
        "dont": "since the last deploy, the two billing api pods on staging don't serve my change",
        "unreachable": "the billing api on staging is unreachable after a deploy without the full pipeline",
        "zero": "the billing api deploy to staging rolled zero pods without the full pipeline",
    }
    rule = "please don't deploy the billing api to staging today, the full pipeline is mine until noon"
    searched_but_not(tmp_path, reports, rule, "make deploy-billing")


def test_a_report_a_reader_slipped_on_is_searched(tmp_path: Path) -> None:
    """Stop 99's fourth rule: a make target first ("make deploy-billing hangs ..."), "die" and
    "backing up again" read the report as an order or a remark, and it was never searched; now each
    brings back the session that settled it. "the billing api on staging is up again, ..." is still
    a state come back and pulls no block."""
    reports = {
        "make": "make deploy-billing hangs on staging, the two pods never roll",
        "die": "since friday, the billing api staging pods die halfway through a deploy without the full pipeline",
        "backing": "billing api deploys to staging are backing up again without the full pipeline",
    }
    back = "the billing api on staging is up again, merging the partner rate limit PR now"
    searched_but_not(tmp_path, reports, back, "make deploy-billing ENV=staging")


def searched_but_not(tmp_path: Path, reports: dict[str, str], guard: str, answer: str) -> None:
    """Each of ``reports`` (name: message), asked one-shot in the project with the deploy and approval
    sessions, gets a block that quotes ``answer``; ``guard``, asked after them, gets no block."""
    with asked_before(tmp_path, responder, (DEPLOY_ASKED, APPROVAL_ASKED, *OTHER)) as clio:
        got = {k: clio(text) for k, text in reports.items()}
        last = clio(guard)
    assert [k for k, v in got.items() if answer not in v] == [], got
    assert "<recalled_context>" not in last, last
