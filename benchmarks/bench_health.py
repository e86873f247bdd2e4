#!/usr/bin/env python3
"""What the store check and the per-node guard cost a sync (issue 11).

    python benchmarks/bench_health.py [--nodes 10000 50000] [--dir /tmp/nexusmem-health]

For each size: builds a store of that many ~1 KB nodes (real upserts), then times `PRAGMA quick_check`
(what sync runs at its end, bounded by health.CHECK_SECONDS) and `nodes.node_problem` over every node
(the guard between each source and the store). Prints a Markdown table. Not a test: numbers depend on the
machine.
"""

from __future__ import annotations

import argparse
import random
import shutil
import string
import time
from pathlib import Path

from nexusmem.nodes import Node, node_problem
from nexusmem.store import open_store


def make_nodes(count: int) -> list[Node]:
    rng = random.Random(11)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(5000)]
    return [
        Node(
            project="bench",
            kind="git_commit",
            source="git",
            natural_key=f"{i:040x}",
            ref=f"{i:040x}",
            title=" ".join(rng.choices(words, k=8)),
            body=" ".join(rng.choices(words, k=150)),
            ts=1_700_000_000_000 + i * 1000,
            signal=0.5,
        )
        for i in range(count)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/nexusmem-health"))
    args = parser.parse_args()
    print("| nodes | store MB | quick_check s | node_problem µs/node |")
    print("|---|---|---|---|")
    for count in args.nodes:
        shutil.rmtree(args.dir, ignore_errors=True)
        args.dir.mkdir(parents=True)
        db = args.dir / "memory.db"
        nodes = make_nodes(count)
        started = time.perf_counter()
        for node in nodes:
            assert node_problem(node) is None
        guard_us = (time.perf_counter() - started) / count * 1e6
        with open_store(db, create=True) as store:
            with store.transaction():
                store.upsert(nodes)
            store.checkpoint()
            started = time.perf_counter()
            problems = store.quick_check(seconds=600)
            check_s = time.perf_counter() - started
        assert problems == [], problems
        size = db.stat().st_size / 1e6
        print(f"| {count:,} | {size:.1f} | {check_s:.3f} | {guard_us:.2f} |")


if __name__ == "__main__":
    main()
