"""The built-in local embedder: wordllama's 256-d l2_supercat model, shipped inside the wordllama wheel.

Works offline on a fresh machine: the weights and the tokenizer are read from the installed package
directory, and downloads are disabled (wordllama's default load() looks for the tokenizer under a path
that does not exist in the wheel and then tries the network).
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

from nexusmem.embed import EmbeddingUnavailable, Vector

CONFIG = "l2_supercat"
DIM = 256


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
        if self._model is None:
            self._model = model()
        # An empty text pools zero tokens (a NaN vector): give it one token's worth of text.
        safe = [t if t.strip() else "-" for t in texts]
        matrix = self._model.embed(safe, norm=True, batch_size=max(64, len(safe)))
        return [row.tobytes() for row in matrix.astype("<f4", copy=False)]
