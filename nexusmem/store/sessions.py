"""Reads behind session summaries: conversation turns grouped by session, and the summaries already made.

Mixed into Store (which provides `conn`). Read-only: the session source writes through the sync's upsert.
Subagent threads (meta `sidechain` true) are left out: a summary tells what the person and the agent
decided in the main thread; a subagent's search is a step of it, already visible in its answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nexusmem.store.nodes import _NODE_COLUMNS, StoredNode, _row_to_node

_MAIN_THREAD = (
    "kind = 'conversation_turn' AND project_id = ? AND COALESCE(json_extract(meta, '$.sidechain'), 0) = 0"
)


@dataclass(frozen=True)
class SessionInfo:
    """One session's main thread as it stands: how many exchanges (distinct meta `turn`), when the first and
    last began, the latest time any piece was (re)written (a turn changed in place moves it), how many
    pieces."""

    agent: str
    session_id: str
    turns: int
    first_ts: int
    last_ts: int
    changed_at: int
    pieces: int  # stored nodes: an exchange with a long answer is several (heading-chunks)


class SessionsMixin:
    """Store methods for session summaries. Mixed into Store."""

    conn: Any

    def conversation_sessions(self, project_id: str) -> list[SessionInfo]:
        """Every session with at least one main-thread turn, newest last turn first."""
        rows = self.conn.execute(
            "SELECT json_extract(meta, '$.agent'), json_extract(meta, '$.session_id'),"
            " COUNT(DISTINCT COALESCE(json_extract(meta, '$.turn'), -seq)), MIN(ts), MAX(ts), MAX(updated_at),"
            f" COUNT(*) FROM nodes WHERE {_MAIN_THREAD}"
            " GROUP BY 1, 2 ORDER BY 5 DESC, 2",
            (project_id,),
        ).fetchall()
        return [
            SessionInfo(str(r[0]), str(r[1]), int(r[2]), int(r[3]), int(r[4]), int(r[5]), int(r[6]))
            for r in rows
            if isinstance(r[0], str) and isinstance(r[1], str) and r[1]
        ]

    def session_turns(
        self, project_id: str, sessions: Sequence[tuple[str, str]], ts_from: int, ts_to: int
    ) -> dict[tuple[str, str], list[StoredNode]]:
        """(agent, session id) → main-thread turns in order, for each of SESSIONS whose turns all lie within
        TS_FROM..TS_TO: one range read over the (kind, ts) index for the lot, not one table scan per
        session (1,000 sessions of 20 turns took 159 ms a session that way)."""
        wanted = set(sessions)
        found: dict[tuple[str, str], list[StoredNode]] = {key: [] for key in wanted}
        if not wanted:
            return found
        ids = sorted({sid for _, sid in wanted})
        marks = ",".join("?" * len(ids))
        cur = self.conn.execute(
            f"SELECT {_NODE_COLUMNS}, json_extract(meta, '$.agent'), json_extract(meta, '$.session_id')"
            f" FROM nodes WHERE {_MAIN_THREAD} AND ts BETWEEN ? AND ?"
            f" AND json_extract(meta, '$.session_id') IN ({marks})"
            " ORDER BY COALESCE(json_extract(meta, '$.turn'), 0), ts, COALESCE(json_extract(meta, '$.chunk'), 0),"
            " seq",
            (project_id, ts_from, ts_to, *ids),
        )
        for row in cur:
            key = (row[-2], row[-1])
            if key in wanted:
                found[key].append(_row_to_node(row[:-2]))
        return found

    def turns_state(self, write_seq: int) -> tuple[int, bool]:
        """How many conversation turns the store holds, and whether any was written after WRITE_SEQ (both
        read from indexes: the steady-state check of a sync)."""
        count = self.conn.execute("SELECT COUNT(*) FROM nodes WHERE kind = 'conversation_turn'").fetchone()[0]
        # `+kind` keeps the planner on the written index: rows written since are few, whereas the kind index
        # would read every turn's row (past its body's overflow pages) to check `written`.
        newer = self.conn.execute(
            "SELECT EXISTS(SELECT 1 FROM nodes WHERE written > ? AND +kind = 'conversation_turn')",
            (write_seq,),
        ).fetchone()[0]
        return int(count), bool(newer)

    def turn_keys(self, agent: str) -> list[str]:
        """The natural keys (`<agent>:<session>:<thread>:<anchor>:0`) of the first piece of every conversation
        turn of AGENT, oldest stored first: read from the (source, natural key) index alone (a turn's
        `source` is `conversation`, its key starts `<agent>:`), not the rows."""
        rows = self.conn.execute(
            "SELECT natural_key FROM nodes WHERE source = 'conversation' AND natural_key >= ?"
            " AND natural_key < ? AND natural_key GLOB '*:0' ORDER BY seq",
            (f"{agent}:", f"{agent};"),
        )
        return [row[0] for row in rows]

    def session_summaries(self, project_id: str) -> dict[str, StoredNode]:
        """Natural key ("agent:session id") → the stored session_summary node."""
        cur = self.conn.execute(
            f"SELECT {_NODE_COLUMNS} FROM nodes WHERE kind = 'session_summary' AND project_id = ?",
            (project_id,),
        )
        return {node.natural_key: node for node in map(_row_to_node, cur)}
