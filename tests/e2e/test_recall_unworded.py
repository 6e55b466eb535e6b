"""End to end, issue 32: "no word shared: the cosine decides" (clio.recall.auto.Hit.unworded;
docs/memory.md, "No word shared: the cosine decides"), as a user gets it with the judge on.

Through the installed clio, the fake server and the user's real encoder helper, in a project whose
archive is a recall set's (set D: firmware for a thermostat): a question of seven own words that
shares none with the session that found why units in the field reboot gets that session's cause
quoted, although the judge reads its unit under the bar; a question of four own words that shares
none either is not quoted by its cosine alone: the judged score decides it (since stop 79 that
score reads how much a message says that the unit lacks, and quotes the same unit for it), where
without the judge (``recall_judge: false``) its cosine quotes the unit; and ``/context`` in the
REPL tells why the long one's unit was quoted. The long question is the eleventh probe set's
(benches/recall_dev).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clio.recall.encoder_readiness import installed
from testkit.encoder_helper import stop_helper
from testkit.fakeserver import FakeServer, Reply
from testkit.recall_sets import build, load_set
from tests.e2e.test_recall_encoder import one_shot, wait_filled
from tests.e2e.test_recall_judge import judged_turn, wait_judge
from tests.e2e.test_repl_pty import Spawn, project, spawn  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")

LONG = "devices installed at customers restart on their own a couple of times an hour. did we figure that out?"
SHORT = "customer devices restart hourly?"  # four own words
FACT = "stalls the whole embassy executor"  # the cause, as the watchdog session settled it


def test_a_question_sharing_no_word_is_quoted_by_its_cosine_when_it_is_long_enough(
    fake_server: FakeServer, project: Path, spawn: Spawn  # noqa: F811
) -> None:
    home = project.parent / "home"
    home.mkdir(exist_ok=True)
    build(load_set("set_d"), project / ".clio" / "sessions")
    fake_server.responder = lambda body: Reply(text="Done.")

    clio = one_shot(fake_server, project, home)
    try:
        clio("add a --fahrenheit option to thermoctl logs")  # an order: no block, but the helper starts
        wait_filled(project)
        wait_judge(home, project)
        assert not (home / "config.yaml").exists()  # the judge on, by default

        long = clio(LONG)
        assert "<recalled_context>" in long and FACT in long, long
        short = clio(SHORT)  # the judged score's decision, not the cosine's
        assert "<recalled_context>" in short and FACT in short, short

        (home / "config.yaml").write_text("recall_judge: false\n", encoding="utf-8")
        short = clio(SHORT)  # the same unit, quoted by its cosine without the judge
        assert "<recalled_context>" in short and FACT in short, short
        (home / "config.yaml").unlink()

        term = spawn(env={"CLIO_RECALL_ENCODER": ""})
        term.prompt()
        asked = judged_turn(term, fake_server, LONG, "no word shared: its cosine decides, ")
        term.child.sendeof()
        assert term.wait_exit() == 0
        assert FACT in asked
    finally:
        stop_helper(home)
