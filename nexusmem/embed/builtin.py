"""The built-in local embedder: wordllama's 256-d l2_supercat model, shipped inside the wordllama wheel.

Works offline on a fresh machine: the weights and the tokenizer are read from the installed package
directory, and downloads are disabled (wordllama's default load() looks for the tokenizer under a path
that does not exist in the wheel and then tries the network).
"""

from __future__ import annotations

import importlib.util
import json
import math
import struct
from pathlib import Path
from typing import Any, BinaryIO

from nexusmem.embed import EmbeddingUnavailable, Vector

CONFIG = "l2_supercat"
DIM = 256
TOKENIZER_FILE = "tokenizers/l2_supercat_tokenizer_config.json"
WEIGHTS_FILE = "weights/l2_supercat_256.safetensors"
TENSOR = "embedding.weight"


def package_dir() -> Path:
    """The installed wordllama package directory (found without importing it)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingUnavailable(
            "the built-in embedder needs the wordllama package (pip install wordllama)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


_MODEL: Any = None


def model() -> Any:
    """The loaded model, shared by every provider object of this process (loading costs ~0.2 s)."""
    global _MODEL
    if _MODEL is None:
        _MODEL = load_model()
    return _MODEL


def load_model() -> Any:
    """WordLlama's inference object, loaded from the package's own files without touching the network."""
    import logging  # only with the model: ~10 ms that a sync with nothing to embed need not pay

    where = package_dir()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        # wordllama calls logging.basicConfig(level=INFO) at import: undo it, or every library's INFO
        # line (httpx logs each request) would land on the user's stderr.
        from wordllama import WordLlama
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    try:
        # cache_dir=<package dir>: the tokenizer lives in <package>/tokenizers/, which wordllama looks for
        # as "<cache_dir>/tokenizers/"; the weights are found in <package>/weights/.
        return WordLlama.load(config=CONFIG, dim=DIM, cache_dir=where, disable_download=True)
    except (OSError, ValueError) as exc:
        raise EmbeddingUnavailable(
            f"the built-in embedder cannot load its model from {where}: {exc}"
        ) from exc


class QueryEmbedder:
    """One text at a time, the way WordLlamaInference.embed(norm=True) computes it, without importing
    wordllama (~0.5 s: pydantic, requests, its config files) or numpy: `tokenizers` (~40 ms) splits the
    text, the few token rows are read straight from the safetensors file (float16), averaged and
    L2-normalised. A query pays ~1 ms instead of loading the whole model; tests pin it to the real thing.
    """

    def __init__(self, where: Path) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(where / TOKENIZER_FILE))
        self.tokenizer.no_truncation()
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

    def embed(self, text: str) -> bytes:
        ids = self.tokenizer.encode(text, add_special_tokens=False).ids
        total = [0.0] * DIM
        for token in ids:
            self.file.seek(self.base + min(max(token, 0), self.vocab - 1) * self.row.size)
            total = [a + b for a, b in zip(total, self.row.unpack(self.file.read(self.row.size)))]
        count = max(len(ids), 1)
        mean = [x / count for x in total]
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


class BuiltinProvider:
    """wordllama l2_supercat, 256 dimensions, L2-normalised (cosine = dot product)."""

    name = "builtin"
    # Unrelated texts score about -0.1..0.2 with this model; paraphrases without a shared word 0.25..0.6.
    min_similarity = 0.25

    def __init__(self, model: str | None = None) -> None:
        if model not in (None, "", CONFIG):
            raise EmbeddingUnavailable(
                f"the built-in embedder ships only the {CONFIG!r} model, not {model!r}"
            )
        self.model = CONFIG
        self._model: Any = None

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: list[str]) -> list[Vector]:
        """One float32 vector (as bytes) per text."""
        if not texts:
            return []
        # An empty text pools zero tokens (a NaN vector): give it one token's worth of text.
        safe = [t if t.strip() else "-" for t in texts]
        if len(safe) == 1 and self._model is None and _MODEL is None:
            # A query: the light path (no wordllama/numpy import); batches use wordllama itself.
            return [query_embedder().embed(safe[0])]
        if self._model is None:
            self._model = model()
        # wordllama pads each inner batch to its longest text: texts of similar length together waste
        # the least (sorted, 64 a batch: ~6,700 texts/s here, against ~5,200 unsorted in batches of 256).
        order = sorted(range(len(safe)), key=lambda i: len(safe[i]))
        matrix = self._model.embed([safe[i] for i in order], norm=True, batch_size=64)
        out: list[Vector] = [b""] * len(safe)
        for row, index in zip(matrix.astype("<f4", copy=False), order):
            out[index] = row.tobytes()
        return out
