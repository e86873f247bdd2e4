"""Upgrading a memory an older release wrote: what the user is told, the copy kept of the old one, and how an
older release reads a newer memory. The store is a real synced memory set back to schema 16 (the release an
upgrade walkthrough started from: its tables are today's but for migrations 17 and 18), read by the real
console script with HOME and NEXUSMEM_HOME in temp dirs."""

from __future__ import annotations

import re
import stat
from pathlib import Path

from nexusmem.store import connection, migrations

from helpers.cli import run_script
from helpers.git import commit, init_repo

OLD = 16


def _memory(tmp_path: Path) -> tuple[Path, Path]:
    """A repository with a synced memory set back to schema OLD: (repository, memory.db)."""
    repo = init_repo(tmp_path / "repo")
    commit(repo, "Add the zorblax parser", {"parser.py": "def zorblax():\n    return 1\n"})
    commit(repo, "Fix the zorblax parser on empty input", {"parser.py": "def zorblax():\n    return 2\n"})
    synced = run_script("sync", "-q", cwd=repo)
    assert synced.returncode == 0, synced.stderr
    db = repo / ".nexusmem" / "memory.db"
    conn = connection.connect(db)
    conn.execute("DELETE FROM schema_migrations WHERE version > ?", (OLD,))
    conn.execute("DROP INDEX IF EXISTS nodes_renames")
    conn.close()
    return repo, db


def _nodes(db: Path) -> tuple[int, int]:
    """(schema version, node count) of the database file DB, read without migrating it."""
    conn = connection.connect(db, readonly=True)
    try:
        return migrations.current_version(conn), int(conn.execute("SELECT COUNT(*) FROM nodes").fetchone()[0])
    finally:
        conn.close()


def _notice(db: Path) -> str:
    copy = db.with_name(f"memory.db.pre-v{OLD}.bak")
    return (
        f"nexusmem: memory upgraded from schema {OLD} to {migrations.LATEST} (a copy of the old one is {copy};"
        " older NexusMem releases can no longer read this memory)"
    )


def test_an_upgrade_keeps_a_copy_of_the_old_memory_and_says_so_once(tmp_path: Path) -> None:
    repo, db = _memory(tmp_path)
    before = _nodes(db)
    stale = db.with_name(f"memory.db.pre-v{OLD}.bak")
    stale.write_bytes(b"an older copy of this version, from an upgrade undone since")

    first = run_script("status", cwd=repo)
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines() == [_notice(db)]
    # The copy is the memory as the old release left it, private like every file NexusMem writes; the one
    # an earlier upgrade from the same version left is replaced, and nothing else is left beside it.
    assert _nodes(stale) == before
    assert stat.S_IMODE(stale.stat().st_mode) == 0o600
    assert sorted(p.name for p in db.parent.glob("memory.db.*")) == [stale.name]
    assert _nodes(db)[0] == migrations.LATEST

    again = run_script("status", cwd=repo)
    assert again.returncode == 0 and again.stderr == ""


def test_a_post_commit_upgrade_is_quiet_and_told_at_the_next_command(tmp_path: Path) -> None:
    repo, db = _memory(tmp_path)
    commit(repo, "Document zorblax", {"README.md": "zorblax parses things\n"})

    # What the post-commit hook runs (its output goes to .nexusmem/auto-sync.log, never the terminal).
    hook = run_script("sync", "--auto", cwd=repo)
    assert hook.returncode == 0, hook.stderr
    assert "upgraded" not in hook.stdout + hook.stderr
    assert _nodes(db)[0] == migrations.LATEST
    assert db.with_name(f"memory.db.pre-v{OLD}.bak").is_file()

    query = run_script("query", "zorblax", cwd=repo)
    assert query.returncode == 0, query.stderr
    assert query.stderr.splitlines() == [_notice(db)]
    assert run_script("query", "zorblax", cwd=repo).stderr == ""

    doctor = run_script("doctor", cwd=repo)
    copy = db.with_name(f"memory.db.pre-v{OLD}.bak")
    assert f"memory upgraded from schema {OLD}: a copy of the old one is {copy}" in doctor.stdout


def test_forget_takes_the_pre_upgrade_copy_too(tmp_path: Path) -> None:
    repo, db = _memory(tmp_path)
    assert run_script("status", cwd=repo).returncode == 0
    copy = db.with_name(f"memory.db.pre-v{OLD}.bak")
    assert b"zorblax" in copy.read_bytes()

    gone = run_script("forget", "zorblax", "--yes", "--force", cwd=repo)
    assert gone.returncode == 0, gone.stderr
    assert not copy.exists()
    assert f"{copy.name}" in gone.stdout
    assert re.search(r"verified: the value is in none", gone.stdout)
