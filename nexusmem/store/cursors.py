"""Source cursors: where each collector got to, and the counts of its last sync.

Mixed into Store (which provides `conn`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nexusmem.store import hookreads
from nexusmem.store.migrations import GIT_CURSOR_BEFORE_REREAD, remember_git_cursor
from nexusmem.store.nodes import now_ms


class CursorsMixin:
    """Store methods for cursors. Mixed into Store."""

    conn: Any
    path: Path

    def clear_cursor(self, source: str) -> None:
        """Forget where a source got to, so its next sync reads everything again (the git source's HEAD is
        kept for the "HEAD moved" notes: synced_git_cursor)."""
        before = self.cursor(source) if source == "git" else None
        self.conn.execute("UPDATE sources SET cursor = NULL WHERE name = ?", (source,))
        remember_git_cursor(self.conn, before)

    def cursor(self, source: str) -> str | None:
        return hookreads.cursor(self.conn, source)

    def synced_git_cursor(self) -> str | None:
        """The git source's cursor, or the one a migration, forget or scrub cleared (hookreads)."""
        return hookreads.synced_git_cursor(self.conn)

    def record_sync(
        self, source: str, cursor: str | None, added: int, updated: int, removed: int, skipped: int
    ) -> None:
        self.conn.execute(
            "INSERT INTO sources(name, cursor, last_sync, added, updated, removed, skipped)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(name) DO UPDATE SET cursor = COALESCE(excluded.cursor, sources.cursor),"
            " last_sync = excluded.last_sync, added = excluded.added, updated = excluded.updated,"
            " removed = excluded.removed, skipped = excluded.skipped",
            (source, cursor, now_ms(), added, updated, removed, skipped),
        )
        if source == "git" and cursor is not None:
            self.conn.execute("DELETE FROM meta WHERE key = ?", (GIT_CURSOR_BEFORE_REREAD,))

    def reset_cursors(self) -> None:
        self.conn.execute("UPDATE sources SET cursor = NULL")

    def sources(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT name, cursor, last_sync, added, updated, removed, skipped FROM sources ORDER BY name"
        ).fetchall()
        keys = ("name", "cursor", "last_sync", "added", "updated", "removed", "skipped")
        return [dict(zip(keys, row)) for row in rows]
