"""Commit generations: each commit's place in the history's graph (1 + its parents' highest; a root is 1),
so that "the first commit that holds X" means the first in the history, not the one with the oldest author
date. A branch rebased years after it was written keeps its old author dates but sits on top of everything
it was rebased onto; a commit's ancestors always have lower generations. Mixed into Store (which provides
`conn`); `fill` is also what migration 12 runs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from nexusmem.store.batch import rows_in


def number(parents: Mapping[str, list[str]], known: Mapping[str, int]) -> dict[str, int]:
    """The generation of every commit of PARENTS (sha → parent shas); a parent outside PARENTS counts with
    its KNOWN generation, or 0 when unknown too (a shallow clone's cut, a pruned commit). Iterative (a
    linear history is as deep as it is long); a cycle, which git cannot make but a damaged store might
    hold, is cut where it closes."""
    out: dict[str, int] = {}
    for start in parents:
        if start in out:
            continue
        path = {start}  # the commits whose parents are being numbered: a parent among them is a cycle
        frames: list[tuple[str, Iterator[str]]] = [(start, iter(parents[start]))]
        while frames:
            sha, pending = frames[-1]
            for parent in pending:
                if parent in parents and parent not in out and parent not in path:
                    path.add(parent)
                    frames.append((parent, iter(parents[parent])))
                    break
            else:
                frames.pop()
                path.discard(sha)
                out[sha] = 1 + max((out.get(p, known.get(p, 0)) for p in parents[sha]), default=0)
    return out


def generations_of(conn: Any, shas: Iterable[str]) -> dict[str, int]:
    """sha → generation for those of SHAS that are numbered."""
    sql = "SELECT sha, gen FROM commit_generations WHERE sha IN ({marks})"
    return {sha: int(gen) for sha, gen in rows_in(conn, sql, list(dict.fromkeys(shas)))}


def fill(conn: Any, *, changed: bool = True, written_after: int | None = None, removed: bool = True) -> int:
    """Number the stored commits that have no generation yet (and forget those of commits no longer
    stored); return how many were numbered. CHANGED=False (the sync wrote no commit) first compares the
    two counts (~0.4 ms at 10k commits, where the full check takes ~25 ms): equal, nothing is to do; they
    differ after a sync that was stopped between writing commits and numbering them. WRITTEN_AFTER (a
    write sequence: the sync's start) looks for the commits to number among those written since first,
    and REMOVED=False (the sync pruned no commit) skips forgetting: a commit's sync on git/git's 82k
    commits spent 0.36 s on the two whole-table passes; the counts decide whether they are needed still."""
    if not changed:
        return 0 if _counts_agree(conn) else fill(conn, removed=True)
    if removed:
        conn.execute(
            "DELETE FROM commit_generations WHERE sha NOT IN (SELECT ref FROM nodes WHERE kind = 'git_commit')"
        )
    if written_after is not None:
        rows = conn.execute(
            "SELECT n.ref, json_extract(n.meta, '$.parents') FROM nodes n WHERE n.kind = 'git_commit'"
            " AND n.written > ? AND NOT EXISTS (SELECT 1 FROM commit_generations g WHERE g.sha = n.ref)",
            (written_after,),
        ).fetchall()
        done = _number_rows(conn, rows)
        return done if _counts_agree(conn) else done + fill(conn, removed=True)
    rows = conn.execute(
        "SELECT n.ref, json_extract(n.meta, '$.parents') FROM nodes n WHERE n.kind = 'git_commit'"
        " AND NOT EXISTS (SELECT 1 FROM commit_generations g WHERE g.sha = n.ref)"
    ).fetchall()
    return _number_rows(conn, rows)


def _counts_agree(conn: Any) -> bool:
    """Whether every stored commit is numbered and nothing else is (the two counts are equal)."""
    stored, numbered = conn.execute(
        "SELECT (SELECT count(*) FROM nodes WHERE kind = 'git_commit'), (SELECT count(*) FROM commit_generations)"
    ).fetchone()
    return bool(stored == numbered)


def _number_rows(conn: Any, rows: list[tuple[str, str | None]]) -> int:
    """Number the commits of ROWS ((sha, its parents as JSON)) and store their generations."""
    if not rows:
        return 0
    parents: dict[str, list[str]] = {}
    for sha, listed in rows:
        try:
            found = json.loads(listed) if listed else []
        except ValueError:
            found = []
        parents[sha] = [p for p in found if isinstance(p, str)] if isinstance(found, list) else []
    outside = {p for ps in parents.values() for p in ps if p not in parents}
    numbered = number(parents, generations_of(conn, outside))
    conn.executemany("INSERT OR REPLACE INTO commit_generations(sha, gen) VALUES (?, ?)", numbered.items())
    return len(numbered)


class GenerationsMixin:
    """Store methods for commit generations. Mixed into Store."""

    conn: Any

    def fill_generations(
        self, *, changed: bool = True, written_after: int | None = None, removed: bool = True
    ) -> int:
        """Number the commits stored since the last call (see `fill`)."""
        return fill(self.conn, changed=changed, written_after=written_after, removed=removed)

    def generations(self, shas: Iterable[str]) -> dict[str, int]:
        """sha → generation (1 + the parents' highest) for those of SHAS that are stored commits."""
        return generations_of(self.conn, shas)

    def generations_after(self, seq: int) -> list[tuple[str, int, int]]:
        """(sha, generation, node seq) of the numbered commits whose node was stored after SEQ, oldest
        first: what a team push has not sent yet (SEQ 0: all of them)."""
        return [
            (str(sha), int(gen), int(node_seq))
            for sha, gen, node_seq in self.conn.execute(
                "SELECT g.sha, g.gen, n.seq FROM nodes n JOIN commit_generations g ON g.sha = n.ref"
                " WHERE n.kind = 'git_commit' AND n.seq > ? ORDER BY n.seq",
                (seq,),
            )
        ]
