"""End to end, issue 32: the environment a question singles out (clio.recall.environments), through
the installed clio, the fake server and the user's encoder helper. A session settled staging's
schema registry address; asked for production's, no block (the near miss: the same words, a
cosine near 0.8); asked for staging's, or with no environment named, its answer comes back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clio.recall.encoder_readiness import installed
from tests.e2e.test_recall_encoder import OTHER, answering, asked_before

pytestmark = pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")

REGISTRY_ASKED = "what's the schema registry address the producers use in staging?"
REGISTRY_FOUND = "In staging the producers use the schema registry at http://schema-registry.data-stg.svc:8081."


responder = answering(REGISTRY_ASKED, REGISTRY_FOUND)


def test_a_question_about_production_does_not_get_stagings_answer(tmp_path: Path) -> None:
    with asked_before(tmp_path, responder, (REGISTRY_ASKED, *OTHER)) as clio:
        production = clio("what's the schema registry address in production?")
        assert "<recalled_context>" not in production, production
        staging = clio("schema registry address for staging again?")
        assert "data-stg.svc:8081" in staging, staging
        either = clio("what's the schema registry address the producers use?")
        assert "data-stg.svc:8081" in either, either
