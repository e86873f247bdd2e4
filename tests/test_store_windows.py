"""Searches within a window of time: the shell commands next to an anchor are found by one range of ts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nexusmem.store import Store, open_store

from helpers import shell_node, store_nodes

T0 = 1_700_000_000_000
HOUR = 3_600_000


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(tmp_path / "memory.db", create=True) as s:
        yield s


def test_the_commands_next_to_an_anchor_include_those_of_its_second(store: Store) -> None:
    same_before = shell_node("git status", T0, 0, session="a")
    anchor = shell_node("git push", T0, 1, session="b")
    same_after = shell_node("git log", T0, 0, session="c")
    later = shell_node("git pull --rebase", T0 + HOUR, 0)
    earlier = shell_node("git commit -m wip", T0 - HOUR, 0)
    too_late = shell_node("git push --force", T0 + 25 * HOUR, 0)
    store_nodes(store, [earlier, same_before, anchor, same_after, later, too_late])
    held = store.get(anchor.id)
    assert held is not None
    day = 24 * HOUR
    after = store.shell_neighbours(held, after=True, limit=5, window_ms=day)
    before = store.shell_neighbours(held, after=False, limit=5, window_ms=day)
    assert after == [same_after.id, later.id]
    assert before == [same_before.id, earlier.id]
