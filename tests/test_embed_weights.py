"""The built-in embedder weighs each token by how rare it is in the project: on real repositories, real
SQLite and the real wordllama token vectors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nexusmem import embed, project
from nexusmem.embed import builtin
from nexusmem.retrieve import vector

from helpers import commit, init_repo, run_cli
from helpers.embedding import set_embedding

TRAILERS = (
    "Signed-off-by: Jane Developer <jane.developer@example.com>\n"
    "Reviewed-by: Omar Reviewer <omar@example.com>\n"
    "Co-authored-by: Li Wei <li.wei@example.com>"
)


def sync_json(repo: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run_cli("-C", str(repo), "sync", "--json").stdout)
    return data


def trailer_history(repo: Path, chores: int = 12) -> str:
    """CHORES look-alike commits and one about retries, every message ending in the same trailers;
    returns the retry commit's sha."""
    for i in range(chores):
        commit(repo, f"chore: update module {i} settings\n\n{TRAILERS}", {f"m{i}.cfg": f"level = {i}\n"})
    return commit(
        repo, f"retry the upload with exponential backoff\n\n{TRAILERS}", {"upload.cfg": "retries = 5\n"}
    )


def similarity_of(repo: Path, question: str, sha: str) -> tuple[float, str]:
    """(cosine of the commit SHA to QUESTION, the nearest node's ref) through the query's own vector path."""
    with project.load(repo).open_store(readonly=True) as store:
        near = vector.neighbours(store, question, k=50)
        by_ref = {store.get(node_id).ref: score for node_id, score in near.hits}  # type: ignore[union-attr]
        first = store.get(near.hits[0][0])
        assert first is not None
        return by_ref.get(sha, 0.0), first.ref


def test_words_every_commit_shares_do_not_drown_the_ones_that_tell_it_apart(tmp_path: Path) -> None:
    """Review trailers under every message: unweighted, they are much of each vector, and pull the retry
    commit toward the noise floor for a question about retries; weighted, it stands out."""
    found: dict[str, float] = {}
    for model in ("", "l2_supercat"):
        repo = init_repo(tmp_path / (model or "default"))
        sha = trailer_history(repo)
        set_embedding(repo, model=model)
        sync_json(repo)
        found[model], nearest = similarity_of(repo, "the upload is retried with exponential backoff", sha)
        assert nearest in (sha, f"{sha}:upload.cfg")
    # What fusion adds for the match (its cosine above the model's noise floor, scaled to [0, 1]) is far
    # more than the release before (unweighted, the trailers half of what each vector says) gave it.
    share = {
        model: (cos - builtin.SHARE_FLOOR[model or builtin.WEIGHTED])
        / (1 - builtin.SHARE_FLOOR[model or builtin.WEIGHTED])
        for model, cos in found.items()
    }
    assert share[""] > 1.5 * share["l2_supercat"], found


def test_weights_are_counted_once_then_again_when_the_project_doubles(repo: Path) -> None:
    trailer_history(repo, chores=4)
    first = sync_json(repo)
    with project.load(repo).open_store(readonly=True) as store:
        weights = builtin.TokenWeights.from_text(store.vector_token_weights())
    assert weights is not None and weights.nodes == first["total_nodes"]

    commit(repo, "docs: say how retries back off", {"README.md": "# Retries\n\nFive, doubling.\n"})
    second = sync_json(repo)
    assert second["embedding"]["embedded"] == second["added"] + second["updated"] < second["total_nodes"]
    with project.load(repo).open_store(readonly=True) as store:
        same = builtin.TokenWeights.from_text(store.vector_token_weights())
    assert same is not None and same.blob == weights.blob and same.nodes == weights.nodes

    for i in range(first["total_nodes"]):
        commit(repo, f"feat: add widget {i}", {f"w{i}.txt": f"widget {i}\n"})
    grew = sync_json(repo)  # a small rebuild: said in the summary, not on stderr
    notes = " ".join(grew["embedding"]["notes"])
    assert f"the project grew from {weights.nodes} to {grew['total_nodes']} nodes" in notes
    assert "token weights counted again" in notes
    assert grew["embedding"]["embedded"] == grew["total_nodes"] == grew["embedding"]["vectors"]
    with project.load(repo).open_store(readonly=True) as store:
        grown = builtin.TokenWeights.from_text(store.vector_token_weights())
        total, vectors = store.node_count(), store.vector_count()
    assert grown is not None and grown.nodes == total == vectors
    assert grown.blob != weights.blob


def test_a_long_rebuild_for_new_weights_is_said_on_stderr(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nexusmem.embed import index

    trailer_history(repo, chores=2)
    total = sync_json(repo)["total_nodes"]
    for i in range(total):
        commit(repo, f"feat: add gadget {i}", {f"g{i}.txt": f"gadget {i}\n"})
    monkeypatch.setattr(index, "REWEIGH_LOUD", total)  # the size that counts as long, for this test
    proc = run_cli("-C", str(repo), "sync")
    assert f"embedding: the project grew from {total} to " in proc.stderr
    assert f"token weights counted again, dropped {total} vector(s); rebuilding them" in proc.stderr


def test_a_store_pooled_without_weights_is_rebuilt_once_with_them(repo: Path) -> None:
    """A store synced by the release before (the unweighted mean) gets weighted vectors on its next sync,
    says so, and the sync after that embeds nothing."""
    sha = trailer_history(repo, chores=6)
    set_embedding(repo, model="l2_supercat")
    total = sync_json(repo)["total_nodes"]
    set_embedding(repo, model="")
    proc = run_cli("-C", str(repo), "sync")
    assert (
        "the builtin model changed (builtin wordllama 256-d, unweighted → weighted by this project's words,"
        f" commits with their change words): dropped {total} vector(s); rebuilding them" in proc.stderr
    )
    assert sync_json(repo)["embedding"]["embedded"] == 0
    similarity, _ = similarity_of(repo, "the upload is retried with exponential backoff", sha)
    assert similarity > 0.5


def test_the_query_is_pooled_with_its_own_stores_weights() -> None:
    """One long-lived process (the MCP server) asks two projects: each query vector is pooled with the
    weights of the store it searches, the same as that store's own vectors."""
    import numpy as np

    first = builtin.weights_from_counts(*builtin.count_tokens(["retry the upload"] * 3 + ["backoff"]))
    second = builtin.weights_from_counts(*builtin.count_tokens(["backoff policy"] * 3 + ["retry"]))
    identity = embed.Identity("builtin", builtin.WEIGHTED, builtin.DIM)
    a = embed.for_identity(identity, first.to_text())
    b = embed.for_identity(identity, second.to_text())
    assert a is not None and b is not None and a is not b
    assert embed.for_identity(identity, first.to_text()) is a
    text = "retry with backoff"
    va, vb = (np.frombuffer(embed.to_blob(p.embed([text])[0]), dtype="<f4") for p in (a, b))
    assert float(va @ vb) < 0.999
    # The light one-text path and the batch path agree on the weighted vector.
    batch = np.frombuffer(embed.to_blob(a.embed([text, "other"])[0]), dtype="<f4")
    assert np.abs(batch - va).max() < 1e-5


def test_weights_survive_their_text_form_and_reject_a_damaged_one() -> None:
    counts, texts = builtin.count_tokens(["fix the cache", "fix the lock", "fix a typo"])
    weights = builtin.weights_from_counts(counts, texts)
    back = builtin.TokenWeights.from_text(weights.to_text())
    assert back is not None and back.blob == weights.blob and back.nodes == 3
    tokenizer = builtin.query_embedder().tokenizer
    fix, cache = (tokenizer.encode(w, add_special_tokens=False).ids[-1] for w in ("fix", "cache"))
    assert 0 < weights.of(fix) < weights.of(cache)  # in every text, yet above zero: never a 0/0 vector
    for damaged in ("", "12", "x:AAAA", "3:not base64!", "3:AAA"):
        assert builtin.TokenWeights.from_text(damaged) is None


@pytest.mark.parametrize("text", ["", "   ", "修复缓存锁文件过期的问题"])
def test_weighted_vectors_of_odd_text_are_finite(text: str) -> None:
    import numpy as np

    weights = builtin.weights_from_counts(*builtin.count_tokens(["a", "b"]))
    provider = builtin.BuiltinProvider().with_weights(weights)
    for vectors in (provider.embed([text]), provider.embed([text, "x"])):
        v = np.frombuffer(embed.to_blob(vectors[0]), dtype="<f4")
        assert v.shape == (256,) and np.isfinite(v).all() and abs(float(v @ v) - 1.0) < 1e-4


def test_a_large_store_counts_its_weights_on_an_even_sample(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past WEIGHTS_SAMPLE nodes, every n-th node's text is counted; the weights stand for the whole store
    (their basis is its node count, which the growth rule compares against)."""
    from nexusmem.embed import index

    trailer_history(repo, chores=8)
    run_cli("-C", str(repo), "sync", "--no-embed")
    monkeypatch.setattr(index, "WEIGHTS_SAMPLE", 5)
    proj = project.load(repo)
    with proj.open_store() as store:
        read = list(store.embedding_texts(index.BODY_CHARS, every=-(-store.node_count() // 5)))
        summary = index.embed_pending(store, proj.config)
        weights = builtin.TokenWeights.from_text(store.vector_token_weights())
        total = store.node_count()
    assert 0 < len(read) <= 5 < total
    assert summary.embedded == summary.vectors == total
    assert weights is not None and weights.nodes == total


def test_a_commit_says_little_its_change_words_say_what_it_was_about(repo: Path) -> None:
    """A one-word message ("fix") and a change to the retry and backoff code: with the change words in its
    vector (the default model) the commit is near a question about retries that shares no word with its
    message; the release before's model (commits without their change words) keeps it far. A store of that
    release is rebuilt once, and says so."""
    trailer_history(repo, chores=6)
    sha = commit(
        repo,
        "fix",
        {
            "client.py": "def upload_with_retries(attempts):\n    backoff_seconds = exponential_backoff(attempts)\n"
        },
    )
    question = "the upload retries with exponential backoff"
    set_embedding(repo, model="l2_supercat+idf")
    total = sync_json(repo)["total_nodes"]
    before, _ = similarity_of(repo, question, sha)
    set_embedding(repo, model="")
    proc = run_cli("-C", str(repo), "sync")
    assert (
        "the builtin model changed (builtin wordllama 256-d, weighted by this project's words → weighted by"
        f" this project's words, commits with their change words): dropped {total} vector(s); rebuilding them"
        in proc.stderr
    )
    after, _ = similarity_of(repo, question, sha)
    assert after > before + 0.1, (before, after)
    assert sync_json(repo)["embedding"]["embedded"] == 0


def test_a_commit_whose_words_change_is_embedded_again(repo: Path) -> None:
    """The change words are outside the content hash (adding them to old commits must not look like new
    content); a vector made of them must still follow them: when a commit's words change (re-derived after
    a scrub, cleared by `forget`), its vector is dropped and the next pass makes it from the words as they
    are now. A forgotten value's tokens must not live on in a vector."""
    sha = commit(repo, "fix", {"client.py": "def upload_with_retries(attempts):\n    return attempts\n"})
    sync_json(repo)
    with project.load(repo).open_store() as store:
        seq = store.conn.execute("SELECT seq FROM nodes WHERE natural_key = ?", (sha,)).fetchone()[0]
        before = store.vectors_by_seq([seq])[seq]
        with store.transaction():
            assert store.clear_words_with(["upload_with_retries"]) == 1
        assert store.vectors_by_seq([seq]) == {}
    after = sync_json(repo)["embedding"]
    assert after["embedded"] == 1
    with project.load(repo).open_store() as store:
        assert store.vectors_by_seq([seq])[seq] != before
