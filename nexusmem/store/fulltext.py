"""Full-text search: the FTS5 word index(es), BM25 ranking, term statistics for the query planner.

Mixed into Store (which provides `conn` and `path`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nexusmem.errors import StoreError
from nexusmem.store import connection, health

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
# was .364 at 0.5, .370 at 0.25, .384 at 0.1, .380 with no stemmed index. The retrieval asks it for every
# word held by less than half the nodes (retrieve.search.stem_terms); on sixteen labelled sets, hybrid MRR
# .6025 at 0.05, .6048 at 0.1, .6070 at 0.2 (symptom questions losing), .6007 at 0.35.
STEM_SHARE = 0.1


# A search within a window of time (since/until) also hands the FTS table the range of seq that the window's
# nodes span (found through the ts index): FTS5 then skips the matches outside it instead of joining every one
# to its node to read its ts (~1.5 µs a match). On the 10k-commit benchmark store (102,778 nodes) the 30-day
# window of a time cue holds 2,882 of them: its search of "router tests failed" took 9-13 ms, and takes ~1 ms
# with the ~0.4 ms that finding the range costs. Finding it costs ~0.15 µs a node of the window, so it is
# looked for among the first WINDOW_RANGE_NODES + 1 only (~1.5 ms, lost when the window holds more: the
# search then joins every match, as before).
WINDOW_RANGE_NODES = 10_000
# matching_each() copies the few nodes it is asked about into in-memory FTS5 tables made like the store's
# word indexes (same columns, tokenizers and rows: UNSTEMMED_KINDS stay out of the stemmed one) and asks
# each expression there. Asking the store's own indexes listed every node holding a common word, or sought
# each node in its postings (~30k for a common word at 100k nodes): 5 ms median and up to 50 ms a question on
# the 10k-commit benchmark store, against ~1 ms for the copy, which costs what tokenizing the few texts costs.
# tests/test_store_windows.py checks that the copy answers as the indexes do.
_MIRROR_SCHEMA = """
CREATE VIRTUAL TABLE nodes_fts USING fts5(
  title, body, words, notes, content='', tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE nodes_stem USING fts5(
  title, body, notes, content='', tokenize='porter unicode61 remove_diacritics 2'
);
"""


def _bm25(table: str, weights: Sequence[float]) -> str:
    return f"bm25({table}, {', '.join(f'{float(w):.4f}' for w in weights)})"


def _window_filters(
    table: str,
    alias: str,
    as_of: int | None,
    since: int | None,
    until: int | None,
    seqs: tuple[int, int] | None,
) -> tuple[list[str], list[Any]]:
    """The WHERE clauses (and their parameters) that keep the rows of TABLE, joined to nodes as ALIAS, recorded
    by AS_OF with their ts within SINCE..UNTIL; with SEQS (FullTextMixin._window_seqs), also the range of seq
    the window's nodes span, on TABLE's rowid (it keeps the same rows, and FTS5 skips the others)."""
    clauses: list[str] = []
    params: list[Any] = []
    for clause, value in (("created_at <= ?", as_of), ("ts >= ?", since), ("ts <= ?", until)):
        if value is not None:
            clauses.append(f"{alias}.{clause}")
            params.append(value)
    if seqs is not None:
        clauses.append(f"{table}.rowid BETWEEN ? AND ?")
        params += seqs
    return clauses, params


# The kinds whose text the stemmed index leaves out: code and commands, not prose (migrations 7 and 13).
UNSTEMMED_KINDS = ("code_diff", "shell_command")


class FullTextMixin:
    """Store methods for fulltext. Mixed into Store."""

    conn: Any
    path: Path
    _mirror: Any = None  # matching_each's in-memory copy of the word indexes, made on first use

    def _window_seqs(self, since: int | None, until: int | None) -> tuple[int, int] | None:
        """(lowest, highest) seq of the nodes whose ts lies within SINCE..UNTIL ((1, 0), an empty range, when
        none does); None without a window, or when more than WINDOW_RANGE_NODES nodes lie in it."""
        if since is None and until is None:
            return None
        low, high, count = self.conn.execute(
            "SELECT MIN(seq), MAX(seq), COUNT(*) FROM (SELECT seq FROM nodes WHERE ts >= ? AND ts <= ? LIMIT ?)",
            (
                -(2**63) if since is None else since,
                2**63 - 1 if until is None else until,
                WINDOW_RANGE_NODES + 1,
            ),
        ).fetchone()
        if count > WINDOW_RANGE_NODES:
            return None
        return (int(low), int(high)) if count else (1, 0)

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
        (both ends inclusive, epoch ms). Of equal scores the last recorded come first: a command run every
        day matches alike each time, and the cut at LIMIT keeps its newest runs, which recency then weighs.

        STEMMED also asks the porter index (with STEM_MATCH, MATCH when None; an empty one skips it) and
        adds its share: "crashed" then finds "crash", and an exact match (which matches both indexes)
        outranks a stem-only one of the same strength.
        """
        if stem_match is None:
            stem_match = match
        if not stemmed or not stem_match:
            return self._search_exact(match, limit, as_of, since, until, weights)
        filtered = as_of is not None or since is not None or until is not None
        seqs = self._window_seqs(since, until)
        parts: list[str] = []
        params: list[Any] = []
        stem_weights = (weights[0], weights[1], weights[3])  # the stemmed index has no change words
        tables = [("nodes_fts", 1.0, weights, match), ("nodes_stem", STEM_SHARE, stem_weights, stem_match)]
        for table, share, column_weights, expr in tables:
            score = f"{_bm25(table, column_weights)} * {share}"
            if not filtered:
                # Rank inside the FTS table first, join the few winners after: joining every match before
                # sorting cost ~40% more at 25k matches.
                parts.append(
                    f"SELECT * FROM (SELECT rowid AS r, {score} AS s FROM {table}"
                    f" WHERE {table} MATCH ? ORDER BY s, rowid DESC LIMIT ?)"
                )
                params += [expr, limit * 2]
            else:
                clauses, values = _window_filters(table, "m", as_of, since, until, seqs)
                parts.append(
                    f"SELECT * FROM (SELECT {table}.rowid AS r, {score} AS s FROM {table}"
                    f" JOIN nodes m ON m.seq = {table}.rowid WHERE {table} MATCH ? AND {' AND '.join(clauses)}"
                    " ORDER BY s, m.seq DESC LIMIT ?)"
                )
                params += [expr, *values, limit * 2]
        sql = (
            f"SELECT n.id, hits.score FROM (SELECT r, SUM(s) AS score FROM ({' UNION ALL '.join(parts)})"
            " GROUP BY r ORDER BY score, r DESC LIMIT ?) AS hits JOIN nodes n ON n.seq = hits.r"
            " ORDER BY hits.score, hits.r DESC"
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
                " WHERE nodes_fts MATCH ? ORDER BY score, rowid DESC LIMIT ?) AS hits"
                " JOIN nodes n ON n.seq = hits.r ORDER BY hits.score, hits.r DESC"
            )
            params: list[Any] = [match, limit]
        else:
            seqs = self._window_seqs(since, until)
            clauses, values = _window_filters("nodes_fts", "n", as_of, since, until, seqs)
            sql = (
                f"SELECT n.id, {score} AS score FROM nodes_fts JOIN nodes n ON n.seq = nodes_fts.rowid"
                f" WHERE nodes_fts MATCH ? AND {' AND '.join(clauses)} ORDER BY score, n.seq DESC LIMIT ?"
            )
            params = [match, *values, limit]
        try:
            return [(str(r[0]), -float(r[1])) for r in self.conn.execute(sql, params)]
        except health.DriverError as exc:
            if health.looks_damaged(exc):  # not the expression: the file (say so, and what to do)
                raise health.explain(self.path, exc, writing=False) from exc
            # a malformed MATCH expression is our bug, but must not crash a query
            raise StoreError(f"full-text search failed for {match!r}: {exc}") from exc

    def matching_each(self, matches: Sequence[str], ids: Sequence[str]) -> dict[str, set[str]]:
        """For each FTS5 expression of MATCHES, those of IDS (a few) whose indexed text matches it, in either
        word index (an exact form or another form of a word, "crashed" for "crash"): which query words the
        best candidates actually contain, for judging how strong a match is."""
        found: dict[str, set[str]] = {match: set() for match in matches}
        if not ids or not matches:
            return found
        mirror = self._mirror
        if mirror is None:
            mirror = connection.memory()
            mirror.executescript(_MIRROR_SCHEMA)
            self._mirror = mirror
        marks = ",".join("?" * len(ids))
        try:
            rows = self.conn.execute(
                f"SELECT seq, id, kind, title, body, words, notes FROM nodes WHERE id IN ({marks})", list(ids)
            ).fetchall()
            mirror.execute("BEGIN")  # one FTS5 flush for every row, not one a row
            # Contentless tables: emptied at once, where a DELETE would tokenize every row again to remove it.
            mirror.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('delete-all')")
            mirror.execute("INSERT INTO nodes_stem(nodes_stem) VALUES ('delete-all')")
            mirror.executemany(
                "INSERT INTO nodes_fts(rowid, title, body, words, notes) VALUES (?, ?, ?, ?, ?)",
                [(r[0], r[3], r[4], r[5], r[6]) for r in rows],
            )
            mirror.executemany(
                "INSERT INTO nodes_stem(rowid, title, body, notes) VALUES (?, ?, ?, ?)",
                [(r[0], r[3], r[4], r[6]) for r in rows if r[2] not in UNSTEMMED_KINDS],
            )
            mirror.execute("COMMIT")
            by_seq = {int(r[0]): str(r[1]) for r in rows}
            for match in matches:
                for table in ("nodes_fts", "nodes_stem"):
                    sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ?"
                    found[match].update(by_seq[int(r[0])] for r in mirror.execute(sql, (match,)))
        except health.DriverError as exc:
            self._mirror = None  # whatever state the copy was left in, the next question starts a new one
            raise StoreError(f"full-text search failed for {', '.join(matches)!r}: {exc}") from exc
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
            seqs = self._window_seqs(since, until)
            clauses, values = _window_filters(table, "n", as_of, since, until, seqs)
            row = self.conn.execute(
                f"SELECT COUNT(*) FROM {table} JOIN nodes n ON n.seq = {table}.rowid"
                f" WHERE {table} MATCH ? AND {' AND '.join(clauses)}",
                [match, *values],
            ).fetchone()
        return int(row[0])

    def refresh_notes(self, relations: Sequence[str], kind: str, max_chars: int = 4000) -> int:
        """Give every node of KIND the text of the nodes linking to it by one of RELATIONS as its `notes`
        (its low-weight FTS column), at most MAX_CHARS; clear the notes of nodes no longer linked. Return
        how many nodes changed. A changelog entry lends its body; a GitHub thread its title and
        description (meta.description), not its comments: a long discussion would drown the commit's own
        words."""
        marks = ",".join("?" * len(relations))
        wanted: dict[int, list[str]] = {}
        # The links drive (CROSS JOIN): SQLite otherwise walks every node of KIND and probes the links of
        # each, 20-40 ms on the 10k-commit benchmark store on every sync, even one with no such links.
        for seq, body in self.conn.execute(
            "SELECT t.seq, CASE WHEN f.kind = 'github_thread'"
            " THEN f.title || char(10) || COALESCE(json_extract(f.meta, '$.description'), '') ELSE f.body END"
            " FROM links l CROSS JOIN nodes t ON t.id = l.to_id CROSS JOIN nodes f ON f.id = l.from_id"
            f" WHERE l.relation IN ({marks}) AND t.kind = ? ORDER BY t.seq, l.relation, f.seq",
            (*relations, kind),
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
