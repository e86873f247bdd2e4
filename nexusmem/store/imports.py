"""Import structure: each tracked source file's parsed import specifiers (keyed by its blob, so an
unchanged file is never parsed again) and the file → file import edges resolved from them.

Mixed into Store (which provides `conn`). Edges are between repository paths, not nodes: a file is not a
memory item, and precheck reads them by path.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from nexusmem.store import hookreads
from nexusmem.store.batch import rows_in


class ImportsMixin:
    """Store methods for the import structure. Mixed into Store."""

    conn: Any

    def _has_imports(self) -> bool:
        return hookreads.has_imports(self.conn)

    def import_blobs(self) -> dict[str, str]:
        """{path: blob sha} of every file the last structure pass parsed."""
        return dict(self.conn.execute("SELECT path, blob FROM import_files").fetchall())

    def import_specs(self, paths: Sequence[str] | None = None) -> dict[str, list[list[Any]]]:
        """{path: parsed specifiers} of PATHS (every stored file when None)."""
        if paths is None:
            rows = self.conn.execute("SELECT path, specs FROM import_files").fetchall()
        else:
            sql = "SELECT path, specs FROM import_files WHERE path IN ({marks})"
            rows = list(rows_in(self.conn, sql, paths))
        out: dict[str, list[list[Any]]] = {}
        for path, specs in rows:
            try:
                parsed = json.loads(specs)
            except ValueError:
                parsed = []
            out[path] = parsed if isinstance(parsed, list) else []
        return out

    def save_import_files(self, rows: Iterable[tuple[str, str, list[Any]]], removed: Iterable[str]) -> None:
        """Store (path, blob, specifiers) ROWS; forget the files in REMOVED."""
        self.conn.executemany(
            "INSERT INTO import_files(path, blob, specs) VALUES (?, ?, ?)"
            " ON CONFLICT(path) DO UPDATE SET blob = excluded.blob, specs = excluded.specs",
            [(p, b, json.dumps(s, separators=(",", ":"))) for p, b, s in rows],
        )
        self.conn.executemany("DELETE FROM import_files WHERE path = ?", [(p,) for p in removed])

    def import_edges(self, importers: Sequence[str] | None = None) -> set[tuple[str, str]]:
        """Every (importer, imported) pair stored, or those leaving IMPORTERS."""
        if importers is None:
            return {(a, b) for a, b in self.conn.execute("SELECT src, dst FROM import_edges")}
        sql = "SELECT src, dst FROM import_edges WHERE src IN ({marks})"
        return {(a, b) for a, b in rows_in(self.conn, sql, importers)}

    def import_edge_total(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM import_edges").fetchone()[0])

    def change_import_edges(self, add: Iterable[tuple[str, str]], remove: Iterable[tuple[str, str]]) -> None:
        self.conn.executemany("DELETE FROM import_edges WHERE src = ? AND dst = ?", list(remove))
        self.conn.executemany("INSERT OR IGNORE INTO import_edges(src, dst) VALUES (?, ?)", list(add))

    def importers_of(self, paths: Sequence[str], per_path: int = 50) -> list[tuple[str, str]]:
        """(imported, importer) for each of PATHS, at most PER_PATH importers each, by importer path."""
        return hookreads.importers_of(self.conn, paths, per_path)

    def import_edge_count(self) -> int:
        if not self._has_imports():
            return 0
        return int(self.conn.execute("SELECT COUNT(*) FROM import_edges").fetchone()[0])
