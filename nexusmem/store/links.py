"""Links between nodes (failure -> fix, changelog -> commit), and the range reads only the linker needs.

Mixed into Store (which provides `conn`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from nexusmem.errors import StoreError
from nexusmem.store import hookreads
from nexusmem.store.batch import execute_in, rows_in
from nexusmem.store.fulltext import FTS_WEIGHTS, _bm25
from nexusmem.store.migrations import COMMIT_MADE
from nexusmem.store.nodes import RELINK_FROM_KEY, StoredNode, now_ms

# Meta key holding the store write sequence the last link run saw (nexusmem.link.link_recent). (Until schema
# 6 the key "link.watermark" held a clock time; it is ignored, so the first run after the upgrade is a full one.)
LINKED_THROUGH_KEY = "link.written"


class LinksMixin:
    """Store methods for links. Mixed into Store."""

    conn: Any
    path: Path

    def linked_through(self) -> int | None:
        """The store write sequence the last link run saw; None before the first run (or an unreadable mark)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (LINKED_THROUGH_KEY,)).fetchone()
        return int(row[0]) if row and str(row[0]).isdigit() else None

    def set_linked_through(self, write_seq: int) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (LINKED_THROUGH_KEY, str(write_seq)),
        )

    def relink_from(self) -> int | None:
        """The oldest failure time whose link a prune removed since the last link run, None if none."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (RELINK_FROM_KEY,)).fetchone()
        return int(row[0]) if row and str(row[0]).lstrip("-").isdigit() else None

    def clear_relink(self) -> None:
        self.conn.execute("DELETE FROM meta WHERE key = ?", (RELINK_FROM_KEY,))

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

    def links_from(self, ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """(failure id, fix id, relation) for every link leaving one of IDS."""
        return hookreads.links_from(self.conn, ids)

    def links_to(self, node_id: str, limit: int) -> tuple[list[tuple[str, str]], int]:
        """(from id, relation) of the LIMIT links arriving at NODE_ID whose linking node is newest, and how
        many arrive in all (3,000 failing runs linked to one fix)."""
        rows = self.conn.execute(
            "SELECT links.from_id, links.relation FROM links LEFT JOIN nodes ON nodes.id = links.from_id"
            " WHERE links.to_id = ? ORDER BY nodes.ts IS NULL, nodes.ts DESC, links.from_id, links.relation"
            " LIMIT ?",
            (node_id, limit),
        ).fetchall()
        (total,) = self.conn.execute("SELECT count(*) FROM links WHERE to_id = ?", (node_id,)).fetchone()
        return [(str(r[0]), str(r[1])) for r in rows], int(total)

    def replace_links(self, relation: str, links: Iterable[tuple[str, str, str]]) -> int:
        """Make LINKS the only links of RELATION; return how many there are now."""
        self.conn.execute("DELETE FROM links WHERE relation = ?", (relation,))
        return self.add_links(links)

    def replace_links_from(
        self, relation: str, from_ids: Sequence[str], links: Iterable[tuple[str, str, str]]
    ) -> int:
        """Make LINKS the only links of RELATION leaving FROM_IDS (links leaving other nodes stay), keeping
        only links whose two nodes are stored; return how many of LINKS are stored now."""
        execute_in(
            self.conn, "DELETE FROM links WHERE from_id IN ({marks}) AND relation = ?", from_ids, relation
        )
        stamp = now_ms()
        before = self.conn.total_changes
        self.conn.executemany(
            "INSERT OR IGNORE INTO links(from_id, to_id, relation, created_at) SELECT ?, ?, ?, ?"
            " WHERE EXISTS (SELECT 1 FROM nodes WHERE id = ?) AND EXISTS (SELECT 1 FROM nodes WHERE id = ?)",
            [(a, b, rel, stamp, a, b) for a, b, rel in links],
        )
        return int(self.conn.total_changes - before)

    def add_links(self, links: Iterable[tuple[str, str, str]]) -> int:
        stamp = now_ms()
        before = self.conn.total_changes
        self.conn.executemany(
            "INSERT OR IGNORE INTO links(from_id, to_id, relation, created_at) VALUES (?, ?, ?, ?)",
            [(a, b, rel, stamp) for a, b, rel in links],
        )
        return int(self.conn.total_changes - before)

    def shell_commands_since(
        self, since_ms: int
    ) -> Iterator[tuple[str, int, str, str | None, int | None, int | None]]:
        """(id, ts, command, cwd, exit, duration ms) of every shell_command with ts >= SINCE_MS, oldest first
        (ts: when it started; duration: how long it ran, None when the log did not say).

        One pass over the (kind, ts) index; ties in ts keep recording order (rowid).
        """
        yield from self.conn.execute(
            "SELECT id, ts, ref, json_extract(meta, '$.cwd'), json_extract(meta, '$.exit'),"
            " json_extract(meta, '$.duration_ms') FROM nodes"
            " WHERE kind = 'shell_command' AND ts >= ? ORDER BY ts, seq",
            (since_ms,),
        )

    def shell_neighbours(
        self, anchor: StoredNode, *, after: bool, limit: int, window_ms: int, as_of: int | None = None
    ) -> list[str]:
        """Ids of the LIMIT shell commands nearest to ANCHOR strictly after (AFTER) or before it, within
        WINDOW_MS, run in ANCHOR's working directory (any when it has none), nearest first."""
        cwd = anchor.meta.get("cwd")
        # The window is written as one range of ts (the anchor's own second included, its earlier or later
        # runs left out by seq): with the OR outside the range, SQLite walked the (kind, ts) index from the
        # far end of the history to the anchor, 10-15 ms on the 10k-commit benchmark store.
        where = ["kind = 'shell_command'", "id != ?"]
        params: list[Any] = [anchor.id]
        if after:
            where.append("ts >= ? AND ts <= ? AND (ts > ? OR seq > (SELECT seq FROM nodes WHERE id = ?))")
            params += [anchor.ts, anchor.ts + window_ms, anchor.ts, anchor.id]
        else:
            where.append("ts >= ? AND ts <= ? AND (ts < ? OR seq < (SELECT seq FROM nodes WHERE id = ?))")
            params += [anchor.ts - window_ms, anchor.ts, anchor.ts, anchor.id]
        if isinstance(cwd, str):
            where.append("json_extract(meta, '$.cwd') = ?")
            params.append(cwd)
        if as_of is not None:
            where.append("created_at <= ?")
            params.append(as_of)
        order = "ts, seq" if after else "ts DESC, seq DESC"
        rows = self.conn.execute(
            f"SELECT id FROM nodes WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ?", (*params, limit)
        )
        return [r[0] for r in rows]

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
        """(path, time made, commit id) for every file touched by a git_commit made at or after SINCE_MS, by
        (time made, id). A commit's time made is its committer time (meta `committed`, kept when it is not
        its author time: an amend, a rebase) or else its ts (its author time; every commit an older version
        stored)."""
        # The (kind, ts) index finds the commits never rewritten, nodes_commit_made the rewritten ones: named,
        # as the planner prefers the (kind, ts) index for both and then reads every commit's meta.
        made_n = COMMIT_MADE.replace("(meta", "(n.meta")
        return [
            tuple(r)
            for r in self.conn.execute(
                "SELECT f.path, n.ts, n.id FROM nodes n JOIN node_files f ON f.node_seq = n.seq"
                " WHERE n.kind = 'git_commit' AND n.ts >= ?1 AND n.seq NOT IN ("
                "  SELECT seq FROM nodes INDEXED BY nodes_commit_made"
                f"  WHERE kind = 'git_commit' AND {COMMIT_MADE} IS NOT NULL)"
                " UNION ALL"
                f" SELECT f.path, {made_n}, n.id"
                " FROM nodes n INDEXED BY nodes_commit_made JOIN node_files f ON f.node_seq = n.seq"
                f" WHERE n.kind = 'git_commit' AND {made_n} >= ?1"
                " ORDER BY 2, 3",
                (since_ms,),
            )
        ]

    def replays_since(self, since_ms: int) -> dict[str, int]:
        """{commit id: when its change was first made (meta `change_made`)} of the commits made at or after
        SINCE_MS that replay a change made before them (a rebase, a cherry-pick: the same patch and author
        time; nexusmem.sources.git.replays). Such a commit is a rewritten one: the nodes_commit_made index
        holds it (by its time made), so only the rewritten commits of the range are read."""
        return {
            str(node_id): int(made)
            for node_id, made in self.conn.execute(
                "SELECT id, json_extract(meta, '$.change_made') FROM nodes INDEXED BY nodes_commit_made"
                f" WHERE kind = 'git_commit' AND {COMMIT_MADE} >= ?"
                " AND json_extract(meta, '$.change_made') IS NOT NULL",
                (since_ms,),
            )
        }

    def commit_order(self, ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        """{commit id: (author time, generation)} of the commits IDS (generation 0 when not numbered): how
        the linker orders commits made in the same second (a rebase's)."""
        sql = (
            "SELECT n.id, n.ts, COALESCE(g.gen, 0) FROM nodes n LEFT JOIN commit_generations g ON g.sha = n.ref"
            " WHERE n.id IN ({marks})"
        )
        return {str(i): (int(ts), int(gen)) for i, ts, gen in rows_in(self.conn, sql, list(ids))}

    def thread_closers(self) -> dict[str, list[str]]:
        """{issue number: the pull requests a sync found closing it} of the GitHub threads stored (an issue
        read again without its pull requests keeps what closes it)."""
        found: dict[str, list[str]] = {}
        for number, closers in self.conn.execute(
            "SELECT json_extract(meta, '$.number'), json_extract(meta, '$.closed_by_prs') FROM nodes"
            " WHERE kind = 'github_thread' AND json_extract(meta, '$.closed_by_prs') NOT IN ('[]', '')"
        ):
            try:
                listed = json.loads(closers) if isinstance(closers, str) else []
            except ValueError:
                continue
            if isinstance(listed, list):
                found[str(number)] = [str(x) for x in listed if isinstance(x, int)]
        return found

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

    def command_sessions(self, ids: Sequence[str]) -> dict[str, str]:
        """{shell_command id: the session that ran it (meta `session`: an agent's session id, a shell's)} of
        IDS, for the commands that name one."""
        sql = "SELECT id, json_extract(meta, '$.session') FROM nodes WHERE id IN ({marks})"
        return {str(i): s for i, s in rows_in(self.conn, sql, ids) if isinstance(s, str) and s}

    def session_discussions(
        self, sessions: Sequence[str], kinds: Sequence[str], ts_from: int, ts_to: int
    ) -> list[tuple[str, int, str, str]]:
        """(id, ts, session id, body) of the nodes of KINDS with ts in [TS_FROM, TS_TO] of one of SESSIONS
        (meta `session_id`), in order: by time, then by piece (a long answer's chunks share its time)."""
        kind_marks = ",".join("?" * len(kinds))  # `{marks}` is filled with the sessions (rows_in)
        sql = (
            "SELECT id, ts, json_extract(meta, '$.session_id'), body, coalesce(json_extract(meta, '$.chunk'), 0),"
            " seq FROM nodes WHERE json_extract(meta, '$.session_id') IN ({marks})"
            " AND kind IN (" + kind_marks + ") AND ts >= ? AND ts <= ?"
        )
        rows = sorted(
            rows_in(self.conn, sql, sessions, *kinds, ts_from, ts_to), key=lambda r: (r[1], r[4], r[5])
        )
        return [(str(r[0]), int(r[1]), str(r[2]), str(r[3])) for r in rows]

    def node_bodies(self, ids: Sequence[str]) -> dict[str, str]:
        """{id: body} of the nodes IDS that are stored."""
        return {
            str(i): str(b)
            for i, b in rows_in(self.conn, "SELECT id, body FROM nodes WHERE id IN ({marks})", ids)
        }

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
        """The oldest event time among nodes of KINDS written (inserted or changed) after WRITE_SEQ: a commit's
        time made (meta `committed`) when it is older than its ts (an author time set later)."""
        marks = ",".join("?" * len(kinds))
        row = self.conn.execute(
            "SELECT MIN(MIN(ts, COALESCE(json_extract(meta, '$.committed'), ts))) FROM nodes"
            f" WHERE written > ? AND kind IN ({marks})",
            (write_seq, *kinds),
        ).fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def link_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM links").fetchone()[0])

    def link_counts(self) -> dict[str, int]:
        """How many links of each relation there are."""
        rows = self.conn.execute("SELECT relation, COUNT(*) FROM links GROUP BY relation").fetchall()
        return {str(relation): int(count) for relation, count in rows}
