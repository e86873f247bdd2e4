"""Ollama as an embedding provider: POST {url}/api/embed {"model", "input": [...]} → {"embeddings": [[...]]}.

Anything wrong on the way (server down, model not pulled, an answer of the wrong shape) is an
EmbeddingUnavailable with one sentence saying which; the caller then keeps search BM25-only.
"""

from __future__ import annotations

from typing import Any

from nexusmem.embed import EmbeddingUnavailable, Vector

# A refused connection answers at once; a host that drops packets must not hang a query for long.
CONNECT_TIMEOUT = 2.0
READ_TIMEOUT = 120.0


class OllamaProvider:
    """An Ollama server's embedding model (e.g. nomic-embed-text)."""

    name = "ollama"
    # Embedding models served by Ollama put unrelated texts well above zero; k-NN ranks, RRF fuses by rank.
    min_similarity = 0.0

    def __init__(self, model: str, url: str) -> None:
        self.model = model
        self.url = url.rstrip("/")
        self._dim: int | None = None
        self._client: Any = None

    @property
    def dim(self) -> int:
        """The model's dimension (one probe request the first time)."""
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def _post(self, texts: list[str]) -> Any:
        import httpx

        if self._client is None:
            self._client = httpx.Client(timeout=httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT))
        endpoint = f"{self.url}/api/embed"
        try:
            response = self._client.post(endpoint, json={"model": self.model, "input": texts})
        except httpx.HTTPError as exc:
            raise EmbeddingUnavailable(f"Ollama at {self.url} is unreachable ({type(exc).__name__})") from exc
        if response.status_code != 200:
            detail = response.text.strip().replace("\n", " ")[:160]
            raise EmbeddingUnavailable(
                f"Ollama at {self.url} answered HTTP {response.status_code} for model {self.model!r}: {detail}"
            )
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
        if self._client is not None:
            self._client.close()
            self._client = None
