"""End to end: the automatic recall's sentence encoder served by the user's own endpoint
(``recall_embeddings``: a model of the endpoint's embeddings API, as OpenAI, Ollama or llama.cpp's
server offer).

Through the installed clio and the fake server, whose ``/v1/embeddings`` answers with MiniLM
(clio's own model, run in this test's process): a project with history starts the helper for the
endpoint's model; it embeds the archive through the endpoint, with the endpoint's key, which is
never in its environment or arguments; it calibrates the model's threshold on the dev sets as the
shipped ones were chosen, and finds MiniLM's 0.42 again; a reworded question then gets the fact
quoted. An endpoint without embeddings leaves the recall to MiniLM, said in one sentence.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from clio.recall.encoder import Encoder
from clio.recall.encoder_cache import filled
from clio.recall.encoder_calibration import STORE_NAME, stored
from clio.recall.encoder_client import EncoderClient
from clio.recall.encoder_models import MINILM, Endpoint, endpoint_model
from clio.recall.encoder_readiness import failed_file, installed, socket_path
from testkit.clio_run import run_clio
from testkit.encoder_helper import stop_helper
from testkit.fakeserver import FakeServer
from tests.e2e.test_recall_encoder import ASKED, OTHER, REWORDED, responder, sent

pytestmark = pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")

KEY = "test-key"  # what clio_env gives every run as OPENAI_API_KEY
ON = {"CLIO_RECALL_ENCODER": "", "CLIO_RECALL_EMBEDDINGS": "fake-embed"}


def serving_minilm() -> FakeServer:
    server = FakeServer(responder, api_key=KEY)
    encoder = Encoder(threads=1)
    server.embedder = lambda texts: encoder.embed(texts).tolist()
    return server.start()


def wait_for(check: Any, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not check():
        time.sleep(0.2)
    assert check(), what


def test_the_endpoints_model_embeds_calibrates_and_brings_back_a_reworded_fact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLIO_RECALL_ENCODER", "")  # this process's clients as the runs' (tests switch it off)
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    server = serving_minilm()

    def clio(text: str, env: dict[str, str | None]) -> Any:
        r = run_clio(["--model", "fake-model", "-p", text], server=server, project=project, home=home, env_extra=env)
        assert r.returncode == 0, r.stderr
        return r

    model = endpoint_model(server.base_url, "fake-embed")
    try:
        clio(ASKED, ON)
        for text in OTHER:
            clio(text, ON)  # a project with history: the helper of the endpoint's model starts
        wait_for(lambda: filled(project / ".clio", model), "the helper did not embed the archive through the endpoint")
        wait_for(lambda: stored(home, model.model_id) is not None, "the endpoint's model was not calibrated")
        threshold, dim = stored(home, model.model_id) or (0.0, 0)
        assert (threshold, dim) == (MINILM.cosine_ask, MINILM.dim)  # MiniLM over HTTP: its shipped threshold again
        kept = json.loads((home / STORE_NAME).read_text())[model.model_id]
        assert kept["dev"]["false_blocks"] <= 2 and server.base_url not in json.dumps(kept)
        assert not (project / ".clio" / MINILM.cache_name).exists()  # MiniLM's own helper never ran

        requests = server.embedding_requests
        assert requests and all(r.headers.get("authorization") == f"Bearer {KEY}" for r in requests)
        assert all(r.body and r.body["model"] == "fake-embed" for r in requests)
        client = EncoderClient(home, project / ".clio", endpoint=Endpoint(server.base_url, "fake-embed", KEY))
        assert client.model.name == model.name and client.cosine_ask() == MINILM.cosine_ask
        pid = client.ping()
        seen = Path(f"/proc/{pid}/environ").read_bytes() + Path(f"/proc/{pid}/cmdline").read_bytes()
        assert KEY.encode() not in seen and b"OPENAI_API_KEY" not in seen  # read from a pipe, once

        clio(REWORDED, {**ON, "CLIO_RECALL_ENCODER": "0"})  # the words alone quote nothing
        assert "<recalled_context>" not in sent(server, REWORDED)
        clio(REWORDED, ON)
        message = sent(server, REWORDED)
        assert "<recalled_context>" in message and "allkeys-lru" in message, message

        shown = run_clio(["encoder"], server=server, project=project, home=home, env_extra=ON).stdout
        assert "* fake-embed at " in shown and "calibrated, threshold 0.42" in shown and "in use: fake-embed" in shown
    finally:
        server.stop()
        stop_helper(home)
        stop_helper(home, Endpoint(server.base_url, "fake-embed", KEY))


def test_an_endpoint_without_embeddings_leaves_the_recall_to_minilm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLIO_RECALL_ENCODER", "")
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    server = FakeServer(responder).start()  # no embeddings API: 404, as a chat-only server answers
    model = endpoint_model(server.base_url, "fake-embed")
    try:
        for text in [ASKED, *OTHER]:
            r = run_clio(["--model", "fake-model", "-p", text], server=server, project=project, home=home, env_extra=ON)
            assert r.returncode == 0, r.stderr
        failed = failed_file(socket_path(home, model))
        wait_for(failed.exists, "the endpoint's helper did not say why it could not start", 60.0)
        why = failed.read_text()
        assert "has no embeddings API or no model 'fake-embed'" in why and "recall_embeddings" in why, why
        client = EncoderClient(home, project / ".clio", endpoint=Endpoint(server.base_url, "fake-embed", KEY))
        assert client.model is MINILM and "failed" in client.fallback  # MiniLM, not no encoder at all
        shown = run_clio(["encoder"], server=server, project=project, home=home, env_extra=ON).stdout
        assert "in use: minilm" in shown and "has no embeddings API" in shown, shown
        assert "it is tried again after 10 minutes" in shown, shown
    finally:
        server.stop()
        stop_helper(home)
