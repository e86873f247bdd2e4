#!/usr/bin/env python3
"""What ranking's learned last step (nexusmem/retrieve/rerank.py) costs a query: each question's list is
ranked once with the step off, then the step is timed on it with what it reads: the share of the question
each of the nodes it orders (rerank.window: the first rerank.DEPTH and the nearest by vector below them)
that it may move holds (query.Coverage: those nodes copied into a small in-memory index and probed once per
question word, the larger part of the cost), the whole rows of those nodes and what is read of them
(query.step_reads), and the model itself.

    python benchmarks/bench_rerank.py --db STORE/.nexusmem/memory.db [--calls 200] "question" ...
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

DEFAULT_QUESTIONS = (
    "the client hangs when the server closes the connection",
    "how do I set a timeout",
    "why was the retry logic changed",
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", type=Path, required=True, help="a synced store's memory.db")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("questions", nargs="*", default=list(DEFAULT_QUESTIONS))
    args = ap.parse_args(argv)
    from nexusmem.retrieve import query, rank, rerank
    from nexusmem.store.db import open_store

    off = rank.Settings(rerank=False)
    with open_store(args.db, readonly=True) as store:
        for text in args.questions:
            found = query.retrieve(store, text, settings=off)
            q = found.question
            met = rerank.conditions(q.failure, q.names_code, q.asks)
            times = []
            for _ in range(5):
                start = time.perf_counter()
                for _ in range(
                    args.calls
                ):  # a new Coverage each time: it remembers the nodes it was asked about
                    covering = query.Coverage(store, found.terms)
                    head = rerank.window(found.scored, found.nearest)[0]
                    reads = query.step_reads(store, q, found.terms.counted, head)
                    rerank.rerank(
                        found.scored,
                        met,
                        found.evidence,
                        covering,
                        found.settings,
                        q.asks,
                        *reads,
                        nearest=found.nearest,
                    )
                times.append((time.perf_counter() - start) / args.calls * 1e6)
            print(
                f"{statistics.median(times):6.1f} µs  ({len(found.scored)} results; {', '.join(met)})  {text}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
