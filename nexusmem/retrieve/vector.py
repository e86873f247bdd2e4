"""Semantic retrieval: embed the query with the provider that made the stored vectors, then k-NN.

Nothing heavy loads unless the store holds vectors: a store without them answers from BM25 alone, and so
does one whose provider cannot answer now (Ollama down).
"""

from __future__ import annotations

from nexusmem import embed
from nexusmem.errors import StoreError
from nexusmem.store import Store

KNN = 200


def knn(store: Store, text: str, *, k: int = KNN, as_of: int | None = None) -> list[str]:
    """Ids of the K nodes nearest to TEXT, nearest first; [] when there are no vectors or no provider."""
    identity = embed.Identity.from_json(store.vector_identity_json())
    if identity is None or not text.strip() or not store.has_vectors():
        return []
    try:
        provider = embed.for_identity(identity)
        if provider is None:
            return []
        vector = embed.to_blob(provider.embed([text])[0])
        if len(vector) != identity.dim * 4:
            return []
        hits = store.search_vectors(vector, k, as_of)
    except (embed.EmbeddingUnavailable, StoreError, ValueError):
        return []
    # Cosine distance = 1 - similarity; below the model's noise floor a neighbour is not a match.
    return [node_id for node_id, distance in hits if 1.0 - distance >= provider.min_similarity]
