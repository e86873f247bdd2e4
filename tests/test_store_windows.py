"""Searches within a window of time: the seq range handed to the FTS table keeps exactly the rows the
filters keep, and the shell commands next to an anchor are found by one range of ts."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from nexusmem.store import Store, fulltext, open_store

from helpers import commit_node, node, shell_node, store_nodes

T0 = 1_700_000_000_000
HOUR = 3_600_000


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(tmp_path / "memory.db", create=True) as s:
        yield s


def test_a_windowed_search_keeps_what_the_filters_keep(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    # Written out of time order, so that the window's seqs are not one block: the range must keep them all.
    hours = [5, 1, 9, 3, 7, 2, 8, 4, 6, 0]
    store_nodes(store, [shell_node(f"pytest tests/test_cache.py -k case{h}", T0 + h * HOUR) for h in hours])
    everything = store.search_fts_scored('"cache"', 50)
    ts = {n.id: n.ts for n in store.get_many([i for i, _ in everything]).values()}
    windows = [
        (T0 + 2 * HOUR, T0 + 6 * HOUR),
        (T0 + 7 * HOUR, None),
        (None, T0 + HOUR),
        (T0 + 20 * HOUR, None),
    ]
    for cap in (fulltext.WINDOW_RANGE_NODES, 2):  # the range sought, and a window too large to seek it
        monkeypatch.setattr(fulltext, "WINDOW_RANGE_NODES", cap)
        for since, until in windows:
            kept = [
                (i, s)
                for i, s in everything
                if (since is None or ts[i] >= since) and (until is None or ts[i] <= until)
            ]
            for stemmed in (True, False):
                found = store.search_fts_scored('"cache"', 50, since=since, until=until, stemmed=stemmed)
                assert [i for i, _ in found] == [i for i, _ in kept]
            assert store.count_matches('"cache"', since=since, until=until) == len(kept)


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


def test_matching_each_answers_as_the_word_indexes_do(store: Store) -> None:
    """Which of a few nodes hold each of a question's words: the answer comes from a copy of those nodes, and
    is the one the store's own indexes give, form for form (an exact word, an inflected one the stemmed index
    finds in prose, a word only in a commit's change words, one only in a diff or a command, which the stemmed
    index leaves out)."""
    commands = [f"pytest tests/test_cache.py -k case{i}" for i in range(12)] + ["make caches"]
    nodes = [shell_node(c, T0 + i * HOUR) for i, c in enumerate(commands)]
    nodes += [
        replace(
            commit_node(T0, "src/router.py", subject="the router crashed on empty routes"),
            words="resolve_route",
        ),
        node("code_diff", text="def resolve_route(self): caches = {}  # crashes when empty"),
        node("doc_section", text="Caching: the router caches every route it resolves."),
    ]
    store_nodes(store, nodes)
    few = [n.id for n in nodes[::3]] + [n.id for n in nodes[-3:]]
    words = ("cache", "caches", "crash", "crashed", "resolve_route", "router", "routes", "missing")
    got = store.matching_each([f'"{w}"' for w in words], few)

    def indexed(word: str) -> set[str]:
        held: set[str] = set()
        for table in ("nodes_fts", "nodes_stem"):
            sql = f"SELECT n.id FROM nodes n JOIN {table} ON {table}.rowid = n.seq WHERE {table} MATCH ?"
            held.update(r[0] for r in store.conn.execute(sql, (f'"{word}"',)) if r[0] in few)
        return held

    assert got == {f'"{w}"': indexed(w) for w in words}
    commit, diff, doc = (n.id for n in nodes[-3:])
    # "crashed" in a commit's prose; "crashes" in a diff, which is not stemmed
    assert got['"crash"'] == {commit}
    assert got['"resolve_route"'] == {commit, diff}  # the change words, and the diff's code
    # "caches": another form of "cache" in prose, not in code
    assert doc in got['"cache"'] and diff not in got['"cache"']
    assert got['"missing"'] == set()
    assert store.matching_each([], few) == {} and store.matching_each(['"router"'], []) == {'"router"': set()}
