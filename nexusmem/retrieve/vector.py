"""Semantic retrieval: embed the query with the provider that made the stored vectors, then k-NN.

Nothing heavy loads unless the store holds vectors: a store without them answers from BM25 alone, and so
does one whose provider cannot answer now (Ollama down).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexusmem import embed
from nexusmem.errors import StoreError
from nexusmem.store.interface import SearchStore
from nexusmem.store.vectors import read_all_vectors

KNN = 200
# A long-running process (the MCP server) that queries one store again keeps its vectors in memory: an
# exact cosine k-NN with numpy over 100k x 256 takes ~10 ms where vec0 takes ~90 ms at k = 200. The copy
# is loaded in a background thread from the second query on (queries use vec0 meanwhile), so a one-shot
# CLI query never pays for it, and no query ever waits for it.
WARM_AFTER_QUERIES = 2
# The loading thread's name: a test waits for it before its environment is undone (its connection reads
# the environment while it opens, unlocked, and a variable set or removed meanwhile can crash it).
WARM_THREAD = "nexusmem-vectors-warm"
# How deep the k-NN looks when the query has a --since/--until window (filtered after the k-NN).
WINDOW_K = 2000


@dataclass
class _Warm:
    generation: str
    queries: int = 0
    loading: bool = False
    seqs: Any = None  # numpy int64 array
    matrix: Any = None  # numpy float32 array, the stored vectors as they are
    inverse_norms: Any = None  # numpy float32 array, 1 / each row's length


_WARM: dict[str, _Warm] = {}
_WARM_LOCK = threading.Lock()


def usable_rows(rows: list[tuple[int, bytes]]) -> tuple[Any, Any, Any]:
    """(seqs, matrix, norms) of stored vector ROWS (read_all_vectors: seq, float32 blob), as numpy arrays in
    ROWS' order, the vectors as stored; one stored NaN, infinite or all zero (before embedding checked them)
    is left out."""
    import numpy as np

    matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32).reshape(len(rows), -1)
    norms = np.linalg.norm(matrix, axis=1)
    keep = np.isfinite(norms) & (norms > 0)
    seqs = np.array([seq for seq, _ in rows], dtype=np.int64)
    return seqs[keep], matrix[keep], norms[keep]


def unit_rows(rows: list[tuple[int, bytes]]) -> tuple[Any, Any]:
    """(seqs, matrix) of usable_rows(ROWS), each vector normalised."""
    seqs, matrix, norms = usable_rows(rows)
    return seqs, matrix / norms[:, None]


def _load(db: Path, warm: _Warm) -> None:
    try:
        rows = read_all_vectors(db)
        if not rows:
            return
        seqs, matrix, norms = usable_rows(rows)
        warm.inverse_norms = (1.0 / norms).astype(matrix.dtype)
        warm.seqs, warm.matrix = seqs, matrix  # the matrix last: a query reads the copy once it is set
    except Exception:  # an in-memory copy is an optimisation: vec0 keeps answering without it
        return


@dataclass(frozen=True)
class _WarmAnswer:
    """The in-memory copy's view of one query: its SEQS and MATRIX (the vectors as stored), every row's
    SIMILARITY to the query by a matrix product (enough to choose the nearest: its sums run in another order
    than the index's, so a distance would differ from the index's by up to 2e-7, a score's sixth decimal
    between the MCP server and the CLI), and the query's BLOB, whose distances to the chosen the index's own
    function gives (store.distances_from)."""

    seqs: Any
    matrix: Any
    similarity: Any
    blob: bytes


def _warm_similarities(store: SearchStore, blob: bytes) -> _WarmAnswer | None:
    """The in-memory copy's similarities to BLOB (_WarmAnswer); None while the copy is not ready (the
    second query of a process starts loading it)."""
    if not store.in_memory_copy:
        return None
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
                threading.Thread(target=_load, args=(store.path, warm), name=WARM_THREAD, daemon=True).start()
            return None
    import numpy as np

    query = np.frombuffer(blob, dtype=np.float32)
    if query.shape[0] != warm.matrix.shape[1]:
        return None
    return _WarmAnswer(warm.seqs, warm.matrix, (warm.matrix @ query) * warm.inverse_norms, blob)


# The nearest are chosen on the matrix product's similarities, then put in order on their exact distances:
# a few more than K are chosen, so that one the product put just past K, by less than its rounding, is not
# lost where the index would keep it.
NEAREST_MARGIN = 16


def _nearest(store: SearchStore, warm: _WarmAnswer, k: int) -> list[tuple[int, float]]:
    """(seq, cosine distance) of the K nearest, the distances the index would give."""
    import numpy as np

    sims = warm.similarity
    count = min(k + NEAREST_MARGIN, sims.shape[0])
    if count <= 0 or k <= 0:
        return []
    top = np.argpartition(-sims, count - 1)[:count]
    distances = store.distances_from(warm.blob, [row.tobytes() for row in warm.matrix[top]])
    ranked = sorted(
        (distance, int(seq))
        for distance, seq in zip(distances, warm.seqs[top].tolist(), strict=True)
        if math.isfinite(distance)
    )
    return [(seq, distance) for distance, seq in ranked[:k]]


def _distances_of(store: SearchStore, warm: _WarmAnswer, ids: Sequence[str]) -> dict[str, float]:
    """id → cosine distance of those of IDS in the in-memory copy (its seqs sorted), as the index gives it."""
    import numpy as np

    rows = store.vector_rows(ids)
    if not rows:
        return {}
    seqs = warm.seqs
    wanted = np.array(list(rows.values()), dtype=np.int64)
    at = np.minimum(np.searchsorted(seqs, wanted), len(seqs) - 1)
    found = [
        (node_id, i)
        for node_id, i, seq in zip(rows, at.tolist(), wanted.tolist(), strict=True)
        if int(seqs[i]) == seq
    ]
    if not found:
        return {}
    distances = store.distances_from(warm.blob, [warm.matrix[i].tobytes() for _, i in found])
    return {node_id: d for (node_id, _), d in zip(found, distances, strict=True) if math.isfinite(d)}


def knn(store: SearchStore, text: str, *, k: int = KNN, as_of: int | None = None) -> list[str]:
    """Ids of the K nodes nearest to TEXT, nearest first; [] when there are no vectors or no provider."""
    return [node_id for node_id, _ in knn_scored(store, text, k=k, as_of=as_of)]


@dataclass(frozen=True)
class Neighbours:
    """The k-NN list with what score-aware fusion needs: each hit's cosine similarity, and the provider's
    noise floor (below it a neighbour is not a match; fusion maps floor..1 onto 0..1)."""

    hits: list[tuple[str, float]]  # (id, cosine similarity), nearest first
    floor: float
    # (id, cosine similarity) of the nodes asked for by `also` that the k-NN left out, above the floor
    more: list[tuple[str, float]] = field(default_factory=list)
    skipped: str | None = None  # why the vectors were not searched (the embedder did not answer in time)


def knn_scored(
    store: SearchStore,
    text: str,
    *,
    k: int = KNN,
    as_of: int | None = None,
    since: int | None = None,
    until: int | None = None,
    url: str | None = None,
    vector: bytes | None = None,
) -> list[tuple[str, float]]:
    """(id, cosine similarity) of the K nodes nearest to TEXT, nearest first (see neighbours)."""
    return neighbours(store, text, k=k, as_of=as_of, since=since, until=until, url=url, vector=vector).hits


def query_vectors(store: SearchStore, texts: Sequence[str], url: str | None = None) -> list[bytes] | None:
    """The vectors of TEXTS, made in one batch by the provider that made the stored vectors (the built-in
    one's many-text path: ~1 ms a text where one at a time, as a query, reads a file row per token); None
    when the store has no vectors or the provider cannot make them now. For `neighbours(..., vector=)`."""
    identity = embed.Identity.from_json(store.vector_identity_json())
    if identity is None or not texts or not store.has_vectors():
        return None
    try:
        provider = embed.for_identity(identity, store.vector_token_weights(), url)
        return None if provider is None else [embed.to_blob(v) for v in provider.embed(list(texts))]
    except embed.EmbeddingUnavailable:
        return None


def neighbours(
    store: SearchStore,
    text: str,
    *,
    k: int | None = None,
    as_of: int | None = None,
    since: int | None = None,
    until: int | None = None,
    also: Sequence[str] = (),
    url: str | None = None,
    vector: bytes | None = None,
    configured: tuple[str | None, str] = (None, ""),
    question: bool = False,
) -> Neighbours:
    """The K nodes nearest to TEXT with their cosine similarities, nearest first, those below the
    provider's noise floor left out; empty when there are no vectors or no provider. With a SINCE/UNTIL
    window the k-NN looks WINDOW_K deep before the window filter, so that a narrow window keeps hits.

    ALSO: ids another list found (the BM25 candidates), whose similarity is read exactly when the k-NN
    leaves them out (`more`). A store with many near texts puts a good match at vector rank 400: cut at K,
    it would count as no match at all, and lose to a weaker one the k-NN happened to reach.

    URL: where an Ollama embedder may be reached, the trusted config's (rank.Settings.embedding_url); the
    URL memory.db recorded is never used. Without one, vectors made by Ollama are not searched. VECTOR: TEXT's
    vector when it was made already (query_vectors).

    CONFIGURED: the (provider, model) the config names (rank.Settings). When the vectors are not searched
    although it names one (not "none"), `skipped` says why in a phrase: no vectors yet, the provider cannot
    answer, vectors made by another provider; a query's notes carry it.

    QUESTION: TEXT is a question asked of the memory (not a node's text, as the stale check's neighbours are):
    its vector goes through the map learned for the model's vectors, when there is one (embed.question_map)."""
    k = KNN if k is None else k
    if not text.strip():
        return Neighbours([], 0.0)
    identity = embed.Identity.from_json(store.vector_identity_json())
    if identity is None or not store.has_vectors():
        return Neighbours([], 0.0, skipped=_why_no_vectors(configured, url))
    windowed = since is not None or until is not None
    depth = max(k, WINDOW_K) if windowed else k
    try:
        provider = embed.for_identity(identity, store.vector_token_weights(), url)
        if provider is None:
            return Neighbours([], 0.0, skipped=_another_provider(identity, configured))
        if vector is None:
            vector = embed.to_blob(provider.embed([text])[0])
            if question:
                from nexusmem.embed import question_map  # only when a question is embedded

                if question_map.applies(identity.name, identity.model, identity.dim):
                    vector = question_map.mapped(vector)
        if len(vector) != identity.dim * 4 or not embed.usable(vector):
            return Neighbours(
                [], 0.0, skipped=f"{identity.describe()} gave the question a vector that cannot be searched"
            )
        warm = _warm_similarities(store, vector)
        hits = (
            store.vector_hits_to_ids(_nearest(store, warm, depth), as_of, since=since, until=until)
            if warm is not None
            else store.search_vectors(vector, depth, as_of, since=since, until=until)
        )
    except embed.EmbeddingUnavailable as exc:
        return Neighbours([], 0.0, skipped=str(exc))
    except (StoreError, ValueError) as exc:
        return Neighbours([], 0.0, skipped=f"the vectors could not be searched: {exc}")
    # Cosine distance = 1 - similarity. A node only the vectors found must reach the model's noise floor;
    # a node the words found too counts its similarity from the model's share floor (the same, unless the
    # model says its similarity carries signal below the level unrelated texts reach: see embed.builtin).
    floor = provider.min_similarity
    share_floor = min(floor, provider.share_floor)
    kept = [(node_id, 1.0 - distance) for node_id, distance in hits if 1.0 - distance >= floor][:k]
    listed = {node_id for node_id, _ in kept}
    wanted = [node_id for node_id in dict.fromkeys(also) if node_id not in listed]
    # The k-NN's own list (WINDOW_K deep with a window) already holds the distances of some of them.
    searched = dict(hits)
    exact = {node_id: searched[node_id] for node_id in wanted if node_id in searched}
    unread = [node_id for node_id in wanted if node_id not in searched]
    try:
        if unread and warm is not None:
            exact.update(_distances_of(store, warm, unread))
        elif unread:
            exact.update(store.vector_distances(vector, unread))
    except StoreError:
        pass  # a store that cannot answer now: the rest stay unread, as if the k-NN had never seen them
    more = sorted(
        ((node_id, 1.0 - d) for node_id, d in exact.items() if 1.0 - d >= share_floor),
        key=lambda h: (-h[1], h[0]),
    )
    return Neighbours(kept, share_floor, more)


# Said to whoever reads a query's notes: a person at the CLI, or an agent (MCP search_memory).
RUN_SYNC = "run `nexusmem sync` (an agent: the sync_project tool)"


def _why_no_vectors(configured: tuple[str | None, str], url: str | None) -> str | None:
    """Why a store without vectors is searched by its words alone, when CONFIGURED names an embedder: the
    embedder cannot work here (the local model not installed, the Ollama at URL did not answer a moment
    ago), or no sync has made vectors yet. None when no embedder is named."""
    name, model = configured
    if name is None or name == "none":
        return None
    if name == "ollama" and url:
        from nexusmem.ollama import recently_down

        down = recently_down(url)
        if down is not None:
            return down.describe()
    if name == "local":
        try:
            from nexusmem.embed.local import resolve_model

            resolve_model(model)  # finds the model's directory, loads nothing
        except embed.EmbeddingUnavailable as exc:
            return str(exc)
    return f"the memory holds no vectors yet: {RUN_SYNC} to make them"


def _another_provider(identity: embed.Identity, configured: tuple[str | None, str]) -> str | None:
    """Why vectors of IDENTITY are not searched when no provider can embed the question for them (Ollama's,
    with the config naming another embedder)."""
    name = configured[0]
    if name is None or name == "none":
        return None
    if name == identity.name:
        return f"the config gives no URL to reach {identity.describe()} at"
    return f"the stored vectors were made by {identity.describe()}, the config names {name}: {RUN_SYNC} to rebuild them"
