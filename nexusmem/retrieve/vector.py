"""Semantic retrieval: embed the query with the provider that made the stored vectors, then k-NN.

Nothing heavy loads unless the store holds vectors: a store without them answers from BM25 alone, and so
does one whose provider cannot answer now (Ollama down).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexusmem import embed
from nexusmem.errors import StoreError
from nexusmem.store import Store
from nexusmem.store.vectors import read_all_vectors

KNN = 200
# A long-running process (the MCP server) that queries one store again keeps its vectors in memory: an
# exact cosine k-NN with numpy over 100k x 256 takes ~10 ms where vec0 takes ~90 ms at k = 200. The copy
# is loaded in a background thread from the second query on (queries use vec0 meanwhile), so a one-shot
# CLI query never pays for it, and no query ever waits for it.
WARM_AFTER_QUERIES = 2


@dataclass
class _Warm:
    generation: str
    queries: int = 0
    loading: bool = False
    seqs: Any = None  # numpy int64 array
    matrix: Any = None  # numpy float32 array, rows normalised


_WARM: dict[str, _Warm] = {}
_WARM_LOCK = threading.Lock()


def _load(db: Path, warm: _Warm) -> None:
    try:
        import numpy as np

        rows = read_all_vectors(db)
        if not rows:
            return
        matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32).reshape(len(rows), -1)
        norms = np.linalg.norm(matrix, axis=1)
        norms[norms == 0] = 1.0
        seqs = np.array([seq for seq, _ in rows], dtype=np.int64)
        warm.seqs, warm.matrix = seqs, matrix / norms[:, None]
    except Exception:  # an in-memory copy is an optimisation: vec0 keeps answering without it
        return


def _warm_hits(store: Store, blob: bytes, k: int) -> list[tuple[int, float]] | None:
    """(seq, cosine distance) of the K nearest, from the in-memory copy; None while it is not ready."""
    key = str(store.path)
    generation = store.vectors_generation()
    with _WARM_LOCK:
        warm = _WARM.get(key)
        if warm is None or warm.generation != generation:
            warm = _WARM[key] = _Warm(generation)
        warm.queries += 1
        if warm.matrix is None:
            if warm.queries >= WARM_AFTER_QUERIES and not warm.loading:
                warm.loading = True
                threading.Thread(target=_load, args=(store.path, warm), daemon=True).start()
            return None
    import numpy as np

    query = np.frombuffer(blob, dtype=np.float32)
    if query.shape[0] != warm.matrix.shape[1]:
        return None
    norm = float(np.linalg.norm(query)) or 1.0
    sims = warm.matrix @ (query / norm)
    count = min(k, sims.shape[0])
    top = np.argpartition(-sims, count - 1)[:count]
    return [(int(warm.seqs[i]), float(1.0 - sims[i])) for i in top]


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
        warm = _warm_hits(store, vector, k)
        hits = (
            store.vector_hits_to_ids(warm, as_of)
            if warm is not None
            else store.search_vectors(vector, k, as_of)
        )
    except (embed.EmbeddingUnavailable, StoreError, ValueError):
        return []
    # Cosine distance = 1 - similarity; below the model's noise floor a neighbour is not a match.
    return [node_id for node_id, distance in hits if 1.0 - distance >= provider.min_similarity]
