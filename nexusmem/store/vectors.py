"""The vector index: a sqlite-vec `vec0` table (cosine distance) keyed by nodes.seq, plus its bookkeeping.

vec0 is loaded by file path from the installed sqlite_vec package, found without importing it (its
__init__ imports numpy: ~120 ms). The table's dimension belongs to the provider that made the vectors, so
it is created lazily, when the first batch of vectors arrives. `node_vectors(seq, content_hash)` records
which content each vector was made from: the embedding pass redoes a node whose hash moved on.
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from nexusmem.errors import StoreError
from nexusmem.store.batch import execute_in

VEC_TABLE = "nodes_vec"
# Vectors a statement of distances_from binds (two numbers each, far below SQLite's 32,766).
DISTANCE_BATCH = 500
IDENTITY_KEY = "vector_identity"
# Bumped by every write to the vectors: a process that keeps them in memory knows when to reload.
GENERATION_KEY = "vector_generation"
# The newest nodes.updated_at a completed embedding pass covered: a sync with nothing newer skips the
# (100 ms at 100k nodes) search for nodes that need a vector.
EMBEDDED_THROUGH_KEY = "vectors_complete_through"
# The token weights the built-in embedder pooled the vectors with (embed.builtin.TokenWeights.to_text).
TOKEN_WEIGHTS_KEY = "vector_token_weights"
# "1" once every stored vector was checked finite and not all zero (new ones are checked as they come).
VETTED_KEY = "vectors_vetted"


def vec0_path() -> Path:
    """The vec0 loadable extension inside the installed sqlite_vec package (without the suffix)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise StoreError("vector search needs the sqlite-vec package (pip install sqlite-vec)")
    folder = Path(next(iter(spec.submodule_search_locations)))
    for suffix in (".so", ".dylib", ".dll"):
        if (folder / f"vec0{suffix}").exists():
            # SQLite appends the platform's suffix itself when the path has none.
            return folder / "vec0"
    raise StoreError(f"sqlite-vec is installed at {folder} but holds no vec0 extension")


def load_vec0(conn: Any) -> None:
    """Load sqlite-vec into CONN (a sqlean connection); extension loading is switched off again after."""
    path = vec0_path()
    try:
        conn.enable_load_extension(True)
        try:
            conn.load_extension(str(path))
        finally:
            conn.enable_load_extension(False)
    except Exception as exc:
        raise StoreError(f"cannot load sqlite-vec from {path}: {exc}") from exc


def vec0_version() -> str:
    """sqlite-vec's version, loaded into a throwaway in-memory connection (StoreError when it cannot load):
    `nexusmem doctor`'s probe, which needs no project."""
    from nexusmem.store import connection

    conn = connection.connect(":memory:")
    try:
        load_vec0(conn)
        return str(conn.execute("SELECT vec_version()").fetchone()[0])
    finally:
        conn.close()


def read_all_vectors(db: Path) -> list[tuple[int, bytes]]:
    """Every (seq, float32 blob) of the database at DB, through a connection of its own (safe to call from
    a background thread while other connections read and write)."""
    from nexusmem.store import connection

    conn = connection.connect(db)
    try:
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (VEC_TABLE,)
        ).fetchone()
        if not exists:
            return []
        load_vec0(conn)
        return [
            (int(r[0]), bytes(r[1]))
            for r in conn.execute(f"SELECT rowid, embedding FROM {VEC_TABLE} ORDER BY rowid")
        ]
    finally:
        conn.close()


def _meta(conn: Any, key: str) -> Any:
    """The meta value under KEY, or None (the mixin sees `conn`, not Store.get_meta)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def _put_meta(conn: Any, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


class VectorIndexMixin:
    """Store methods for vectors. Mixed into Store (which provides `conn`)."""

    conn: Any
    _vec_loaded: bool = False

    def _vec_ready(self) -> None:
        if not self._vec_loaded:
            load_vec0(self.conn)
            self._vec_loaded = True

    def vec_version(self) -> str:
        """sqlite-vec's version, e.g. "v0.1.9" (loads the extension)."""
        self._vec_ready()
        return str(self.conn.execute("SELECT vec_version()").fetchone()[0])

    def has_vector_table(self) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (VEC_TABLE,)
        ).fetchone()
        return row is not None

    def vector_identity_json(self) -> str | None:
        """The recorded identity (JSON: provider name, model, dim) of the stored vectors, if any."""
        value = _meta(self.conn, IDENTITY_KEY)
        return None if value is None else str(value)

    def set_vector_identity(self, identity_json: str) -> None:
        """Record IDENTITY_JSON for the stored vectors (the same model reached elsewhere). In transaction()."""
        _put_meta(self.conn, IDENTITY_KEY, identity_json)

    def vectors_vetted(self) -> bool:
        """Whether every stored vector was checked finite and not all zero (drop_unusable_vectors)."""
        return bool(_meta(self.conn, VETTED_KEY) == "1")

    def drop_unusable_vectors(self) -> int:
        """Delete the vectors with a NaN or infinite component or all zero (their nodes are embedded again
        by the next pass), mark the rest vetted, and say how many were deleted. In transaction()."""
        from array import array

        bad: list[int] = []
        if self.has_vector_table():
            self._vec_ready()
            for seq, blob in self.conn.execute(f"SELECT rowid, embedding FROM {VEC_TABLE}"):
                values = array("f")
                values.frombytes(bytes(blob))
                if not any(values) or not all(math.isfinite(x) for x in values):
                    bad.append(int(seq))
        self._forget_vectors(bad)
        if bad:
            self.conn.execute("DELETE FROM meta WHERE key = ?", (EMBEDDED_THROUGH_KEY,))
        _put_meta(self.conn, VETTED_KEY, "1")
        return len(bad)

    def vectors_generation(self) -> str:
        """Changes whenever any vector is added, replaced or deleted (a cache key for in-memory copies)."""
        value = _meta(self.conn, GENERATION_KEY)
        return "0" if value is None else str(value)

    def _bump_generation(self) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, '1')"
            " ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
            (GENERATION_KEY,),
        )

    def vector_hits_to_ids(
        self,
        hits: Sequence[tuple[int, float]],
        as_of: int | None = None,
        *,
        since: int | None = None,
        until: int | None = None,
    ) -> list[tuple[str, float]]:
        """Map (seq, distance) hits to (node id, distance), nearest first (ties by seq), dropping vectors
        whose node is gone, (AS_OF) was recorded later, or whose event time is outside SINCE..UNTIL."""
        if not hits:
            return []
        marks = ",".join("?" * len(hits))
        seqs = [int(h[0]) for h in hits]
        sql = f"SELECT seq, id FROM nodes WHERE seq IN ({marks})"
        params: list[Any] = list(seqs)
        for clause, value in (
            (" AND created_at <= ?", as_of),
            (" AND ts >= ?", since),
            (" AND ts <= ?", until),
        ):
            if value is not None:
                sql += clause
                params.append(value)
        ids = {int(r[0]): str(r[1]) for r in self.conn.execute(sql, params)}
        ranked = sorted((float(d), int(seq)) for seq, d in hits if int(seq) in ids)
        return [(ids[seq], distance) for distance, seq in ranked]

    def vectors_by_seq(self, seqs: Sequence[int]) -> dict[int, bytes]:
        """seq -> float32 blob of those of SEQS that have a current vector (made from the node's content)."""
        if not seqs or not self.has_vector_table():
            return {}
        self._vec_ready()
        marks = ",".join("?" * len(seqs))
        current = [
            int(r[0])
            for r in self.conn.execute(
                f"SELECT v.seq FROM node_vectors v JOIN nodes n ON n.seq = v.seq"
                f" WHERE v.seq IN ({marks}) AND v.content_hash = n.content_hash",
                list(seqs),
            )
        ]
        if not current:
            return {}
        marks = ",".join("?" * len(current))
        return {
            int(r[0]): bytes(r[1])
            for r in self.conn.execute(
                f"SELECT rowid, embedding FROM {VEC_TABLE} WHERE rowid IN ({marks})", current
            )
        }

    def vector_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM node_vectors").fetchone()[0])

    def has_vectors(self) -> bool:
        """Whether any vector is stored (one index probe; what decides if a query loads the embedder)."""
        return self.conn.execute("SELECT 1 FROM node_vectors LIMIT 1").fetchone() is not None

    def create_vector_table(self, dim: int, identity_json: str) -> None:
        """Create the vec0 table for DIM-dimensional vectors and record who makes them. Call inside
        transaction(), after drop_vectors() when an older identity's table exists."""
        self._vec_ready()
        self.conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {VEC_TABLE} USING vec0("
            f"embedding float[{int(dim)}] distance_metric=cosine)"
        )
        _put_meta(self.conn, IDENTITY_KEY, identity_json)

    def drop_vectors(self) -> int:
        """Delete every vector, the vec0 table, the recorded identity and the token weights the vectors were
        made with; return how many vectors went."""
        count = self.vector_count()
        if self.has_vector_table():
            self._vec_ready()
            self.conn.execute(f"DROP TABLE {VEC_TABLE}")
        self.conn.execute("DELETE FROM node_vectors")
        self.conn.execute(
            "DELETE FROM meta WHERE key IN (?, ?, ?)", (IDENTITY_KEY, EMBEDDED_THROUGH_KEY, TOKEN_WEIGHTS_KEY)
        )
        self._bump_generation()
        return count

    def vector_token_weights(self) -> str | None:
        """The token weights the stored vectors were pooled with (as embed.builtin keeps them), if any."""
        value = _meta(self.conn, TOKEN_WEIGHTS_KEY)
        return None if value is None else str(value)

    def set_vector_token_weights(self, text: str) -> None:
        """Record the token weights every vector from now on is pooled with. Call inside transaction(),
        after drop_vectors(): vectors pooled with other weights are not comparable."""
        _put_meta(self.conn, TOKEN_WEIGHTS_KEY, text)

    def embedding_texts(self, body_chars: int, every: int = 1) -> Iterator[tuple[str, str]]:
        """(title, first BODY_CHARS of body) of every EVERY-th node (by row): what the embedding pass reads,
        for counting its tokens."""
        sql = "SELECT title, substr(body, 1, ?) FROM nodes" + (" WHERE seq % ? = 0" if every > 1 else "")
        for row in self.conn.execute(sql, (body_chars, every) if every > 1 else (body_chars,)):
            yield str(row[0]), str(row[1])

    def newest_update(self) -> int | None:
        """The newest nodes.updated_at (indexed)."""
        row = self.conn.execute("SELECT MAX(updated_at) FROM nodes").fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def embedded_through(self) -> int | None:
        value = _meta(self.conn, EMBEDDED_THROUGH_KEY)
        return None if value is None else int(value)

    def set_embedded_through(self, updated_at: int) -> None:
        _put_meta(self.conn, EMBEDDED_THROUGH_KEY, str(updated_at))

    def count_unembedded(self) -> int:
        """Nodes with no vector, or whose content changed since their vector was made."""
        row = self.conn.execute(
            "SELECT COUNT(*) FROM nodes n LEFT JOIN node_vectors v ON v.seq = n.seq"
            " WHERE v.seq IS NULL OR v.content_hash != n.content_hash"
        ).fetchone()
        return int(row[0])

    def unembedded(
        self, after_seq: int, limit: int, body_chars: int, words_chars: int = 0
    ) -> list[tuple[int, str, str, str, str]]:
        """(seq, content_hash, title, first BODY_CHARS of body, first WORDS_CHARS of the change words) of up
        to LIMIT nodes needing a vector, with seq > AFTER_SEQ, in seq order (the caller's cursor guarantees
        progress)."""
        return [
            (int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]))
            for r in self.conn.execute(
                "SELECT n.seq, n.content_hash, n.title, substr(n.body, 1, ?), substr(n.words, 1, ?) FROM nodes n"
                " LEFT JOIN node_vectors v ON v.seq = n.seq"
                " WHERE n.seq > ? AND (v.seq IS NULL OR v.content_hash != n.content_hash)"
                " ORDER BY n.seq LIMIT ?",
                (body_chars, words_chars, after_seq, limit),
            )
        ]

    def put_vectors(self, rows: Sequence[tuple[int, str, bytes]]) -> None:
        """Store (seq, content_hash, float32 blob) rows, replacing older vectors of the same nodes.
        Call inside transaction(), after create_vector_table()."""
        if not rows:
            return
        self._vec_ready()
        seqs = [r[0] for r in rows]
        marks = ",".join("?" * len(seqs))
        # vec0 has no upsert: delete, then insert. But only the nodes that had a vector (node_vectors
        # records exactly those, written in the same transactions as vec0): a DELETE on vec0 costs about
        # as much for rowids that are not there (it grows with the table), and on a first pass none are.
        # At 60,000 nodes skipping it cut the pass's own work (besides the model) from 22-53 s to 5-8 s,
        # and the whole pass from 1.28x to 1.17x its model's time (benchmarks/bench_embed_pass.py).
        had = [
            int(r[0]) for r in self.conn.execute(f"SELECT seq FROM node_vectors WHERE seq IN ({marks})", seqs)
        ]
        if had:
            self.conn.execute(f"DELETE FROM {VEC_TABLE} WHERE rowid IN ({','.join('?' * len(had))})", had)
        self.conn.executemany(
            f"INSERT INTO {VEC_TABLE}(rowid, embedding) VALUES (?, ?)", [(r[0], r[2]) for r in rows]
        )
        self.conn.executemany(
            "INSERT INTO node_vectors(seq, content_hash) VALUES (?, ?)"
            " ON CONFLICT(seq) DO UPDATE SET content_hash = excluded.content_hash",
            [(r[0], r[1]) for r in rows],
        )
        self._bump_generation()

    def search_vectors(
        self,
        blob: bytes,
        k: int,
        as_of: int | None = None,
        *,
        since: int | None = None,
        until: int | None = None,
    ) -> list[tuple[str, float]]:
        """(node id, cosine distance) of the K nearest vectors to BLOB, nearest first (ties by seq).

        Vectors whose node is gone, or (AS_OF) was recorded later, or (SINCE/UNTIL) happened outside the
        window, are left out after the k-NN.
        """
        self._vec_ready()
        try:
            # The k-NN runs alone: vec0 refuses a KNN query that SQLite merged with an outer ORDER BY.
            hits = self.conn.execute(
                f"SELECT rowid, distance FROM {VEC_TABLE} WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                (blob, k),
            ).fetchall()
        except Exception as exc:
            raise StoreError(f"vector search failed: {exc}") from exc
        # A vector stored NaN or all zero (before embedding checked them) has a NULL or NaN distance.
        return self.vector_hits_to_ids(
            [(int(h[0]), float(h[1])) for h in hits if h[1] is not None and math.isfinite(h[1])],
            as_of,
            since=since,
            until=until,
        )

    def vector_distances(self, blob: bytes, ids: Sequence[str]) -> dict[str, float]:
        """id → cosine distance from BLOB of those of IDS that have a vector. One vec0 lookup by rowid
        each: vec0 answers `rowid IN (...)` by scanning the whole table (90 ms at 100k vectors, against
        ~0.15 ms a row)."""
        rows = self.vector_rows(ids)
        if not rows:
            return {}
        self._vec_ready()
        out: dict[str, float] = {}
        try:
            for node_id, seq in rows.items():
                found = self.conn.execute(
                    f"SELECT vec_distance_cosine(embedding, ?) FROM {VEC_TABLE} WHERE rowid = ?", (blob, seq)
                ).fetchone()
                if found is not None and found[0] is not None:
                    out[node_id] = float(found[0])
        except Exception as exc:
            raise StoreError(f"vector search failed: {exc}") from exc
        return out

    def distances_from(self, blob: bytes, vectors: Sequence[bytes]) -> list[float]:
        """The cosine distance of each of VECTORS from BLOB by vec0's own function, the one its k-NN
        computes: a long-running process's in-memory copy chooses the nearest by a matrix product, whose
        sums run in another order (a score's sixth decimal moved between the MCP server and the CLI), and
        asks their distances here. One statement per DISTANCE_BATCH vectors, no table read."""
        if not vectors:
            return []
        self._vec_ready()
        out: list[float] = []
        try:
            for start in range(0, len(vectors), DISTANCE_BATCH):
                part = vectors[start : start + DISTANCE_BATCH]
                rows = ",".join("(?, ?)" for _ in part)
                params: list[Any] = [blob]
                for i, vector in enumerate(part):
                    params += [i, vector]
                found = self.conn.execute(
                    f"SELECT column1, vec_distance_cosine(column2, ?) FROM (VALUES {rows}) ORDER BY column1",
                    params,
                ).fetchall()
                out += [float("nan") if r[1] is None else float(r[1]) for r in found]
        except Exception as exc:
            raise StoreError(f"vector search failed: {exc}") from exc
        return out

    def vector_rows(self, ids: Sequence[str]) -> dict[str, int]:
        """id → nodes.seq (the vector's rowid) of those of IDS that have a vector."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return {
            str(r[0]): int(r[1])
            for r in self.conn.execute(
                f"SELECT n.id, n.seq FROM nodes n JOIN node_vectors v ON v.seq = n.seq WHERE n.id IN ({marks})",
                list(ids),
            )
        }

    def _words_moved(self, seqs: Sequence[int]) -> None:
        """The change words of the nodes SEQS changed (or were cleared by `forget`): when the stored vectors
        are made of them (the built-in WORDS model), those nodes' vectors are dropped, and the next embedding
        pass makes them again from the words as they are now. No vector of a forgotten value outlives it."""
        identity = self.vector_identity_json()
        if not seqs or identity is None or not str(json.loads(identity).get("model", "")).endswith("+words"):
            return
        self._forget_vectors(seqs)
        self.conn.execute("DELETE FROM meta WHERE key = ?", (EMBEDDED_THROUGH_KEY,))

    def _forget_vectors(self, seqs: Sequence[int]) -> None:
        """Delete the vectors of nodes about to be deleted (vec0 rows know no foreign keys)."""
        if not seqs:
            return
        execute_in(self.conn, "DELETE FROM node_vectors WHERE seq IN ({marks})", seqs)
        if self.has_vector_table():
            self._vec_ready()
            execute_in(self.conn, f"DELETE FROM {VEC_TABLE} WHERE rowid IN ({{marks}})", seqs)
            self._bump_generation()
