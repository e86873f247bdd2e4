"""Ollama as an embedding provider: POST {url}/api/embed {"model", "input": [...]} → {"embeddings": [[...]]}.

Anything wrong on the way (server down, model not pulled, an answer of the wrong shape) is an
EmbeddingUnavailable with one sentence saying which; the caller then keeps search BM25-only.
"""

from __future__ import annotations

from typing import Any

from nexusmem.embed import EmbeddingUnavailable, Vector
from nexusmem.ollama import (
    OllamaBadAnswer,
    OllamaClient,
    OllamaTimedOut,
    OllamaUnreachable,
    forget_down,
    recently_down,
    remember_down,
)

# The whole of one embedding request during a sync (a batch, a model loading cold): past it the pass stops
# and search stays BM25-only until the next sync. A query waits embed.QUERY_TIMEOUT instead.
SYNC_TIMEOUT = 120.0


class OllamaProvider:
    """An Ollama server's embedding model (e.g. nomic-embed-text)."""

    name = "ollama"
    # Embedding models served by Ollama put unrelated texts well above zero; k-NN ranks, RRF fuses by rank.
    min_similarity = 0.0
    share_floor = 0.0

    def __init__(
        self, model: str, url: str, timeout: float = SYNC_TIMEOUT, *, ask_anyway: bool = False
    ) -> None:
        self.model = model
        # Ask even when the URL did not answer a moment ago (`doctor`, which checks it now).
        self.ask_anyway = ask_anyway
        self._client = OllamaClient(url, timeout=timeout)
        self.url = self._client.url
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        """The model's dimension (one probe request the first time)."""
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def _post(self, texts: list[str]) -> Any:
        # A server that did not answer in time a moment ago is not waited for again (ollama.DOWN_SECONDS).
        down = None if self.ask_anyway else recently_down(self.url)
        if down is not None:
            raise EmbeddingUnavailable(down.describe())
        try:
            response = self._client.post("/api/embed", {"model": self.model, "input": texts})
        except OllamaTimedOut as exc:
            remember_down(self.url, str(exc))
            raise EmbeddingUnavailable(str(exc)) from exc
        except (OllamaUnreachable, OllamaBadAnswer) as exc:
            raise EmbeddingUnavailable(str(exc)) from exc
        forget_down(self.url)
        if response.status_code != 200:
            raise EmbeddingUnavailable(self._client.http_error(response, self.model))
        try:
            return response.json()
        except ValueError as exc:
            raise EmbeddingUnavailable(f"Ollama at {self.url} sent an answer that is not JSON") from exc

    def embed(self, texts: list[str]) -> list[Vector]:
        """One vector per text, in order; every vector of one model has the same dimension."""
        if not texts:
            return []
        data = self._post(texts)
        rows = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(rows, list) or len(rows) != len(texts):
            raise EmbeddingUnavailable(
                f"Ollama at {self.url} sent a malformed answer (expected {len(texts)} embeddings)"
            )
        out: list[Vector] = []
        for row in rows:
            if (
                not isinstance(row, list)
                or not row
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in row)
            ):
                raise EmbeddingUnavailable(f"Ollama at {self.url} sent a malformed embedding")
            if self._dim is None:
                self._dim = len(row)
            elif len(row) != self._dim:
                raise EmbeddingUnavailable(
                    f"Ollama at {self.url} changed dimension mid-run ({self._dim} → {len(row)})"
                )
            out.append([float(x) for x in row])
        return out

    def close(self) -> None:
        self._client.close()
