"""The learned map a question's vector goes through (embed.question_map), on a real store embedded by the real
built-in model: questions are mapped, a node's own text (the stale check's neighbours) is not, a config can
turn it off, and only the model it was learned for is mapped."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest

from nexusmem import embed, project
from nexusmem.config import load as load_config
from nexusmem.embed import builtin, question_map
from nexusmem.errors import ConfigError
from nexusmem.retrieve import query, rank, vector

from helpers import commit, run_cli


def _unit(blob: bytes) -> list[float]:
    return list(struct.unpack(f"<{builtin.DIM}f", blob))


def test_the_shipped_map_is_learned_and_keeps_a_vector_whole() -> None:
    """The map shipped is a learned one (not the identity, nor noise: near it, as its L2 pull keeps it), and a
    mapped vector is a unit vector of the same size; one the map would leave nothing of is kept as it was."""
    rows = question_map.rows()
    assert len(rows) == builtin.DIM and all(len(r) == builtin.DIM for r in rows)
    diagonal = [rows[i][i] for i in range(builtin.DIM)]
    off = [abs(rows[i][j]) for i in range(builtin.DIM) for j in range(builtin.DIM) if i != j]
    assert 0.5 < sum(diagonal) / len(diagonal) < 1.5
    assert max(off) > 0.01  # learned: the identity's are all 0
    provider = builtin.BuiltinProvider(builtin.WORDS)
    plain = embed.to_blob(provider.embed(["the upload hangs when the proxy drops the connection"])[0])
    moved = question_map.mapped(plain)
    assert len(moved) == len(plain) and moved != plain
    assert math.isclose(math.sqrt(sum(x * x for x in _unit(moved))), 1.0, rel_tol=1e-5)
    zero = struct.pack(f"<{builtin.DIM}f", *([0.0] * builtin.DIM))
    assert question_map.mapped(zero) == zero


def test_the_map_is_for_the_model_it_was_learned_for() -> None:
    assert question_map.applies("builtin", builtin.WORDS, builtin.DIM)
    assert not question_map.applies("builtin", builtin.WEIGHTED, builtin.DIM)  # a store synced before
    assert not question_map.applies("builtin", builtin.CONFIG, builtin.DIM)
    assert not question_map.applies("ollama", builtin.WORDS, builtin.DIM)
    assert not question_map.applies("local", "all-MiniLM-L6-v2", 384)


@pytest.fixture
def synced(repo: Path) -> Path:
    commit(repo, "Speed up image thumbnail rendering", {"thumbs.py": "SIZE = 128\n"})
    commit(repo, "Retry the upload when the proxy closes the socket", {"upload.py": "RETRIES = 3\n"})
    commit(repo, "Add dark mode toggle to settings", {"settings.py": "DARK = False\n"})
    commit(repo, "Handle timeouts when the payment gateway is slow", {"pay.py": "TIMEOUT = 5\n"})
    run_cli("-C", str(repo), "sync", "--quiet")
    return repo


@pytest.mark.slow
def test_a_question_is_mapped_and_a_nodes_own_text_is_not(synced: Path) -> None:
    """The question's similarities are those of its mapped vector to the stored ones; asked as a node's text
    (question=False: the stale check's neighbours) they are the plain vector's."""
    text = "my upload just hangs forever behind the corporate proxy"
    with project.load(synced).open_store(readonly=True) as store:
        identity = embed.Identity.from_json(store.vector_identity_json())
        assert identity is not None and question_map.applies(identity.name, identity.model, identity.dim)
        provider = embed.for_identity(identity, store.vector_token_weights(), None)
        assert provider is not None
        plain = embed.to_blob(provider.embed([text])[0])
        asked = vector.neighbours(store, text, question=True, k=10)
        own = vector.neighbours(store, text, question=False, k=10)
        stored = store.vector_distances(question_map.mapped(plain), [node_id for node_id, _ in asked.hits])
        expected_plain = dict(store.vector_distances(plain, [node_id for node_id, _ in own.hits]))
    assert asked.hits and own.hits
    for node_id, similarity in asked.hits:
        distance = stored.get(node_id)
        assert distance is not None and math.isclose(similarity, 1.0 - distance, abs_tol=1e-5)
    for node_id, similarity in own.hits:
        assert math.isclose(similarity, 1.0 - expected_plain[node_id], abs_tol=1e-5)
    assert dict(asked.hits) != dict(own.hits)


@pytest.mark.slow
def test_config_turns_the_map_off_and_checks_its_value(synced: Path) -> None:
    config = synced / ".nexusmem" / "config.json"
    assert rank.settings_from(load_config(config)).question_map
    data = json.loads(config.read_text(encoding="utf-8"))
    data["ranking"]["questionMap"] = False
    config.write_text(json.dumps(data), encoding="utf-8")
    settings = rank.settings_from(load_config(config))
    assert not settings.question_map
    text = "my upload just hangs forever behind the corporate proxy"
    with project.load(synced).open_store(readonly=True) as store:
        off = query.retrieve(store, text, settings=settings).evidence
        on = query.retrieve(store, text, settings=rank.DEFAULT).evidence
        plain = vector.neighbours(store, text, question=False)
    semantic_off = {node_id: e.semantic for node_id, e in off.items() if e.semantic}
    assert semantic_off and semantic_off != {node_id: e.semantic for node_id, e in on.items() if e.semantic}
    assert {node_id for node_id, _ in plain.hits} <= set(off)
    data["ranking"]["questionMap"] = "no"
    config.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match="questionMap"):
        load_config(config)
