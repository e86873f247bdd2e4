"""The reads the commit hook (precheck) needs, over a bare read-only connection.

A cold `nexusmem precheck` runs on every commit. Importing the Store class pulls in every mixin, the node
dataclasses (and with them `inspect`, `ast`, `dis`) and hashlib: about a third of the precheck's import
time on the 2-core build machine. These four reads need none of it. Store's methods of the same names call
these functions, so the SQL exists once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nexusmem.store import connection, health
from nexusmem.store.batch import rows_in
from nexusmem.store.migrations import GIT_CURSOR_BEFORE_REREAD, readable_version

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of a cold precheck)
if TYPE_CHECKING:
    from typing import Any

HOOK_BUSY_MS = 1_000


class HookReader:
    """A read-only, never migrated connection to PATH (a commit hook must not rewrite the database while a
    sync may be writing it; an older schema already has every table and column read here). Driver errors
    inside the `with` block become a StoreError that names the file, as with Store."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # A commit waits for this: a store another process holds locked (a tool in SQLite's exclusive
        # mode, a recovery) costs the commit at most HOOK_BUSY_MS, not the 15 s a sync waits.
        self.conn = connection.connect(path, readonly=True, busy_ms=HOOK_BUSY_MS)
        try:  # a store a newer NexusMem wrote is refused, as every read refuses it (precheck: not checked)
            readable_version(self.conn)
        except BaseException:
            self.conn.close()
            raise

    def __enter__(self) -> HookReader:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        try:
            self.conn.close()
        except health.DriverError:
            if exc is None:
                raise
        if isinstance(exc, health.DriverError):
            raise health.explain(self.path, exc, writing=False) from exc

    def cursor(self, source: str) -> str | None:
        return cursor(self.conn, source)

    def synced_git_cursor(self) -> str | None:
        return synced_git_cursor(self.conn)

    def shell_commands_between(
        self, start: int, end: int
    ) -> list[tuple[str, str, int, str | None, int | None]]:
        return shell_commands_between(self.conn, start, end)

    def shell_command_authors(self, start: int, end: int) -> dict[str, dict[str, str]]:
        return shell_command_authors(self.conn, start, end)

    def nodes_naming(
        self, paths: Sequence[str], kinds: Sequence[str], start: int, end: int
    ) -> list[tuple[str, str, str]]:
        return nodes_naming(self.conn, paths, kinds, start, end)

    def links_from(self, ids: Sequence[str]) -> list[tuple[str, str, str]]:
        return links_from(self.conn, ids)

    def files_of_many(self, ids: Sequence[str]) -> list[tuple[str, str]]:
        return files_of_many(self.conn, ids)

    def importers_of(self, paths: Sequence[str], per_path: int = 50) -> list[tuple[str, str]]:
        return importers_of(self.conn, paths, per_path)

    def shells_of(self, ids: Sequence[str]) -> dict[str, str]:
        return shells_of(self.conn, ids)

    def secondhand_keys(self, natural_keys: Sequence[str]) -> dict[str, tuple[str, int | None]]:
        return secondhand_keys(self.conn, natural_keys)

    def deny_entries(self) -> list[dict[str, Any]]:
        return deny_entries(self.conn)

    def commit_ids(self, shas: Sequence[str]) -> set[str]:
        return commit_ids(self.conn, shas)


def deny_entries(conn: Any) -> list[dict[str, Any]]:
    """Every deny-list entry of the store: {key, kind, ignore_case, spec, scope, created_at}."""
    rows = conn.execute(
        "SELECT key, kind, ignore_case, spec, scope, created_at FROM deny_list ORDER BY id"
    ).fetchall()
    if not rows:
        return []
    import json

    return [
        {
            "key": r[0],
            "kind": r[1],
            "ignore_case": bool(r[2]),
            "spec": json.loads(r[3]),
            "scope": r[4],
            "created_at": int(r[5]),
        }
        for r in rows
    ]


def cursor(conn: Any, source: str) -> str | None:
    """Where SOURCE's last sync stopped (its own format), None before the first one."""
    row = conn.execute("SELECT cursor FROM sources WHERE name = ?", (source,)).fetchone()
    return row[0] if row else None


def synced_git_cursor(conn: Any) -> str | None:
    """The git source's cursor, or, while a migration, a forget or a scrub has made the next sync read the
    history again (the cursor cleared), the one it cleared: where HEAD was when memory last synced (what the
    "HEAD moved" notes compare with)."""
    found = cursor(conn, "git")
    if found is not None:
        return found
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (GIT_CURSOR_BEFORE_REREAD,)).fetchone()
    return row[0] if row else None


def shell_commands_between(
    conn: Any, start: int, end: int, newest: int | None = None
) -> list[tuple[str, str, int, str | None, int | None]]:
    """(id, command, ts, cwd, exit) of every shell command with START <= ts <= END (the NEWEST of them
    only, when given), oldest first."""
    select = (
        "SELECT id, ref, ts, json_extract(meta, '$.cwd'), json_extract(meta, '$.exit'), seq FROM nodes"
        " WHERE kind = 'shell_command' AND ts BETWEEN ? AND ?"
    )
    if newest is None:
        rows = conn.execute(f"{select} ORDER BY ts, seq", (start, end))
    else:
        rows = conn.execute(
            f"SELECT * FROM ({select} ORDER BY ts DESC, seq DESC LIMIT ?) ORDER BY ts, seq",
            (start, end, newest),
        )
    return [tuple(r[:5]) for r in rows]


def shell_command_authors(conn: Any, start: int, end: int) -> dict[str, dict[str, str]]:
    """id -> {author, author_kind} of the shell commands with START <= ts <= END that name an author
    (the person's own commands recorded before authors existed have none: they are "me")."""
    return {
        r[0]: {"author": r[1], "author_kind": r[2]}
        for r in conn.execute(
            "SELECT id, json_extract(meta, '$.author'), json_extract(meta, '$.author_kind') FROM nodes"
            " WHERE kind = 'shell_command' AND ts BETWEEN ? AND ?"
            " AND json_extract(meta, '$.author') IS NOT NULL",
            (start, end),
        )
    }


def nodes_naming(
    conn: Any, paths: Sequence[str], kinds: Sequence[str], start: int, end: int
) -> list[tuple[str, str, str]]:
    """(path, node id, kind) for nodes of KINDS with START <= ts <= END whose files include one of PATHS."""
    if not paths or not kinds:
        return []
    kind_marks = ",".join("?" * len(kinds))
    # node_files (path-indexed) is the outer loop, and its rows are filtered against the set of nodes in
    # the window, read from the (kind, ts) index alone, before any node row is visited (the `+` keeps
    # SQLite from probing node_files by node_seq instead). On the 10k-commit, 100k-command benchmark
    # history, 20 staged files name ~8,000 rows of which ~300 are in the window: 4 ms instead of the
    # 35 ms of looking up every row's node to read its kind and time.
    sql = (
        "SELECT f.path, n.id, n.kind FROM node_files f CROSS JOIN nodes n ON n.seq = f.node_seq"
        " WHERE f.path IN ({marks}) AND +f.node_seq IN"
        f" (SELECT seq FROM nodes WHERE kind IN ({kind_marks}) AND ts BETWEEN ? AND ?)"
    )
    return list(rows_in(conn, sql, paths, *kinds, start, end))


def commit_ids(conn: Any, shas: Sequence[str]) -> set[str]:
    """The ids of the git source's git_commit nodes of the commits SHAS (the (source, natural_key) index)."""
    sql = "SELECT id FROM nodes WHERE source = 'git' AND natural_key IN ({marks}) AND +kind = 'git_commit'"
    return {row[0] for row in rows_in(conn, sql, shas)}


def links_from(conn: Any, ids: Sequence[str]) -> list[tuple[str, str, str]]:
    """(from id, to id, relation) for every link leaving one of IDS."""
    sql = "SELECT from_id, to_id, relation FROM links WHERE from_id IN ({marks}) ORDER BY from_id, relation, to_id"
    return list(rows_in(conn, sql, ids))


def files_of_many(conn: Any, ids: Sequence[str]) -> list[tuple[str, str]]:
    """(node id, path) for every file of the nodes IDS."""
    sql = "SELECT n.id, f.path FROM nodes n CROSS JOIN node_files f ON f.node_seq = n.seq WHERE n.id IN ({marks})"
    return list(rows_in(conn, sql, ids))


def shells_of(conn: Any, ids: Sequence[str]) -> dict[str, str]:
    """Node id -> the shell its log line names, for the shell commands IDS that name one."""
    sql = "SELECT id, json_extract(meta, '$.shell') FROM nodes WHERE id IN ({marks})"
    return {node_id: shell for node_id, shell in rows_in(conn, sql, ids) if isinstance(shell, str)}


def has_imports(conn: Any) -> bool:
    """Whether the import tables exist (precheck opens the store unmigrated: a store from before schema 9
    has none)."""
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'import_edges'"
    ).fetchone()
    return row is not None


def importers_of(conn: Any, paths: Sequence[str], per_path: int = 50) -> list[tuple[str, str]]:
    """(imported, importer) for each of PATHS, at most PER_PATH importers each, by importer path. One
    indexed read per batch: precheck calls this on every commit."""
    if not paths or not has_imports(conn):
        return []
    sql = "SELECT dst, src FROM import_edges WHERE dst IN ({marks}) ORDER BY dst, src"
    out: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for dst, src in rows_in(conn, sql, paths):
        seen[dst] = seen.get(dst, 0) + 1
        if seen[dst] <= per_path:
            out.append((dst, src))
    return out


def secondhand_keys(conn: Any, natural_keys: Sequence[str]) -> dict[str, tuple[str, int | None]]:
    """natural key → (id, exit code) of the shell commands among NATURAL_KEYS stored second-hand (meta
    `seen_in`: an agent's call read from its transcript), which that call's hook line replaces (keeping the
    transcript's exit code when the line does not know its own). An indexed lookup (nodes_source_key), asked
    only for the agent calls in the log's unsynced tail."""
    sql = (
        "SELECT natural_key, id, json_extract(meta, '$.exit') FROM nodes WHERE source = 'shell'"
        " AND +kind = 'shell_command' AND natural_key IN ({marks})"
        " AND json_extract(meta, '$.seen_in') IS NOT NULL"
    )
    return {
        key: (node_id, code if type(code) is int else None)
        for key, node_id, code in rows_in(conn, sql, list(dict.fromkeys(natural_keys)))
    }
