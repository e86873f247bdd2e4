"""Lookups of commits by sha read the few rows they name, however many commits the memory holds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nexusmem.store import Store, hookreads, open_store

from helpers import commit_node, shell_node, store_nodes


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(tmp_path / "memory.db", create=True) as s:
        store_nodes(s, (commit_node(1_700_000_000_000 + i, f"f{i}.py", sha=f"{i:040x}") for i in range(4000)))
        store_nodes(s, (shell_node(f"make test{i}", ts=1_700_000_000_000 + i) for i in range(50)))
        yield s


def steps(store: Store, read: object) -> int:
    """SQLite VM steps the call READ takes (a progress handler counting every 100 instructions)."""
    count = [0]

    def tick() -> int:
        count[0] += 1
        return 0

    store.conn.set_progress_handler(tick, 100)
    try:
        read()  # type: ignore[operator]
    finally:
        store.conn.set_progress_handler(None, 100)
    return count[0] * 100


def test_looking_up_a_commit_by_sha_does_not_read_every_commit(store: Store) -> None:
    """SQLite's planner took the index on kind for `source = 'git' AND kind = 'git_commit' AND natural_key IN
    (…)` and read every commit: 76 ms of each post-commit sync on git/git (82k commits), for one sha. The
    lookups go through (source, natural_key): a few hundred steps, where reading 4,000 commits takes tens of
    thousands."""
    shas = [f"{7:040x}", f"{3999:040x}"]
    seq = store.write_seq()
    assert store.commits_stored_by(shas, seq) == set(shas)
    assert steps(store, lambda: store.commits_stored_by(shas, seq)) < 2_000
    assert len(store.commit_texts(shas)) == 2
    assert steps(store, lambda: store.commit_texts(shas)) < 2_000
    assert len(hookreads.commit_ids(store.conn, shas)) == 2
    assert steps(store, lambda: hookreads.commit_ids(store.conn, shas)) < 2_000
    assert store.commit_ancestors(shas) >= set(shas)
    assert steps(store, lambda: store.commit_ancestors(shas)) < 2_000
