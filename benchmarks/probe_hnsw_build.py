"""How fast can this machine build pgvector HNSW graphs, whatever the team store's layout?

The team push target (5,000 nodes/s) is missed wherever the push has to put its vectors into an HNSW graph:
row by row into a large graph, or in one bulk build at the end (benchmarks/bench_team.py). This probe asks
whether a different layout could meet it: each push building a graph of its own over only its own rows (a
partitioned vector table, one partition and one HNSW index per push, k-NN over all partitions by Merge
Append). It loads PARTITIONS partitions of ROWS clustered 256-d vectors, generated on the server (no client
cost), builds each partition's index with the team store's parameters (m = 16, ef_construction = 64,
pgvector's parallel build; --m and --ef-construction change them), attaches it, and then times a 200-deep
k-NN over the partitioned table (the depth a question asks for) at ef_search 200, and counts how many of an
exact scan's 10 nearest its top 10 holds.

    .venv/bin/python benchmarks/probe_hnsw_build.py --partitions 2 --rows 100000

The build rate per partition is the ceiling of any push that must leave its vectors searchable by HNSW when
it returns. --pgdata DIR keeps the server's data (created if missing); the default is a temporary folder.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import bench_team  # noqa: E402

DIM = 256
CENTRES = 2000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--rows", type=int, default=100_000, help="vectors per partition")
    ap.add_argument("--pgdata", help="keep the server's data in this folder")
    ap.add_argument("--shared-buffers", default="4GB")
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--m", type=int, default=16, help="HNSW m (the team store's: 16)")
    ap.add_argument(
        "--ef-construction", type=int, default=64, help="HNSW ef_construction (the team store's: 64)"
    )
    args = ap.parse_args(argv)

    import psycopg

    server = bench_team.start_server(args.pgdata, args.shared_buffers)
    try:
        url, _ = bench_team.database(server, "probe_hnsw", keep=False)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(
                f"CREATE TABLE centres AS SELECT c, array(SELECT random() - 0.5 FROM generate_series(1, {DIM})"
                f" WHERE c > 0) a FROM generate_series(1, {CENTRES}) c"
            )
            conn.execute(f"CREATE TABLE v (id bigint, part int, emb vector({DIM})) PARTITION BY LIST (part)")
            rates: list[float] = []
            for part in range(args.partitions):
                name = f"v_{part}"
                first = part * args.rows
                t0 = time.perf_counter()
                conn.execute(f"CREATE TABLE {name} (id bigint, part int, emb vector({DIM}))")
                conn.execute(
                    f"INSERT INTO {name} SELECT i, {part}, (SELECT array_agg(ce.a[j] + (random() - 0.5) * 0.4)"
                    f" FROM generate_series(1, {DIM}) j)::vector FROM generate_series(%s, %s) i"
                    f" JOIN centres ce ON ce.c = 1 + (i * 7919) %% {CENTRES}",
                    (first, first + args.rows - 1),
                )
                t1 = time.perf_counter()
                conn.execute("SET maintenance_work_mem = '1GB'")
                conn.execute(
                    f"CREATE INDEX ON {name} USING hnsw (emb vector_cosine_ops)"
                    f" WITH (m = {int(args.m)}, ef_construction = {int(args.ef_construction)})"
                )
                t2 = time.perf_counter()
                conn.execute(f"ALTER TABLE v ATTACH PARTITION {name} FOR VALUES IN ({part})")
                rates.append(args.rows / (t2 - t1))
                print(
                    f"partition {part}: {args.rows:,} rows generated in {t1 - t0:.1f} s; HNSW build"
                    f" {t2 - t1:.1f} s ({rates[-1]:,.0f} nodes/s)",
                    flush=True,
                )
            conn.execute("ANALYZE v")
            conn.execute("SET hnsw.ef_search = 200")
            conn.execute("SET hnsw.iterative_scan = 'relaxed_order'")
            probes = [
                r[0]
                for r in conn.execute(
                    "SELECT emb::text FROM v ORDER BY random() LIMIT %s", (args.queries,)
                ).fetchall()
            ]
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    "EXPLAIN (COSTS OFF) SELECT id FROM v ORDER BY emb <=> %s::vector LIMIT 200", (probes[0],)
                ).fetchall()
            )
            exact: list[set[int]] = []
            with conn.transaction():
                conn.execute("SET LOCAL enable_indexscan = off")
                for probe in probes:
                    rows = conn.execute(
                        "SELECT id FROM v ORDER BY emb <=> %s::vector LIMIT 10", (probe,)
                    ).fetchall()
                    exact.append({int(r[0]) for r in rows})
            times: list[float] = []
            found: list[float] = []
            for probe, truth in zip(probes, exact):
                t = time.perf_counter()
                hits = conn.execute(
                    "SELECT id, emb <=> %s::vector AS d FROM v ORDER BY emb <=> %s::vector LIMIT 200",
                    (probe, probe),
                ).fetchall()
                times.append((time.perf_counter() - t) * 1000)
                nearest = {int(r[0]) for r in sorted(hits, key=lambda r: float(r[1]))[:10]}
                found.append(len(nearest & truth) / len(truth))
        merged = "Merge Append" in plan
        print(
            f"build rate per partition: {min(rates):,.0f}-{max(rates):,.0f} nodes/s;"
            f" 200-deep k-NN over {args.partitions} partitions ({'Merge Append' if merged else 'no Merge Append'}):"
            f" p50 {statistics.median(times):.1f} ms; recall@10 of its top 10 against an exact scan"
            f" {statistics.mean(found):.3f} (m {args.m}, ef_construction {args.ef_construction})"
        )
    finally:
        if args.pgdata:
            server.server.cleanup()  # stop it, keep the data
        else:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
