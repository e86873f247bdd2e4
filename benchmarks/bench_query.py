#!/usr/bin/env python3
"""In-process `query` latency on a store that is already synced, for the NexusMem on PYTHONPATH.

    PYTHONPATH=<checkout> python benchmarks/bench_query.py [--dir /tmp/nexusmem-bench] [--rounds 12]

DIR is what benchmarks/bench_foundation.py leaves (repo/, home/, user-home/: the generated 10k-commit
history and its 115,000-line shell log, synced). Nothing is synced or written here (the store is opened
read-only), so two checkouts can be measured on the same store, alternately, by running this script with
PYTHONPATH pointing at each: the comparison bench_foundation.py cannot make, since it syncs first. Asks
QUERIES, CUE_QUERIES and NAME_QUERIES (benchmarks/common.py) once to warm the page cache, then ROUNDS times each, BM25
only (the lexical lists) and hybrid (with the vectors, when the store has them); then each --question alone,
BM25 only. Prints a Markdown table.
Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from common import CUE_QUERIES, NAME_QUERIES, QUERIES, synced_dir_args


def latencies(store: Any, project: str, questions: list[str], rounds: int, vectors: bool) -> list[float]:
    """Seconds of each `query.run` of QUESTIONS, ROUNDS times over, sorted (each asked once first)."""
    from nexusmem.retrieve import query

    for q in questions:
        query.run(store, q, project=project, vectors=vectors)
    runs = []
    for _ in range(rounds):
        for q in questions:
            start = time.perf_counter()
            query.run(store, q, project=project, vectors=vectors)
            runs.append(time.perf_counter() - start)
    return sorted(runs)


def main() -> None:
    args = synced_dir_args(__doc__, rounds=12, questions=True)
    import nexusmem
    from nexusmem import project

    proj = project.load(args.dir / "repo")
    print(f"code: {Path(nexusmem.__file__).parent.parent}")
    print("| questions | lists | p50 / p95 |\n|---|---|---|")
    with proj.open_store(readonly=True) as store:
        nodes = store.size_hint()
        groups = (
            ("plain", QUERIES),
            ("time cue, sequence, origin", CUE_QUERIES),
            ("compound names", NAME_QUERIES),
        )
        for label, questions in groups:
            for vectors in (False, True):
                runs = latencies(store, proj.id, questions, args.rounds, vectors)
                p50, p95 = statistics.median(runs), runs[int(len(runs) * 0.95)]
                lists = "hybrid" if vectors else "BM25"
                print(
                    f"| {label} ({len(runs)} runs, ~{nodes:,} nodes) | {lists} | {p50 * 1000:.1f} / {p95 * 1000:.1f} ms |"
                )
        for question in args.question:  # each asked alone, BM25 only: p50 of ROUNDS runs
            runs = latencies(store, proj.id, [question], args.rounds, False)
            print(f'| "{question}" ({len(runs)} runs) | BM25 | {statistics.median(runs) * 1000:.1f} ms |')


if __name__ == "__main__":
    main()
