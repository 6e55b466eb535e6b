"""A sentence encoder the user's own endpoint serves, for the automatic recall's helper: the
model ``recall_embeddings`` names (``text-embedding-3-small`` at OpenAI, ``nomic-embed-text`` in
Ollama, a llama.cpp server started with ``--embeddings``), asked through the endpoint's
embeddings API (:mod:`clio.llm.embeddings`) with the endpoint's key. It has the surface of
:class:`clio.recall.encoder.Encoder` (``embed``, ``model``, ``dim``), so the helper keeps its
vectors, scans them and scores with them as with MiniLM's; the texts are the same chunks.

Every text is redacted (the standard level) before it leaves, whatever the archive held. The
model's threshold is not known in advance: the helper chooses it by calibration
(:mod:`clio.recall.encoder_calibration`) once per model and keeps it in ``$CLIO_HOME``; until then
its cosine decides nothing (the words do), while its nearest messages already join the search.
Loaded only in the helper; numpy and the HTTP library with it.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from clio.recall.embedder import EmbedderUnavailable
from clio.recall.encoder_models import EncoderModel, endpoint_model

if TYPE_CHECKING:
    import numpy as np

TIMEOUT_S = 30.0  # a request of the fill (up to 64 chunks); a query's is bounded by the helper's budget


class EndpointEncoder:
    """Embeddings from the user's endpoint, normalised, one row per text (zero for an empty one)."""

    def __init__(self, model: EncoderModel, key: str | None, timeout: float = TIMEOUT_S) -> None:
        import numpy as np

        from clio.llm.embeddings import Embeddings, EmbeddingsFailed
        from clio.safety.redact import Redactor

        self.np = np
        self.failed = EmbeddingsFailed
        self.redact = Redactor("standard").text
        try:
            self.client = Embeddings(model.endpoint, key, model.remote, timeout)
            probe = self.client.embed(["clio"])  # the model answers, and its width
        except EmbeddingsFailed as exc:
            raise EmbedderUnavailable(f"reworded recall off: {exc}") from exc
        except Exception as exc:  # a proxy the environment names that cannot be used, and the like
            raise EmbedderUnavailable(f"reworded recall off: {exc}") from exc
        self.dim = len(probe[0])
        self.model = replace(model, dim=self.dim)

    def embed(self, texts: list[str]) -> np.ndarray:
        np = self.np
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = [i for i, t in enumerate(texts) if t.strip()]
        if not order:
            return out
        rows = np.array(self.client.embed([self.redact(texts[i]) for i in order]), dtype=np.float32)
        if rows.shape[1] != self.dim:
            raise self.failed(f"the endpoint's model now answers with {rows.shape[1]} dimensions, not {self.dim}")
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        out[order] = rows / np.maximum(norms, 1e-9)
        return out

    def calibrated(self, cosine_ask: float) -> None:
        """Its threshold, once chosen: the helper's decisions read it from now on."""
        self.model = replace(self.model, cosine_ask=cosine_ask)


def opened(base_url: str, remote: str, home: Path | None, key: str | None) -> EndpointEncoder:
    """The helper's encoder for the model ``remote`` of the endpoint ``base_url``, with the
    threshold kept in ``home`` if it was calibrated (for the width it answers with now)."""
    from clio.recall.encoder_calibration import stored

    encoder = EndpointEncoder(endpoint_model(base_url, remote), key)
    kept = stored(home, encoder.model.model_id) if home is not None else None
    if kept is not None and kept[1] == encoder.dim:
        encoder.calibrated(kept[0])
    return encoder


def calibrate_kept(encoder: EndpointEncoder, home: Path) -> None:
    """Choose the model's threshold (:mod:`clio.recall.encoder_calibration`) and keep it; a
    failure leaves its cosine deciding nothing until the next helper tries again."""
    from clio.recall.encoder_calibration import calibrate, store

    with contextlib.suppress(Exception):
        threshold, dev = calibrate(encoder.embed)
        store(home, encoder.model.model_id, threshold, encoder.dim, dev)
        encoder.calibrated(threshold)
