"""The pieces of a recall encoder served by the user's endpoint, in process: the embeddings client
against the fake server (vectors in order, every failure one sentence), the model's declaration,
the calibration's sweep, and the setting only the user may give."""

from __future__ import annotations

import math
import socket
from pathlib import Path
from typing import Any

import pytest

from clio.config import load_settings
from clio.llm.embeddings import Embeddings, EmbeddingsFailed, _vectors
from clio.recall import encoder_calibration as cal
from clio.recall.encoder_models import MINILM, endpoint_model
from testkit.fakeserver import FakeServer


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_embeddings_client_gives_vectors_in_order_and_batches() -> None:
    server = FakeServer(api_key="k1")
    server.embedder = lambda texts: [[float(len(t)), 1.0] for t in texts]
    server.start()
    try:
        client = Embeddings(server.base_url, "k1", "fake-embed")
        texts = [f"text {'x' * i}" for i in range(70)]  # two requests of at most 64
        assert client.embed(texts) == [[float(len(t)), 1.0] for t in texts]
        assert [len(r.body["input"]) for r in server.embedding_requests if r.body] == [64, 6]
        assert all(r.headers["authorization"] == "Bearer k1" for r in server.embedding_requests)
        with pytest.raises(EmbeddingsFailed, match=r"refused the key \(HTTP 401\); check the API key"):
            Embeddings(server.base_url, "wrong", "fake-embed").embed(["a"])
        with pytest.raises(EmbeddingsFailed, match=r"no model 'other' \(HTTP 404\); name an embedding model"):
            Embeddings(server.base_url, "k1", "other").embed(["a"])
        server.embedder = None  # a chat-only server
        with pytest.raises(EmbeddingsFailed, match="has no embeddings API"):
            client.embed(["a"])
    finally:
        server.stop()
    with pytest.raises(EmbeddingsFailed, match=r"could not be reached .*; start the server or fix recall_embeddings"):
        Embeddings(f"http://127.0.0.1:{closed_port()}/v1", None, "m", timeout=5).embed(["a"])


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ({"data": [{"index": 0, "embedding": [1.0]}]}, "did not answer with 2 embeddings"),
        ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": "no"}]}, "not a list of numbers"),
        ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]}, "different widths"),
        ({"error": "x"}, "did not answer with 2 embeddings"),
    ],
)
def test_a_reply_that_is_not_two_vectors_of_one_width_is_refused(reply: Any, why: str) -> None:
    with pytest.raises(EmbeddingsFailed, match=why):
        _vectors(reply, 2, "http://h/v1/embeddings")
    shuffled = {"data": [{"index": 1, "embedding": [2.0]}, {"index": 0, "embedding": [1.0]}]}
    assert _vectors(shuffled, 2, "w") == [[1.0], [2.0]]  # in the order of the texts


def test_an_endpoints_model_is_named_by_a_digest_and_decides_nothing_until_calibrated() -> None:
    a = endpoint_model("http://127.0.0.1:11434/v1/", "nomic-embed-text")
    assert a == endpoint_model("http://127.0.0.1:11434/v1", "nomic-embed-text")  # the trailing slash aside
    assert a.name != endpoint_model("http://127.0.0.1:11434/v1", "mxbai-embed-large").name
    assert "11434" not in a.name + a.socket_name + a.cache_name + a.model_id  # the URL never in a project's files
    assert a.socket_name == f"encoder-{a.name}.sock" and a.cache_name == f"recall-vectors-{a.name}.sqlite"
    assert math.isinf(a.cosine_ask) and a.endpoint and a.remote == "nomic-embed-text"
    b = endpoint_model("http://127.0.0.1:11434/v1", "nomic-embed-text", 0.5, 768)
    assert (b.cosine_ask, b.dim, b.meaning_weight) == (0.5, 768, MINILM.meaning_weight)


def _data() -> dict[str, Any]:
    def unit(words: bool = False, fact: bool = False, score: float = 0.0, typed: bool = True) -> dict[str, Any]:
        return {"parts": [0], "fact": fact, "words": words, "skip": False, "score": score, "typed": typed}

    probes = [
        {"kind": "same", "task": False, "units": [unit(words=True, fact=True, score=1.0)]},
        {"kind": "reworded", "task": False, "units": [unit(fact=True), unit()]},
        {"kind": "unrelated", "task": False, "units": [unit()]},
        {"kind": "unrelated", "task": False, "units": [unit()]},
        {"kind": "unrelated", "task": False, "units": [unit()]},
        {"kind": "unrelated", "task": True, "units": [unit()]},  # an order of work: the cosine never decides
        # "how long ...?" near a unit that holds no duration: the cosine never decides either
        {"kind": "unrelated", "task": False, "units": [unit(typed=False)]},
    ]
    return {"texts": ["t"], "probes": probes}


def test_the_threshold_is_the_lowest_that_keeps_the_false_blocks_within_budget() -> None:
    data = _data()
    cosines = [[0.9], [0.5, 0.2], [0.45], [0.35], [0.3], [0.99], [0.99]]
    assert cal.figures(data, cosines, 0.30) == cal.Figures(1, 1, 3)
    assert cal.figures(data, cosines, 0.36) == cal.Figures(1, 1, 1)
    assert cal.figures(data, cosines, 0.60) == cal.Figures(1, 0, 0)
    assert cal.FALSE_BUDGET == 1
    assert cal.choose(data, cosines) == 0.36  # 0.35 blocks two, 0.36 the budget's one
    everything = [[0.9], [0.9, 0.9], [0.99], [0.99], [0.99], [0.99], [0.99]]
    assert cal.choose(data, everything) == cal.SWEEP[-1]  # a model whose cosines say nothing


def test_the_threshold_kept_per_user(tmp_path: Path) -> None:
    assert cal.stored(tmp_path, "endpoint-x") is None
    cal.store(tmp_path, "endpoint-x", 0.47, 768, cal.Figures(12, 10, 2))
    cal.store(tmp_path, "endpoint-y", 0.3, 384, cal.Figures(12, 9, 1))
    assert cal.stored(tmp_path, "endpoint-x") == (0.47, 768) and cal.stored(tmp_path, "endpoint-y") == (0.3, 384)
    (tmp_path / cal.STORE_NAME).write_text("{broken")
    assert cal.stored(tmp_path, "endpoint-x") is None  # calibrated again
    assert len(cal.load()["probes"]) == 48  # the shipped data: A and E's messages


def test_only_the_user_names_the_endpoints_model(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj" / ".clio"
    home.mkdir()
    project.mkdir(parents=True)
    (project / "config.yaml").write_text("recall_embeddings: text-embedding-3-small\n")
    s, warnings = load_settings(home, project, {}, env={})
    assert s.recall_embeddings is None
    assert any("recall_embeddings ignored" in w and "embedded is yours to say" in w for w in warnings), warnings
    (home / "config.yaml").write_text("recall_embeddings: nomic-embed-text\n")
    s, _ = load_settings(home, None, {}, env={})
    assert s.recall_embeddings == "nomic-embed-text"
    s, _ = load_settings(home, None, {}, env={"CLIO_RECALL_EMBEDDINGS": "mxbai-embed-large"})
    assert s.recall_embeddings == "mxbai-embed-large"


def test_an_endpoints_model_that_failed_is_tried_again_sooner(tmp_path: Path) -> None:
    import os
    import time

    from clio.recall.encoder_readiness import ENDPOINT_RETRY_S, FAILED_RETRY_S, failed_file, recent_failure

    served = endpoint_model("http://127.0.0.1:11434/v1", "nomic-embed-text")
    sock = tmp_path / served.socket_name
    failed_file(sock).write_text("http://127.0.0.1:11434/v1/embeddings could not be reached\n")
    assert "could not be reached" in recent_failure(sock, served)
    old = time.time() - ENDPOINT_RETRY_S - 5  # the local server may be up by now
    os.utime(failed_file(sock), (old, old))
    assert recent_failure(sock, served) == ""
    assert recent_failure(sock, MINILM) != "" and ENDPOINT_RETRY_S < FAILED_RETRY_S  # a damaged file waits a day
