"""The embeddings API of an OpenAI-compatible endpoint (``POST {base}/embeddings``: OpenAI,
Ollama, llama.cpp's server with ``--embeddings``, vLLM, LM Studio): texts in, one vector each
out, in order. Used by the automatic recall's helper when the user names a model of their
endpoint for it (:mod:`clio.recall.encoder_endpoint`). Every failure is one
:class:`EmbeddingsFailed` whose message is a sentence saying what to do.
"""

from __future__ import annotations

from typing import Any

from clio.llm.http import ConnectFailed, HTTPStatus, StreamFailed, Transport

MAX_INPUTS = 64  # texts per request (OpenAI takes 2,048; a local server's batch is smaller)


class EmbeddingsFailed(Exception):
    """The endpoint gave no vectors; the message says why and what to do, in one sentence."""


class Embeddings:
    """One endpoint's embeddings of one model."""

    def __init__(self, base_url: str, api_key: str | None, model: str, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.transport = Transport(self.base_url, api_key, timeout)

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order (at most :data:`MAX_INPUTS` texts a request)."""
        out: list[list[float]] = []
        for start in range(0, len(texts), MAX_INPUTS):
            out += self._request(texts[start : start + MAX_INPUTS])
        return out

    def _request(self, texts: list[str]) -> list[list[float]]:
        where = f"{self.base_url}/embeddings"
        try:
            reply = self.transport.post_json("/embeddings", {"model": self.model, "input": texts})
        except ConnectFailed as exc:
            raise EmbeddingsFailed(f"{where} could not be reached ({exc}); start the server or fix recall_embeddings / the base URL.") from exc
        except HTTPStatus as exc:
            if exc.status in (401, 403):
                raise EmbeddingsFailed(f"{where} refused the key (HTTP {exc.status}); check the API key.") from exc
            if exc.status in (404, 405):
                raise EmbeddingsFailed(
                    f"{where} has no embeddings API or no model {self.model!r} (HTTP {exc.status}); "
                    "name an embedding model the endpoint serves in recall_embeddings."
                ) from exc
            raise EmbeddingsFailed(f"{where} answered HTTP {exc.status}: {exc.text[:160]}") from exc
        except StreamFailed as exc:
            raise EmbeddingsFailed(f"{where} gave no usable reply ({exc}).") from exc
        return _vectors(reply, len(texts), where)

    def close(self) -> None:
        self.transport.close()


def _vectors(reply: Any, n: int, where: str) -> list[list[float]]:
    """The reply's ``data[i].embedding`` in ``index`` order, checked: n vectors of one width."""
    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(data, list) or len(data) != n:
        raise EmbeddingsFailed(f"{where} did not answer with {n} embeddings; is the model an embedding model?")
    rows = sorted(data, key=lambda d: d.get("index", 0) if isinstance(d, dict) else 0)
    out: list[list[float]] = []
    for row in rows:
        vec = row.get("embedding") if isinstance(row, dict) else None
        if not isinstance(vec, list) or not vec or not all(isinstance(x, (int, float)) for x in vec):
            raise EmbeddingsFailed(f"{where} sent an embedding that is not a list of numbers.")
        out.append([float(x) for x in vec])
    if len({len(v) for v in out}) > 1:
        raise EmbeddingsFailed(f"{where} sent embeddings of different widths.")
    return out
