"""End to end, issue 32: a unit that holds a message's words but whose meaning the encoder finds far
off is not quoted (clio.recall.relevance.WORDS_FLOOR_SHARE), through the installed clio, the fake
server and the user's encoder helper. "can we switch back to main?" holds both of its words in a
session about the lab rack's main power switch: the words alone (the helper off) quote it; with
the helper, whose cosine for the pair is under the floor, no block. A question about that session,
in its words, still brings the answer back. (A question: "switch back to main" alone is a remark
since stop 63, not searched at all, clio.recall.remarks.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clio.recall.encoder_readiness import installed
from testkit.clio_run import run_clio
from testkit.encoder_helper import stop_helper
from testkit.fakeserver import FakeServer
from tests.e2e.test_recall_encoder import OTHER, answering, sent, wait_filled

pytestmark = pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")

RACK_ASKED = "the main power switch on the lab rack keeps tripping when the HIL rig boots"
RACK_FOUND = "The rig draws 9 A at boot and the rack's breaker is rated 10 A: stagger the rig's start by 2 s."
SWITCH = "can we switch back to main?"
HELPER_ON: dict[str, str | None] = {"CLIO_RECALL_ENCODER": None}  # as a user who never set it
WORDS_ONLY: dict[str, str | None] = {"CLIO_RECALL_ENCODER": "0"}


responder = answering(RACK_ASKED, RACK_FOUND)


def test_the_words_alone_do_not_quote_a_unit_the_encoder_finds_far_off(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    server = FakeServer(responder).start()

    def clio(text: str, env: dict[str, str | None]) -> str:
        r = run_clio(["--model", "fake-model", "-p", text], server=server, project=project, home=home, env_extra=env)
        assert r.returncode == 0, r.stderr
        return sent(server, text)

    try:
        for text in (RACK_ASKED, *OTHER):
            clio(text, HELPER_ON)
        wait_filled(project)
        # the words alone: both of the message's words are in the rack's session, which they quote
        words_only = clio(SWITCH, WORDS_ONLY)
        assert "<recalled_context>" in words_only and "stagger the rig" in words_only, words_only
        # with the helper: the unit's meaning is far from the message's, so no block
        helper_on = clio(SWITCH, HELPER_ON)
        assert "<recalled_context>" not in helper_on, helper_on
        # a question about that session in its words still brings its answer back
        asked = clio("why does the main power switch on the lab rack keep tripping?", HELPER_ON)
        assert "stagger the rig" in asked, asked
    finally:
        server.stop()
        stop_helper(home)
