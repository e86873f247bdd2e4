"""Embedding providers behind one small interface: the built-in word vectors, Ollama over HTTP, a local
sentence-transformer model directory run with numpy, or none.

This module is light on purpose (stdlib only): wordllama, numpy and httpx are imported inside the
provider that needs them, so `query` on a store without vectors, `precheck` and `--version` never pay for
them.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

PROVIDERS = ("builtin", "ollama", "local", "none")
DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
DEFAULT_OLLAMA_MODEL = "nomic-embed-text"
DEFAULT_BATCH = 256
# How long a query waits for an Ollama embedder to embed the question, all told (connecting included):
# past it the query answers from the words alone and says so. A sync waits embed.ollama.SYNC_TIMEOUT.
QUERY_TIMEOUT = 5.0

# A vector as a provider returns it: float32 bytes (little-endian, what sqlite-vec stores) or floats.
Vector = bytes | list[float]


class EmbeddingUnavailable(Exception):
    """The provider cannot answer now (server down, model missing, bad answer): search stays BM25-only."""


class Provider(Protocol):
    """What the embedding pass and the query need from an embedder."""

    name: str  # "builtin" | "ollama" | "local"
    model: str
    # Cosine similarity under which a k-NN hit is noise for this model (unrelated texts' typical level).
    min_similarity: float
    # Where the semantic share of a node the words found too starts (fusion counts max(0, cos - it));
    # min_similarity for most models, lower where a word match's weak similarity still carries signal.
    share_floor: float

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> list[Vector]: ...


@dataclass(frozen=True)
class Identity:
    """Which model made the stored vectors. Vectors of two identities are not comparable."""

    name: str
    model: str
    dim: int
    # Where an Ollama provider was reached at the last sync: said, never used to send anything (a query
    # embeds through the config's URL, embed.for_identity); not part of the identity.
    url: str | None = None

    def same_as(self, other: Identity | None) -> bool:
        return other is not None and (self.name, self.model, self.dim) == (other.name, other.model, other.dim)

    def describe(self) -> str:
        if self.name == "builtin":
            pooled = (
                "weighted by this project's words, commits with their change words"
                if self.model.endswith("+words")
                else "weighted by this project's words"
                if self.model.endswith("+idf")
                else "unweighted"
            )
            return f"builtin wordllama {self.dim}-d, {pooled}"
        return f"{self.name} {self.model} {self.dim}-d"

    def to_json(self) -> str:
        return json.dumps(
            {"name": self.name, "model": self.model, "dim": self.dim, "url": self.url}, sort_keys=True
        )

    @staticmethod
    def from_json(text: str | None) -> Identity | None:
        if not text:
            return None
        try:
            data = json.loads(text)
            return Identity(str(data["name"]), str(data["model"]), int(data["dim"]), data.get("url"))
        except (ValueError, KeyError, TypeError):
            return None


def to_blob(vector: Vector) -> bytes:
    """float32 bytes for sqlite-vec, whatever form the provider returned."""
    if isinstance(vector, bytes):
        return vector
    return array("f", vector).tobytes()


def config_url(config: Mapping[str, Any]) -> str:
    """Where the (trusted) CONFIG sends text to an Ollama embedder: embedding.url, or the default."""
    from nexusmem.config import url_setting

    return url_setting(config, "embedding.url")


def ollama_url(config: Mapping[str, Any]) -> str | None:
    """config_url when the (trusted) CONFIG's embedder is Ollama, else None: text goes to Ollama only while
    the config names it (vectors it made earlier and a sync has not dropped yet are not searched)."""
    return config_url(config) if config.get("embedding", {}).get("provider") == "ollama" else None


def usable(vector: Vector) -> bool:
    """Whether VECTOR can be searched: every component finite and not all zero. A server that answers NaN,
    Infinity or zeros (a broken model, a GPU fault) gives vectors whose cosine distance is NULL or NaN."""
    import math

    values = array("f")
    values.frombytes(to_blob(vector))
    return any(values) and all(math.isfinite(x) for x in values)


def from_config(config: dict[str, Any]) -> Provider | None:
    """The provider the project's config asks for (`embedding` section); None for "none"."""
    section = config.get("embedding", {})
    name = section.get("provider", "builtin")
    model = section.get("model", "") or ""
    return make(name, model, config_url(config))


def configured(provider: str, model: str) -> tuple[str, str]:
    """(provider, model) as the vectors the config's `embedding.provider` PROVIDER and `embedding.model` MODEL
    make are known by (Identity's name and model: a default filled in, a packaged model's name); MODEL as
    written when it names nothing that can be set up."""
    if provider == "ollama":
        return provider, model or DEFAULT_OLLAMA_MODEL
    if provider not in ("builtin", "local"):
        return provider, model
    try:
        made = make(provider, model)
    except EmbeddingUnavailable:
        if provider == "local" and not model.strip():  # the packaged model, not installed (now)
            from nexusmem.embed.local import DEFAULT_MODEL

            return provider, DEFAULT_MODEL
        return provider, model
    return provider, made.model if made is not None else model


@dataclass(frozen=True)
class Elsewhere:
    """The stored vectors were not made by the embedder the config names now (elsewhere): what to say of it,
    in parts, so that a query that could not search them says it in one note with why (text is the note
    alone, as doctor says it)."""

    made: str  # "the stored vectors were made by X, not Y as the config says now"
    searched: str  # what a query does with them meanwhile: "a query embeds with their model", ...
    until: str  # "until the next sync (`nexusmem sync`) re-embeds the N nodes with Y" (or drops them)
    not_searched: bool  # a query never searches them (Ollama's, the config naming no Ollama)

    def text(self) -> str:
        return f"{self.made}: {self.searched} {self.until}"


def stored_elsewhere(identity: Identity | None, provider: str, model: str, nodes: int | None) -> str | None:
    """What to say when the stored vectors (of IDENTITY) were not made by the embedder the config names now
    (`embedding.provider` PROVIDER, `embedding.model` MODEL): it was changed since the last sync, or a sync
    could not switch to it. A query embeds with the stored vectors' own model (for_identity) until a sync
    re-embeds the store's NODES; None when they agree, or there are no vectors."""
    parts = elsewhere(identity, provider, model, nodes)
    return None if parts is None else parts.text()


def elsewhere(identity: Identity | None, provider: str, model: str, nodes: int | None) -> Elsewhere | None:
    """stored_elsewhere's sentence in its parts (Elsewhere); None when there is nothing to say."""
    if identity is None:
        return None
    name, wanted = configured(provider, model)
    if (identity.name, identity.model) == (name, wanted):
        return None
    made = f"the stored vectors were made by {identity.describe()}, not {' '.join(filter(None, (name, model)))} as the config says now"
    # Text goes to Ollama only while the config names it (ollama_url): its vectors are not searched.
    not_searched = identity.name == "ollama" and name != "ollama"
    if not_searched:
        searched = "they are not searched (text goes to Ollama only while the config names it)"
    elif name == "none":
        searched = "a query searches them"
    else:
        searched = "a query embeds with their model"
    if name == "none":
        until = "until the next sync (`nexusmem sync`) drops them"
    else:
        count = "" if nodes is None else f" {nodes:,}"
        until = f"until the next sync (`nexusmem sync`) re-embeds the{count} nodes with {name}"
    return Elsewhere(made, searched, until, not_searched)


def make(name: str, model: str = "", url: str | None = None, timeout: float | None = None) -> Provider | None:
    """A provider by name (unloaded: nothing heavy happens until the first embed)."""
    if name == "none":
        return None
    if name == "builtin":
        from nexusmem.embed.builtin import BuiltinProvider

        return BuiltinProvider(model or None)
    if name == "ollama":
        from nexusmem.embed.ollama import SYNC_TIMEOUT, OllamaProvider

        return OllamaProvider(
            model or DEFAULT_OLLAMA_MODEL, url or DEFAULT_OLLAMA_URL, timeout or SYNC_TIMEOUT
        )
    if name == "local":
        from nexusmem.embed.local import LocalProvider

        return LocalProvider(model)
    raise ValueError(f"unknown embedding provider {name!r} (expected one of {', '.join(PROVIDERS)})")


_CACHE: dict[tuple[str, str, str | None, str | None], Provider] = {}


def for_identity(
    identity: Identity, token_weights: str | None = None, url: str | None = None
) -> Provider | None:
    """The provider that made vectors of IDENTITY (with TOKEN_WEIGHTS, the store's
    `vector_token_weights()`, for the built-in model that pools with them), kept for the life of the
    process: a long-lived MCP server loads the model once, and each store's weights once.

    An Ollama provider is reached at URL, the one the project's (trusted) config gives now, never at the
    URL recorded with the vectors: memory.db comes with a copied repository, and the text embedded is the
    user's question or memory. Without URL there is no Ollama provider (None: search stays BM25-only)."""
    weights = token_weights if identity.name == "builtin" else None
    where = url if identity.name == "ollama" else None
    if identity.name == "ollama" and not where:
        return None
    key = (identity.name, identity.model, where, weights)
    if key not in _CACHE:
        provider = make(identity.name, identity.model, where, QUERY_TIMEOUT)
        if provider is None:
            return None
        if weights is not None:
            from nexusmem.embed.builtin import BuiltinProvider, TokenWeights

            if isinstance(provider, BuiltinProvider):
                provider = provider.with_weights(TokenWeights.from_text(weights))
        _CACHE[key] = provider
    return _CACHE[key]
