"""Embedding providers and the embedding pass, on real repositories, real SQLite and the real models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nexusmem import embed, project
from nexusmem.embed import EmbeddingUnavailable, Vector
from nexusmem.embed.index import embed_pending
from nexusmem.embed.ollama import OllamaProvider
from nexusmem.errors import ConfigError

from helpers import commit, git, query_json, run_cli, run_script
from helpers.embedding import cache_history, set_embedding
from helpers.ollama_standin import DIM, closed_port_url, ollama_standin


def sync_json(repo: Path, *extra: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run_cli("-C", str(repo), "sync", "--json", *extra).stdout)
    return data


def counts(repo: Path) -> tuple[int, int, int]:
    """(nodes, vectors recorded, rows in the vec0 table)."""
    with project.load(repo).open_store() as store:
        rows = 0
        if store.has_vector_table():
            store._vec_ready()
            rows = int(store.conn.execute("SELECT COUNT(*) FROM nodes_vec").fetchone()[0])
        return store.node_count(), store.vector_count(), rows


@pytest.fixture
def history(repo: Path) -> Path:
    return cache_history(repo)


# --- the built-in provider ------------------------------------------------------------------------------

OFFLINE_SCRIPT = r"""
import json, socket
def refuse(*args, **kwargs):
    raise OSError("network disabled by the test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
import numpy as np
from nexusmem.embed.builtin import BuiltinProvider
p = BuiltinProvider()
a, b, c = (np.frombuffer(v, dtype="<f4") for v in p.embed([
    "fix the stale cache lock file", "cache lock file expired: fixed", "add a dark theme to the settings page"]))
print(json.dumps({"dim": int(a.shape[0]), "provider_dim": p.dim, "similar": float(a @ b),
                  "unrelated": float(a @ c), "norm": float(a @ a)}))
"""


@pytest.mark.slow
def test_builtin_embeds_with_the_network_unreachable(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k.lower() not in {"no_proxy", "http_proxy", "https_proxy"}}
    dead = closed_port_url()
    env.update(
        HF_HUB_OFFLINE="1",
        HTTP_PROXY=dead,
        HTTPS_PROXY=dead,
        http_proxy=dead,
        https_proxy=dead,
        HOME=str(tmp_path),  # no ~/.cache/wordllama to fall back on
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    proc = subprocess.run(
        [sys.executable, "-c", OFFLINE_SCRIPT], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["dim"] == 256 and out["provider_dim"] == 256
    assert abs(out["norm"] - 1.0) < 1e-4
    assert out["similar"] > out["unrelated"] + 0.3
    assert not (tmp_path / ".cache" / "wordllama").exists()


def test_builtin_handles_empty_and_cjk_text() -> None:
    provider = embed.make("builtin")
    assert provider is not None
    vectors = provider.embed(["", "   ", "修复缓存锁文件过期的问题", "キャッシュのロックファイルを修正"])
    assert [len(embed.to_blob(v)) for v in vectors] == [256 * 4] * 4
    import numpy as np

    assert all(np.isfinite(np.frombuffer(embed.to_blob(v), dtype="<f4")).all() for v in vectors)


def test_builtin_rejects_a_model_it_does_not_ship() -> None:
    with pytest.raises(EmbeddingUnavailable, match="has the models 'l2_supercat\\+idf\\+words'"):
        embed.make("builtin", "all-MiniLM-L6-v2")


# --- the Ollama provider against a real HTTP stand-in ----------------------------------------------------


@pytest.mark.slow
def test_ollama_provider_speaks_api_embed() -> None:
    with ollama_standin() as server:
        provider = OllamaProvider("nomic-embed-text", server.url + "/")
        vectors = provider.embed(["first text", "second text"])
        assert len(vectors) == 2 and all(isinstance(v, list) and len(v) == DIM for v in vectors)
        assert provider.dim == DIM
        assert server.requests == [{"model": "nomic-embed-text", "input": ["first text", "second text"]}]
        provider.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("malformed", "malformed answer"),
        ("garbage", "not JSON"),
        ("missing-model", "HTTP 404"),
    ],
)
def test_ollama_bad_answers_are_unavailable_not_crashes(mode: str, message: str) -> None:
    with ollama_standin() as server:
        server.mode = mode
        with pytest.raises(EmbeddingUnavailable, match=message):
            OllamaProvider("nomic-embed-text", server.url).embed(["text"])


def test_ollama_refused_connection_is_unavailable() -> None:
    with pytest.raises(EmbeddingUnavailable, match="unreachable"):
        OllamaProvider("nomic-embed-text", closed_port_url()).embed(["text"])


def test_config_rejects_an_unknown_provider(history: Path) -> None:
    set_embedding(history, provider="openai")
    with pytest.raises(ConfigError, match=r"embedding\.provider.*builtin, ollama, local, none"):
        project.load(history)


# --- the embedding pass through `nexusmem sync` ----------------------------------------------------------


def test_sync_embeds_every_node_then_only_what_changed(history: Path) -> None:
    first = sync_json(history)
    emb = first["embedding"]
    assert (
        emb["provider"]
        == "builtin wordllama 256-d, weighted by this project's words, commits with their change words"
    )
    assert emb["embedded"] == first["total_nodes"] == emb["vectors"] > 0
    nodes, vectors, rows = counts(history)
    assert nodes == vectors == rows

    assert sync_json(history)["embedding"]["embedded"] == 0  # nothing new: nothing embedded

    commit(
        history,
        "docs: the release needs a changelog",
        {"README.md": "# Release\n\nChangelog, tag, publish.\n"},
    )
    third = sync_json(history)
    assert third["embedding"]["embedded"] == third["added"] + third["updated"] > 0
    nodes, vectors, rows = counts(history)
    assert nodes == vectors == rows


def test_sync_no_embed_skips_the_pass_once(history: Path) -> None:
    data = sync_json(history, "--no-embed")
    assert data["embedding"] is None
    assert counts(history)[1] == 0
    assert "vectors: none" in run_cli("-C", str(history), "status").stdout
    later = sync_json(history)
    assert later["embedding"]["embedded"] == later["total_nodes"]
    status = run_cli("-C", str(history), "status").stdout
    assert (
        f"builtin wordllama 256-d, weighted by this project's words, commits with their change words, {later['total_nodes']} vectors"
        in status
    )
    assert "sqlite-vec 0.1." in status and "(vec0, cosine)" in status


def test_sync_with_ollama_stores_its_vectors(history: Path) -> None:
    with ollama_standin() as server:
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=server.url, batchSize=2)
        data = sync_json(history)
        assert data["embedding"]["provider"] == f"ollama nomic-embed-text {DIM}-d"
        assert data["embedding"]["embedded"] == data["total_nodes"]
        assert len(server.requests) == -(-data["total_nodes"] // 2)  # batches of 2
        assert all(r["model"] == "nomic-embed-text" for r in server.requests)
        info = json.loads(run_cli("-C", str(history), "status", "--json").stdout)
        assert info["vector_backend"].endswith(
            f"ollama nomic-embed-text {DIM}-d, {data['total_nodes']} vectors"
        )


@pytest.mark.slow
def test_sync_with_ollama_down_says_so_once_and_succeeds(history: Path) -> None:
    set_embedding(history, provider="ollama", url=closed_port_url())
    proc = run_script("sync", cwd=history)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "unreachable" in lines[0] and "BM25" in lines[0]
    assert counts(history)[1] == 0


def test_sync_with_a_malformed_ollama_answer_succeeds(history: Path) -> None:
    with ollama_standin() as server:
        server.mode = "malformed"
        set_embedding(history, provider="ollama", url=server.url)
        data = sync_json(history)
        assert "malformed" in data["embedding"]["unavailable"]
        assert data["total_nodes"] > 0 and counts(history)[1] == 0


@pytest.mark.slow
def test_provider_change_drops_and_rebuilds_vectors(history: Path) -> None:
    first = sync_json(history)
    total = first["total_nodes"]
    with ollama_standin() as server:
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=server.url)
        proc = run_cli("-C", str(history), "sync")
        assert (
            f"provider changed (builtin wordllama 256-d, weighted by this project's words, commits with their change words → ollama nomic-embed-text): dropped {total} vector(s);"
            " rebuilding them" in proc.stderr
        )
        assert counts(history) == (total, total, total)
        with project.load(history).open_store() as store:
            identity = embed.Identity.from_json(store.vector_identity_json())
        assert identity is not None and (identity.name, identity.dim) == ("ollama", DIM)

        # The server's model is replaced by one of another dimension: rebuilt again, said again.
        server.dim = 8
        commit(history, "feat: add a cache warm-up", {"warm.py": "x = 1\n"})
        proc = run_cli("-C", str(history), "sync")
        assert f"vector dimension changed (ollama nomic-embed-text {DIM}-d → 8-d)" in proc.stderr
        nodes, vectors, rows = counts(history)
        assert nodes == vectors == rows

    set_embedding(history, provider="none")
    proc = run_cli("-C", str(history), "sync")
    assert "provider is 'none': dropped" in proc.stderr and "BM25-only" in proc.stderr
    assert counts(history)[1:] == (0, 0)
    assert json.loads(run_cli("-C", str(history), "status", "--json").stdout)["vector_backend"] is None


class FailingAfter:
    """A provider that embeds BATCHES batches, then dies the way a killed process would (not 'unavailable')."""

    name = "builtin"
    model = "l2_supercat"
    min_similarity = 0.25
    share_floor = 0.25
    dim = 256

    def __init__(self, batches: int) -> None:
        self.left = batches
        self.seen: list[str] = []
        self.real = embed.make("builtin")

    def embed(self, texts: list[str]) -> list[Vector]:
        if self.left == 0:
            raise KeyboardInterrupt
        self.left -= 1
        self.seen += texts
        assert self.real is not None
        return self.real.embed(texts)


@pytest.mark.slow
def test_an_interrupted_pass_resumes_where_it_stopped(history: Path) -> None:
    for i in range(4):
        commit(history, f"feat: step {i} of the migration", {f"step{i}.py": f"STEP = {i}\n"})
    total = sync_json(history, "--no-embed")["total_nodes"]
    assert total >= 10
    proj = project.load(history)
    config = {**proj.config, "embedding": {**proj.config["embedding"], "batchSize": 3}}
    dying = FailingAfter(batches=2)
    with proj.open_store() as store, pytest.raises(KeyboardInterrupt):
        embed_pending(store, config, provider=dying)
    assert counts(history)[1] == 6  # two committed batches of 3 survive

    rest = FailingAfter(batches=100)
    with proj.open_store() as store:
        summary = embed_pending(store, config, provider=rest)
    assert summary.pending == summary.embedded == total - 6
    assert not set(rest.seen) & set(dying.seen)  # nothing embedded twice
    assert counts(history) == (total, total, total)


def test_rewritten_history_takes_its_vectors_along(history: Path) -> None:
    base = git(history, "rev-parse", "HEAD").strip()
    commit(history, "feat: experimental sharding of the cache", {"shard.py": "SHARDS = 4\n"})
    sync_json(history)
    before = counts(history)
    git(history, "reset", "-q", "--hard", base)
    git(history, "reflog", "expire", "--expire=now", "--all")
    git(history, "gc", "-q", "--prune=now")
    data = sync_json(history)
    assert data["removed"] >= 2
    after = counts(history)
    assert after[0] == after[1] == after[2] == before[0] - data["removed"]
    out = json.loads(run_cli("-C", str(history), "query", "--json", "--", "sharding the cache").stdout)
    assert all("shard" not in item["title"].lower() for item in out["items"])


def test_the_light_query_embedder_matches_wordllama() -> None:
    """The query path reads wordllama's files without importing it: same vectors as WordLlama itself."""
    import numpy as np

    from nexusmem.embed import builtin

    texts = [
        "fix the stale cache lock file",
        "修复缓存锁文件过期的问题",
        "キャッシュのロックファイルを修正",
        "x",
        "pytest tests/test_router.py -k 'not slow' && echo ok",
        "a much longer text " * 40,
    ]
    from wordllama import WordLlama

    model = WordLlama.load(
        config="l2_supercat", dim=256, cache_dir=builtin.package_dir(), disable_download=True
    )
    full = model.embed(texts, norm=True)
    light = np.array([np.frombuffer(builtin.query_embedder().embed(t), dtype="<f4") for t in texts])
    assert light.shape == full.shape == (len(texts), 256)
    assert np.abs(light - full).max() < 1e-5
    # The batch path sorts texts by length for speed: the answer keeps the caller's order.
    batch = np.array(
        [
            np.frombuffer(embed.to_blob(v), dtype="<f4")
            for v in builtin.BuiltinProvider("l2_supercat").embed(texts)
        ]
    )
    assert np.abs(batch - full).max() < 1e-5


# --- where a query's text is sent -------------------------------------------------------------------------


def _asked(server: Any, text: str) -> bool:
    return any(
        text in (r["input"] if isinstance(r["input"], list) else [r["input"]]) for r in server.requests
    )


def test_query_sends_the_question_to_the_configs_url_not_the_one_memory_db_recorded(history: Path) -> None:
    """embedding.url moved to another server: the next query asks the new one, and never the old one,
    before and after the next sync (which records the new URL)."""
    with ollama_standin() as old, ollama_standin() as new:
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=old.url)
        sync_json(history)
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=new.url)
        old.requests.clear()
        data = query_json(history, "cache lock expired after a crash")
        assert data["items"]
        assert _asked(new, "cache lock expired after a crash")
        assert not _asked(old, "cache lock expired after a crash")
        sync_json(history)
        with project.load(history).open_store() as store:
            recorded = embed.Identity.from_json(store.vector_identity_json())
        assert recorded is not None and recorded.url == new.url
        assert old.requests == []


def test_a_url_recorded_in_a_copied_memory_db_is_never_sent_anything(history: Path) -> None:
    """A memory.db whose vectors say they came from a collector's server (a repository copied with its
    .nexusmem/): query and stale send the collector nothing; the config's own URL is used."""
    with ollama_standin() as collector, ollama_standin() as mine:
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=mine.url)
        sync_json(history)
        with project.load(history).open_store() as store, store.transaction():
            identity = embed.Identity.from_json(store.vector_identity_json())
            assert identity is not None
            forged = embed.Identity(identity.name, identity.model, identity.dim, collector.url).to_json()
            store.conn.execute("UPDATE meta SET value = ? WHERE key = 'vector_identity'", (forged,))
        query_json(history, "my secret project plan: override")
        run_cli("-C", str(history), "stale", "--json")
        assert collector.requests == []
        assert _asked(mine, "my secret project plan: override")


# --- vectors that cannot be searched ----------------------------------------------------------------------


def test_nan_and_zero_vectors_are_refused_and_every_query_still_answers(history: Path) -> None:
    """A model that answers NaN, Infinity or zeros for some texts: those nodes stay without a vector
    (said once), the rest are searched, and a query answers (it crashed on every query before)."""
    with ollama_standin() as server:
        server.poison = {"release process": "nan", "expire the cache": "zero", "Add the cache": "inf"}
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=server.url)
        proc = run_cli("-C", str(history), "sync")
        said = [ln for ln in proc.stderr.splitlines() if "not finite or all zero" in ln]
        assert len(said) == 1, proc.stderr
        nodes, vectors, rows = counts(history)
        assert 0 < vectors == rows < nodes
        for question in ("how do we publish a release", "cache lock file after a crash"):
            result = run_cli("-C", str(history), "query", "--json", "--since", "2000-01-01", "--", question)
            assert json.loads(result.stdout)["items"]


def test_a_nan_vector_stored_earlier_is_skipped_by_query_and_replaced_at_the_next_sync(history: Path) -> None:
    """A store that already holds a NaN vector (made before vectors were checked): queries answer, and the
    next sync (content unchanged) embeds that node again."""
    import math
    from array import array

    with ollama_standin() as server:
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=server.url)
        sync_json(history)
        with project.load(history).open_store() as store, store.transaction():
            seq, content_hash = store.conn.execute(
                "SELECT n.seq, n.content_hash FROM nodes n JOIN node_vectors v ON v.seq = n.seq LIMIT 1"
            ).fetchone()
            store.put_vectors([(seq, content_hash, array("f", [math.nan] * DIM).tobytes())])
        assert query_json(history, "cache lock file expired")["items"]
        data = sync_json(history)
        assert data["embedding"]["embedded"] == 1
        with project.load(history).open_store() as store:
            blob = store.vectors_by_seq([seq])[seq]
        assert embed.usable(blob)


def test_a_query_waits_a_few_seconds_for_an_embedder_that_never_answers_and_says_so(history: Path) -> None:
    """An Ollama that accepts the question and never answers: the query answers from the words within
    embed.QUERY_TIMEOUT (not 120 s) and its notes say semantic search was skipped."""
    with ollama_standin() as server:
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=server.url)
        sync_json(history)
        server.mode = "hang"
        started = time.monotonic()
        data = query_json(history, "cache lock file expired")
        assert time.monotonic() - started < embed.QUERY_TIMEOUT + 3
        assert data["items"]
        assert any("semantic search skipped" in note for note in data["notes"]), data["notes"]


def test_an_error_body_is_shown_redacted_and_an_oversized_answer_is_refused(
    history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a server says in an HTTP error is shown without the token it holds (or a terminal escape); an
    answer past ollama.MAX_ANSWER_BYTES is refused, not read into memory."""
    from nexusmem import ollama

    with ollama_standin() as server:
        server.mode = "leaky-error"
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=server.url)
        proc = run_cli("-C", str(history), "sync")
        assert "HTTP 500" in proc.stderr
        assert "ghp_R8x2Lq7Vn4Tz9Kp3Wm6Yb1Hc5Dj0Fs2Ga8Ne" not in proc.stderr and "\x1b" not in proc.stderr
        assert "«redacted:" in proc.stderr
        server.mode = "ok"
        monkeypatch.setattr(ollama, "MAX_ANSWER_BYTES", 200)
        data = sync_json(history)
        assert "sent an answer over" in data["embedding"]["unavailable"]
        assert counts(history)[1] == 0


def test_switching_back_to_builtin_with_the_ollama_model_still_set_stops_using_ollama(history: Path) -> None:
    """provider builtin with "model": "nomic-embed-text" left over: the sync says BM25-only, and that is
    true (the Ollama vectors are kept for when the setting is put right, but no query asks Ollama)."""
    with ollama_standin() as server:
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=server.url)
        sync_json(history)
        set_embedding(history, provider="builtin")
        data = sync_json(history)
        notes = " ".join(data["embedding"]["notes"])
        assert "BM25-only" in notes and "kept but not searched" in notes, notes
        assert counts(history)[1] == data["total_nodes"]
        server.requests.clear()
        query_json(history, "cache lock file expired")
        assert server.requests == []


def test_text_goes_to_ollama_only_while_the_config_names_it() -> None:
    """`stale` sent text to the config's Ollama URL whatever the embedder (a review): back on builtin, with
    Ollama's vectors not yet dropped by a sync, it still embedded through Ollama."""
    from nexusmem.embed import ollama_url

    assert ollama_url({"embedding": {"provider": "builtin", "url": "http://127.0.0.1:9"}}) is None
    assert (
        ollama_url({"embedding": {"provider": "ollama", "url": "http://127.0.0.1:9"}}) == "http://127.0.0.1:9"
    )
