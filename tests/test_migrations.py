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


def test_newer_schema_is_refused_clearly(tmp_path: Path) -> None:
    from nexusmem.errors import StoreError
    from nexusmem.store import connection, migrations, open_store

    path = tmp_path / "m.db"
    conn = connection.connect(path)
    migrations.migrate(conn)
    conn.execute("INSERT INTO schema_migrations(version, name, applied_at) VALUES (999, 'future', 0)")
    conn.close()
    with pytest.raises(StoreError, match="newer than this NexusMem"):
        open_store(path)
