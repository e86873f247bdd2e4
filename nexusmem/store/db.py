"""Store: every read and write of memory.db. Callers see Python values, never SQL."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexusmem.errors import StoreError
from nexusmem.nodes import Node
from nexusmem.private import fix_tree, make_dir, open_fd
from nexusmem.store import connection, health, migrations
from nexusmem.store.cjk import CjkIndexMixin
from nexusmem.store.hygiene import HygieneMixin
from nexusmem.store.vectors import VectorIndexMixin

BATCH = 500
# Meta key of the store write sequence: bumped once by every batch of node inserts or changes, stamped on
# the rows it wrote (nodes.written). Unlike a clock it never repeats and never goes back.
WRITE_SEQ_KEY = "store.write_seq"

# BM25 column weights of the word indexes: title, body, words (a commit's change words), notes (changelog
# entries lent to a commit). A title hit counts 10× a body hit, as before. Change words hold each word
# once (no term frequency to lean on) and are what a code question names: on the labelled dev questions
# of four real repositories (benchmarks/eval_real.py, BM25 list) MRR was .222 with words and notes at 0,
# .253 at (0.3, 0.6), .321 at (1, 1), .364 at (2, 2), .365 at (3, 3): a plateau from 2 on, so 2 (doc
# questions lose a little as commits crowd docs: .535 at 1 → .489 at 2). Notes moved nothing between 2
# and 4. The ranking may pass other weights to search_fts(); these are the defaults.
FTS_WEIGHTS: tuple[float, float, float, float] = (10.0, 1.0, 2.0, 2.0)
# A match in the stemmed index is worth this share of an exact one. Every exact match is a stemmed match
# too, so an exact hit scores (1 + STEM_SHARE) and always beats a stem-only one ("crash" for "crashed")
# of the same strength. Kept small: on the dev questions (benchmarks/eval_real.py, BM25 list, every query
# word stemmed) stemming helped doc questions and hurt code ones, whose identifiers are exact; MRR overall
# was .364 at 0.5, .370 at 0.25, .384 at 0.1, .380 with no stemmed index. The retrieval now asks the
# stemmed index only for rare words (retrieve.search.STEM_RARE): a recall net.
STEM_SHARE = 0.1


def _bm25(table: str, weights: Sequence[float]) -> str:
    return f"bm25({table}, {', '.join(f'{float(w):.4f}' for w in weights)})"


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class StoredNode:
    """A node as read back from the store, with its bookkeeping."""

    id: str
    kind: str
    source: str
    natural_key: str
    ref: str
    title: str
    body: str
    ts: int
    created_at: int
    signal: float
    provenance: str
    trust: str
    superseded_by: str | None
    group: str | None
    raw_meta: str
    project_id: str
    words: str = ""  # a commit's change words: indexed, never shown

    @functools.cached_property
    def meta(self) -> dict[str, Any]:
        """The metadata, parsed on first use (ranking reads hundreds of rows and needs it for few)."""
        parsed: dict[str, Any] = json.loads(self.raw_meta) if self.raw_meta else {}
        return parsed

    @property
    def meta_json(self) -> str:
        return json.dumps(self.meta, sort_keys=True)


_NODE_COLUMNS = (
    "id, kind, source, natural_key, ref, title, body, ts, created_at, signal, provenance, trust, "
    "superseded_by, grp, meta, project_id, words"
)


_LIGHT_COLUMNS = _NODE_COLUMNS.replace(" body,", " '',").replace(", words", ", ''")


def _row_to_node(row: Sequence[Any]) -> StoredNode:
    return StoredNode(
        id=row[0],
        kind=row[1],
        source=row[2],
        natural_key=row[3],
        ref=row[4],
        title=row[5],
        body=row[6],
        ts=row[7],
        created_at=row[8],
        signal=row[9],
        provenance=row[10],
        trust=row[11],
        superseded_by=row[12],
        group=row[13],
        raw_meta=row[14] or "",
        project_id=row[15],
        words=row[16] or "",
    )


@dataclass
class UpsertCounts:
    added: int = 0
    updated: int = 0
    unchanged: int = 0


class Store(VectorIndexMixin, CjkIndexMixin, HygieneMixin):
    """A migrated connection to one project's memory.db."""

    def __init__(self, conn: Any, path: Path) -> None:
        self.conn = conn
        self.path = path
        self._savepoints = 0
        self._wrote = False  # a write transaction was begun: a failure then gets the full store check

    # --- lifecycle -------------------------------------------------------------------------------------
    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        """Closes; a driver error escaping the block becomes a StoreError that names the file and the fix
        (after a failed write, or any sign of damage, SQLite's quick_check is asked first)."""
        if exc is None:
            self.close()
            return
        with suppress(health.DriverError):  # the block's own error is the one to report
            self.close()
        if isinstance(exc, health.DriverError):
            raise health.explain(self.path, exc, writing=self._wrote) from exc

    def quick_check(self, seconds: float = health.CHECK_SECONDS) -> list[str] | None:
        """[] when SQLite finds the file whole, else its first problems; None when not finished in time."""
        return health.quick_check(self.conn, seconds)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any error (a killed sync leaves the store whole).

        Inside an open transaction it is a SAVEPOINT instead, so a caller can make several steps one unit.
        """
        if self.conn.in_transaction:
            self._savepoints += 1
            name = f"nm_{self._savepoints}"
            self.conn.execute(f"SAVEPOINT {name}")
            try:
                yield
            except BaseException:
                self.conn.execute(f"ROLLBACK TO {name}")
                self.conn.execute(f"RELEASE {name}")
                raise
            self.conn.execute(f"RELEASE {name}")
            return
        self.conn.execute("BEGIN IMMEDIATE")
        self._wrote = True
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def schema_version(self) -> int:
        return migrations.current_version(self.conn)

    def content_hashes(self, ids: Sequence[str]) -> dict[str, str]:
        """id → content hash of the nodes among IDS that are stored (what upsert compares against)."""
        out: dict[str, str] = {}
        for start in range(0, len(ids), BATCH):
            chunk = list(ids[start : start + BATCH])
            marks = ",".join("?" * len(chunk))
            out.update(self.conn.execute(f"SELECT id, content_hash FROM nodes WHERE id IN ({marks})", chunk))
        return out

    # --- writing nodes -------------------------------------------------------------------------------
    def upsert(self, nodes: Iterable[Node], on_batch: Callable[[int], None] | None = None) -> UpsertCounts:
        """Insert new nodes, update changed ones (by content hash), leave trust/created_at alone.

        Call inside transaction(). Nodes are consumed lazily in batches, so a generator of 100k nodes
        never sits in memory at once.
        """
        counts = UpsertCounts()
        batch: list[Node] = []
        for node in nodes:
            batch.append(node)
            if len(batch) >= BATCH:
                self._upsert_batch(batch, counts)
                if on_batch:
                    on_batch(len(batch))
                batch = []
        if batch:
            self._upsert_batch(batch, counts)
            if on_batch:
                on_batch(len(batch))
        return counts

    def _upsert_batch(self, batch: list[Node], counts: UpsertCounts) -> None:
        unique: dict[str, Node] = {}
        for node in batch:
            unique[node.id] = node  # the last version of a node within one scan wins
        ids = list(unique)
        marks = ",".join("?" * len(ids))
        # The change words are left out of the content hash (adding them to old commits must not make their
        # vectors look stale); a node whose words alone moved is updated all the same.
        existing = {
            row[0]: (row[1], row[2])
            for row in self.conn.execute(
                f"SELECT id, content_hash, words FROM nodes WHERE id IN ({marks})", ids
            ).fetchall()
        }
        stamp = now_ms()
        inserts: list[tuple[Any, ...]] = []
        updates: list[tuple[Any, ...]] = []
        changed: list[Node] = []
        fresh: list[Node] = []
        for node in unique.values():
            meta = node.meta_json()
            digest = node.content_hash(meta)
            if node.id not in existing:
                inserts.append(
                    (
                        node.id,
                        node.project,
                        node.kind,
                        node.source,
                        node.natural_key,
                        node.ref,
                        node.title,
                        node.body,
                        node.ts,
                        stamp,
                        stamp,
                        node.signal,
                        node.provenance,
                        node.group,
                        digest,
                        meta,
                        node.words,
                    )
                )
                fresh.append(node)
            elif existing[node.id] != (digest, node.words):
                updates.append(
                    (
                        node.ref,
                        node.title,
                        node.body,
                        node.ts,
                        stamp,
                        node.signal,
                        node.group,
                        digest,
                        meta,
                        node.words,
                        node.source,
                        node.natural_key,
                        node.id,
                    )
                )
                changed.append(node)
            else:
                counts.unchanged += 1
        written = self._next_write_seq() if inserts or updates else 0
        if inserts:
            self.conn.executemany(
                "INSERT INTO nodes(id, project_id, kind, source, natural_key, ref, title, body, ts, created_at,"
                " updated_at, signal, provenance, grp, content_hash, meta, words, written)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(*row, written) for row in inserts],
            )
            counts.added += len(inserts)
            marks = ",".join("?" * len(fresh))
            fresh_ids = [n.id for n in fresh]
            self.conn.execute(
                "INSERT INTO nodes_fts(rowid, title, body, words, notes)"
                f" SELECT seq, title, body, words, notes FROM nodes WHERE id IN ({marks})",
                fresh_ids,
            )
            self.conn.execute(
                "INSERT INTO nodes_stem(rowid, title, body, notes) SELECT seq, title, body, notes FROM nodes"
                f" WHERE id IN ({marks}) AND kind != 'code_diff'",  # prose only: see migration 7
                fresh_ids,
            )
            self._cjk_index_ids([n.id for n in fresh])
        if updates:
            self.conn.executemany(
                "UPDATE nodes SET ref=?, title=?, body=?, ts=?, updated_at=?, signal=?, grp=?, content_hash=?,"
                " meta=?, words=?, source=?, natural_key=?, written=? WHERE id=?",
                [(*row[:-1], written, row[-1]) for row in updates],
            )
            counts.updated += len(updates)
            self._cjk_reindex_ids([n.id for n in changed])
        if changed:
            self.conn.executemany(
                "DELETE FROM node_files WHERE node_seq = (SELECT seq FROM nodes WHERE id = ?)",
                [(n.id,) for n in changed],
            )
        file_rows = [(path, n.id) for n in (*fresh, *changed) for path in dict.fromkeys(n.files)]
        if file_rows:
            self.conn.executemany(
                "INSERT OR IGNORE INTO node_files(path, node_seq) SELECT ?, seq FROM nodes WHERE id = ?",
                file_rows,
            )

    def prune_source(self, source: str, keep: Callable[[str], bool]) -> int:
        """Delete every node of SOURCE whose natural key KEEP rejects; return how many went."""
        doomed = [
            seq
            for seq, key in self.conn.execute(
                "SELECT seq, natural_key FROM nodes WHERE source = ?", (source,)
            )
            if not keep(key)
        ]
        return self._delete_seqs(doomed)

    def _source_seqs(self, source: str, shell: str | None) -> list[int]:
        if shell is None:
            rows = self.conn.execute("SELECT seq FROM nodes WHERE source = ?", (source,)).fetchall()
        else:
            rows = self.conn.execute(
                "SELECT seq FROM nodes WHERE source = ? AND json_extract(meta, '$.shell') = ?",
                (source, shell),
            ).fetchall()
        return [r[0] for r in rows]

    def count_source(self, source: str, *, shell: str | None = None) -> int:
        return len(self._source_seqs(source, shell))

    def delete_source(self, source: str, *, shell: str | None = None) -> int:
        """Delete a source's nodes (only one shell's commands when SHELL is given)."""
        return self._delete_seqs(self._source_seqs(source, shell))

    def clear_cursor(self, source: str) -> None:
        """Forget where a source got to, so its next sync reads everything again."""
        self.conn.execute("UPDATE sources SET cursor = NULL WHERE name = ?", (source,))

    def delete_all_nodes(self) -> int:
        rows = self.conn.execute("SELECT seq FROM nodes").fetchall()
        removed = self._delete_seqs([r[0] for r in rows])
        self.conn.execute("DELETE FROM links")
        return removed

    def bookkeeping(self) -> list[tuple[str, int, str, str | None]]:
        """(id, created_at, trust, superseded_by) of every node: what a rebuild must not forget."""
        return [tuple(r) for r in self.conn.execute("SELECT id, created_at, trust, superseded_by FROM nodes")]

    def restore_bookkeeping(self, rows: list[tuple[str, int, str, str | None]]) -> None:
        """Put back first-recorded times and human verdicts on the nodes that came back with the same id."""
        self.conn.executemany(
            "UPDATE nodes SET created_at = ?, trust = ?, superseded_by = ? WHERE id = ?",
            [(created, trust, sup, node_id) for node_id, created, trust, sup in rows],
        )

    def all_links(self) -> list[tuple[str, str, str, int]]:
        """(from id, to id, relation, created_at) of every link: failure→fix links are not re-derived by a
        rebuild's sources (the linker may have seen commands that have since left the log)."""
        return [tuple(r) for r in self.conn.execute("SELECT from_id, to_id, relation, created_at FROM links")]

    def restore_links(self, rows: list[tuple[str, str, str, int]]) -> int:
        """Put back the links in ROWS whose two nodes came back (same content, same id); returns how many."""
        before = self.conn.total_changes
        self.conn.executemany(
            "INSERT OR IGNORE INTO links(from_id, to_id, relation, created_at) SELECT ?, ?, ?, ?"
            " WHERE EXISTS (SELECT 1 FROM nodes WHERE id = ?) AND EXISTS (SELECT 1 FROM nodes WHERE id = ?)",
            [(a, b, rel, created, a, b) for a, b, rel, created in rows],
        )
        return int(self.conn.total_changes - before)

    def _delete_seqs(self, seqs: list[int]) -> int:
        for start in range(0, len(seqs), BATCH):
            chunk = seqs[start : start + BATCH]
            marks = ",".join("?" * len(chunk))
            ids = [r[0] for r in self.conn.execute(f"SELECT id FROM nodes WHERE seq IN ({marks})", chunk)]
            idmarks = ",".join("?" * len(ids))
            self.conn.execute(
                f"DELETE FROM links WHERE from_id IN ({idmarks}) OR to_id IN ({idmarks})", ids + ids
            )
            self._cjk_unindex(chunk)
            self._forget_vectors(chunk)
            self.conn.execute(f"DELETE FROM nodes WHERE seq IN ({marks})", chunk)
        return len(seqs)

    def first_recorded(self) -> int | None:
        """When the oldest node still held was first recorded (epoch ms), None for an empty store."""
        row = self.conn.execute("SELECT MIN(created_at) FROM nodes").fetchone()
        return int(row[0]) if row and row[0] is not None else None

    # --- source cursors --------------------------------------------------------------------------------
    def cursor(self, source: str) -> str | None:
        row = self.conn.execute("SELECT cursor FROM sources WHERE name = ?", (source,)).fetchone()
        return row[0] if row else None

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

    def reset_cursors(self) -> None:
        self.conn.execute("UPDATE sources SET cursor = NULL")

    def sources(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT name, cursor, last_sync, added, updated, removed, skipped FROM sources ORDER BY name"
        ).fetchall()
        keys = ("name", "cursor", "last_sync", "added", "updated", "removed", "skipped")
        return [dict(zip(keys, row)) for row in rows]

    # --- meta ------------------------------------------------------------------------------------------
    def _next_write_seq(self) -> int:
        """Bump the store write sequence and return the new value (inside the caller's transaction)."""
        row = self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, '1') ON CONFLICT(key) DO UPDATE"
            " SET value = CAST(value AS INTEGER) + 1 RETURNING value",
            (WRITE_SEQ_KEY,),
        ).fetchone()
        return int(row[0])

    def write_seq(self) -> int:
        """The store write sequence: how many node-writing batches this store has seen (0: none yet)."""
        value = self.get_meta(WRITE_SEQ_KEY)
        return int(value) if value is not None and value.isdigit() else 0

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def delete_meta(self, key: str) -> None:
        self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # --- reading ---------------------------------------------------------------------------------------
    def get(self, node_id: str) -> StoredNode | None:
        row = self.conn.execute(f"SELECT {_NODE_COLUMNS} FROM nodes WHERE id = ?", (node_id,)).fetchone()
        return _row_to_node(row) if row else None

    def get_many(self, ids: Sequence[str], *, light: bool = False) -> dict[str, StoredNode]:
        """Nodes by id. LIGHT leaves out body (empty string) for ranking many candidates cheaply."""
        columns = _LIGHT_COLUMNS if light else _NODE_COLUMNS
        out: dict[str, StoredNode] = {}
        for start in range(0, len(ids), BATCH):
            chunk = list(ids[start : start + BATCH])
            marks = ",".join("?" * len(chunk))
            for row in self.conn.execute(f"SELECT {columns} FROM nodes WHERE id IN ({marks})", chunk):
                node = _row_to_node(row)
                out[node.id] = node
        return out

    def find_by_prefix(self, prefix: str) -> list[str]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT id FROM nodes WHERE id >= ? AND id < ? ORDER BY id LIMIT 5", (prefix, prefix + "g")
            )
        ]

    def search_fts(
        self,
        match: str,
        limit: int,
        as_of: int | None = None,
        *,
        weights: Sequence[float] = FTS_WEIGHTS,
        stemmed: bool = True,
        stem_match: str | None = None,
    ) -> list[str]:
        """Node ids matching the FTS5 expression MATCH, best BM25 first (see search_fts_scored)."""
        hits = self.search_fts_scored(
            match, limit, as_of, weights=weights, stemmed=stemmed, stem_match=stem_match
        )
        return [node_id for node_id, _ in hits]

    def search_fts_scored(
        self,
        match: str,
        limit: int,
        as_of: int | None = None,
        *,
        since: int | None = None,
        until: int | None = None,
        weights: Sequence[float] = FTS_WEIGHTS,
        stemmed: bool = True,
        stem_match: str | None = None,
    ) -> list[tuple[str, float]]:
        """(id, score) of nodes matching the FTS5 expression MATCH, best first; score = -(exact BM25 +
        STEM_SHARE × stemmed BM25) with column WEIGHTS (title, body, words, notes), so higher is better.
        AS_OF keeps what was recorded by then; SINCE/UNTIL keep nodes whose event time lies in the window
        (both ends inclusive, epoch ms).

        STEMMED also asks the porter index (with STEM_MATCH, MATCH when None; an empty one skips it) and
        adds its share: "crashed" then finds "crash", and an exact match (which matches both indexes)
        outranks a stem-only one of the same strength.
        """
        if stem_match is None:
            stem_match = match
        if not stemmed or not stem_match:
            return self._search_exact(match, limit, as_of, since, until, weights)
        filters: list[tuple[str, int]] = [
            (clause, value)
            for clause, value in (("m.created_at <= ?", as_of), ("m.ts >= ?", since), ("m.ts <= ?", until))
            if value is not None
        ]
        parts: list[str] = []
        params: list[Any] = []
        stem_weights = (weights[0], weights[1], weights[3])  # the stemmed index has no change words
        tables = [("nodes_fts", 1.0, weights, match), ("nodes_stem", STEM_SHARE, stem_weights, stem_match)]
        for table, share, column_weights, expr in tables:
            score = f"{_bm25(table, column_weights)} * {share}"
            if not filters:
                # Rank inside the FTS table first, join the few winners after: joining every match before
                # sorting cost ~40% more at 25k matches.
                parts.append(
                    f"SELECT * FROM (SELECT rowid AS r, {score} AS s FROM {table}"
                    f" WHERE {table} MATCH ? ORDER BY s, rowid LIMIT ?)"
                )
                params += [expr, limit * 2]
            else:
                where = " AND ".join(clause for clause, _ in filters)
                parts.append(
                    f"SELECT * FROM (SELECT {table}.rowid AS r, {score} AS s FROM {table}"
                    f" JOIN nodes m ON m.seq = {table}.rowid WHERE {table} MATCH ? AND {where}"
                    " ORDER BY s, m.seq LIMIT ?)"
                )
                params += [expr, *(value for _, value in filters), limit * 2]
        sql = (
            f"SELECT n.id, hits.score FROM (SELECT r, SUM(s) AS score FROM ({' UNION ALL '.join(parts)})"
            " GROUP BY r ORDER BY score, r LIMIT ?) AS hits JOIN nodes n ON n.seq = hits.r"
            " ORDER BY hits.score, hits.r"
        )
        params.append(limit)
        try:
            return [(r[0], -float(r[1])) for r in self.conn.execute(sql, params)]
        except health.DriverError as exc:
            if health.looks_damaged(exc):  # not the expression: the file (say so, and what to do)
                raise health.explain(self.path, exc, writing=False) from exc
            # a malformed MATCH expression is our bug, but must not crash a query
            raise StoreError(f"full-text search failed for {match!r}: {exc}") from exc

    def _search_exact(
        self,
        match: str,
        limit: int,
        as_of: int | None,
        since: int | None,
        until: int | None,
        weights: Sequence[float],
    ) -> list[tuple[str, float]]:
        """search_fts_scored over the exact index alone (no union to merge: the cheaper plan)."""
        score = _bm25("nodes_fts", weights)
        if as_of is None and since is None and until is None:
            # Rank inside the FTS table first, join the few winners after: joining every match before
            # sorting cost ~40% more at 25k matches.
            sql = (
                f"SELECT n.id, hits.score FROM (SELECT rowid AS r, {score} AS score FROM nodes_fts"
                " WHERE nodes_fts MATCH ? ORDER BY score, rowid LIMIT ?) AS hits"
                " JOIN nodes n ON n.seq = hits.r ORDER BY hits.score, hits.r"
            )
            params: list[Any] = [match, limit]
        else:
            where = ["nodes_fts MATCH ?"]
            params = [match]
            for clause, value in (("n.created_at <= ?", as_of), ("n.ts >= ?", since), ("n.ts <= ?", until)):
                if value is not None:
                    where.append(clause)
                    params.append(value)
            sql = (
                f"SELECT n.id, {score} AS score FROM nodes_fts JOIN nodes n ON n.seq = nodes_fts.rowid"
                f" WHERE {' AND '.join(where)} ORDER BY score, n.seq LIMIT ?"
            )
            params.append(limit)
        try:
            return [(str(r[0]), -float(r[1])) for r in self.conn.execute(sql, params)]
        except health.DriverError as exc:
            if health.looks_damaged(exc):  # not the expression: the file (say so, and what to do)
                raise health.explain(self.path, exc, writing=False) from exc
            # a malformed MATCH expression is our bug, but must not crash a query
            raise StoreError(f"full-text search failed for {match!r}: {exc}") from exc

    def matching(self, match: str, ids: Sequence[str]) -> set[str]:
        """Those of IDS (a few) whose indexed text matches the FTS5 expression MATCH: which query words the
        best candidates actually contain, for judging how strong a match is."""
        if not ids:
            return set()
        marks = ",".join("?" * len(ids))
        # CROSS JOIN keeps the few nodes as the outer loop: FTS5 then seeks each one's rowid in the term's
        # postings instead of listing every node that has the term (~30k for a common word at 100k nodes).
        # Either index: an exact match or another form of the word ("crashed" for "crash").
        found: set[str] = set()
        for table in ("nodes_fts", "nodes_stem"):
            sql = (
                f"SELECT n.id FROM nodes n CROSS JOIN {table} ON {table}.rowid = n.seq"
                f" WHERE n.id IN ({marks}) AND {table} MATCH ?"
            )
            try:
                found.update(str(r[0]) for r in self.conn.execute(sql, [*ids, match]))
            except Exception as exc:
                raise StoreError(f"full-text search failed for {match!r}: {exc}") from exc
        return found

    def count_stemmed(self, match: str, cap: int = 1000) -> int:
        """How many nodes the stemmed index matches for MATCH, counted up to CAP (enough for an IDF)."""
        try:
            row = self.conn.execute(
                "SELECT COUNT(*) FROM (SELECT 1 FROM nodes_stem WHERE nodes_stem MATCH ? LIMIT ?)",
                (match, cap),
            ).fetchone()
        except Exception as exc:
            raise StoreError(f"full-text search failed for {match!r}: {exc}") from exc
        return int(row[0])

    def size_hint(self) -> int:
        """Roughly how many nodes the store has ever held (max rowid): free, unlike COUNT(*)."""
        row = self.conn.execute("SELECT MAX(seq) FROM nodes").fetchone()
        return int(row[0] or 0)

    def term_doc_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many nodes contain each term (FTS vocabulary); a term absent from the index maps to 0."""
        counts = dict.fromkeys(terms, 0)
        for term in terms:
            row = self.conn.execute("SELECT doc FROM nodes_vocab WHERE term = ?", (term,)).fetchone()
            if row:
                counts[term] = int(row[0])
        return counts

    def count_matches(
        self,
        match: str,
        as_of: int | None = None,
        *,
        stemmed: bool = False,
        since: int | None = None,
        until: int | None = None,
    ) -> int:
        """How many nodes match MATCH (in the exact index; in the stemmed one, which holds no change words
        but more forms of every prose word, when STEMMED), with the filters of search_fts_scored."""
        table = "nodes_stem" if stemmed else "nodes_fts"
        if as_of is None and since is None and until is None:
            row = self.conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE {table} MATCH ?", (match,)
            ).fetchone()
        else:
            where = [f"{table} MATCH ?"]
            params: list[Any] = [match]
            for clause, value in (("n.created_at <= ?", as_of), ("n.ts >= ?", since), ("n.ts <= ?", until)):
                if value is not None:
                    where.append(clause)
                    params.append(value)
            row = self.conn.execute(
                f"SELECT COUNT(*) FROM {table} JOIN nodes n ON n.seq = {table}.rowid"
                f" WHERE {' AND '.join(where)}",
                params,
            ).fetchone()
        return int(row[0])

    def links_from(self, ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """(failure id, fix id, relation) for every link leaving one of IDS."""
        out: list[tuple[str, str, str]] = []
        for start in range(0, len(ids), BATCH):
            chunk = list(ids[start : start + BATCH])
            marks = ",".join("?" * len(chunk))
            out.extend(
                self.conn.execute(
                    f"SELECT from_id, to_id, relation FROM links WHERE from_id IN ({marks})"
                    " ORDER BY from_id, relation, to_id",
                    chunk,
                ).fetchall()
            )
        return out

    def clear_words_with(self, words: Sequence[str]) -> int:
        """Empty the change words of every node whose words include all of WORDS; return how many."""
        if not words:
            return 0
        where = " AND ".join(["(' ' || words || ' ') LIKE ? ESCAPE '\\'"] * len(words))
        params = ["% " + w.replace("%", "").replace("_", "\\_") + " %" for w in words]
        before = self.conn.total_changes
        self.conn.execute(f"UPDATE nodes SET words = '' WHERE words != '' AND {where}", params)
        return int(self.conn.total_changes - before)

    def replace_links(self, relation: str, links: Iterable[tuple[str, str, str]]) -> int:
        """Make LINKS the only links of RELATION; return how many there are now."""
        self.conn.execute("DELETE FROM links WHERE relation = ?", (relation,))
        return self.add_links(links)

    def refresh_notes(self, relation: str, kind: str, max_chars: int = 4000) -> int:
        """Give every node of KIND the bodies of the nodes linking to it by RELATION as its `notes` (its
        low-weight FTS column: a changelog entry lends its words to the commits it describes), at most
        MAX_CHARS; clear the notes of nodes no longer linked. Return how many nodes changed."""
        wanted: dict[int, list[str]] = {}
        for seq, body in self.conn.execute(
            "SELECT t.seq, f.body FROM links l JOIN nodes t ON t.id = l.to_id JOIN nodes f ON f.id = l.from_id"
            " WHERE l.relation = ? AND t.kind = ? ORDER BY t.seq, f.seq",
            (relation, kind),
        ):
            wanted.setdefault(seq, []).append(body)
        current = dict(
            self.conn.execute(
                "SELECT seq, notes FROM nodes WHERE kind = ? AND notes != ''", (kind,)
            ).fetchall()
        )
        changes: list[tuple[str, int]] = []
        for seq, bodies in wanted.items():
            notes = "\n".join(bodies)[:max_chars]
            if current.get(seq, "") != notes:
                changes.append((notes, seq))
        changes.extend(("", seq) for seq in current if seq not in wanted)
        self.conn.executemany("UPDATE nodes SET notes = ? WHERE seq = ?", changes)
        return len(changes)

    def add_links(self, links: Iterable[tuple[str, str, str]]) -> int:
        stamp = now_ms()
        before = self.conn.total_changes
        self.conn.executemany(
            "INSERT OR IGNORE INTO links(from_id, to_id, relation, created_at) VALUES (?, ?, ?, ?)",
            [(a, b, rel, stamp) for a, b, rel in links],
        )
        return int(self.conn.total_changes - before)

    # --- failure → fix linking (nexusmem.link) ---------------------------------------------------------
    def shell_commands_since(self, since_ms: int) -> Iterator[tuple[str, int, str, str | None, int | None]]:
        """(id, ts, command, cwd, exit) of every shell_command with ts >= SINCE_MS, oldest first.

        One pass over the (kind, ts) index; ties in ts keep recording order (rowid).
        """
        yield from self.conn.execute(
            "SELECT id, ts, ref, json_extract(meta, '$.cwd'), json_extract(meta, '$.exit') FROM nodes"
            " WHERE kind = 'shell_command' AND ts >= ? ORDER BY ts, seq",
            (since_ms,),
        )

    def failure_files_since(self, since_ms: int) -> list[tuple[str, str]]:
        """(shell_command id, path) for every file named by a command with ts >= SINCE_MS that failed."""
        return [
            tuple(r)
            for r in self.conn.execute(
                "SELECT n.id, f.path FROM nodes n JOIN node_files f ON f.node_seq = n.seq"
                " WHERE n.kind = 'shell_command' AND n.ts >= ? AND json_extract(n.meta, '$.exit') != 0"
                " ORDER BY n.seq, f.path",
                (since_ms,),
            )
        ]

    def commit_files_since(self, since_ms: int) -> list[tuple[str, int, str]]:
        """(path, ts, commit id) for every file touched by a git_commit with ts >= SINCE_MS, by (ts, id)."""
        return [
            tuple(r)
            for r in self.conn.execute(
                "SELECT f.path, n.ts, n.id FROM nodes n JOIN node_files f ON f.node_seq = n.seq"
                " WHERE n.kind = 'git_commit' AND n.ts >= ? ORDER BY n.ts, n.id",
                (since_ms,),
            )
        ]

    def has_kind_between(self, kinds: Sequence[str], ts_from: int, ts_to: int | None = None) -> bool:
        """Whether any node of KINDS has ts in [TS_FROM, TS_TO] (TS_TO None: no upper bound)."""
        marks = ",".join("?" * len(kinds))
        row = self.conn.execute(
            f"SELECT 1 FROM nodes WHERE kind IN ({marks}) AND ts >= ? AND ts <= ? LIMIT 1",
            (*kinds, ts_from, ts_to if ts_to is not None else 2**62),
        ).fetchone()
        return row is not None

    def search_fts_kinds(
        self, match: str, kinds: Sequence[str], ts_from: int, ts_to: int
    ) -> list[tuple[str, int]]:
        """(id, ts) of nodes of KINDS with ts in [TS_FROM, TS_TO] matching the FTS5 expression MATCH, best
        BM25 first (title weighted ×10, ties by id)."""
        marks = ",".join("?" * len(kinds))
        # CROSS JOIN keeps the full-text match as the outer loop. With a plain JOIN the planner walks the
        # (kind, ts) index and re-runs the MATCH for every row it finds: 8 s instead of 9 ms per query
        # against 5,000 conversation turns.
        sql = (
            "SELECT n.id, n.ts FROM nodes_fts CROSS JOIN nodes n ON n.seq = nodes_fts.rowid"
            f" WHERE nodes_fts MATCH ? AND n.kind IN ({marks}) AND n.ts >= ? AND n.ts <= ?"
            f" ORDER BY {_bm25('nodes_fts', FTS_WEIGHTS)}, n.id"
        )
        try:
            return [tuple(r) for r in self.conn.execute(sql, (match, *kinds, ts_from, ts_to))]
        except Exception as exc:  # a malformed MATCH expression is our bug, but must not abort a sync
            raise StoreError(f"full-text search failed for {match!r}: {exc}") from exc

    def failure_links_since(self, since_ms: int, relations: Sequence[str]) -> list[tuple[str, str, str]]:
        """(from id, to id, relation) of links with one of RELATIONS leaving a shell_command with ts >= SINCE_MS."""
        marks = ",".join("?" * len(relations))
        return [
            tuple(r)
            for r in self.conn.execute(
                "SELECT l.from_id, l.to_id, l.relation FROM links l JOIN nodes n ON n.id = l.from_id"
                f" WHERE n.kind = 'shell_command' AND n.ts >= ? AND l.relation IN ({marks})",
                (since_ms, *relations),
            )
        ]

    def delete_links(self, links: Iterable[tuple[str, str, str]]) -> int:
        """Delete the given (from id, to id, relation) links; return how many existed."""
        before = self.conn.total_changes
        self.conn.executemany(
            "DELETE FROM links WHERE from_id = ? AND to_id = ? AND relation = ?", [tuple(x) for x in links]
        )
        return int(self.conn.total_changes - before)

    def min_ts_written_after(self, write_seq: int, kinds: Sequence[str]) -> int | None:
        """The oldest event time among nodes of KINDS written (inserted or changed) after WRITE_SEQ."""
        marks = ",".join("?" * len(kinds))
        row = self.conn.execute(
            f"SELECT MIN(ts) FROM nodes WHERE written > ? AND kind IN ({marks})", (write_seq, *kinds)
        ).fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def reference_time(self, as_of: int | None = None) -> int | None:
        """The newest event time in the store (or recorded by AS_OF): 'now' for recency, so that a query's
        output depends only on the store and the query (same bytes every time)."""
        if as_of is None:
            row = self.conn.execute("SELECT MAX(ts) FROM nodes").fetchone()
        else:
            row = self.conn.execute("SELECT MAX(ts) FROM nodes WHERE created_at <= ?", (as_of,)).fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def counts_by_kind(self) -> dict[str, int]:
        return dict(
            self.conn.execute("SELECT kind, COUNT(*) FROM nodes GROUP BY kind ORDER BY kind").fetchall()
        )

    def date_range(self) -> tuple[int | None, int | None]:
        row = self.conn.execute("SELECT MIN(ts), MAX(ts) FROM nodes").fetchone()
        return (row[0], row[1])

    def node_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM nodes").fetchone()[0])

    def link_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM links").fetchone()[0])

    def iter_nodes(self, kind: str | None = None) -> Iterator[StoredNode]:
        if kind is None:
            cur = self.conn.execute(f"SELECT {_NODE_COLUMNS} FROM nodes ORDER BY seq")
        else:
            cur = self.conn.execute(f"SELECT {_NODE_COLUMNS} FROM nodes WHERE kind = ? ORDER BY seq", (kind,))
        for row in cur:
            yield _row_to_node(row)

    def files_of(self, node_id: str) -> list[str]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT f.path FROM node_files f JOIN nodes n ON n.seq = f.node_seq WHERE n.id = ? ORDER BY f.path",
                (node_id,),
            )
        ]

    # --- precheck (runs on every commit: indexed range reads only) -------------------------------------
    def shell_commands_between(
        self, start: int, end: int
    ) -> list[tuple[str, str, int, str | None, int | None]]:
        """(id, command, ts, cwd, exit) of every shell command with START <= ts <= END, oldest first."""
        return [
            tuple(r)
            for r in self.conn.execute(
                "SELECT id, ref, ts, json_extract(meta, '$.cwd'), json_extract(meta, '$.exit') FROM nodes"
                " WHERE kind = 'shell_command' AND ts BETWEEN ? AND ? ORDER BY ts, seq",
                (start, end),
            )
        ]

    def nodes_naming(
        self, paths: Sequence[str], kinds: Sequence[str], start: int, end: int
    ) -> list[tuple[str, str, str]]:
        """(path, node id, kind) for nodes of KINDS with START <= ts <= END whose files include one of PATHS."""
        if not paths or not kinds:
            return []
        out: list[tuple[str, str, str]] = []
        kind_marks = ",".join("?" * len(kinds))
        for first in range(0, len(paths), BATCH):
            chunk = list(paths[first : first + BATCH])
            marks = ",".join("?" * len(chunk))
            # CROSS JOIN keeps node_files (path-indexed) as the outer loop: the planner otherwise walks
            # every node of the kind in the time range.
            out.extend(
                self.conn.execute(
                    f"SELECT f.path, n.id, n.kind FROM node_files f CROSS JOIN nodes n ON n.seq = f.node_seq"
                    f" WHERE f.path IN ({marks}) AND n.kind IN ({kind_marks}) AND n.ts BETWEEN ? AND ?",
                    [*chunk, *kinds, start, end],
                ).fetchall()
            )
        return out

    def checkpoint(self) -> None:
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def open_store(path: Path, *, create: bool = False, readonly: bool = False) -> Store:
    """Open (and migrate) a project's memory.db. Without CREATE a missing file is an error, not a new DB."""
    if not create and not path.exists():
        from nexusmem.errors import NotInitialisedError

        raise NotInitialisedError(f"no memory database at {path}: run `nexusmem init` (or `nexusmem sync`)")
    # 0600 files in a 0700 folder whatever the umask: SQLite gives -wal and -shm the mode of the database
    # file, so creating that one 0600 covers them; an older install's 0644 files are fixed here.
    with contextlib.suppress(OSError):
        if create and not path.exists():
            make_dir(path.parent)
            os.close(open_fd(path, os.O_RDWR))
        fix_tree(path.parent)
    try:
        conn = connection.connect(path, readonly=readonly)
        if not readonly:
            migrations.migrate(conn)
        elif migrations.current_version(conn) < migrations.LATEST:
            conn.close()
            conn = connection.connect(path)
            migrations.migrate(conn)
        missing = health.missing_tables(conn)
        if missing:
            conn.close()
            raise StoreError(
                f"{path} is damaged: table(s) {', '.join(missing)} missing; {health.damaged_advice(path)}"
            )
    except StoreError:
        raise
    except health.DriverError as exc:
        raise health.explain(path, exc, writing=False) from exc
    except Exception as exc:
        raise StoreError(f"{path}: cannot open the memory database: {exc}") from exc
    return Store(conn, path)
