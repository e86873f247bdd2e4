"""Releases: the version tags the last sync read (nexusmem.sources.git.releases hands them over through the
sync), and the window of time a version names. Mixed into Store (which provides `conn`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def version_key(version: str) -> tuple[int, ...]:
    """ "1.2" → (1, 2, 0, 0): versions compare by number, and "1.2" is "1.2.0"."""
    parts = [int(p) for p in version.split(".")[:4]]
    return tuple(parts + [0] * (4 - len(parts)))


class ReleasesMixin:
    """Store methods for releases. Mixed into Store."""

    conn: Any

    def replace_releases(self, rows: Iterable[tuple[str, str, str, int]]) -> None:
        """Make ROWS (tag name, version, commit sha, epoch ms) the store's whole list (a deleted tag goes)."""
        self.conn.execute("DELETE FROM releases")
        self.conn.executemany(
            "INSERT OR REPLACE INTO releases(name, version, sha, ts) VALUES (?, ?, ?, ?)", rows
        )

    def release_window(self, version: str) -> tuple[int, int | None] | None:
        """(when the release VERSION was made, when the next one was; None when it is the newest), epoch
        ms; None when no tag names VERSION. "1.1" names 1.1.0 and, if there is no such tag, the first 1.1.x."""
        rows = self.conn.execute("SELECT version, ts FROM releases").fetchall()
        if not rows:
            return None
        wanted = version_key(version)
        depth = len(version.split("."))
        keyed = sorted((version_key(v), ts) for v, ts in rows)
        same = [(k, ts) for k, ts in keyed if k[:depth] == wanted[:depth]]
        if not same:
            return None
        start = same[0][1]
        later = [ts for k, ts in keyed if k[:depth] > wanted[:depth]]
        return start, (min(later) if later else None)
