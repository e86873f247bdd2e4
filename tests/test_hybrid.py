"""Hybrid retrieval: BM25 and vector k-NN fused on their scores, on real repositories with the real builtin model."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nexusmem import embed, project
from nexusmem.retrieve import answer, fuse, query

from helpers import commit, console_script, run_cli
from helpers.ollama_standin import closed_port_url, ollama_standin


def query_json(repo: Path, text: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run_cli("-C", str(repo), "query", "--json", "--", text).stdout)
    return data


def set_embedding(repo: Path, **settings: Any) -> None:
    path = repo / ".nexusmem" / "config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["embedding"].update(settings)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture
def history(repo: Path) -> Path:
    commit(repo, "Speed up image thumbnail rendering", {"thumbs.py": "SIZE = 128\n"})
    commit(repo, "Fix flaky login test on CI", {"test_login.py": "def test_login():\n    pass\n"})
    commit(repo, "Add dark mode toggle to settings", {"settings.py": "DARK = False\n"})
    commit(repo, "Upgrade the postgres driver", {"requirements.txt": "psycopg==3.2\n"})
    commit(repo, "Handle timeouts when the payment gateway is slow", {"pay.py": "TIMEOUT = 5\n"})
    return repo


@pytest.mark.slow
def test_vectors_find_what_shares_no_word_with_the_query(history: Path) -> None:
    run_cli("-C", str(history), "sync", "--no-embed")
    before = query_json(history, "make pictures faster")
    assert before["bm25_matched"] == 0 and before["vector_matched"] == 0 and before["items"] == []

    run_cli("-C", str(history), "sync")
    after = query_json(history, "make pictures faster")
    assert after["bm25_matched"] == 0
    assert after["vector_matched"] >= 1
    assert after["items"][0]["title"] == "Speed up image thumbnail rendering"
    # Below the model's noise floor a neighbour is not a match: unrelated commits stay out.
    assert all("postgres" not in it["title"] for it in after["items"])


@pytest.mark.slow
def test_both_lists_fuse_and_bm25_still_leads_on_exact_words(history: Path) -> None:
    run_cli("-C", str(history), "sync")
    out = query_json(history, "flaky login test")
    assert out["bm25_matched"] >= 1 and out["vector_matched"] >= 1
    assert out["items"][0]["title"] == "Fix flaky login test on CI"
    assert out["matched"] >= max(out["bm25_matched"], out["vector_matched"])


def test_without_vectors_the_output_is_unchanged(history: Path) -> None:
    run_cli("-C", str(history), "sync", "--no-embed")
    plain = run_cli("-C", str(history), "query", "--", "payment gateway timeouts").stdout
    with project.load(history).open_store() as store:
        bm25_only = query.run(store, "payment gateway timeouts", project=history.name, vectors=False)
    # The same answer, with one note more: semantic search is configured and the memory has no vectors yet.
    skipped = [line for line in plain.splitlines(True) if line.startswith("note: semantic search skipped")]
    assert len(skipped) == 1 and "run `nexusmem sync`" in skipped[0], plain
    # (the footer's token count includes that note)
    without, expected = (
        plain.replace(skipped[0], "").splitlines(),
        (answer.render(bm25_only) + "\n").splitlines(),
    )
    assert without[:-1] == expected[:-1] and without[-1].split("~")[0] == expected[-1].split("~")[0], plain
    assert query_json(history, "payment gateway timeouts")["vector_matched"] == 0


@pytest.mark.slow
def test_ollama_down_at_query_time_means_bm25_only(history: Path) -> None:
    run_cli("-C", str(history), "init")
    with ollama_standin() as server:
        set_embedding(history, provider="ollama", url=server.url)
        run_cli("-C", str(history), "sync")
        up = query_json(history, "payment gateway timeouts")
        assert up["vector_matched"] >= 1
        with project.load(history).open_store() as store:
            url = json.loads(store.vector_identity_json() or "{}")["url"]
        assert url == server.url
    # The server is gone; the vectors stay. The query answers from BM25 alone, same items as BM25.
    down = query_json(history, "payment gateway timeouts")
    assert down["vector_matched"] == 0
    assert down["items"] and down["items"][0]["title"].endswith(
        "Handle timeouts when the payment gateway is slow"
    )
    with project.load(history).open_store() as store:
        bm25_only = query.run(store, "payment gateway timeouts", project=history.name, vectors=False)
    assert [it["id"] for it in down["items"]] == [it.id for it in bm25_only.items]
    assert closed_port_url()  # (the stand-in's port is closed now, like a stopped Ollama)


def test_rrf_uses_rank_positions_only() -> None:
    fused = fuse.rrf([["a", "b", "c"], ["c", "a"]])
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["b"] == pytest.approx(1 / 62)
    assert max(fused, key=lambda k: fused[k]) == "a"


def test_query_output_is_deterministic_with_vectors(history: Path) -> None:
    run_cli("-C", str(history), "sync")
    first = run_cli("-C", str(history), "query", "--json", "--", "slow checkout requests").stdout
    second = run_cli("-C", str(history), "query", "--json", "--", "slow checkout requests").stdout
    assert first == second


def test_the_in_memory_copys_nearest_get_the_distances_the_k_nn_gives(tmp_path: Path) -> None:
    """A long-running process chooses the nearest from its in-memory copy by a matrix product, whose sums
    run in another order than vec0's (a score's sixth decimal moved between the MCP server and the CLI);
    it asks the store for their distances, which must be the k-NN's own to the last bit, on vectors of
    every scale, a vector of ones and one nearly opposite to the question."""
    import numpy as np

    from nexusmem.store.db import open_store
    from nexusmem.store.vectors import VEC_TABLE

    rng = np.random.default_rng(7)
    rows = (rng.normal(size=(300, 256)) * rng.uniform(0.01, 50.0, size=(300, 1))).astype(np.float32)
    query = rng.normal(size=256).astype(np.float32)
    rows[0] = np.ones(256, dtype=np.float32)
    rows[1] = -query + np.float32(1e-3)
    with open_store(tmp_path / "memory.db", create=True) as store:
        with store.transaction():
            store.create_vector_table(256, "{}")
            store.conn.executemany(
                f"INSERT INTO {VEC_TABLE}(rowid, embedding) VALUES (?, ?)",
                [(i + 1, row.tobytes()) for i, row in enumerate(rows)],
            )
        knn = dict(
            store.conn.execute(
                f"SELECT rowid, distance FROM {VEC_TABLE} WHERE embedding MATCH ? AND k = 300",
                (query.tobytes(),),
            ).fetchall()
        )
        given = store.distances_from(query.tobytes(), [row.tobytes() for row in rows])
        assert store.distances_from(query.tobytes(), []) == []
    assert given == [knn[i + 1] for i in range(len(rows))]
    # The product the copy chooses by differs: asking the store is what makes the two agree.
    product = 1.0 - (rows / np.linalg.norm(rows, axis=1)[:, None]) @ (query / np.linalg.norm(query))
    assert product.tolist() != given


@pytest.mark.slow
def test_a_long_running_process_answers_from_memory_exactly_as_vec0(history: Path) -> None:
    import time

    from nexusmem.retrieve import vector

    run_cli("-C", str(history), "sync", "-q")
    vector._WARM.clear()
    questions = ["the dev server flashes a console window", "cache lock", "why did login break"]
    proj = project.load(history)
    with proj.open_store() as store:
        # First query: vec0; it starts the in-memory copy. Fusion uses the similarities, so they must agree too.
        cold = {q: vector.knn_scored(store, q) for q in questions}
        every = [node_id for hits in cold.values() for node_id, _ in hits]
        cold_more = {q: vector.neighbours(store, q, k=1, also=every).more for q in questions}
        warm = vector._WARM[str(store.path)]
        deadline = time.monotonic() + 20
        while warm.matrix is None:
            vector.knn(store, questions[0])
            assert time.monotonic() < deadline, "the in-memory vectors never loaded"
            time.sleep(0.05)
        hot = {q: vector.knn_scored(store, q) for q in questions}
        # The similarities of the nodes another list found, read from memory as vec0 reads them.
        hot_more = {q: vector.neighbours(store, q, k=1, also=every).more for q in questions}
        assert any(cold_more.values())
        for q in questions:
            assert [i for i, _ in hot_more[q]] == [i for i, _ in cold_more[q]]
            # To the last bit: the copy asks the index's own function for each distance (store.distances_from).
            assert [sim for _, sim in hot_more[q]] == [sim for _, sim in cold_more[q]]
        assert {q: [i for i, _ in hits] for q, hits in hot.items()} == {
            q: [i for i, _ in hits] for q, hits in cold.items()
        }
        for q in questions:
            assert [sim for _, sim in hot[q]] == [sim for _, sim in cold[q]]
            assert all(0.25 <= sim <= 1.0 + 1e-6 for _, sim in hot[q])
    commit(history, "feat(search): a brand new node about quasars", {"quasar.txt": "quasar\n"})
    run_cli("-C", str(history), "sync", "-q")
    with proj.open_store() as store:
        # New vectors: the copy is stale and no longer used until it is reloaded.
        assert vector._WARM[str(store.path)].generation != store.vectors_generation()
        ids = vector.knn(store, "quasars")
        assert vector._WARM[str(store.path)].matrix is None
        assert ids and store.get(ids[0]) is not None


@pytest.mark.slow
def test_a_match_the_nearest_k_leave_out_keeps_its_similarity(
    history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store with many near texts puts a good match past the k-NN's cut. Found by BM25, it is fused with
    its own similarity, the one a deep k-NN reads, not as if the vectors had never seen it."""
    from nexusmem.embed import question_map
    from nexusmem.retrieve import vector

    run_cli("-C", str(history), "sync", "-q")
    question = "the payment gateway is slow and requests time out"
    with project.load(history).open_store(readonly=True) as store:
        deep = dict(vector.knn_scored(store, question, k=50))
        nearest = vector.neighbours(store, question, k=1).hits[0][0]
        others = [node_id for node_id in deep if node_id != nearest]
        assert others, deep
        near = vector.neighbours(store, question, k=1, also=[*others, nearest, "no-such-node"])
        assert [node_id for node_id, _ in near.hits] == [nearest]
        assert dict(near.more) == pytest.approx({node_id: deep[node_id] for node_id in others}, abs=1e-5)

        # Through retrieval: with the k-NN cut at 1, a BM25 match outside it keeps its similarity.
        monkeypatch.setattr(vector, "KNN", 1)
        found = query.retrieve(store, question)
        lexical = [node_id for node_id, ev in found.evidence.items() if ev.lexical > 0]
        assert any(node_id != nearest and node_id in deep for node_id in lexical), (lexical, deep)
        # Each word match's own similarity, read exactly: counted from the model's share floor (a word
        # match's weak similarity still says something), and 0 below it.
        identity = embed.Identity.from_json(store.vector_identity_json())
        assert identity is not None
        provider = embed.for_identity(identity, store.vector_token_weights())
        assert provider is not None
        share_floor = provider.share_floor
        # The question's vector as retrieval makes it: through the learned map (embed.question_map).
        blob = question_map.mapped(embed.to_blob(provider.embed([question])[0]))
        exact = {i: 1.0 - d for i, d in store.vector_distances(blob, lexical).items()}
        assert any(0.0 < exact[i] < provider.min_similarity for i in lexical), (
            exact
        )  # below the listing floor
        for i in lexical:
            counted = exact[i] if exact[i] >= share_floor else 0.0
            assert found.evidence[i].cosine == pytest.approx(counted, abs=1e-5)


def test_a_question_with_no_informative_word_is_weak_and_marks_around_a_word_change_nothing(
    history: Path,
) -> None:
    """ "the of and a", "and", "it is not working" and unreadable bytes matched their stopwords (or nothing)
    and came back strong, listing arbitrary commits; "(timeouts" or "timeouts?" gave another order and flag
    than "timeouts", the embedder reading each mark as a token. Real builtin vectors."""
    commit(history, "Retry payment requests that time out", {"retry.py": "TRIES = 3\n"})
    commit(history, "Log the payment timeouts with their request id", {"log.py": "LOG = 1\n"})
    run_cli("-C", str(history), "sync")
    for question in ("the of and a", "and", "it is not working"):
        assert query_json(history, question)["weak"], question
    garbage = subprocess.run(
        [console_script(), "-C", str(history), "query", "--json", "--", b"\xff\xfe"],
        capture_output=True,
        check=True,
    )
    assert json.loads(garbage.stdout)["weak"]

    def answer(text: str) -> tuple[bool, list[tuple[str, float]]]:
        found = query_json(history, text)
        return found["weak"], [(item["ref"], item["score"]) for item in found["items"]]

    bare = answer("timeouts")
    for marked in ("timeouts)", "^timeouts", "(timeouts", "timeouts?", "timeouts*", '"timeouts"'):
        assert answer(marked) == bare, marked
