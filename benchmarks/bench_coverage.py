#!/usr/bin/env python3
"""What the word probes of ranking's learned last step cost, two ways, on the same nodes.

    python benchmarks/bench_coverage.py --db STORE/.nexusmem/memory.db [--questions FILE.json ...] [--runs 7]

For each question (common.QUERIES and NAME_QUERIES, or the questions of eval_real question files), the list
is ranked once with the step off and its first rerank.DEPTH nodes are kept. Then, alternating, RUNS times:
- index: one lookup per question word in the store's own word indexes, both of them, keeping the nodes
  among those few (the way the probes were made before: a word few nodes hold listed whole, a common one
  sought node by node, `fulltext.matching` until the thirty-third wave);
- copy:  query.Coverage, which copies those nodes into a small in-memory index made like the store's and
  asks it (what the product runs).
Both must give every node the same share of the question; the script stops if they do not. Prints the mean
over questions of each way's median time. Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from common import NAME_QUERIES, QUERIES

# A word at most this many nodes hold was listed whole; past it, each node was sought in its postings.
SCAN = 600


def in_index(store: Any, match: str, ids: list[str]) -> set[str]:
    """Those of IDS that the store's word indexes match for MATCH."""
    found: set[str] = set()
    marks = ",".join("?" * len(ids))
    seqs = {
        int(r[0]): str(r[1])
        for r in store.conn.execute(f"SELECT seq, id FROM nodes WHERE id IN ({marks})", ids)
    }
    for table in ("nodes_fts", "nodes_stem"):
        sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT ?"
        listed = [int(r[0]) for r in store.conn.execute(sql, (match, SCAN + 1))]
        if len(listed) <= SCAN:
            found.update(seqs[seq] for seq in listed if seq in seqs)
            continue
        sql = (
            f"SELECT n.id FROM nodes n CROSS JOIN {table} ON {table}.rowid = n.seq"
            f" WHERE n.id IN ({marks}) AND {table} MATCH ?"
        )
        found.update(str(r[0]) for r in store.conn.execute(sql, [*ids, match]))
    return found


def by_index(store: Any, words: Any, ids: list[str]) -> dict[str, float]:
    from nexusmem.retrieve import search

    covered = dict.fromkeys(ids, 0.0)
    mass = sum(words.idf(w) for w in words.counted)
    for word in words.counted:
        expr = search.fts_expression([word])
        if mass <= 0 or words.doc_counts.get(word, 0) == 0 or expr is None:
            continue
        for node_id in in_index(store, expr, ids):
            covered[node_id] += words.idf(word) / mass
    return covered


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path, required=True, help="a synced store's memory.db")
    ap.add_argument("--questions", type=Path, action="append", help="an eval_real question file (repeatable)")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args(argv)
    from nexusmem.retrieve import query, rank, rerank
    from nexusmem.store.db import open_store

    texts = (
        [q["q"] for f in args.questions for q in json.loads(f.read_text())["questions"]]
        if args.questions
        else QUERIES + NAME_QUERIES
    )
    off = rank.Settings(rerank=False)
    index_ms: list[float] = []
    copy_ms: list[float] = []
    with open_store(args.db, readonly=True) as store:
        for text in texts:
            found = query.retrieve(store, text, settings=off)
            ids = [node.id for node, _ in found.scored[: rerank.DEPTH]]
            if not ids:
                continue
            a: list[float] = []
            b: list[float] = []
            for _ in range(args.runs):
                start = time.perf_counter()
                old = by_index(store, found.terms, ids)
                a.append(time.perf_counter() - start)
                start = time.perf_counter()
                new = query.Coverage(store, found.terms)(ids)
                b.append(time.perf_counter() - start)
                if old != new:
                    raise SystemExit(f"bench_coverage: the two ways disagree on {text!r}")
            index_ms.append(statistics.median(a) * 1000)
            copy_ms.append(statistics.median(b) * 1000)
    n = len(index_ms)
    print(
        f"{n} questions, {rerank.DEPTH} nodes each, same answers: index {statistics.mean(index_ms):.2f} ms,"
        f" copy {statistics.mean(copy_ms):.2f} ms a question (mean of medians of {args.runs})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
