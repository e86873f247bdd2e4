"""The team store's document counts (term_df) on a real PostgreSQL: what a question's IDF reads must be what
counting the nodes would say, after pushes, re-pushes, changed nodes, verdicts, forget, two members pushing
at once, and a migration from a store that had no term_df yet."""

from __future__ import annotations

import json
import threading
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nexusmem.store import open_store

from helpers import commit_node, store_nodes

pytestmark = [pytest.mark.team, pytest.mark.slow]

PROJECT = "p1"


def _row(node_id: str, title: str, body: str, content_hash: str | None = None) -> tuple[Any, ...]:
    # PUSH_COLUMNS: id, kind, source, natural_key, ref, title, body, words, ts, signal, provenance, grp,
    # meta, content_hash, files, trust, superseded_by, emb
    return (
        node_id,
        "git_commit",
        "git",
        node_id,
        node_id[:7],
        title,
        body,
        "",
        1_700_000_000_000,
        1.0,
        "observed",
        None,
        "{}",
        content_hash or f"h-{title}-{body}",
        [],
        "candidate",
        None,
        None,
    )


def _open(url: str, member: str, project: str = PROJECT) -> Any:
    from nexusmem.store.team import TeamStore

    return TeamStore.open(url, project, member, "test", create=True)


@pytest.fixture
def store(team_url: str) -> Iterator[Any]:
    team = _open(team_url, "alice@example.com")
    yield team
    team.close()


def _kept(store: Any) -> dict[tuple[str, str], int]:
    """term_df as the triggers kept it (rows of count 0 are absent terms)."""
    rows = store.conn.execute("SELECT project_id, term, df FROM term_df WHERE df <> 0").fetchall()
    return {(r[0], r[1]): int(r[2]) for r in rows}


def _recounted(store: Any) -> dict[tuple[str, str], int]:
    """The same, counted from the nodes themselves."""
    rows = store.conn.execute(
        "SELECT project_id, l.lexeme, count(*) FROM nodes, unnest(tsv) l GROUP BY 1, 2"
        " UNION ALL SELECT project_id, ' nodes', count(*) FROM nodes GROUP BY 1"
        " UNION ALL SELECT project_id, ' vectors', count(*) FROM nodes WHERE emb IS NOT NULL GROUP BY 1"
    ).fetchall()
    return {(r[0], r[1]): int(r[2]) for r in rows}


def _counts(store: Any, *terms: str) -> dict[str, int]:
    store._counts.clear()  # what a question asked later (past the memo) reads
    result: dict[str, int] = store.term_doc_counts(list(terms))
    return result


def test_push_counts_each_node_once_and_a_re_push_changes_nothing(store: Any) -> None:
    rows = [
        _row("a" * 24, "Fix the flaky upload", "retry the upload with backoff; upload again"),
        _row("b" * 24, "Cache the parser", "the parser cache is a dict"),
        _row("c" * 24, "Upload progress bar", "show bytes sent"),
    ]
    store.push_batch(rows)
    # "upload" is in two nodes (three times in one of them): a document count, not a word count.
    assert _counts(store, "upload", "parser", "cache", "zebra") == {
        "upload": 2,
        "parser": 1,
        "cache": 1,
        "zebra": 0,
    }
    assert _kept(store) == _recounted(store)
    assert _kept(store)[(PROJECT, " nodes")] == 3 and store.size_hint() == 3

    before = _kept(store)
    counts = store.push_batch(rows + rows[:1])  # the same nodes again (one twice in the batch)
    assert counts.unchanged == 3 and counts.added == 0
    assert _kept(store) == before


def test_a_changed_node_moves_its_counts_and_a_verdict_does_not(store: Any) -> None:
    store.push_batch([_row("a" * 24, "Fix the flaky upload", "retry with backoff")])
    assert not store.has_vectors()
    store.push_batch([_row("a" * 24, "Fix the flaky download", "retry with jitter")])
    vector = "[" + ",".join(["0.0625"] * 256) + "]"  # and it gains a vector (as an embedding pass sends)
    store.conn.execute("UPDATE nodes SET emb = %s::vector WHERE id = %s", (vector, "a" * 24))
    store._counts.clear()
    assert store.has_vectors() and store.size_hint() == 1
    assert _counts(store, "upload", "download", "backoff", "jitter", "retry") == {
        "upload": 0,
        "download": 1,
        "backoff": 0,
        "jitter": 1,
        "retry": 1,
    }
    store.push_verdicts([("a" * 24, "verified", None)])
    assert store.get("a" * 24).trust == "verified"
    assert _kept(store) == _recounted(store)


def test_forget_takes_the_nodes_terms_away(store: Any) -> None:
    store.push_batch(
        [
            _row("a" * 24, "Rotate the hunter2 password", "hunter2 was pasted"),
            _row("b" * 24, "Document the password policy", "long passwords"),
        ]
    )
    assert _counts(store, "hunter2", "password") == {"hunter2": 1, "password": 2}
    entry = {"key": "k" * 64, "kind": "literal", "spec": {"digest": "d"}}
    assert store.forget(entry, ["a" * 24]) == 1
    assert store.size_hint() == 1
    assert _counts(store, "hunter2", "password", "rotate") == {"hunter2": 0, "password": 1, "rotate": 0}
    assert _kept(store) == _recounted(store)
    # The forgotten id pushed again by an old clone is refused, and counts nothing.
    store.push_batch([_row("a" * 24, "Rotate the hunter2 password", "hunter2 was pasted")])
    assert _counts(store, "hunter2") == {"hunter2": 0}


def test_counts_are_per_project_and_a_term_of_several_tokens_counts_as_its_rarest(team_url: str) -> None:
    one, two = _open(team_url, "alice@example.com", "p1"), _open(team_url, "alice@example.com", "p2")
    try:
        one.push_batch([_row("a" * 24, "Route tests", "router.py and router_test.py")])
        two.push_batch([_row("b" * 24, "Router", "router"), _row("c" * 24, "Another router", "nothing else")])
        assert _counts(one, "router", "py", "router.py", "Router") == {
            "router": 1,
            "py": 1,
            "router.py": 1,
            "Router": 1,
        }
        assert _counts(two, "router", "router.py") == {"router": 2, "router.py": 0}
    finally:
        one.close()
        two.close()


def test_a_node_another_member_pushes_is_counted_by_the_next_question(team_url: str) -> None:
    alice, bob = _open(team_url, "alice@example.com"), _open(team_url, "bob@example.com")
    try:
        alice.push_batch([_row("a" * 24, "Tune the scheduler", "cron")])
        assert _counts(bob, "scheduler", "daylight") == {"scheduler": 1, "daylight": 0}
        alice.push_batch([_row("b" * 24, "Daylight saving breaks the scheduler", "cron at 2am")])
        assert _counts(bob, "scheduler", "daylight") == {"scheduler": 2, "daylight": 1}
    finally:
        alice.close()
        bob.close()


def test_two_members_pushing_overlapping_batches_at_once_converge(team_url: str) -> None:
    """Both push the same shared history (in opposite orders, so their rows meet) plus their own nodes,
    in batches, at the same time: no deadlock, and term_df equals a recount."""
    vocabulary = ["cache", "lock", "parser", "retry", "budget", "timeout", "upload", "socket", "index"]

    def node(i: int) -> tuple[Any, ...]:
        words = " ".join(vocabulary[(i * k) % len(vocabulary)] for k in range(1, 6))
        return _row(f"{i:024x}", f"commit {i} {vocabulary[i % len(vocabulary)]}", f"{words} n{i}")

    shared = [node(i) for i in range(600)]
    errors: list[BaseException] = []
    members = [_open(team_url, f"m{k}@example.com") for k in range(2)]

    def push(k: int) -> None:
        own = [node(10_000 * (k + 1) + i) for i in range(300)]
        history = (shared if k == 0 else shared[::-1]) + own
        try:
            for start in range(0, len(history), 150):
                members[k].push_batch(history[start : start + 150])
        except BaseException as exc:  # reported below: a deadlock would surface here
            errors.append(exc)

    threads = [threading.Thread(target=push, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    try:
        assert not errors
        assert members[0].node_count() == 1200
        assert _kept(members[0]) == _recounted(members[0])
        assert _counts(members[1], "n599", "cache")["n599"] == 1
    finally:
        for member in members:
            member.close()


def test_migrating_a_store_without_term_df_backfills_it(team_url: str) -> None:
    """A team store made by a NexusMem before term_df (schema 1) is answered by counting, then migrated by
    the next push with every count right."""
    from nexusmem.store import team as team_store

    first_only = team_store.MIGRATIONS[:1]
    conn = team_store.connect(team_url)
    try:
        saved = team_store.MIGRATIONS[:]
        team_store.MIGRATIONS[:] = first_only
        try:
            team_store.migrate(conn)
        finally:
            team_store.MIGRATIONS[:] = saved
    finally:
        conn.close()
    old = team_store.TeamStore.open(team_url, PROJECT, "old@example.com", "test")
    try:
        assert old.schema_version() == 1
        old.push_batch([_row("a" * 24, "Retry uploads", "upload retry"), _row("b" * 24, "Upload", "")])
        assert _counts(old, "upload", "retry", "zebra") == {"upload": 2, "retry": 1, "zebra": 0}
    finally:
        old.close()
    new = _open(team_url, "new@example.com")  # what `team push` does: migrate
    try:
        assert new.schema_version() == team_store.LATEST
        assert _kept(new) == _recounted(new)
        assert _counts(new, "upload", "retry", "zebra") == {"upload": 2, "retry": 1, "zebra": 0}
        new.push_batch([_row("c" * 24, "Upload faster", "")])
        assert _counts(new, "upload") == {"upload": 3}
    finally:
        new.close()


def _history(store: Any, count: int) -> list[str]:
    """COUNT nodes, oldest first, every one holding "cache": the oldest ones in their title (ts_rank's
    heaviest weight), the newer ones in their body only; the oldest 30 also hold "legacy"."""
    rows = []
    for i in range(count):
        row = list(_row(f"{i:024x}", f"cache layer change {i}" if i < count // 2 else f"change {i}", ""))
        row[6] = ("legacy " if i < 30 else "") + f"touches the cache, step {i}"
        row[8] = 1_700_000_000_000 + i * 60_000  # ts: one a minute
        rows.append(tuple(row))
    store.push_batch(rows)
    return [r[0] for r in rows]


def test_common_terms_rank_only_the_newest_matches(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from nexusmem.store import team as team_store

    ids = _history(store, 100)
    everything = store.search_fts_scored('"cache"', 5)
    assert set(i for i, _ in everything) <= set(ids[:50])  # uncapped: the title matches win

    monkeypatch.setattr(team_store, "RANK_CAP", 10)  # 100 postings > 10: the newest 10 nodes are ranked
    store._counts.clear()
    newest = store.search_fts_scored('"cache"', 5)
    assert len(newest) == 5 and set(i for i, _ in newest) <= set(ids[-10:])
    # The match total no longer counts the matches: one word's total is its document count, exactly.
    assert store.count_matches('"cache"') == 100
    assert store.count_matches('"cache" OR "legacy"') == 100
    assert store.count_matches('"legacy" OR "step"') == 100


def test_a_common_term_absent_from_the_newest_nodes_is_still_found(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nexusmem.store import team as team_store

    ids = _history(store, 100)
    monkeypatch.setattr(team_store, "RANK_CAP", 10)  # "legacy": 30 postings, all among the oldest nodes
    hits = store.search_fts_scored('"legacy"', 5)
    assert len(hits) == 5 and set(i for i, _ in hits) <= set(ids[:30])
    assert store.count_matches('"legacy"') == 30


def test_matches_fewer_than_the_newest_window_are_all_ranked(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """20 of 100 nodes hold "cache": the 10 oldest in their title, the 10 newest in their body. With a cap
    of 10 the newest window would be 50 nodes, more than the 20 matches: every match is ranked, so the
    title matches win instead of the newest body matches."""
    from nexusmem.store import team as team_store

    rows = []
    for i in range(100):
        row = list(_row(f"{i:024x}", "cache layer change" if i < 10 else f"change {i}", ""))
        row[6] = f"touches the cache, step {i}" if i >= 90 else f"step {i}"
        row[8] = 1_700_000_000_000 + i * 60_000
        rows.append(tuple(row))
    store.push_batch(rows)
    monkeypatch.setattr(team_store, "RANK_CAP", 10)
    store._counts.clear()
    hits = store.search_fts_scored('"cache"', 5)
    assert len(hits) == 5 and {i for i, _ in hits} <= {r[0] for r in rows[:10]}


def test_a_database_never_set_up_is_named_as_such(team_url: str) -> None:
    from nexusmem.errors import StoreError
    from nexusmem.store.team import TeamStore

    with pytest.raises(StoreError, match="holds no team memory yet: run `nexusmem team init"):
        TeamStore.open(team_url, PROJECT, "alice@example.com", "db.example")


def _vector_row(node_id: str, kind: str, angle: float) -> tuple[Any, ...]:
    """A node whose 256-d unit vector lies ANGLE radians from the first axis, in the first two axes."""
    import math
    from array import array

    vec = [0.0] * 256
    vec[0], vec[1] = math.cos(angle), math.sin(angle)
    row = list(_row(node_id, f"{kind} {node_id[:4]}", "body"))
    row[1] = kind
    row[-1] = array("f", vec).tobytes()
    return tuple(row)


def test_the_k_nn_merges_the_history_kinds_when_shell_commands_are_among_the_nearest(store: Any) -> None:
    """Shell commands nearest, commits further: the answer is the K nearest of both searches, each node
    once, nearest first, with the distances the vectors give (1 - cos(angle))."""
    import math
    from array import array

    from nexusmem.store.team import merge_nearest

    angles = {f"{i:024x}": 0.01 * i for i in range(1, 6)}  # shell commands, nearest
    angles.update({f"{100 + i:024x}": 0.2 + 0.01 * i for i in range(1, 4)})  # commits, further
    store.push_batch(
        [
            _vector_row(node_id, "shell_command" if a < 0.1 else "git_commit", a)
            for node_id, a in angles.items()
        ]
    )
    question = [0.0] * 256
    question[0] = 1.0
    hits = store.search_vectors(array("f", question).tobytes(), 7)
    assert [node_id for node_id, _ in hits] == list(angles)[:7]
    for node_id, distance in hits:
        assert distance == pytest.approx(1 - math.cos(angles[node_id]), abs=1e-5)

    # The merge itself: one row per id at its smaller distance, nearest first, cut at K.
    merged = merge_nearest([("a", 0.3, "x"), ("b", 0.1, "x")], [("a", 0.2, "y"), ("c", 0.4, "y")], 2)
    assert merged == [("b", 0.1, "x"), ("a", 0.2, "y")]


def test_a_store_made_before_vector_generations_answers_then_migrates_with_its_graphs(team_url: str) -> None:
    """A team store at schema 3 (one pair of graphs over every row) answers k-NN questions from a newer
    NexusMem as it is; the next push migrates it (generation 0's graphs, built again) and its nearest
    neighbours stay what an exact scan finds, then a bulk push adds a generation of its own."""
    import random

    from nexusmem.store import team as team_store

    rng = random.Random(7)

    def vec() -> bytes:
        return array("f", [rng.uniform(-1, 1) for _ in range(team_store.TEAM_DIM)]).tobytes()

    def rows(prefix: str, count: int) -> list[tuple[Any, ...]]:
        return [(*_row(f"{prefix}{i:023x}", f"change {prefix} {i}", "")[:-1], vec()) for i in range(count)]

    saved = team_store.MIGRATIONS[:]
    conn = team_store.connect(team_url)
    try:
        team_store.MIGRATIONS[:] = saved[:3]
        team_store.migrate(conn)
    finally:
        team_store.MIGRATIONS[:] = saved
        conn.close()
    old = team_store.TeamStore.open(team_url, PROJECT, "old@example.com", "test")
    try:
        assert old.schema_version() == 3
        old.push_batch(rows("a", 60))
        probe = vec()
        assert old.vector_index_ready() and not old.begin_bulk()  # no generations before migration 4
        assert [i for i, _ in old.search_vectors(probe, 10)] == [i for i, _ in old.exact_vectors(probe, 10)]
    finally:
        old.close()
    new = _open(team_url, "new@example.com")  # what `team push` does: migrate
    try:
        assert new.schema_version() == team_store.LATEST
        assert new.vector_index_ready() and new.status()["vector_generations"] == 1
        graphs = new.conn.execute(
            "SELECT count(*) FROM pg_indexes WHERE indexname IN ('nodes_emb_history_g0', 'nodes_emb_shell_g0')"
        ).fetchone()
        assert graphs == (2,)
        assert [i for i, _ in new.search_vectors(probe, 10)] == [i for i, _ in new.exact_vectors(probe, 10)]
        assert new.begin_bulk() and new.push_gen == 1
        new.push_batch(rows("b", 40))
        # Generations are capped (every question searches them all): at the cap a large push goes row by
        # row into generation 0's graphs, and says why.
        capped = _open(team_url, "capped@example.com")
        try:
            saved_cap = team_store.MAX_GENERATIONS
            team_store.MAX_GENERATIONS = 2  # generations 0 and 1 are held
            try:
                assert not capped.begin_bulk() and capped.push_gen == 0
                assert "2 vector generations" in capped.bulk_refused
            finally:
                team_store.MAX_GENERATIONS = saved_cap
        finally:
            capped.close()
        assert not new.vector_index_ready()
        assert new.build_vector_index() and new.vector_index_ready()
        assert new.conn.execute("SELECT count(*) FROM nodes WHERE gen = 1").fetchone() == (40,)
        held = [i for i, _ in new.exact_vectors(probe, 20)]
        assert any(i.startswith("b") for i in held)  # the new generation is among the nearest
        assert [i for i, _ in new.search_vectors(probe, 20)] == held
        # Each generation's branch of the statement can be answered by that generation's own graph (on
        # 100 rows the planner prefers a scan and a sort: with those off, only an ordered index scan is left).
        text = team_store.vector_text(probe)
        sql = team_store.knn_statement([0, 1], team_store.GRAPHS[0][1], "")
        with new.conn.transaction():
            for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
                new.conn.execute(f"SET LOCAL {setting} = off")
            plan = "\n".join(r[0] for r in new.conn.execute("EXPLAIN " + sql, [text, PROJECT, text, 20] * 2))
        assert "nodes_emb_history_g0" in plan and "nodes_emb_history_g1" in plan, plan
    finally:
        new.close()


def test_a_store_made_before_commit_generations_keeps_none_then_migrates_and_takes_them(
    team_url: str,
) -> None:
    """A team store at schema 4 keeps no commit graph: it answers with none and takes none (an older
    NexusMem's members push as before). The next push migrates it; then generations are kept per project,
    the first pushed for a sha is kept, and another project's are not seen."""
    from nexusmem.store import team as team_store

    saved = team_store.MIGRATIONS[:]
    conn = team_store.connect(team_url)
    try:
        team_store.MIGRATIONS[:] = saved[:4]
        team_store.migrate(conn)
    finally:
        team_store.MIGRATIONS[:] = saved
        conn.close()
    a, b = "a" * 40, "b" * 40
    old = team_store.TeamStore.open(team_url, PROJECT, "old@example.com", "test")
    try:
        assert old.schema_version() == 4
        assert old.push_generations([(a, 1), (b, 2)]) == 0 and old.generations([a, b]) == {}
    finally:
        old.close()
    new = _open(team_url, "new@example.com")  # what `team push` does: migrate
    other = _open(team_url, "new@example.com", project="p2")
    try:
        assert new.schema_version() == team_store.LATEST
        assert new.push_generations([(a, 1), (b, 2)]) == 2
        assert new.push_generations([(b, 9), ("c" * 40, 3)]) == 1  # b is kept as first pushed
        assert new.generations([a, b, "d" * 40]) == {a: 1, b: 2}
        assert other.generations([a, b]) == {}
    finally:
        new.close()
        other.close()


def test_the_commits_that_touched_a_file_are_found_as_local_memory_finds_them(
    tmp_path: Path, store: Any
) -> None:
    """ "What changed in app.py today" reads the paths commits touched and the commits that touched one
    (activity.file_changes_first): the team store answers both as a local store does, in any case, newest first."""
    commits = [
        ("a" * 24, "src/app.py", 1_700_000_000_000),
        ("b" * 24, "src/App.py", 1_700_000_100_000),  # the same name in another case
        ("c" * 24, "test/app.py", 1_700_000_200_000),
        ("d" * 24, "src/app_py", 1_700_000_300_000),  # `_` is no wildcard
    ]
    rows = []
    for node_id, path, ts in commits:
        row = list(_row(node_id, f"Touch {path}", "a change"))
        row[8], row[14] = ts, [path]
        rows.append(tuple(row))
    store.push_batch(rows)
    with open_store(tmp_path / "memory.db", create=True) as local:
        store_nodes(local, [commit_node(ts, path, subject=f"Touch {path}") for _, path, ts in commits])
        for each in (store, local):
            assert each.commit_paths_ending("app.py") == ["src/App.py", "src/app.py", "test/app.py"]
            assert each.commit_paths_ending("SRC/app.py") == ["src/App.py", "src/app.py"]
            assert each.commit_paths_ending("app.p") == []
            assert each.commit_paths_ending("app_py") == ["src/app_py"]
            found = each.commits_touching(["src/app.py", "test/app.py"], 0, 2**62, 10)
            assert [each.get(i).title for i in found] == ["Touch test/app.py", "Touch src/app.py"], each
            assert each.commits_touching(["src/app.py", "test/app.py"], 0, 1_700_000_100_000, 10) == found[1:]


def test_the_renames_of_a_file_are_found_as_local_memory_finds_them(tmp_path: Path, store: Any) -> None:
    """A renamed file's history follows its renames (search.former_names): the team store reads a commit's
    meta `renames` by either path as a local store does, newest first; a commit with none, or with a meta
    value that is no list, is passed over."""
    commits = [
        ("a" * 24, "src/beta.py", 1_700_000_000_000, {"renames": [["src/alpha.py", "src/beta.py"]]}),
        ("b" * 24, "lib/gamma.py", 1_700_000_100_000, {"renames": [["src/beta.py", "lib/gamma.py"]]}),
        ("c" * 24, "src/beta.py", 1_700_000_200_000, {}),
        ("d" * 24, "src/beta.py", 1_700_000_300_000, {"renames": "src/beta.py"}),
    ]
    rows = []
    for node_id, path, ts, meta in commits:
        row = list(_row(node_id, f"Touch {path}", "a change"))
        row[4], row[8], row[12], row[14] = node_id, ts, json.dumps(meta), [path]
        rows.append(tuple(row))
    store.push_batch(rows)
    with open_store(tmp_path / "memory.db", create=True) as local:
        store_nodes(
            local,
            [
                commit_node(ts, path, sha=node_id, subject=f"Touch {path}", **meta)
                for node_id, path, ts, meta in commits
            ],
        )
        for each in (store, local):
            assert each.renames_of(["src/beta.py"]) == [
                ("src/beta.py", "lib/gamma.py", "b" * 24, 1_700_000_100_000),
                ("src/alpha.py", "src/beta.py", "a" * 24, 1_700_000_000_000),
            ], each
            assert each.renames_of(["lib/gamma.py", "nowhere.py"]) == [
                ("src/beta.py", "lib/gamma.py", "b" * 24, 1_700_000_100_000)
            ]
            assert each.renames_of([]) == [] and each.renames_of(["README.md"]) == []
