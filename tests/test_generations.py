"""Commit generations (store.generations): a commit's place in the history graph, from recorded parents."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from nexusmem import project
from nexusmem.store import connection, migrations
from nexusmem.store.generations import number

from helpers import commit, git, run_cli


def test_a_merge_sits_above_both_of_its_branches() -> None:
    # root ─ a ─ b ─────── merge
    #          └─ c ─ d ─┘
    parents = {"root": [], "a": ["root"], "b": ["a"], "c": ["a"], "d": ["c"], "merge": ["b", "d"]}
    assert number(parents, {}) == {"root": 1, "a": 2, "b": 3, "c": 3, "d": 4, "merge": 5}


def test_a_parent_numbered_earlier_or_missing_counts_as_known_or_zero() -> None:
    # An incremental sync: the parent was numbered by an earlier one; a shallow clone's cut is unknown.
    assert number({"new": ["old"]}, {"old": 41}) == {"new": 42}
    assert number({"cut": ["not-stored"]}, {}) == {"cut": 1}


def test_a_long_linear_history_is_numbered_without_recursion() -> None:
    depth = 50_000
    parents = {f"c{i}": ([f"c{i - 1}"] if i else []) for i in range(depth)}
    assert number(parents, {})[f"c{depth - 1}"] == depth


def test_a_cycle_in_damaged_records_ends_instead_of_looping() -> None:
    found = number({"x": ["y"], "y": ["x"]}, {})
    assert set(found) == {"x", "y"}


# No deadline: Hypothesis's default (200 ms an example) fails the test when the machine stalls it that long.
@settings(deadline=None)
@given(st.lists(st.lists(st.integers(min_value=0, max_value=59), max_size=3), min_size=1, max_size=60))
def test_every_ancestor_has_a_lower_generation(links: list[list[int]]) -> None:
    # A random DAG: commit i may only have parents j < i (as git's graph is built), listed in any order.
    parents = {f"c{i}": sorted({f"c{j % i}" for j in js}) if i else [] for i, js in enumerate(links)}
    gens = number(dict(reversed(list(parents.items()))), {})
    for sha, ps in parents.items():
        assert all(gens[p] < gens[sha] for p in ps)
        assert gens[sha] == 1 + max((gens[p] for p in ps), default=0)


def test_migration_numbers_the_commits_a_store_already_holds(tmp_path: Path) -> None:
    conn = connection.connect(tmp_path / "m.db")
    migrations.migrate(conn, target=11)
    rows = [("a", []), ("b", ["a"]), ("c", ["a"]), ("d", ["b", "c"])]
    for seq, (sha, ps) in enumerate(rows, 1):
        conn.execute(
            "INSERT INTO nodes(seq, id, project_id, kind, source, natural_key, ref, title, body, ts, created_at,"
            " updated_at, signal, provenance, content_hash, meta)"
            " VALUES (?, ?, 'p', 'git_commit', 'git', ?, ?, 't', 'b', 0, 0, 0, 0.5, 'git', 'h', ?)",
            (seq, f"id-{sha}", sha, sha, json.dumps({"sha": sha, "parents": ps})),
        )
    assert migrations.migrate(conn, target=12) == [12]
    assert dict(conn.execute("SELECT sha, gen FROM commit_generations")) == {"a": 1, "b": 2, "c": 2, "d": 3}


def test_a_sync_numbers_new_commits_and_mends_what_a_stopped_sync_left(repo: Path) -> None:
    base = commit(repo, "first", {"a.txt": "1\n"})
    git(repo, "checkout", "-q", "-b", "side")
    side = commit(repo, "side", {"b.txt": "2\n"})
    git(repo, "checkout", "-q", "main")
    main = commit(repo, "main", {"c.txt": "3\n"})
    git(repo, "merge", "-q", "--no-edit", "side")
    merge = git(repo, "rev-parse", "HEAD").strip()
    run_cli("-C", str(repo), "sync", "--no-embed")
    expected = {base: 1, side: 2, main: 2, merge: 3}
    with project.load(repo).open_store() as store:
        assert store.generations(expected) == expected
        # A sync stopped after it wrote the commits and before it numbered them:
        store.conn.execute("DELETE FROM commit_generations WHERE sha IN (?, ?)", (main, merge))
        store.conn.commit()
    run_cli("-C", str(repo), "sync", "--no-embed")  # nothing new in git: the cheap check finds the gap
    with project.load(repo).open_store(readonly=True) as store:
        assert store.generations(expected) == expected
    # The same gap, then a commit (the sync numbers what it wrote first, and the counts send it on), then
    # a reset that drops commits (their generations go with them).
    with project.load(repo).open_store() as store:
        store.conn.execute("DELETE FROM commit_generations WHERE sha = ?", (side,))
        store.conn.commit()
    later = commit(repo, "later", {"d.txt": "4\n"})
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store(readonly=True) as store:
        assert store.generations([*expected, later]) == {**expected, later: 4}
    git(repo, "reset", "-q", "--hard", main)
    git(repo, "branch", "-q", "-D", "side")
    run_cli("-C", str(repo), "sync", "--no-embed")
    with project.load(repo).open_store(readonly=True) as store:
        numbered = dict(store.conn.execute("SELECT sha, gen FROM commit_generations"))
    assert numbered == {base: 1, main: 2}
