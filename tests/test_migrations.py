"""Schema migrations: every earlier version migrates forward; a newer schema is refused clearly."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_migrations_from_empty_and_every_earlier_version(tmp_path: Path) -> None:
    from nexusmem.store import connection, migrations

    for start in range(0, migrations.LATEST + 1):
        path = tmp_path / f"v{start}.db"
        conn = connection.connect(path)
        migrations.migrate(conn, target=start)
        assert migrations.current_version(conn) == start
        applied = migrations.migrate(conn)
        assert applied == list(range(start + 1, migrations.LATEST + 1))
        assert migrations.current_version(conn) == migrations.LATEST
        assert migrations.migrate(conn) == []
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"nodes", "links", "sources", "meta", "node_files", "nodes_fts"} <= tables
        conn.close()


def test_the_schema_version_says_is_the_latest_migration() -> None:
    """`--version` says the schema without importing the store: the number it says is the last migration's."""
    import nexusmem
    from nexusmem.store import migrations

    assert nexusmem.SCHEMA == migrations.LATEST, "a migration was added: set nexusmem.SCHEMA to its number"


def test_newer_schema_is_refused_clearly(tmp_path: Path) -> None:
    from nexusmem.errors import StoreError
    from nexusmem.store import connection, migrations, open_store

    path = tmp_path / "m.db"
    conn = connection.connect(path)
    migrations.migrate(conn)
    conn.execute("INSERT INTO schema_migrations(version, name, applied_at) VALUES (999, 'future', 0)")
    conn.close()
    with pytest.raises(StoreError, match=r"written by a newer NexusMem \(schema 999\) than the one running"):
        open_store(path)


def test_head_moved_is_still_said_right_after_a_migration_reads_git_again(repo: Path) -> None:
    """A migration that makes the next sync read the history again (migration 18: a store whose commits may
    hold a rename) cleared the git source's cursor, and with it the HEAD memory was at: the "HEAD is X,
    memory is at Y" note of query, MCP search and status went dark until the next sync, just when commits
    had been made without one (the release before's post-commit hook failing against the new store)."""
    import json

    from nexusmem import project

    from helpers import commit, git, run_cli
    from helpers.embedding import set_embedding

    commit(repo, "feat: the quokka parser", {"quokka.py": "def parse():\n    pass\n"})
    git(repo, "mv", "quokka.py", "wombat.py")
    synced = commit(repo, "refactor: the quokka parser is the wombat parser")
    run_cli("-C", str(repo), "init")
    set_embedding(repo, provider="none")
    run_cli("-C", str(repo), "sync", "--no-embed", "-q")
    with project.load(repo).open_store() as store:  # as the release before (schema 17) left it
        store.conn.execute("DELETE FROM schema_migrations WHERE version >= 18")
        store.conn.commit()
    head = commit(repo, "feat: the numbat flag", {"numbat.py": "FLAG = 1\n"})  # no sync ran after it

    said = f"HEAD is {head[:10]}, memory is at {synced[:10]}"
    notes = json.loads(run_cli("-C", str(repo), "query", "--json", "--", "wombat parser").stdout)["notes"]
    assert any(note.startswith(said) for note in notes), notes  # this query ran the migration
    with project.load(repo).open_store(readonly=True) as store:
        assert store.cursor("git") is None  # the migration did make the next sync read git again
    status = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)
    assert status["head_moved"] == {"memory_at": synced, "head": head}
    assert said in run_cli("-C", str(repo), "status").stdout

    run_cli("-C", str(repo), "sync", "--no-embed", "-q")
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["head_moved"] is None
    git(repo, "reset", "-q", "--hard", "HEAD~1")  # and the cursor the sync wrote is the one compared again
    moved = json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["head_moved"]
    assert moved == {"memory_at": head, "head": synced}
    # forget and scrub clear the git cursor too (their next sync derives the change words again): the same.
    with project.load(repo).open_store() as store, store.transaction():
        store.clear_cursor("git")
    assert json.loads(run_cli("-C", str(repo), "status", "--json").stdout)["head_moved"] == moved
