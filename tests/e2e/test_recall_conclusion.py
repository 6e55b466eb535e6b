"""End to end, issue 32 (stop 100): the block quotes a long reply's conclusion, not only the diagnosis
that repeats the question's words, through the installed clio, the fake server and the user's encoder
helper (which does a one-shot run's recall). An earlier one-shot run asked why the nightly stock import
failed; its reply is long: the diagnosis first, with the question's words and the files' arrival times,
then the fix at its end, "the new time would be **03:05** Europe/London". Asked again in the same words,
the block quotes the reply's end with the value (before, its details' window took the diagnosis's
timestamps and the value was cut)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clio.recall.encoder_readiness import installed
from tests.e2e.test_recall_encoder import OTHER, answering, asked_before

pytestmark = pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")

ASKED = (
    "stock import failed again last night. bugsnag: UnableToReadFile: Unable to read file from location "
    "out/ashgrove/stock/stock_20240612.csv. but the file is definitely there now. third time this month"
)
FOUND = (
    "The stock import fails with UnableToReadFile when today's file lands after the import starts, and nothing "
    "retries it; by the morning the file is there, which is why it looks fine when you check. "
    + "The export on their side takes as long as it takes, and we only ever see the result of it. " * 4
    + "The mtimes of the last five exports were 02:44, 02:41, 02:24, 02:26 and 02:49 (runs 4411-4415), "
    "against a start at 02:30. "
    + "There are three ways out of it, and the simplest one of them is to run later in the night. " * 5
    + "With a margin after the latest export we've seen, the new time would be **03:05** Europe/London."
)


def test_the_block_quotes_a_long_replys_conclusion(tmp_path: Path) -> None:
    with asked_before(tmp_path, answering(ASKED, FOUND), (ASKED, *OTHER)) as clio:
        again = clio("stock import failed last night: UnableToReadFile for today's stock csv, but the file is there now")
    assert "<recalled_context>" in again, again
    block = again[again.index("<recalled_context>") :]
    assert "03:05" in block, block  # the value the reply settled on, at its end
    assert "UnableToReadFile" in block, block  # and still the words that found it
