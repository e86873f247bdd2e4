"""The embedding pass: give every node without a current vector one, a batch at a time.

Incremental (only nodes with no vector or whose content hash moved on), batched (config
`embedding.batchSize`), and resumable: each batch commits on its own, so an interrupted pass keeps what it
finished and the next sync embeds only the rest. A change of provider identity (name, model, dimension)
drops every vector and rebuilds them, and says so, once the new provider has embedded a probe text: while it
cannot (a server down, a model name nothing installed carries), the vectors stored stay and are searched.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nexusmem import paths
from nexusmem.embed import (
    DEFAULT_BATCH,
    EmbeddingUnavailable,
    Identity,
    Provider,
    configured,
    from_config,
    ollama_url,
    to_blob,
    usable,
)
from nexusmem.errors import StoreError
from nexusmem.store import Store

BODY_CHARS = 1000  # the title and the start of the body say what a node is about; diffs run long
WEIGHTS_SAMPLE = 20_000  # at most this many nodes' texts are read to count token weights
REWEIGH_LOUD = 5_000  # a re-count that re-embeds this many vectors is said on stderr too
ProgressFn = Callable[[str, int, "int | None"], None]


def _no_progress(label: str, done: int, total: int | None) -> None:
    return None


@dataclass
class EmbedSummary:
    """What one embedding pass did."""

    provider: str | None = None  # e.g. "builtin wordllama 256-d"; None when the provider is "none"
    embedded: int = 0
    dropped: int = 0  # vectors dropped because the provider identity changed (or became "none")
    pending: int = 0  # nodes that needed a vector when the pass began
    vectors: int = 0  # vectors stored after the pass
    seconds: float = 0.0
    unavailable: str | None = None  # why the pass stopped early (the search stays BM25-only)
    rejected: int = 0  # nodes whose vector came back NaN, infinite or all zero: left without one
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "embedded": self.embedded,
            "dropped": self.dropped,
            "pending": self.pending,
            "vectors": self.vectors,
            "seconds": round(self.seconds, 3),
            "unavailable": self.unavailable,
            "rejected": self.rejected,
            "notes": self.notes,
        }


def node_text(title: str, body_start: str) -> str:
    """What is embedded for a node: its title and the first BODY_CHARS of its body."""
    return f"{title}\n{body_start}" if body_start and body_start != title else title


def embed_pending(
    store: Store,
    config: dict[str, Any],
    *,
    provider: Provider | str | None = "config",
    progress: ProgressFn = _no_progress,
    log: Callable[[str], None] | None = None,
) -> EmbedSummary:
    """Embed every node that needs it with the configured provider (or PROVIDER, for tests)."""
    started = time.perf_counter()
    summary = EmbedSummary()
    say = log or (lambda _m: None)

    def note(message: str) -> None:
        summary.notes.append(message)
        say(f"embedding: {message}")

    try:
        chosen = from_config(config) if provider == "config" else provider
    except EmbeddingUnavailable as exc:
        # The configured embedder cannot even be set up (a model name nothing installed carries): the vectors
        # stored stay, and a query searches them while their own model can embed the question.
        summary.unavailable = str(exc)
        stored = Identity.from_json(store.vector_identity_json())
        if stored is not None and store.has_vectors():
            section = config.get("embedding", {})
            asked = (str(section.get("provider", "builtin")), str(section.get("model", "") or ""))
            if configured(*asked) != (stored.name, stored.model):
                note(
                    f"not switched to {' '.join(filter(None, asked))}: {exc}; {_kept(store, stored, config)}"
                )
            else:  # the vectors' own model, which cannot be set up now: a query cannot embed with it either
                count = store.vector_count()
                note(
                    f"{exc}; the {count:,} stored {'vector' if count == 1 else 'vectors'} ({stored.describe()}) are"
                    " kept, not searched: search stays BM25-only until their model can be loaded again"
                )
        else:
            note(f"{exc}; search stays BM25-only")
        summary.vectors = store.vector_count()
        summary.seconds = time.perf_counter() - started
        return summary
    assert not isinstance(chosen, str)
    stored = Identity.from_json(store.vector_identity_json())
    if chosen is None:
        if stored is not None or store.has_vectors():
            with store.transaction():
                summary.dropped = store.drop_vectors()
            note(
                f"provider is 'none': dropped {summary.dropped} vector(s) ({_describe(stored)}); search is BM25-only"
            )
        summary.seconds = time.perf_counter() - started
        return summary

    summary.provider = f"{chosen.name} {chosen.model}"
    if stored is not None and (stored.name, stored.model) != (chosen.name, chosen.model):
        # Proven before anything is dropped: a dead server or a bad model name wiped every vector, and
        # getting them back cost a full re-embed once the setting was put back.
        problem = _probe(chosen) if store.has_vectors() else None
        if problem is not None:
            summary.unavailable = problem
            note(f"not switched to {chosen.name} {chosen.model}: {problem}; {_kept(store, stored, config)}")
            summary.vectors = store.vector_count()
            summary.seconds = time.perf_counter() - started
            return summary
        with store.transaction():
            summary.dropped = store.drop_vectors()
        if stored.name == chosen.name:  # the same provider, another model: an upgrade, or a model setting
            after = Identity(chosen.name, chosen.model, stored.dim, getattr(chosen, "url", None)).describe()
            what = f"the {chosen.name} model changed ({stored.describe()} → {after.split(', ', 1)[-1]})"
        else:
            what = f"provider changed ({stored.describe()} → {chosen.name} {chosen.model})"
        note(f"{what}: dropped {summary.dropped} vector(s); rebuilding them")
        stored = None
    chosen, stored = _with_token_weights(store, chosen, stored, summary, note)
    url = getattr(chosen, "url", None)
    if stored is not None and stored.url != url and stored.name == chosen.name:
        # The same model reached at another URL (embedding.url changed): recorded, so that status says
        # where; a query sends to the config's URL whatever memory.db says (embed.for_identity).
        with store.transaction():
            store.set_vector_identity(Identity(stored.name, stored.model, stored.dim, url).to_json())
    if stored is not None and store.has_vectors() and not store.vectors_vetted():
        # Vectors stored before they were checked (see `usable` below) may be NaN or zero: a query's
        # distance to them is NULL. Checked once; those nodes are embedded again in this pass.
        with store.transaction():
            bad = store.drop_unusable_vectors()
        if bad:
            note(f"{bad} stored vector(s) were not finite or all zero: dropped, embedding them again")
    newest = store.newest_update()
    through = store.embedded_through()
    if stored is not None and newest is not None and through is not None and through >= newest:
        summary.pending = 0  # a completed pass already covered every node as it is now
    else:
        summary.pending = store.count_unembedded()
    batch_size = max(1, int(config.get("embedding", {}).get("batchSize", DEFAULT_BATCH) or DEFAULT_BATCH))
    words_weight = float(getattr(chosen, "change_words", 0.0))
    words_chars = int(getattr(chosen, "change_words_chars", 0)) if words_weight else 0
    last_seq = 0
    if summary.pending:
        # Every source is stored by now: a sync stopped from here on leaves only vectors missing, and says so.
        paths.mark_embedding(store.path.parent)
    while summary.pending:
        rows = store.unembedded(last_seq, batch_size, BODY_CHARS, words_chars)
        if not rows:
            break
        try:
            vectors = chosen.embed([node_text(title, body) for _seq, _hash, title, body, _words in rows])
            if words_weight:
                vectors = _with_change_words(chosen, vectors, [row[4] for row in rows], words_weight)
        except EmbeddingUnavailable as exc:
            summary.unavailable = str(exc)
            note(f"{exc}; {embedded_text(store)}")
            break
        blobs = [to_blob(v) for v in vectors]
        good = [(row, blob) for row, blob in zip(rows, blobs) if usable(blob)]
        summary.rejected += len(rows) - len(good)
        if not good:
            last_seq = rows[-1][0]
            continue
        dim = len(good[0][1]) // 4
        identity = Identity(chosen.name, chosen.model, dim, getattr(chosen, "url", None))
        dropped_now = 0
        try:
            with store.transaction():
                current = Identity.from_json(store.vector_identity_json())
                if not identity.same_as(current):
                    if current is not None or store.has_vector_table():
                        # Same provider and model, another dimension (the server's model was replaced).
                        dropped_now = store.drop_vectors()
                        summary.dropped += dropped_now
                        note(
                            f"vector dimension changed ({_describe(current)} → {dim}-d): dropped all vectors"
                        )
                    store.create_vector_table(dim, identity.to_json())
                store.put_vectors([(row[0], row[1], blob) for row, blob in good])
        except StoreError as exc:
            summary.unavailable = str(exc)
            note(f"{exc}; search stays BM25-only")
            break
        summary.provider = identity.describe()
        summary.embedded += len(good)
        last_seq = rows[-1][0]
        if dropped_now:
            # Nodes before this batch lost their vectors too: start over from the first node.
            last_seq = 0
            summary.pending = summary.embedded + store.count_unembedded()
        progress("embed", summary.embedded, summary.pending)
    if summary.rejected:
        # Said once a pass; those nodes stay without a vector (BM25 still finds them) and the next sync
        # asks again (embedded_through is not moved on).
        note(
            f"{summary.rejected} node(s) got a vector that is not finite or all zero from"
            f" {chosen.name} {chosen.model}; left without one (the next sync asks again)"
        )
    if summary.unavailable is None and not summary.rejected and newest is not None and store.has_vectors():
        with store.transaction():
            store.set_embedded_through(newest)
    summary.vectors = store.vector_count()
    summary.seconds = time.perf_counter() - started
    return summary


def embedded_text(store: Store) -> str:
    """How many of STORE's nodes have a current vector (a pass stopped part way, or not run yet), and that
    the rest are found by their words: every node is stored, with or without its vector."""
    nodes = store.node_count()
    missing = store.count_unembedded()
    have = nodes - missing
    if not have:
        return "search stays BM25-only until a sync embeds the nodes"
    return (
        f"{have:,} of {nodes:,} nodes have a vector and are searched by it; the other {missing:,} are found by"
        " their words until a sync embeds them"
    )


def _with_change_words(chosen: Provider, vectors: list[Any], words: list[str], weight: float) -> list[Any]:
    """VECTORS with each node that has change words (a commit) moved toward them: normalise(v + WEIGHT * w),
    both normalised (embed.builtin.WORDS)."""
    which = [i for i, text in enumerate(words) if text.strip()]
    if not which:
        return vectors
    import numpy as np

    extra = chosen.embed([words[i] for i in which])
    out = list(vectors)
    for i, blob in zip(which, extra):
        v = np.frombuffer(to_blob(out[i]), dtype="<f4")
        w = np.frombuffer(to_blob(blob), dtype="<f4")
        mixed = v / max(float(np.linalg.norm(v)), 1e-12) + weight * w / max(float(np.linalg.norm(w)), 1e-12)
        out[i] = (mixed / max(float(np.linalg.norm(mixed)), 1e-12)).astype("<f4").tobytes()
    return out


def _with_token_weights(
    store: Store,
    chosen: Provider,
    stored: Identity | None,
    summary: EmbedSummary,
    note: Callable[[str], None],
) -> tuple[Provider, Identity | None]:
    """CHOSEN bound to the store's token weights, when its model pools with them (the built-in one).

    The weights are counted over the store's nodes when it has none yet (its first vectors, or vectors of
    another model), and counted again once it holds REWEIGH_GROWTH times the nodes they were counted
    over; vectors pooled with the old weights are dropped then and rebuilt in this pass."""
    from nexusmem.embed import builtin

    if not isinstance(chosen, builtin.BuiltinProvider) or not chosen.weighs_tokens:
        return chosen, stored
    weights = builtin.TokenWeights.from_text(store.vector_token_weights())
    nodes = store.node_count()
    if weights is not None and stored is not None and nodes < builtin.REWEIGH_GROWTH * max(weights.nodes, 1):
        return chosen.with_weights(weights), stored
    # Past WEIGHTS_SAMPLE nodes an even sample counts them: a token's rarity is read as well from 20,000
    # texts as from 100,000, and counting tokenizes every text it reads once more.
    every = max(1, -(-nodes // WEIGHTS_SAMPLE))
    texts = (node_text(t, b) for t, b in store.embedding_texts(BODY_CHARS, every=every))
    fresh = builtin.weights_from_counts(*builtin.count_tokens(texts), basis=nodes)
    with store.transaction():
        dropped = store.drop_vectors() if (stored is not None or store.has_vectors()) else 0
        store.set_vector_token_weights(fresh.to_text())
    if dropped:
        summary.dropped += dropped
        why = (
            f"the project grew from {weights.nodes} to {nodes} nodes: token weights counted again"
            if weights is not None
            else "token weights counted"
        )
        message = f"{why}, dropped {dropped} vector(s); rebuilding them"
        # A young project doubles often and re-embeds in a blink: said in the summary (`sync --json`), and
        # on stderr only when the rebuild is long enough to notice.
        (note if dropped >= REWEIGH_LOUD else summary.notes.append)(message)
    return chosen.with_weights(fresh), None


# What a new provider is asked to embed before the vectors of the old one are dropped.
PROBE_TEXT = "fix: expire the cache lock file after a crash"


def _probe(chosen: Provider) -> str | None:
    """Why CHOSEN cannot embed now (asked for one real vector of PROBE_TEXT); None when it can."""
    try:
        vectors = chosen.embed([PROBE_TEXT])
    except EmbeddingUnavailable as exc:
        return str(exc)
    if len(vectors) != 1 or not usable(vectors[0]):
        return f"{chosen.name} {chosen.model} answered a vector that is not finite or all zero"
    return None


def _kept(store: Store, stored: Identity, config: dict[str, Any]) -> str:
    """What becomes of the vectors STORED names when the configured embedder cannot embed: kept, and
    whether a query searches them (it embeds the question with their own model: embed.for_identity)."""
    count = store.vector_count()
    what = f"the {count:,} stored {'vector' if count == 1 else 'vectors'} ({stored.describe()})"
    later = "until a sync can embed with the new setting"
    why = _unsearchable(stored, config)
    if why is None:
        return f"{what} are kept and still searched {later}"
    return f"{what} are kept but not searched ({why}): search stays BM25-only {later}"


def _unsearchable(stored: Identity, config: dict[str, Any]) -> str | None:
    """Why a query cannot search vectors of STORED under CONFIG now; None when it can."""
    if stored.name == "ollama":
        return None if ollama_url(config) else "text goes to Ollama only while the config names it"
    if stored.name == "local":
        from nexusmem.embed.local import LocalProvider

        try:
            LocalProvider(stored.model).dim  # noqa: B018 - reads the model's config.json
        except EmbeddingUnavailable as exc:
            return f"their model cannot be loaded either: {exc}"
    return None


def _describe(identity: Identity | None) -> str:
    return identity.describe() if identity is not None else "unknown provider"
