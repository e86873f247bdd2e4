"""A trigram FTS5 index over the nodes that contain Chinese, Japanese or Korean text, and only those.

The word index (unicode61) sees a run of CJK characters as one token, so a query for 缓存锁 never matches
修复缓存锁文件过期的问题. Trigrams match any 3-character substring. Indexing only CJK-bearing nodes keeps
the table small on the (usual) mostly-English store. The Store keeps it current on insert, update and
delete (no triggers: a virtual-table write inside a trigger costs a savepoint per row).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nexusmem.errors import StoreError

CJK_TABLE = "nodes_cjk"
# Hiragana, Katakana, CJK Extension A, CJK Unified Ideographs, Hangul syllables, CJK compatibility
# ideographs, half-width Katakana. SQLite's GLOB compares code points, so ranges of UTF-8 work.
CJK_CLASS = "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]"
CJK_GLOB = f"*{CJK_CLASS}*"


class CjkIndexMixin:
    """Store methods for the CJK trigram index. Mixed into Store (which provides `conn`)."""

    conn: Any

    def _cjk_index_ids(self, ids: Sequence[str]) -> None:
        """Index the nodes with these ids that contain CJK text (call after they are inserted)."""
        if not ids:
            return
        marks = ",".join("?" * len(ids))
        self.conn.execute(
            f"INSERT INTO {CJK_TABLE}(rowid, title, body) SELECT seq, title, body FROM nodes"
            f" WHERE id IN ({marks}) AND (title GLOB ? OR body GLOB ?)",
            [*ids, CJK_GLOB, CJK_GLOB],
        )

    def _cjk_reindex_ids(self, ids: Sequence[str]) -> None:
        """Re-index nodes whose title or body changed (they may have gained or lost CJK text)."""
        if not ids:
            return
        marks = ",".join("?" * len(ids))
        self.conn.execute(
            f"DELETE FROM {CJK_TABLE} WHERE rowid IN (SELECT seq FROM nodes WHERE id IN ({marks}))", list(ids)
        )
        self._cjk_index_ids(ids)

    def _cjk_unindex(self, seqs: Sequence[int]) -> None:
        if not seqs:
            return
        marks = ",".join("?" * len(seqs))
        # Only the few rows that hold CJK text are in this index. A write to it, even one that deletes
        # nothing, makes SQLite open a savepoint on every full-text table of the transaction, and FTS5 then
        # flushes the word index's pending deletes there and then: deleting all of a 26,000-node store
        # (sync --rebuild) spent 61 s in these statements. Asked first, it is written only when it must be.
        held = [
            r[0]
            for r in self.conn.execute(f"SELECT rowid FROM {CJK_TABLE} WHERE rowid IN ({marks})", list(seqs))
        ]
        if held:
            marks = ",".join("?" * len(held))
            self.conn.execute(f"DELETE FROM {CJK_TABLE} WHERE rowid IN ({marks})", held)

    def _cjk_unindex_all(self) -> None:
        self.conn.execute(f"DELETE FROM {CJK_TABLE}")

    def cjk_count(self) -> int:
        return int(self.conn.execute(f"SELECT COUNT(*) FROM {CJK_TABLE}").fetchone()[0])

    def search_cjk(
        self, trigrams: Sequence[str], shorter: Sequence[str], limit: int, as_of: int | None = None
    ) -> list[str]:
        """Node ids from the CJK index, best first (see search_cjk_scored)."""
        return [node_id for node_id, _ in self.search_cjk_scored(trigrams, shorter, limit, as_of)]

    def search_cjk_scored(
        self, trigrams: Sequence[str], shorter: Sequence[str], limit: int, as_of: int | None = None
    ) -> list[tuple[str, float]]:
        """(id, score) from the CJK index, best first: -BM25 over an OR of TRIGRAMS when there are any,
        else a substring scan for the SHORTER (1-2 character) runs, which trigrams cannot match (score 1
        for a title hit, 0.5 for a body-only hit)."""
        params: list[Any] = []
        if trigrams:
            match = " OR ".join('"' + t.replace('"', '""') + '"' for t in trigrams)
            score = f"-bm25({CJK_TABLE}, 10.0, 1.0)"
            sql = f"SELECT n.id, {score} FROM {CJK_TABLE} c JOIN nodes n ON n.seq = c.rowid WHERE {CJK_TABLE} MATCH ?"
            params.append(match)
            order = f" ORDER BY bm25({CJK_TABLE}, 10.0, 1.0), n.seq"
            params_order: list[Any] = []
        elif shorter:
            in_title = " OR ".join(["c.title LIKE ?"] * len(shorter))
            conds = " OR ".join(["c.title LIKE ? OR c.body LIKE ?"] * len(shorter))
            sql = (
                f"SELECT n.id, CASE WHEN ({in_title}) THEN 1.0 ELSE 0.5 END"
                f" FROM {CJK_TABLE} c JOIN nodes n ON n.seq = c.rowid WHERE ({conds})"
            )
            params.extend(f"%{s}%" for s in shorter)
            params.extend(p for s in shorter for p in (f"%{s}%", f"%{s}%"))
            # No relevance score to sort by: title hits first, then the newest.
            order = f" ORDER BY ({in_title}) DESC, n.ts DESC, n.seq"
            params_order = [f"%{s}%" for s in shorter]
        else:
            return []
        if as_of is not None:
            sql += " AND n.created_at <= ?"
            params.append(as_of)
        sql += order + " LIMIT ?"
        params += [*params_order, limit]
        try:
            return [(str(r[0]), float(r[1])) for r in self.conn.execute(sql, params)]
        except Exception as exc:
            raise StoreError(f"CJK search failed: {exc}") from exc
