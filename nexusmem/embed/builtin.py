"""The built-in local embedder: wordllama's 256-d l2_supercat token vectors, shipped inside the wordllama
wheel, pooled over a text's tokens with each token weighted by how rare it is in this project.

Works offline on a fresh machine: the token vectors and the tokenizer are read from the installed
package's files; wordllama itself is never imported (its import costs ~0.5 s and its default load() tries
the network for a tokenizer the wheel does not hold).

Why the weights. wordllama averages a text's token vectors, so the tokens every text of a project shares
("the", "fix", the project's own name, `self`, `err`) pull every vector toward the same point and the
word that tells one change from another counts no more than they do. A token's weight here is
sqrt(ln((N + 1) / (df + 0.5))) over the project's N nodes, df of which hold it (`weights_from_counts`):
the inverse document frequency, square-rooted so that a rare token leads without drowning the rest. The
weights are counted once over the store's nodes and kept with its vectors (`TokenWeights`); the query is
weighted with the same ones. Vector-only ranking of the labelled questions' targets on the nineteen
newest evaluation sets (1,767 questions; docs/evaluation.md): MRR .374 unweighted, .424 with the plain
IDF, .431 with its square root; weights counted once over 46 other repositories instead of the project
itself: .399.
"""

from __future__ import annotations

import base64
import binascii
import functools
import importlib.util
import json
import math
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from nexusmem.embed import EmbeddingUnavailable, Vector

CONFIG = "l2_supercat"  # the unweighted mean: what stores synced before the weights hold
WEIGHTED = "l2_supercat+idf"  # the same token vectors, weighted by the project's token rarity
WORDS = "l2_supercat+idf+words"  # WEIGHTED, and a commit's vector leans toward its change words
MODELS = (WORDS, WEIGHTED, CONFIG)
# The WORDS model: a commit's vector is normalise(v(title + body) + COMMIT_WORDS_WEIGHT * v(the first
# COMMIT_WORDS_CHARS characters of its change words)), each part normalised first. A one-line message says
# little; the names its change touched say what it was about, and a question in a user's words finds them
# through the vectors where no word is shared. Over the fifty-six labelled sets (5,177 questions, packed,
# the commits' vectors rebuilt on copies of the stores): MRR .6788 without (WEIGHTED), .6832 at .25,
# .6839 at .4, .6852 at .6, .6844 at 1. At .6, symptom .498 -> .511, code .811 -> .823, multi .757 -> .760,
# doc .719 -> .712 (a commit now looks a little more like the page a how-to question wants).
COMMIT_WORDS_WEIGHT = 0.6
COMMIT_WORDS_CHARS = 400
DIM = 256
TOKENIZER_FILE = "tokenizers/l2_supercat_tokenizer_config.json"
WEIGHTS_FILE = "weights/l2_supercat_256.safetensors"
TENSOR = "embedding.weight"
# The cosine a node only the vectors found must reach to count at all (min_similarity): unweighted or
# weighted, unrelated texts score about -0.1..0.25 with these vectors, paraphrases without a shared word
# 0.25..0.6. A question about something the project never did must not be answered with its nearest
# strangers.
NOISE_FLOOR = {WORDS: 0.25, WEIGHTED: 0.25, CONFIG: 0.25}
# Where the semantic share of a node the words found too starts (fuse.evidence: semantic = (cos - floor) /
# (1 - floor)). Weighted, a word match's similarity carries signal all the way down: over the 35 labelled
# sets (3,194 questions, hybrid MRR, w = 0.8) one floor for both roles at .25 → .6786, .20 → .6826, .13 →
# .6838, .08 → .6847, 0 → .6861 (docs/evaluation.md).
SHARE_FLOOR = {WORDS: 0.0, WEIGHTED: 0.0, CONFIG: 0.25}
# Re-count the weights when the store holds this many times the nodes they were counted over: a project
# first synced at 20 commits should not keep the statistics of those 20 for ever; one synced with its
# whole history re-counts seldom (log2 of its growth), and each re-count re-embeds every node once.
REWEIGH_GROWTH = 2.0


def package_dir() -> Path:
    """The installed wordllama package directory (found without importing it)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingUnavailable(
            "the built-in embedder needs the wordllama package (pip install wordllama)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


class TokenWeights:
    """One weight per token id (float16, little-endian) and how many nodes they were counted over."""

    __slots__ = ("blob", "nodes")

    def __init__(self, blob: bytes, nodes: int) -> None:
        if len(blob) % 2:
            raise ValueError("token weights are float16: an even number of bytes")
        self.blob = blob
        self.nodes = nodes

    def __len__(self) -> int:
        return len(self.blob) // 2

    def of(self, token: int) -> float:
        """The weight of TOKEN (1.0 past the end: a tokenizer newer than the weights)."""
        if 0 <= token < len(self):
            return float(struct.unpack_from("<e", self.blob, 2 * token)[0])
        return 1.0

    def to_text(self) -> str:
        """How the store keeps them (a meta value): "<nodes>:<base64 of the float16 weights>"."""
        return f"{self.nodes}:{base64.b64encode(self.blob).decode('ascii')}"

    @staticmethod
    def from_text(text: str | None) -> TokenWeights | None:
        if not text:
            return None
        nodes, sep, data = text.partition(":")
        try:
            return TokenWeights(base64.b64decode(data, validate=True), int(nodes)) if sep else None
        except (ValueError, binascii.Error):
            return None


def weights_from_counts(document_counts: Sequence[int], texts: int, basis: int | None = None) -> TokenWeights:
    """sqrt(ln((TEXTS + 1) / (df + 0.5))) per token, df of the TEXTS counted holding it: above 0 even for a
    token every text holds, highest for one none holds (a query word the project never wrote). BASIS: the
    store's node count they stand for (TEXTS when every node was read, more when a sample was)."""
    values = [math.sqrt(math.log((texts + 1) / (df + 0.5))) for df in document_counts]
    return TokenWeights(struct.pack(f"<{len(values)}e", *values), texts if basis is None else basis)


def count_tokens(texts: Iterable[str], batch: int = 2048) -> tuple[list[int], int]:
    """(per token id: how many of TEXTS hold it, how many texts were read)."""
    import numpy as np

    tokenizer = query_embedder().tokenizer  # the one the embedding uses, loaded once per process
    vocab = tokenizer.get_vocab_size()
    counts = np.zeros(vocab, dtype=np.int64)
    seen = 0
    chunk: list[str] = []

    def flush() -> None:
        held = [
            np.unique(np.asarray(e.ids, dtype=np.int64))
            for e in tokenizer.encode_batch(chunk, add_special_tokens=False)
        ]
        ids = np.concatenate(held) if held else np.zeros(0, dtype=np.int64)
        counts[:] += np.bincount(ids[(ids >= 0) & (ids < vocab)], minlength=vocab)

    for text in texts:
        chunk.append(text if text.strip() else "-")
        seen += 1
        if len(chunk) >= batch:
            flush()
            chunk = []
    if chunk:
        flush()
    return [int(c) for c in counts], seen


def _tokenizer(where: Path) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(where / TOKENIZER_FILE))
    tokenizer.no_truncation()
    return tokenizer


@functools.lru_cache(maxsize=1)
def _tokenizer_bytes() -> bytes:
    return (package_dir() / TOKENIZER_FILE).read_bytes()


def whole_words(words: Iterable[str]) -> set[str]:
    """Those of WORDS (lower case) that the tokenizer's vocabulary holds as one whole-word token: ordinary
    English ("inside", "program", "although"), where names are split ("kafka" -> k·afka, "brotli" ->
    bro·t·li). The vocabulary is read as bytes (~5 ms once per process, no `tokenizers` import): a key of its
    JSON is written `"\u2581word":`. Empty when the package is missing."""
    try:
        vocabulary = _tokenizer_bytes()
    except (EmbeddingUnavailable, OSError):
        return set()
    return {w for w in words if w.isalpha() and f'"\u2581{w}":'.encode() in vocabulary}


class QueryEmbedder:
    """One text at a time without numpy: `tokenizers` (~40 ms) splits the text, the few token rows are
    read straight from the safetensors file (float16), averaged (weighted when given weights) and
    L2-normalised. A query pays ~1 ms instead of loading the whole matrix; unweighted, it is
    WordLlamaInference.embed(norm=True), which the tests pin it to.
    """

    def __init__(self, where: Path) -> None:
        self.tokenizer = _tokenizer(where)
        self.file: BinaryIO = (where / WEIGHTS_FILE).open("rb")
        header_len = struct.unpack("<Q", self.file.read(8))[0]
        info = json.loads(self.file.read(header_len))[TENSOR]
        if info["dtype"] != "F16" or info["shape"][1] != DIM:
            raise EmbeddingUnavailable(
                f"unexpected wordllama weights layout: {info['dtype']} {info['shape']}"
            )
        self.vocab = int(info["shape"][0])
        self.base = 8 + header_len + int(info["data_offsets"][0])
        self.row = struct.Struct(f"<{DIM}e")

    def embed(self, text: str, weights: TokenWeights | None = None) -> bytes:
        ids = self.tokenizer.encode(text, add_special_tokens=False).ids
        total = [0.0] * DIM
        mass = 0.0
        for token in ids:
            token = min(max(token, 0), self.vocab - 1)
            w = 1.0 if weights is None else weights.of(token)
            self.file.seek(self.base + token * self.row.size)
            total = [a + w * b for a, b in zip(total, self.row.unpack(self.file.read(self.row.size)))]
            mass += w
        mean = [x / (mass or 1.0) for x in total]
        norm = math.sqrt(sum(x * x for x in mean)) or 1.0
        return struct.pack(f"<{DIM}f", *(x / norm for x in mean))


_QUERY: QueryEmbedder | None = None


def query_embedder() -> QueryEmbedder:
    global _QUERY
    if _QUERY is None:
        try:
            _QUERY = QueryEmbedder(package_dir())
        except (OSError, ValueError, KeyError) as exc:
            raise EmbeddingUnavailable(f"the built-in embedder cannot read its model files: {exc}") from exc
    return _QUERY


_MATRIX: Any = None


def token_matrix() -> Any:
    """The token vectors as a float32 numpy array (32,000 × 256), read once per process (~30 ms)."""
    global _MATRIX
    if _MATRIX is None:
        import numpy as np

        reader = query_embedder()
        reader.file.seek(reader.base)
        raw = reader.file.read(reader.vocab * reader.row.size)
        _MATRIX = np.frombuffer(raw, dtype="<f2").reshape(reader.vocab, DIM).astype(np.float32)
    return _MATRIX


class BuiltinProvider:
    """wordllama l2_supercat token vectors, 256 dimensions, pooled (weighted by token rarity for the
    WEIGHTED model, once given the store's weights) and L2-normalised (cosine = dot product)."""

    name = "builtin"

    def __init__(self, model: str | None = None, weights: TokenWeights | None = None) -> None:
        if model not in (None, "", *MODELS):
            raise EmbeddingUnavailable(
                f"the built-in embedder has the models {WORDS!r} (the default), {WEIGHTED!r} (commits"
                f" without their change words) and {CONFIG!r} (unweighted), not {model!r}"
            )
        self.model = model or WORDS
        self.weights = weights if self.model != CONFIG else None
        self.min_similarity = NOISE_FLOOR[self.model]
        self.share_floor = SHARE_FLOOR[self.model]
        # How much a commit's change words weigh in its vector, and how many of their characters are read
        # (embed.index); 0 for none.
        self.change_words = COMMIT_WORDS_WEIGHT if self.model == WORDS else 0.0
        self.change_words_chars = COMMIT_WORDS_CHARS if self.model == WORDS else 0

    @property
    def weighs_tokens(self) -> bool:
        """Whether this model needs the store's token weights (see embed.index)."""
        return self.model != CONFIG

    def with_weights(self, weights: TokenWeights | None) -> BuiltinProvider:
        return BuiltinProvider(self.model, weights)

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: list[str]) -> list[Vector]:
        """One float32 vector (as bytes) per text."""
        if not texts:
            return []
        # An empty text pools zero tokens (a NaN vector): give it one token's worth of text.
        safe = [t if t.strip() else "-" for t in texts]
        if len(safe) == 1:
            # A query: the light path (no numpy import, a few rows read from the file), in every process,
            # so that a query's vector (and its scores) do not depend on whether this process synced.
            return [query_embedder().embed(safe[0], self.weights)]
        return self._embed_many(safe)

    def _embed_many(self, texts: list[str]) -> list[Vector]:
        import numpy as np

        matrix = token_matrix()
        vocab = matrix.shape[0]
        per_token = None
        if self.weights is not None:
            per_token = np.ones(vocab, dtype=np.float32)
            known = min(len(self.weights), vocab)
            per_token[:known] = np.frombuffer(self.weights.blob, dtype="<f2", count=known)
        encodings = query_embedder().tokenizer.encode_batch(texts, add_special_tokens=False)
        out: list[Vector] = []
        for start in range(0, len(encodings), 64):  # ~64 × 400 token rows at a time: ~25 MB
            chunk = encodings[start : start + 64]
            lengths = np.array([max(len(e.ids), 1) for e in chunk])
            ids = np.concatenate(
                [np.clip(np.asarray(e.ids or [0], dtype=np.int64), 0, vocab - 1) for e in chunk]
            )
            rows = matrix[ids]
            w = per_token[ids] if per_token is not None else np.ones(len(ids), dtype=np.float32)
            offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
            sums = np.add.reduceat(rows * w[:, None], offsets, axis=0)
            mass = np.add.reduceat(w, offsets)
            mean = sums / np.maximum(mass, 1e-12)[:, None]
            norms = np.linalg.norm(mean, axis=1, keepdims=True)
            mean = mean / np.where(norms > 0, norms, 1.0)
            out.extend(row.tobytes() for row in mean.astype("<f4", copy=False))
        return out
