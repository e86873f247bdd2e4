"""Store methods for hygiene: the deny-list, tombstones and the audit trail, deleting for good (secure delete,
FTS merge, WAL truncation, VACUUM), human verdicts, supersession, and the contradiction-judgment memo.

Mixed into Store (which provides `conn` and `_delete_seqs`). Nothing here ever stores forgotten content:
tombstones hold node ids (hashes) and counts; deny-list entries hold what sync needs to recognise a value
(hashes, or a regex's pattern, which cannot be hashed and still match).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexusmem.errors import StoreError
from nexusmem.store import hookreads
from nexusmem.store.batch import execute_in, rows_in

# (seq, id, kind, title, ref, body, meta JSON, content_hash, grp)
TextRow = tuple[int, str, str, str, str, str, str, str, str | None]

# The tombstone reason of the nodes a sync removed because no ref reaches their commit any more (an amend, a
# rebase, a deleted branch): the team push sends their ids (unreachable_after).
UNREACHABLE = "unreachable"


# The nodes' columns that hold NexusMem's own words, not anything recorded (Store.own_words).
_NODE_WORDS = ("kind", "source", "provenance", "trust")
# A node's meta for SQLite's JSON functions (one written by hand that is not JSON reads as empty).
_META_OR_EMPTY = "CASE WHEN json_valid(nodes.meta) THEN nodes.meta ELSE '{}' END"
# The nodes' columns the deny-list reads (denylist.node_fields), and the full-text indexes made of them.
_NODE_TEXTS = ("title", "body", "ref", "meta")
TEXT_INDEXES = ("nodes_fts", "nodes_stem", "nodes_cjk")


def _probe(needle: bytes, ignore_case: bool) -> bytes | str:
    return needle.lower().decode("utf-8", "replace") if ignore_case else needle


def _holds(column: str, ignore_case: bool) -> str:
    """SQL: whether COLUMN holds the probe (one parameter)."""
    return (
        f"instr(lower(CAST({column} AS TEXT)), ?) > 0"
        if ignore_case
        else f"instr(CAST({column} AS BLOB), ?) > 0"
    )


def _meta_holds(ignore_case: bool) -> str:
    """SQL: whether a node's meta holds the probe in a value, or in a key of an object inside one."""
    return (
        "(CASE WHEN json_valid(meta) THEN EXISTS (SELECT 1 FROM json_tree(meta) AS j"
        f" WHERE (j.type = 'text' AND {_holds('j.atom', ignore_case)})"
        f" OR (j.parent > 0 AND typeof(j.key) = 'text' AND {_holds('j.key', ignore_case)}))"
        f" ELSE {_holds('meta', ignore_case)} END)"
    )


def _now_ms() -> int:
    return int(time.time() * 1000)


class HygieneMixin:
    """Store methods for forget, scrub, stale, review and mark-stale."""

    conn: Any
    path: Path

    if TYPE_CHECKING:  # provided by Store

        def _delete_seqs(self, seqs: list[int]) -> int: ...
        def _next_write_seq(self) -> int: ...

    # --- deny-list ---------------------------------------------------------------------------------
    def deny_entries(self) -> list[dict[str, Any]]:
        """Every deny-list entry of this store: {key, kind, ignore_case, spec, scope, created_at}."""
        return hookreads.deny_entries(self.conn)

    def add_deny_entry(
        self, key: str, kind: str, ignore_case: bool, spec: dict[str, Any], scope: str
    ) -> bool:
        """Record an entry; False when one with the same key is already there."""
        before = self.conn.total_changes
        self.conn.execute(
            "INSERT OR IGNORE INTO deny_list(key, kind, ignore_case, spec, scope, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (key, kind, int(ignore_case), json.dumps(spec, sort_keys=True), scope, _now_ms()),
        )
        return bool(self.conn.total_changes - before)

    def remove_deny_entry(self, key: str) -> bool:
        """Delete the entry KEY; False when there is none."""
        before = self.conn.total_changes
        self.conn.execute("DELETE FROM deny_list WHERE key = ?", (key,))
        return bool(self.conn.total_changes - before)

    def add_tombstone(
        self, entry_key: str | None, reason: str, kinds: dict[str, int], node_ids: list[str]
    ) -> None:
        """One removal: which entry caused it, how many nodes of each kind, their ids (hashes) — no content."""
        self.conn.execute(
            "INSERT INTO tombstones(at, entry_key, reason, removed, kinds, node_ids) VALUES (?, ?, ?, ?, ?, ?)",
            (
                _now_ms(),
                entry_key,
                reason,
                sum(kinds.values()),
                json.dumps(kinds, sort_keys=True),
                json.dumps(sorted(node_ids)),
            ),
        )

    def tombstones(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT at, entry_key, reason, removed, kinds, node_ids FROM tombstones ORDER BY id"
        ).fetchall()
        return [
            {
                "at": r[0],
                "entry_key": r[1],
                "reason": r[2],
                "removed": r[3],
                "kinds": json.loads(r[4]),
                "node_ids": json.loads(r[5]),
            }
            for r in rows
        ]

    def unreachable_after(self, tombstone: int) -> tuple[int, list[str]]:
        """The ids of the nodes syncs removed as unreachable (prune_source) in the tombstones after TOMBSTONE,
        and the last such tombstone's number (TOMBSTONE when there is none)."""
        last, ids = tombstone, []
        for tomb, node_ids in self.conn.execute(
            "SELECT id, node_ids FROM tombstones WHERE id > ? AND reason = ? ORDER BY id",
            (tombstone, UNREACHABLE),
        ):
            last = int(tomb)
            ids.extend(json.loads(node_ids))
        return last, ids

    def add_audit(self, action: str, detail: dict[str, Any]) -> None:
        """An audit row: what was done and counts (DETAIL must never hold the forgotten content)."""
        self.conn.execute(
            "INSERT INTO hygiene_audit(at, action, detail) VALUES (?, ?, ?)",
            (_now_ms(), action, json.dumps(detail, sort_keys=True)),
        )

    def audit_log(self) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT at, action, detail FROM hygiene_audit ORDER BY id").fetchall()
        return [{"at": r[0], "action": r[1], "detail": json.loads(r[2])} for r in rows]

    # --- finding and deleting for good ---------------------------------------------------------------
    def iter_texts(self) -> Iterator[TextRow]:
        """(seq, id, kind, title, ref, body, meta, content_hash, grp) of every node, in seq order."""
        yield from self.conn.execute(
            "SELECT seq, id, kind, title, ref, body, meta, content_hash, grp FROM nodes ORDER BY seq"
        )

    def delete_for_good(self, seqs: Sequence[int]) -> int:
        """Delete nodes with SQLite's secure_delete on (freed cells and pages are zeroed). Call inside
        transaction(); run purge() after it commits."""
        self.conn.execute("PRAGMA secure_delete = ON")
        return self._delete_seqs(list(seqs))

    def forget_judgments(self, node_ids: Sequence[str]) -> int:
        """Drop contradiction judgments about deleted nodes (a model's reason may quote their content)."""
        before = self.conn.total_changes
        sql = "DELETE FROM contradiction_checks WHERE old_id IN ({marks}) OR new_id IN ({marks})"
        execute_in(self.conn, sql, node_ids)
        return int(self.conn.total_changes - before)

    def rewrite_text(self, rows: Sequence[tuple[str, str, str, str, str, str, str]]) -> None:
        """Replace (natural key, title, body, ref, meta JSON, content_hash) of nodes given as (id, key, title,
        body, ref, meta, hash): scrub's in-place redaction. The FTS trigger re-indexes; the CJK index is redone
        here."""
        self.conn.execute("PRAGMA secure_delete = ON")
        written = self._next_write_seq()
        self.conn.executemany(
            "UPDATE nodes SET natural_key = ?, title = ?, body = ?, ref = ?, meta = ?, content_hash = ?,"
            " updated_at = ?, written = ? WHERE id = ?",
            [(k, t, b, r, m, h, _now_ms(), written, i) for i, k, t, b, r, m, h in rows],
        )
        reindex = getattr(self, "_cjk_reindex_ids", None)
        if reindex is not None:
            reindex([r[0] for r in rows])

    def file_paths(self) -> list[str]:
        """Every distinct path the nodes' file lists hold."""
        return [r[0] for r in self.conn.execute("SELECT DISTINCT path FROM node_files")]

    def rename_file_paths(self, renames: dict[str, str]) -> int:
        """Rename paths in the nodes' file lists (old -> new): scrub's redaction of a path. Returns how many
        nodes' lists changed."""
        self.conn.execute("PRAGMA secure_delete = ON")
        changed = 0
        for old, new in renames.items():
            seqs = [r[0] for r in self.conn.execute("SELECT node_seq FROM node_files WHERE path = ?", (old,))]
            self.conn.executemany(
                "INSERT OR IGNORE INTO node_files(path, node_seq) VALUES (?, ?)", [(new, q) for q in seqs]
            )
            self.conn.execute("DELETE FROM node_files WHERE path = ?", (old,))
            changed += len(seqs)
        return changed

    def import_texts(self) -> Iterator[tuple[str, bool]]:
        """(text, whether it is a path) of every path and import specifier list the structure tables hold."""
        for path, specs in self.conn.execute("SELECT path, specs FROM import_files"):
            yield path, True
            yield specs, False
        for src, dst in self.conn.execute("SELECT src, dst FROM import_edges"):
            yield src, True
            yield dst, True

    def clear_imports(self) -> None:
        """Drop the import structure: the next sync's structure pass reads every file again."""
        self.conn.execute("PRAGMA secure_delete = ON")
        self.conn.execute("DELETE FROM import_edges")
        self.conn.execute("DELETE FROM import_files")

    def purge(self, *, vacuum: bool = False) -> bool:
        """Make deleted content unrecoverable from the files: merge the full-text indexes (their segments
        drop deleted entries), copy the WAL into the database and truncate it, and (VACUUM) rewrite the
        file without free pages. True when the WAL was fully checkpointed (a reader holding an old
        snapshot can keep frames alive)."""
        if self.conn.in_transaction:
            raise StoreError("purge() must run outside a transaction")
        self.conn.execute("PRAGMA secure_delete = ON")
        self.conn.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('optimize')")
        self.conn.execute("INSERT INTO nodes_stem(nodes_stem) VALUES ('optimize')")
        self.conn.execute("INSERT INTO nodes_cjk(nodes_cjk) VALUES ('optimize')")
        if vacuum:
            self.conn.execute("VACUUM")
        row = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return row is not None and int(row[0]) == 0

    def tables_holding(self, needle: bytes, ignore_case: bool) -> list[str]:
        """The tables whose rows still hold NEEDLE (any text or blob column; IGNORE_CASE: ASCII letters
        folded, as forget's read-back compares), a full-text index's shadow tables named by their index: what
        to name when forget finds a value left in the database files. Scans everything: only asked then.

        The nodes' title, body, ref and meta are left out: the caller reads them through the deny-list
        (denylist.node_fields), which knows the words NexusMem writes around what is recorded (node_texts_hold
        says whether they hold NEEDLE at all)."""
        found: list[str] = []
        virtual = {
            str(name)
            for (name,) in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'"
            )
        }
        tables = [
            str(name)
            for (name,) in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
            if str(name) not in virtual
        ]
        probe = _probe(needle, ignore_case)
        for table in tables:
            columns = [str(r[1]) for r in self.conn.execute(f'PRAGMA table_info("{table}")')]
            tests = [_holds(f'"{c}"', ignore_case) for c in columns]
            if table == "nodes":
                # What every store holds whatever was recorded is not a leftover (own_words): the kinds,
                # sources, provenances and trusts. The texts the deny-list reads are the caller's.
                tests = [
                    _holds(f'"{c}"', ignore_case) for c in columns if c not in (*_NODE_WORDS, *_NODE_TEXTS)
                ]
            if not tests:
                continue
            query = f'SELECT 1 FROM "{table}" WHERE {" OR ".join(tests)} LIMIT 1'
            if self.conn.execute(query, [probe] * sum(t.count("?") for t in tests)).fetchone():
                owner = next((v for v in virtual if table.startswith(v + "_")), table)
                if owner not in found:
                    found.append(owner)
        return found

    def node_texts_hold(self, needle: bytes, ignore_case: bool) -> bool:
        """Whether a node's title, body, ref or meta (its values, and the keys of an object inside one) holds
        NEEDLE as stored, the words NexusMem writes around what is recorded included (a command's
        "(exit 1)", `"shell": "bash"`): what the full-text indexes hold of the nodes besides words and notes."""
        tests = [_holds(c, ignore_case) for c in ("title", "body", "ref")] + [_meta_holds(ignore_case)]
        query = f"SELECT 1 FROM nodes WHERE {' OR '.join(tests)} LIMIT 1"
        probe = _probe(needle, ignore_case)
        return self.conn.execute(query, [probe] * sum(t.count("?") for t in tests)).fetchone() is not None

    def lowered_copies(self, text: str) -> list[str]:
        """Where what the store derives lower-cased from the nodes still holds TEXT (give it lower-cased), which
        no comparison of bytes finds reliably (the value's case is gone; an index's terms are stored prefix-
        compressed): "words" when a node's change words hold it, inside a longer word too; a word index
        (nodes_fts, nodes_stem) with a term holding it, unless a node's title, body or notes holds it in some
        case (the index of a text kept on purpose, or of NexusMem's words around a command, is not a copy
        left behind). Scans every term: only asked by forget's read-back."""
        found: list[str] = []
        words = "SELECT 1 FROM nodes WHERE words != '' AND instr(words, ?) > 0 LIMIT 1"
        if self.conn.execute(words, (text,)).fetchone():
            found.append("words")
        self.conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.nodes_stem_vocab USING fts5vocab(main, nodes_stem, 'row')"
        )
        indexes = [
            index
            for index, vocab in (("nodes_fts", "nodes_vocab"), ("nodes_stem", "temp.nodes_stem_vocab"))
            if self.conn.execute(
                f"SELECT 1 FROM {vocab} WHERE instr(term, ?) > 0 LIMIT 1", (text,)
            ).fetchone()
        ]
        prose = (
            "SELECT 1 FROM nodes WHERE instr(lower(title), ?) > 0 OR instr(lower(body), ?) > 0"
            " OR instr(lower(notes), ?) > 0 LIMIT 1"
        )
        if indexes and self.conn.execute(prose, (text, text, text)).fetchone() is None:
            found += indexes
        return found

    def own_words(self) -> list[str]:
        """The texts the store holds whatever was recorded, each as it is written in the file: the schema
        (tables, columns, comments), the nodes' kinds, sources, provenances and trusts, and the keys of
        their meta objects (`"author":`). Forget's read-back looks past them (tables_holding does not count
        them): `forget author` would otherwise always find it "still in the database files"."""
        words = [
            str(text)
            for (text,) in self.conn.execute(
                "SELECT name FROM sqlite_master UNION SELECT sql FROM sqlite_master WHERE sql IS NOT NULL"
                " UNION SELECT kind FROM nodes UNION SELECT source FROM nodes"
                " UNION SELECT provenance FROM nodes UNION SELECT trust FROM nodes"
            )
        ]
        keys = self.conn.execute(
            f"SELECT DISTINCT j.key FROM nodes, json_each({_META_OR_EMPTY}) AS j WHERE typeof(j.key) = 'text'"
        )
        return words + [json.dumps(str(key), ensure_ascii=False) + ":" for (key,) in keys]

    def database_files(self) -> list[Path]:
        """The database file and, when present, its -wal and -shm companions."""
        return [p for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")) if p.exists()]

    def backup_to(self, target: Path) -> None:
        """A consistent copy of the database (SQLite's online backup API), created with mode 0600."""
        from nexusmem.store import connection

        connection.copy_to(self.conn, target)

    # --- verdicts and supersession -------------------------------------------------------------------
    def set_trust(self, node_id: str, trust: str) -> None:
        self.conn.execute("UPDATE nodes SET trust = ? WHERE id = ?", (trust, node_id))

    def set_superseded(self, node_id: str, by: str | None) -> None:
        self.conn.execute("UPDATE nodes SET superseded_by = ? WHERE id = ?", (by, node_id))

    def stale_candidates(self, before_ms: int, limit: int) -> list[tuple[str, str, str, int, str, str, str]]:
        """(id, kind, title, ts, provenance, trust, content_hash) of non-observed, unconfirmed, unsuperseded
        nodes with ts < BEFORE_MS, oldest first. A changelog entry is a record of what a release changed, not
        a claim a newer change can make untrue (each new entry edits its file: every older one was listed)."""
        from nexusmem.nodes import PROVENANCE

        # By kind rather than by provenance: the (kind, ts) index then skips the observed majority
        # (commits, diffs, shell commands) instead of walking all of it (~50 ms at 100k nodes).
        kinds = sorted(k for k, p in PROVENANCE.items() if p != "observed")
        marks = ",".join("?" * len(kinds))
        return [
            tuple(r)
            for r in self.conn.execute(
                "SELECT id, kind, title, ts, provenance, trust, content_hash FROM nodes"
                f" WHERE kind IN ({marks}) AND trust != 'verified' AND superseded_by IS NULL AND ts < ?"
                " AND source != 'changelog'"
                " ORDER BY ts, id LIMIT ?",
                (*kinds, before_ms, limit),
            )
        ]

    def changed_after(self, paths: Sequence[str], after_ts: int) -> list[str]:
        """Which of PATHS a commit or diff dated after AFTER_TS touched (path-indexed reads, one per path)."""
        hit: list[str] = []
        for path in dict.fromkeys(paths):
            row = self.conn.execute(
                "SELECT 1 FROM node_files f CROSS JOIN nodes n ON n.seq = f.node_seq"
                " WHERE f.path = ? AND n.kind IN ('git_commit', 'code_diff') AND n.ts > ? LIMIT 1",
                (path, after_ts),
            ).fetchone()
            if row is not None:
                hit.append(path)
        return hit

    def node_hash(self, node_id: str) -> tuple[str, int, str | None] | None:
        """(content_hash, ts, group) of one node."""
        row = self.conn.execute("SELECT content_hash, ts, grp FROM nodes WHERE id = ?", (node_id,)).fetchone()
        return (str(row[0]), int(row[1]), row[2]) if row else None

    # --- contradiction judgments (memo keyed by the pair's content hashes) ----------------------------
    def judgment(self, old_hash: str, new_hash: str) -> tuple[bool, str] | None:
        row = self.conn.execute(
            "SELECT contradicts, reason FROM contradiction_checks WHERE old_hash = ? AND new_hash = ?",
            (old_hash, new_hash),
        ).fetchone()
        return (bool(row[0]), str(row[1])) if row else None

    def put_judgment(
        self,
        old_id: str,
        old_hash: str,
        new_id: str,
        new_hash: str,
        contradicts: bool,
        reason: str,
        model: str,
    ) -> None:
        self.conn.execute(
            "INSERT INTO contradiction_checks(old_hash, new_hash, old_id, new_id, contradicts, reason, model,"
            " checked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(old_hash, new_hash) DO UPDATE SET"
            " contradicts = excluded.contradicts, reason = excluded.reason, model = excluded.model,"
            " checked_at = excluded.checked_at, old_id = excluded.old_id, new_id = excluded.new_id",
            (old_hash, new_hash, old_id, new_id, int(contradicts), reason, model, _now_ms()),
        )

    def judgment_reasons(self) -> list[tuple[str, str, str]]:
        """(old_hash, new_hash, reason) of every memoised judgment."""
        return [
            (str(r[0]), str(r[1]), str(r[2]))
            for r in self.conn.execute("SELECT old_hash, new_hash, reason FROM contradiction_checks")
        ]

    def set_judgment_reasons(self, rows: Sequence[tuple[str, str, str]]) -> None:
        """Replace the reason of each (old_hash, new_hash, reason) judgment. In transaction()."""
        self.conn.executemany(
            "UPDATE contradiction_checks SET reason = ? WHERE old_hash = ? AND new_hash = ?",
            [(reason, old, new) for old, new, reason in rows],
        )

    def suggestions(self, old_ids: Sequence[str]) -> dict[str, list[tuple[str, str, str]]]:
        """Standing 'likely superseded by' suggestions for OLD_IDS: old id -> [(new id, new title, reason)].

        Only judgments made on the nodes' current content count, and only while the newer node exists."""
        sql = (
            "SELECT c.old_id, c.new_id, n.title, c.reason FROM contradiction_checks c"
            " JOIN nodes o ON o.id = c.old_id AND o.content_hash = c.old_hash"
            " JOIN nodes n ON n.id = c.new_id AND n.content_hash = c.new_hash"
            " WHERE c.contradicts = 1 AND c.old_id IN ({marks}) ORDER BY c.checked_at, c.new_id"
        )
        out: dict[str, list[tuple[str, str, str]]] = {}
        for old_id, new_id, title, reason in rows_in(self.conn, sql, old_ids):
            out.setdefault(old_id, []).append((new_id, title, reason))
        return out

    def open_suggestion_count(self) -> int:
        """How many nodes have a standing 'likely superseded' suggestion and are not marked superseded."""
        row = self.conn.execute(
            "SELECT COUNT(DISTINCT c.old_id) FROM contradiction_checks c"
            " JOIN nodes o ON o.id = c.old_id AND o.content_hash = c.old_hash AND o.superseded_by IS NULL"
            " JOIN nodes n ON n.id = c.new_id AND n.content_hash = c.new_hash"
            " WHERE c.contradicts = 1"
        ).fetchone()
        return int(row[0])

    def newer_fts(self, match: str, after_ts: int, exclude_id: str, limit: int = 20) -> list[str]:
        """Ids of nodes with ts > AFTER_TS matching the FTS5 expression MATCH, best BM25 first."""
        try:
            return [
                str(r[0])
                for r in self.conn.execute(
                    "SELECT n.id FROM nodes_fts CROSS JOIN nodes n ON n.seq = nodes_fts.rowid"
                    " WHERE nodes_fts MATCH ? AND n.ts > ? AND n.id != ?"
                    " ORDER BY bm25(nodes_fts, 10.0, 1.0, 2.0, 2.0), n.id LIMIT ?",
                    (match, after_ts, exclude_id, limit),
                )
            ]
        except Exception as exc:
            raise StoreError(f"full-text search failed for {match!r}: {exc}") from exc
