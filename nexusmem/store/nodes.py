"""Nodes: writing (upsert by content hash, the write sequence stamp), deleting, and reading them back.

`StoredNode` is what every reader gets: a node as stored, with its bookkeeping (created_at, trust,
superseded_by). Mixed into Store (which provides `conn`, `path` and the write sequence).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nexusmem.store import fulltext, hookreads
from nexusmem.store.batch import BATCH, execute_in, rows_in
from nexusmem.store.hygiene import UNREACHABLE
from nexusmem.store.migrations import RENAMED

if TYPE_CHECKING:  # a reader never builds a Node (nexusmem.nodes imports hashlib)
    from nexusmem.nodes import Node


# Meta key holding the oldest event time whose links a prune took away (a fix rewritten by an amend or a
# rebase): the next link run starts there even when no node was written since (links.py, link.py).
RELINK_FROM_KEY = "link.relink_from"


# Meta: the project id this store's nodes were last written under (identity.project_id; sync._moved_note).
PROJECT_ID_KEY = "project.id"
# Meta: {"at": epoch ms, "id": the project id now} of the last re-key (rekey_project): node ids derive from the
# project id, so an id saved before then names nothing now (show.find says so).
IDS_CHANGED_KEY = "project.idsChanged"
# Meta: the sha256 (hex) of each project id that held a credential of the origin URL and that this memory was
# re-keyed from (clean_project_id), a JSON list: the next `team push` deletes what this member pushed under it
# (team.push). A digest, never the id: the id holds the credential.
UNCLEAN_IDS_KEY = "project.uncleanIds"


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
    recorded_by: str = ""  # the team member who pushed it first (team store only; "" for local memory)
    verdict_by: str = ""  # the team member whose verdict `trust` is (team store only; "" for local memory)

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


@dataclass(frozen=True)
class Kept:
    """What a person or time gave a node (its first-recorded time, review verdict and superseded mark), with
    what finds the node that replaces it when its id goes (_carry_over): its kind, source and time, a
    commit's author or a diff's or section's path, and a section's text and heading (None for any other
    kind)."""

    id: str
    created_at: int
    trust: str
    superseded_by: str | None
    kind: str
    source: str
    ts: int
    same: str | None
    text: str | None
    heading: str | None = None


# A doc section's text as a reader sees it (markup.seen_text: path, text → text), handed in by the sync: what
# two cuts of the same words share when an upgrade cut them differently.
SeenText = Callable[[str, str], str]


@dataclass(frozen=True)
class Pruned:
    """What a prune_source did: how many nodes went, and how many of the doc sections among them carried a
    review verdict or a stale mark that no heir took (_carry_over): dropped, for the sync to say so."""

    removed: int
    verdicts_dropped: int = 0


@dataclass(frozen=True)
class _Section:
    """What tells a doc section's heir (_section_heirs): its source, file, heading and text."""

    source: str
    path: str
    heading: str | None
    text: str


_KEPT_COLUMNS = (
    "id, created_at, trust, superseded_by, kind, source, ts, CASE kind WHEN 'git_commit'"
    " THEN json_extract(meta, '$.author') ELSE json_extract(meta, '$.path') END,"
    " CASE kind WHEN 'doc_section' THEN body END,"
    " CASE kind WHEN 'doc_section' THEN json_extract(meta, '$.heading') END"
)


class NodesMixin:
    """Store methods for nodes. Mixed into Store."""

    conn: Any
    path: Path

    if TYPE_CHECKING:  # provided by Store or another of its mixins

        def _cjk_index_ids(self, ids: Sequence[str]) -> None: ...
        def _cjk_reindex_ids(self, ids: Sequence[str]) -> None: ...
        def _cjk_unindex(self, seqs: Sequence[int]) -> None: ...
        def _forget_vectors(self, seqs: Sequence[int]) -> None: ...
        def _cjk_unindex_all(self) -> None: ...
        def _words_moved(self, seqs: Sequence[int]) -> None: ...
        def _next_write_seq(self) -> int: ...
        def write_seq(self) -> int: ...
        def get_meta(self, key: str) -> str | None: ...
        def set_meta(self, key: str, value: str) -> None: ...
        def add_tombstone(
            self, entry_key: str | None, reason: str, kinds: dict[str, int], node_ids: list[str]
        ) -> None: ...

    def content_hashes(self, ids: Sequence[str]) -> dict[str, str]:
        """id → content hash of the nodes among IDS that are stored (what upsert compares against)."""
        return dict(rows_in(self.conn, "SELECT id, content_hash FROM nodes WHERE id IN ({marks})", ids))

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

    def commits_stored_by(self, shas: Sequence[str], seq: int) -> set[str]:
        """The SHAS whose git_commit node this store held at write sequence SEQ, unchanged since (a node an
        insert or a change wrote later is not): the commits a sync that began at SEQ found in memory.
        `+kind`, `+written`: SQLite's planner otherwise took the kind index and read every commit (76 ms on
        git/git's 82k for one sha, against 0.04 ms through (source, natural_key)); the same in the lookups
        by natural key below and in store/hookreads."""
        sql = (
            "SELECT natural_key FROM nodes WHERE source = 'git' AND +kind = 'git_commit'"
            " AND natural_key IN ({marks}) AND +written <= ?"
        )
        return {row[0] for row in rows_in(self.conn, sql, shas, seq)}

    def commit_ancestors(self, shas: Sequence[str]) -> set[str]:
        """The commits memory holds that SHAS reach by the parents their stored git_commit nodes record (the
        SHAS themselves among them when held): the history behind a shallow clone's cut that memory
        recorded before a shallower fetch put it out of git's reach. One recursive read over the
        (source, natural_key) index; UNION stops at a commit reached twice."""
        sql = (
            "WITH RECURSIVE up(sha) AS (SELECT value FROM json_each(?)"
            " UNION SELECT p.value FROM up CROSS JOIN nodes n ON n.source = 'git' AND n.natural_key = up.sha"
            " AND +n.kind = 'git_commit' CROSS JOIN json_each(n.meta, '$.parents') p)"
            " SELECT up.sha FROM up CROSS JOIN nodes n ON n.source = 'git' AND n.natural_key = up.sha"
            " AND +n.kind = 'git_commit'"
        )
        return {row[0] for row in self.conn.execute(sql, (json.dumps(list(shas)),))}

    def commit_texts(self, shas: Sequence[str]) -> list[tuple[str, int, str, str]]:
        """(sha, time in ms, subject, message) of those of SHAS whose git_commit node memory holds (the message
        as stored: redacted, with its file list)."""
        sql = (
            "SELECT natural_key, ts, title, body FROM nodes WHERE source = 'git' AND +kind = 'git_commit'"
            " AND natural_key IN ({marks})"
        )
        return [(row[0], int(row[1] or 0), row[2], row[3]) for row in rows_in(self.conn, sql, shas)]

    def commits_authored_at(self, ts_ms: int, seq: int) -> list[tuple[str, int]]:
        """(sha, when its change was first made) of every git_commit authored at TS_MS that this store held at
        write sequence SEQ, unchanged since: the commits a rebase, an amend or a cherry-pick of one of them
        keeps the author time of, as memory held them when a sync began. When its change was made: meta
        `change_made` (a replay's, nexusmem.sources.git.replays), else its committer time (meta `committed`),
        else its author time. One seek on the (kind, ts) index."""
        sql = (
            "SELECT natural_key, COALESCE(json_extract(meta, '$.change_made'), json_extract(meta, '$.committed'),"
            " ts) FROM nodes WHERE kind = 'git_commit' AND ts = ? AND +written <= ?"
        )
        return [(str(sha), int(made)) for sha, made in self.conn.execute(sql, (ts_ms, seq))]

    def firsthand_ids(self, ids: Sequence[str]) -> set[str]:
        """The ids among IDS stored from a first-hand sighting (meta without `seen_in`): what a second-hand
        node of the same id must not overwrite (see _upsert_batch)."""
        sql = "SELECT id FROM nodes WHERE id IN ({marks}) AND json_extract(meta, '$.seen_in') IS NULL"
        return {row[0] for row in rows_in(self.conn, sql, ids)}

    def _upsert_batch(self, batch: list[Node], counts: UpsertCounts) -> None:
        # A second-hand node (Node.secondhand: an agent's call read back from its transcript, whose exit code
        # is recovered from output text and which has no duration) never replaces a first-hand one of the
        # same id (the agent hook's record of that call), whichever was seen first: in this batch, or stored.
        unique: dict[str, Node] = {}
        for node in batch:
            held = unique.get(node.id)
            if held is not None and node.secondhand and not held.secondhand:
                counts.unchanged += 1
                continue
            unique[node.id] = node  # else the last version of a node within one scan wins
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
        # Only a batch with second-hand nodes stored already pays for reading their meta (the conversation
        # source's agent calls; never a commit's or a hook line's batch).
        secondhand = [n.id for n in unique.values() if n.id in existing and n.secondhand]
        firsthand = self.firsthand_ids(secondhand) if secondhand else set()
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
            elif node.secondhand and node.id in firsthand:
                counts.unchanged += 1  # the first-hand record stays (see above)
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
            unstemmed = ",".join("?" * len(fulltext.UNSTEMMED_KINDS))
            self.conn.execute(
                "INSERT INTO nodes_fts(rowid, title, body, words, notes)"
                f" SELECT seq, title, body, words, notes FROM nodes WHERE id IN ({marks})",
                fresh_ids,
            )
            self.conn.execute(
                "INSERT INTO nodes_stem(rowid, title, body, notes) SELECT seq, title, body, notes FROM nodes"
                f" WHERE id IN ({marks}) AND kind NOT IN ({unstemmed})",  # prose only
                [*fresh_ids, *fulltext.UNSTEMMED_KINDS],
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
            reworded = [n.id for n in changed if existing[n.id][1] != n.words]
            if reworded:  # a commit's vector may be made of its words (embed.builtin.WORDS)
                sql = "SELECT seq FROM nodes WHERE id IN ({marks})"
                self._words_moved([r[0] for r in rows_in(self.conn, sql, reworded)])
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

    def prune_source(
        self,
        source: str,
        keep: Callable[[str], bool],
        *,
        heirs_after: int | None = None,
        named: Mapping[str, str] | None = None,
        seen: SeenText | None = None,
    ) -> Pruned:
        """Delete every node of SOURCE whose natural key KEEP rejects (Pruned). HEIRS_AFTER (a write
        sequence): the nodes written since may inherit what a doomed one carried (_carry_over); NAMED: doomed
        id → the id of its heir, as the source paired them (ScanResult.heirs); SEEN: a section's text as a
        reader sees it."""
        doomed = [
            seq
            for seq, key in self.conn.execute(
                "SELECT seq, natural_key FROM nodes WHERE source = ?", (source,)
            )
            if not keep(key)
        ]
        dropped = 0
        if heirs_after is not None:
            dropped = self._carry_over(
                self._kept(doomed), heirs_after, passed_over=set(doomed), named=named, seen=seen
            )
        if doomed:
            self._tombstone_unreachable(doomed)
        return Pruned(self._delete_seqs(doomed), dropped)

    def _tombstone_unreachable(self, seqs: list[int]) -> None:
        """Keep the ids (never the content) of the nodes a rewrite left unreachable: the team push removes
        the ones this member shared (TeamStore.retract), so teammates stop seeing the replaced commit."""
        kinds: dict[str, int] = {}
        ids: list[str] = []
        for node_id, kind in rows_in(self.conn, "SELECT id, kind FROM nodes WHERE seq IN ({marks})", seqs):
            ids.append(node_id)
            kinds[kind] = kinds.get(kind, 0) + 1
        self.add_tombstone(None, UNREACHABLE, kinds, ids)

    def _kept(self, seqs: list[int]) -> list[Kept]:
        """What the nodes SEQS carry that their heirs would inherit (Kept)."""
        sql = f"SELECT {_KEPT_COLUMNS} FROM nodes WHERE seq IN ({{marks}})"
        return [Kept(*r) for r in rows_in(self.conn, sql, seqs)]

    def _carry_over(
        self,
        gone: list[Kept],
        heirs_after: int,
        *,
        passed_over: set[int],
        named: Mapping[str, str] | None = None,
        seen: SeenText | None = None,
    ) -> int:
        """Hand what a person or time gave a node that goes (a sync is about to delete it, or a rebuild did
        not bring its id back) to the one node written after HEIRS_AFTER (not one of PASSED_OVER: the doomed
        nodes, or those a rebuild brought back) that replaces it, and point every superseded mark that named
        it at that heir:
        - a commit an amend or a rebase rewrote (the same change under a new sha): the commit with the same
          author time and author, or, for one of its diffs, the diff with the same author time and path;
        - a doc section or changelog entry re-keyed (its id moved because the key format did, e.g. headings
          keyed as a reader sees them since an upgrade): the section of the same source and file with the
          same text, else (SEEN) with the same text as a reader sees it (an RST entry an older release cut
          with the next release's label under it, `.. _changes_7-10-7:`, holds it no more);
        - a node the source that wrote it paired with another source's node recording the same thing (NAMED:
          its id → the heir's id; an atuin row of a command a hook logged too, ScanResult.heirs).
        Nothing is carried when no such node or more than one is there (commits made in the same second by
        the same author, two sections of one file with the same text), nor when two nodes that go would hand
        theirs to the same one. Returns how many doc sections that go carried a verdict or a stale mark and
        handed it to no heir (a section an upgrade no longer cuts: an RST file's comment-only preamble)."""
        heirs = self._commit_heirs(gone, heirs_after, passed_over)
        heirs.update(self._section_heirs(gone, heirs_after, passed_over, seen))
        heirs.update(self._named_heirs(gone, named or {}, passed_over))
        claimed: dict[int, int] = {}
        for heir in heirs.values():
            claimed[heir] = claimed.get(heir, 0) + 1
        heirs = {old: heir for old, heir in heirs.items() if claimed[heir] == 1}
        dropped = sum(
            1
            for old in gone
            if old.kind == "doc_section"
            and (old.trust != "candidate" or old.superseded_by)
            and old.id not in heirs
        )
        if not heirs:
            return dropped
        seqs = list(heirs.values())
        ids: dict[int, str] = dict(
            rows_in(self.conn, "SELECT seq, id FROM nodes WHERE seq IN ({marks})", seqs)
        )
        moved: dict[str, str] = {}
        for old in (k for k in gone if k.id in heirs):
            self.conn.execute(
                "UPDATE nodes SET created_at = MIN(created_at, ?),"
                " trust = CASE WHEN trust = 'candidate' THEN ? ELSE trust END,"
                " superseded_by = COALESCE(superseded_by, ?) WHERE seq = ?",
                (old.created_at, old.trust, old.superseded_by, heirs[old.id]),
            )
            moved[old.id] = ids[heirs[old.id]]
        # A mark naming a node that goes now names its heir (marks are few: one pass over them).
        pointers = self.conn.execute(
            "SELECT seq, id, superseded_by FROM nodes WHERE superseded_by IS NOT NULL"
        ).fetchall()
        self.conn.executemany(
            "UPDATE nodes SET superseded_by = ? WHERE seq = ?",
            [
                (moved[by], seq)
                for seq, node_id, by in pointers
                if by in moved and moved[by] != node_id  # never a node superseded by itself
            ],
        )
        return dropped

    def _named_heirs(
        self, gone: list[Kept], named: Mapping[str, str], passed_over: set[int]
    ) -> dict[str, int]:
        """The id of a node that goes → the seq of the heir NAMED names for it, when memory holds that one."""
        wanted = {old.id: named[old.id] for old in gone if old.id in named}
        if not wanted:
            return {}
        heir_ids = sorted(set(wanted.values()))
        seqs: dict[str, int] = dict(
            rows_in(self.conn, "SELECT id, seq FROM nodes WHERE id IN ({marks})", heir_ids)
        )
        return {
            old: seqs[heir] for old, heir in wanted.items() if heir in seqs and seqs[heir] not in passed_over
        }

    def _commit_heirs(self, gone: list[Kept], heirs_after: int, passed_over: set[int]) -> dict[str, int]:
        """The id of a commit or diff that goes → the seq of the one node of this sync that replaces it
        (_carry_over)."""
        out: dict[str, int] = {}
        for old in gone:
            if old.kind not in ("git_commit", "code_diff"):
                continue
            field = "$.author" if old.kind == "git_commit" else "$.path"
            heirs = [
                seq
                for (seq,) in self.conn.execute(
                    f"SELECT seq FROM nodes WHERE kind = ? AND ts = ? AND json_extract(meta, '{field}') IS ?"
                    " AND written > ?",
                    (old.kind, old.ts, old.same, heirs_after),
                )
                if seq not in passed_over
            ]
            if len(heirs) == 1:
                out[old.id] = heirs[0]
        return out

    def _section_heirs(
        self, gone: list[Kept], heirs_after: int, passed_over: set[int], seen: SeenText | None
    ) -> dict[str, int]:
        """The id of a doc section (or changelog entry) that goes → the seq of the one doc section of this
        sync from the same source and file (meta `path`) with the same text, when exactly one section that
        goes has that text there too (_carry_over). The text is what a re-keying leaves alone: a heading's
        key changed, never the lines under it (a section's text starts with its heading line as written).
        Then, for those still without an heir, the same with the texts as a reader sees them (SEEN: an
        upgrade that cuts markup a reader does not see out of a section changes its text, not its words),
        and last with the same heading too (an entry whose words two releases of one changelog repeat)."""
        olds = [
            (old.id, _Section(old.source, old.same, old.heading, old.text))
            for old in gone
            if old.kind == "doc_section" and isinstance(old.same, str) and old.text
        ]
        if not olds:
            return {}
        news = [
            (seq, _Section(source, path, heading, body))
            for seq, source, path, heading, body in self.conn.execute(
                "SELECT seq, source, json_extract(meta, '$.path'), json_extract(meta, '$.heading'), body"
                " FROM nodes WHERE written > ? AND kind = 'doc_section'",
                (heirs_after,),
            )
            if seq not in passed_over and isinstance(path, str) and body
        ]
        passes: list[Callable[[_Section], tuple[object, ...]]] = [lambda s: (s.source, s.path, s.text)]
        if seen is not None:
            passes.append(lambda s: (s.source, s.path, seen(s.path, s.text)))
            passes.append(lambda s: (s.source, s.path, s.heading, seen(s.path, s.text)))
        out: dict[str, int] = {}
        for key in passes:
            taken = set(out.values())
            out.update(
                _one_to_one(
                    [(old, key(sec)) for old, sec in olds if old not in out],
                    [(seq, key(sec)) for seq, sec in news if seq not in taken],
                )
            )
        return out

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

    def delete_all_nodes(self) -> int:
        """Delete every node, link and index entry (sync --rebuild, inside its transaction). The word indexes
        are emptied whole: deleting 26,000 nodes one by one through the delete trigger spent 80 s in FTS5's
        secure delete, and slowed every insert after it in the same transaction."""
        if not self.conn.in_transaction:
            raise RuntimeError("delete_all_nodes runs inside a transaction")  # it drops a trigger for a while
        seqs = [r[0] for r in self.conn.execute("SELECT seq FROM nodes")]
        self._forget_vectors(seqs)
        self._cjk_unindex_all()
        trigger = self.conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'nodes_fts_ad'"
        ).fetchone()
        if trigger is not None:
            self.conn.execute("DROP TRIGGER nodes_fts_ad")
        self.conn.execute("DELETE FROM links")
        self.conn.execute("DELETE FROM nodes")
        self.conn.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('delete-all')")
        self.conn.execute("INSERT INTO nodes_stem(nodes_stem) VALUES ('delete-all')")
        if trigger is not None:
            self.conn.execute(trigger[0])
        return len(seqs)

    def history_nodes(self) -> list[StoredNode]:
        """What a rebuild may not be able to read again: every conversation turn, every agent command only a
        transcript recorded (meta `seen_in`), every GitHub thread (sync: a rebuild keeps those it does not
        read again)."""
        rows = self.conn.execute(
            f"SELECT {_NODE_COLUMNS} FROM nodes WHERE kind IN ('conversation_turn', 'github_thread')"
            " OR (kind = 'shell_command' AND json_extract(meta, '$.seen_in') = 'transcript') ORDER BY seq"
        )
        return [_row_to_node(row) for row in rows]

    def bookkeeping(self) -> list[Kept]:
        """What a rebuild must not forget of every node (Kept)."""
        return [Kept(*r) for r in self.conn.execute(f"SELECT {_KEPT_COLUMNS} FROM nodes")]

    def restore_bookkeeping(
        self,
        rows: list[Kept],
        heirs_after: int,
        *,
        named: Mapping[str, str] | None = None,
        seen: SeenText | None = None,
    ) -> int:
        """Put back first-recorded times and human verdicts on the nodes that came back with the same id; a
        node whose id did not come back (a section re-keyed by an upgrade since the last sync, a commit
        rewritten since, an atuin row a hook's line now stands for: NAMED) hands them to its heir among the
        nodes written after HEIRS_AFTER, as a sync's prune does (_carry_over). Returns how many doc sections
        that did not come back had a verdict or a stale mark no heir took."""
        self.conn.executemany(
            "UPDATE nodes SET created_at = ?, trust = ?, superseded_by = ? WHERE id = ?",
            [(k.created_at, k.trust, k.superseded_by, k.id) for k in rows],
        )
        kept = {k.id for k in rows}
        back = dict(row for row in self.conn.execute("SELECT id, seq FROM nodes") if row[0] in kept)
        if len(back) == len(kept):
            return 0
        gone = [k for k in rows if k.id not in back]
        return self._carry_over(gone, heirs_after, passed_over=set(back.values()), named=named, seen=seen)

    def rekey_project(self, project_id: str) -> int:
        """Give every node written under another project id the id it has under PROJECT_ID (the same kind and
        natural key: identity.node_id), and point the links, stale marks and contradiction checks that named
        it at that id: a repository known by its path keeps its memory when it is moved or copied (or given
        its first remote), verdicts and first-recorded times on the same nodes. A node whose new id another
        already holds (written after the move by a release that did not re-key) hands that one what it
        carried (_carry_over) and goes. Returns how many nodes were re-keyed (inside the caller's
        transaction)."""
        from nexusmem.identity import node_id  # hashlib: only for a memory whose project id changed

        rows = self.conn.execute(
            "SELECT seq, id, kind, natural_key FROM nodes WHERE project_id != ? ORDER BY seq DESC",
            (project_id,),
        ).fetchall()
        renamed: dict[str, str] = {}
        taken: list[int] = []
        for seq, old, kind, key in rows:  # newest first: of two old nodes with one new id, the newer keeps it
            new = node_id(project_id, kind, key)
            renamed[old] = new
            if self.conn.execute("SELECT 1 FROM nodes WHERE id = ?", (new,)).fetchone() is None:
                self.conn.execute(
                    "UPDATE nodes SET id = ?, project_id = ? WHERE seq = ?", (new, project_id, seq)
                )
            else:
                taken.append(seq)
        if not renamed:
            return 0
        if taken:
            self._carry_over(self._kept(taken), self.write_seq(), passed_over=set(taken), named=renamed)
        pointers = self.conn.execute(
            "SELECT seq, superseded_by FROM nodes WHERE superseded_by IS NOT NULL"
        ).fetchall()  # marks are few: one pass over them
        self.conn.executemany(
            "UPDATE nodes SET superseded_by = ? WHERE seq = ?",
            [(renamed[by], seq) for seq, by in pointers if by in renamed],
        )
        pairs = [(new, old) for old, new in renamed.items()]
        for column in ("from_id", "to_id"):
            self.conn.executemany(f"UPDATE OR IGNORE links SET {column} = ? WHERE {column} = ?", pairs)
        for column in ("old_id", "new_id"):
            self.conn.executemany(f"UPDATE contradiction_checks SET {column} = ? WHERE {column} = ?", pairs)
        self._delete_seqs(taken)  # and the links of theirs the heir already had
        self.set_meta(IDS_CHANGED_KEY, json.dumps({"at": now_ms(), "id": project_id}))
        return len(renamed) - len(taken)

    def unclean_project_id(self) -> tuple[str, str] | None:
        """(the project id recorded, the one today's rules give it: identity.clean_id) when they differ: an older
        release made the id with a credential of the origin URL in it (`github.com/acme/w.git?access_token=…`);
        None when the id is clean or there is none."""
        from nexusmem.identity import clean_id  # the redaction rules: only for a memory that has an id

        recorded = self.get_meta(PROJECT_ID_KEY) or self.written_project_id()
        clean = clean_id(recorded) if recorded is not None else None
        return None if recorded is None or clean is None or clean == recorded else (recorded, clean)

    def clean_project_id(self) -> tuple[str, str, int] | None:
        """Re-key a memory whose project id held a credential (unclean_project_id) to the clean id, as a sync
        re-keys a moved repository's (rekey_project: verdicts and links kept), and record that id
        (PROJECT_ID_KEY). Migration 17 runs it at the upgrade, `scrub` again under its rules. Returns (the id
        before, the id now, how many nodes were re-keyed); None when the id is clean: nothing written. Inside
        the caller's transaction."""
        found = self.unclean_project_id()
        if found is None:
            return None
        rekeyed = self.rekey_project(found[1])
        self.set_meta(PROJECT_ID_KEY, found[1])
        self.leave_team_id(found[0])
        return found[0], found[1], rekeyed

    def leave_team_id(self, old: str) -> None:
        """Record that this memory no longer goes by project id OLD (one that held a credential, or an older
        spelling of the same origin: `file:///x/r` is `/x/r` now), so the next team push deletes what this
        member pushed under it, having sent it all again under the id it has now (UNCLEAN_IDS_KEY). Inside
        the caller's transaction."""
        import hashlib  # only for a memory whose project id changed

        digests = self.unclean_id_digests()
        digest = hashlib.sha256(old.encode("utf-8", "surrogateescape")).hexdigest()
        if digest not in digests:
            self.set_meta(UNCLEAN_IDS_KEY, json.dumps([*digests, digest]))

    def unclean_id_digests(self) -> list[str]:
        """The digests of the project ids holding a credential this memory was re-keyed from and whose team
        rows no push has deleted yet (UNCLEAN_IDS_KEY); [] for none."""
        value = self.get_meta(UNCLEAN_IDS_KEY)
        found = json.loads(value) if value else []
        return [str(d) for d in found] if isinstance(found, list) else []

    def forget_unclean_ids(self, digests: Sequence[str]) -> None:
        """DIGESTS' team rows are gone (team.push): no later push looks for them again."""
        left = [d for d in self.unclean_id_digests() if d not in digests]
        if left:
            self.set_meta(UNCLEAN_IDS_KEY, json.dumps(left))
        else:
            self.conn.execute("DELETE FROM meta WHERE key = ?", (UNCLEAN_IDS_KEY,))

    def _delete_seqs(self, seqs: list[int]) -> int:
        for start in range(0, len(seqs), BATCH):
            chunk = seqs[start : start + BATCH]
            marks = ",".join("?" * len(chunk))
            ids = [r[0] for r in self.conn.execute(f"SELECT id FROM nodes WHERE seq IN ({marks})", chunk)]
            idmarks = ",".join("?" * len(ids))
            # A link into a node going away (a fix an amend or a rebase rewrote) from one that stays: the
            # next link run must look at that failure again, though nothing new is written near it.
            orphaned = self.conn.execute(
                f"SELECT MIN(n.ts) FROM links l JOIN nodes n ON n.id = l.from_id"
                f" WHERE l.to_id IN ({idmarks}) AND l.from_id NOT IN ({idmarks})",
                ids + ids,
            ).fetchone()[0]
            if orphaned is not None:
                self.conn.execute(
                    "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE"
                    " SET value = MIN(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
                    (RELINK_FROM_KEY, str(int(orphaned))),
                )
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

    def get(self, node_id: str) -> StoredNode | None:
        row = self.conn.execute(f"SELECT {_NODE_COLUMNS} FROM nodes WHERE id = ?", (node_id,)).fetchone()
        return _row_to_node(row) if row else None

    def get_many(self, ids: Sequence[str], *, light: bool = False) -> dict[str, StoredNode]:
        """Nodes by id. LIGHT leaves out body (empty string) for ranking many candidates cheaply."""
        columns = _LIGHT_COLUMNS if light else _NODE_COLUMNS
        out: dict[str, StoredNode] = {}
        for row in rows_in(self.conn, f"SELECT {columns} FROM nodes WHERE id IN ({{marks}})", ids):
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

    def diffs_of(self, sha: str) -> list[tuple[str, str]]:
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                "SELECT id, ref FROM nodes WHERE kind = 'code_diff' AND ref >= ? AND ref < ? ORDER BY ref",
                (sha + ":", sha + ";"),
            )
        ]

    def commits_by_sha(self, prefix: str) -> list[str]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT id FROM nodes WHERE kind = 'git_commit' AND ref >= ? AND ref < ? ORDER BY ref LIMIT 5",
                (prefix, prefix + "g"),
            )
        ]

    def sections_under(self, source: str, head: str, limit: int) -> list[str]:
        """Ids of up to LIMIT doc sections of SOURCE whose natural key is HEAD's (a file's heading path,
        "UPGRADING.md#Guide > 6.0 to 7.0") with its chunks or its subsections, in the order written."""
        rows: list[tuple[int, str]] = []
        for after in ("#", " > ", " › "):
            start = head + after
            rows += self.conn.execute(
                "SELECT seq, id FROM nodes WHERE source = ? AND natural_key >= ? AND natural_key < ?"
                " AND +kind = 'doc_section' ORDER BY seq LIMIT ?",
                (source, start, start[:-1] + chr(ord(start[-1]) + 1), limit),
            ).fetchall()
        return [node_id for _, node_id in sorted(rows)[:limit]]

    def written_order(self, ids: Sequence[str]) -> list[str]:
        """Those of IDS memory holds, in the order they were first written (a file's sections and changelog
        entries: the order the file holds them, as a sync reads a file top to bottom)."""
        rows = rows_in(self.conn, "SELECT seq, id FROM nodes WHERE id IN ({marks})", list(dict.fromkeys(ids)))
        return [node_id for _, node_id in sorted(rows)]

    def size_hint(self) -> int:
        """Roughly how many nodes the store has ever held (max rowid): free, unlike COUNT(*)."""
        row = self.conn.execute("SELECT MAX(seq) FROM nodes").fetchone()
        return int(row[0] or 0)

    def clear_words_with(self, words: Sequence[str]) -> int:
        """Empty the change words of every node whose words include all of WORDS; return how many."""
        if not words:
            return 0
        where = " AND ".join(["(' ' || words || ' ') LIKE ? ESCAPE '\\'"] * len(words))
        params = ["% " + w.replace("%", "").replace("_", "\\_") + " %" for w in words]
        seqs = [
            int(r[0])
            for r in self.conn.execute(f"SELECT seq FROM nodes WHERE words != '' AND {where}", params)
        ]
        return self.clear_words(seqs)

    def clear_words_holding(self, text: str) -> int:
        """Empty the change words of every node whose words hold TEXT anywhere, inside a longer word too (they
        are lower-cased: give TEXT lower-cased); return how many."""
        if not text:
            return 0
        seqs = [
            int(r[0])
            for r in self.conn.execute(
                "SELECT seq FROM nodes WHERE words != '' AND instr(words, ?) > 0", (text,)
            )
        ]
        return self.clear_words(seqs)

    def word_texts(self) -> list[tuple[int, str]]:
        """(seq, change words) of every node that has some."""
        return [
            (int(seq), str(words))
            for seq, words in self.conn.execute("SELECT seq, words FROM nodes WHERE words != ''")
        ]

    def commit_seqs(self, shas: Sequence[str]) -> list[int]:
        """Seqs of the stored commits SHAS (full shas) that have change words."""
        sql = "SELECT seq FROM nodes WHERE kind = 'git_commit' AND words != '' AND ref IN ({marks})"
        return [int(r[0]) for r in rows_in(self.conn, sql, shas)]

    def clear_words(self, seqs: Sequence[int]) -> int:
        """Empty the change words of the nodes SEQS; return how many."""
        seqs = sorted(set(seqs))
        if not seqs:
            return 0
        execute_in(self.conn, "UPDATE nodes SET words = '' WHERE seq IN ({marks})", seqs)
        self._words_moved(seqs)  # a vector made of the words goes with them
        return len(seqs)

    def lent_notes(self) -> list[tuple[int, str]]:
        """(seq, notes) of every node holding text other nodes lent it (a changelog entry's, a thread's)."""
        return [
            (int(seq), str(notes))
            for seq, notes in self.conn.execute("SELECT seq, notes FROM nodes WHERE notes != ''")
        ]

    def clear_notes(self, seqs: Sequence[int]) -> int:
        """Empty the notes of the nodes SEQS (the next sync lends them again what their links still hold)."""
        execute_in(self.conn, "UPDATE nodes SET notes = '' WHERE seq IN ({marks})", seqs)
        return len(seqs)

    def reference_time(self, as_of: int | None = None) -> int | None:
        """The newest event time in the store (or recorded by AS_OF): 'now' for recency, so that a query's
        output depends only on the store and the query (same bytes every time)."""
        if as_of is None:
            row = self.conn.execute("SELECT MAX(ts) FROM nodes").fetchone()
        else:
            row = self.conn.execute("SELECT MAX(ts) FROM nodes WHERE created_at <= ?", (as_of,)).fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def newest_of_kind(self, kind: str, start: int, end: int, limit: int) -> list[str]:
        """Ids of the LIMIT newest nodes of KIND with START <= ts <= END, newest first (ties by id)."""
        return [
            row[0]
            for row in self.conn.execute(
                "SELECT id FROM nodes WHERE kind = ? AND ts BETWEEN ? AND ? ORDER BY ts DESC, id LIMIT ?",
                (kind, start, end, limit),
            )
        ]

    def oldest_of_kind(self, kind: str, start: int, end: int, limit: int) -> list[str]:
        """Ids of the LIMIT oldest nodes of KIND with START <= ts <= END, oldest first (ties by id)."""
        return [
            row[0]
            for row in self.conn.execute(
                "SELECT id FROM nodes WHERE kind = ? AND ts BETWEEN ? AND ? ORDER BY ts, id LIMIT ?",
                (kind, start, end, limit),
            )
        ]

    def command_authors(self) -> list[tuple[str, str]]:
        """The distinct (author, author kind) of the shell commands held, most commands first."""
        return [
            (str(r[0]), str(r[1]))
            for r in self.conn.execute(
                "SELECT coalesce(json_extract(meta, '$.author'), 'me') AS a,"
                " coalesce(json_extract(meta, '$.author_kind'), 'human') AS k FROM nodes"
                " WHERE kind = 'shell_command' GROUP BY a, k ORDER BY count(*) DESC, a"
            )
        ]

    def commit_paths_ending(self, name: str) -> list[str]:
        """Every distinct path a commit touched that is NAME or ends in /NAME, in any case (LIKE ignores the
        case of ASCII letters), sorted."""
        escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT DISTINCT f.path FROM node_files f JOIN nodes n ON n.seq = f.node_seq"
                " WHERE n.kind = 'git_commit' AND (f.path LIKE ? ESCAPE '\\' OR f.path LIKE ? ESCAPE '\\')"
                " ORDER BY f.path",
                (escaped, "%/" + escaped),
            )
        ]

    def commits_touching(self, paths: Sequence[str], start: int, end: int, limit: int) -> list[str]:
        """Ids of the LIMIT newest commits that touched one of PATHS with START <= ts <= END, newest first
        (ties by id)."""
        if not paths:
            return []
        marks = ",".join("?" * len(paths))
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT DISTINCT n.id, n.ts FROM node_files f JOIN nodes n ON n.seq = f.node_seq"
                f" WHERE f.path IN ({marks}) AND n.kind = 'git_commit' AND n.ts BETWEEN ? AND ?"
                " ORDER BY n.ts DESC, n.id LIMIT ?",
                (*paths, start, end, limit),
            )
        ]

    def renames_of(self, paths: Sequence[str]) -> list[tuple[str, str, str, int]]:
        """(old path, new path, sha, ts) of every stored commit's rename from or to one of PATHS (meta
        `renames`), newest first (ties by sha). Read from the few commits that renamed a file (nodes_renames)."""
        if not paths:
            return []
        wanted = json.dumps(sorted(set(paths)))
        return [
            (str(r[0]), str(r[1]), str(r[2]), int(r[3]))
            for r in self.conn.execute(
                "SELECT json_extract(r.value, '$[0]') AS old, json_extract(r.value, '$[1]') AS new, n.ref, n.ts"
                f" FROM nodes n, json_each(n.meta, '$.renames') r WHERE {RENAMED}"
                " AND (old IN (SELECT value FROM json_each(?)) OR new IN (SELECT value FROM json_each(?)))"
                " ORDER BY n.ts DESC, n.ref",
                (wanted, wanted),
            )
            if r[0] is not None and r[1] is not None
        ]

    def counts_by_kind(self) -> dict[str, int]:
        return dict(
            self.conn.execute("SELECT kind, COUNT(*) FROM nodes GROUP BY kind ORDER BY kind").fetchall()
        )

    def date_range(self) -> tuple[int | None, int | None]:
        row = self.conn.execute("SELECT MIN(ts), MAX(ts) FROM nodes").fetchone()
        return (row[0], row[1])

    def node_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM nodes").fetchone()[0])

    def written_project_id(self) -> str | None:
        """The project id the newest node was written under (None: no node): what a memory from a release
        that kept no `project.id` meta was last written as."""
        row = self.conn.execute("SELECT project_id FROM nodes ORDER BY seq DESC LIMIT 1").fetchone()
        return None if row is None else str(row[0])

    def count_project(self, project_id: str) -> int:
        """How many nodes were written under PROJECT_ID."""
        return int(
            self.conn.execute("SELECT COUNT(*) FROM nodes WHERE project_id = ?", (project_id,)).fetchone()[0]
        )

    def iter_nodes(self, kind: str | None = None) -> Iterator[StoredNode]:
        if kind is None:
            cur = self.conn.execute(f"SELECT {_NODE_COLUMNS} FROM nodes ORDER BY seq")
        else:
            cur = self.conn.execute(f"SELECT {_NODE_COLUMNS} FROM nodes WHERE kind = ? ORDER BY seq", (kind,))
        for row in cur:
            yield _row_to_node(row)

    def written_after(
        self, updated_at: int, seq: int, limit: int
    ) -> list[tuple[StoredNode, int, int, tuple[str, ...]]]:
        """(node, updated_at, seq, files) of up to LIMIT nodes written after the (UPDATED_AT, SEQ) mark, in
        that order: the team push's resumable cursor (a batch that never committed is read again)."""
        rows = self.conn.execute(
            f"SELECT {_NODE_COLUMNS}, updated_at, seq FROM nodes"
            " WHERE updated_at > ? OR (updated_at = ? AND seq > ?) ORDER BY updated_at, seq LIMIT ?",
            (updated_at, updated_at, seq, limit),
        ).fetchall()
        if not rows:
            return []
        files: dict[int, list[str]] = {}
        seqs = [int(r[-1]) for r in rows]
        marks = ",".join("?" * len(seqs))
        for path, node_seq in self.conn.execute(
            f"SELECT path, node_seq FROM node_files WHERE node_seq IN ({marks}) ORDER BY path", seqs
        ):
            files.setdefault(int(node_seq), []).append(str(path))
        return [(_row_to_node(r), int(r[-2]), int(r[-1]), tuple(files.get(int(r[-1]), ()))) for r in rows]

    def count_written_after(self, updated_at: int, seq: int, kinds: Sequence[str] | None = None) -> int:
        """How many nodes written_after would return in all (the team push's size, known up front); with
        KINDS, how many of those kinds (what a push would share)."""
        where, params = "", []
        if kinds is not None:
            where = f" AND kind IN ({','.join('?' * len(kinds))})" if kinds else " AND 0"
            params = list(kinds)
        row = self.conn.execute(
            f"SELECT count(*) FROM nodes WHERE (updated_at > ? OR (updated_at = ? AND seq > ?)){where}",
            (updated_at, updated_at, seq, *params),
        ).fetchone()
        return int(row[0])

    def count_sent(
        self, seqs: Sequence[int], kinds: Sequence[str], updated_at: int, seq: int
    ) -> tuple[int, int]:
        """Of the nodes SEQS: how many are of KINDS (what a team push shares), and how many of those were
        first recorded at or before the push cursor (UPDATED_AT, SEQ: the last node a push sent), so that a
        push sent them (a version of them, if they changed since: an insert's updated_at is its created_at)."""
        if not kinds or not seqs:
            return 0, 0
        sql = f"SELECT created_at, seq FROM nodes WHERE seq IN ({{marks}}) AND kind IN ({','.join('?' * len(kinds))})"
        found = [(int(at), int(s)) for at, s in rows_in(self.conn, sql, sorted(set(seqs)), *kinds)]
        return len(found), sum(1 for mark in found if mark <= (updated_at, seq))

    def verdicts(self) -> list[tuple[str, str, str | None]]:
        """(id, trust, superseded_by) of every node a person judged (verified, rejected or superseded)."""
        return [
            (str(r[0]), str(r[1]), r[2])
            for r in self.conn.execute(
                "SELECT id, trust, superseded_by FROM nodes WHERE trust != 'candidate' OR superseded_by IS NOT NULL"
            )
        ]

    def files_of(self, node_id: str) -> list[str]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT f.path FROM node_files f JOIN nodes n ON n.seq = f.node_seq WHERE n.id = ? ORDER BY f.path",
                (node_id,),
            )
        ]

    def files_of_many(self, ids: Sequence[str]) -> list[tuple[str, str]]:
        """(node id, path) for every file of the nodes IDS."""
        return hookreads.files_of_many(self.conn, ids)

    def secondhand_keys(self, natural_keys: Sequence[str]) -> dict[str, tuple[str, int | None]]:
        """natural key → (id, exit code) of the agent calls among NATURAL_KEYS stored from a transcript (meta
        `seen_in`)."""
        return hookreads.secondhand_keys(self.conn, natural_keys)

    def agent_calls_stored(self, natural_keys: Sequence[str]) -> dict[str, tuple[str, int, dict[str, Any]]]:
        """natural key → (command, ts, meta) of the agent calls among NATURAL_KEYS (sources.shell.tail.
        agent_call_key) that memory holds, whichever way each was seen: what one sighting of a call needs of
        the other's (the exit code a transcript gave, the hook's own record). Through the (source,
        natural_key) index."""
        sql = (
            "SELECT natural_key, ref, ts, meta FROM nodes WHERE source = 'shell' AND +kind = 'shell_command'"
            " AND natural_key IN ({marks})"
        )
        return {
            row[0]: (row[1], int(row[2]), json.loads(row[3]) if row[3] else {})
            for row in rows_in(self.conn, sql, list(dict.fromkeys(natural_keys)))
        }

    def shell_commands_between(
        self, start: int, end: int, newest: int | None = None
    ) -> list[tuple[str, str, int, str | None, int | None]]:
        """(id, command, ts, cwd, exit) of every shell command with START <= ts <= END (the NEWEST of them
        only, when given), oldest first."""
        return hookreads.shell_commands_between(self.conn, start, end, newest)

    def shell_commands_written_after(self, written: int, other_than: str) -> list[tuple[str, int]]:
        """(command, ts) of the shell commands of every source but OTHER_THAN written (inserted or changed)
        after the store write sequence WRITTEN."""
        return [
            tuple(r)
            for r in self.conn.execute(
                "SELECT ref, ts FROM nodes WHERE written > ? AND kind = 'shell_command' AND source != ?",
                (written, other_than),
            )
        ]

    def shell_command_stamps(
        self, start: int, end: int
    ) -> list[tuple[str, str, str, str, int, int | None, int | None, int | None]]:
        """(id, source, natural key, command, ts, duration ms, exit, last pipeline status) of every shell
        command with START <= ts <= END."""
        return [
            tuple(r)
            for r in self.conn.execute(
                "SELECT id, source, natural_key, ref, ts, json_extract(meta, '$.duration_ms'),"
                " json_extract(meta, '$.exit'), json_extract(meta, '$.pipestatus[#-1]')"
                " FROM nodes WHERE kind = 'shell_command' AND ts BETWEEN ? AND ?",
                (start, end),
            )
        ]

    def shell_command_authors(self, start: int, end: int) -> dict[str, dict[str, str]]:
        """id -> {author, author_kind} of the shell commands with START <= ts <= END that name an author."""
        return hookreads.shell_command_authors(self.conn, start, end)

    def nodes_naming(
        self, paths: Sequence[str], kinds: Sequence[str], start: int, end: int
    ) -> list[tuple[str, str, str]]:
        """(path, node id, kind) for nodes of KINDS with START <= ts <= END whose files include one of PATHS."""
        return hookreads.nodes_naming(self.conn, paths, kinds, start, end)


def _one_to_one(
    olds: Sequence[tuple[str, tuple[object, ...]]], news: Sequence[tuple[int, tuple[object, ...]]]
) -> dict[str, int]:
    """Old id → new seq for each key exactly one old and exactly one new node have, when the key's last part
    (a text) is not empty."""
    by_key: dict[tuple[object, ...], list[str]] = {}
    for old, key in olds:
        if key[-1]:
            by_key.setdefault(key, []).append(old)
    found: dict[tuple[object, ...], list[int]] = {}
    for seq, key in news:
        if key in by_key:
            found.setdefault(key, []).append(seq)
    return {
        ids[0]: found[key][0] for key, ids in by_key.items() if len(ids) == 1 and len(found.get(key, ())) == 1
    }
