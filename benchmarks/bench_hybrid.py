#!/usr/bin/env python3
"""Hybrid search benchmarks (issue 5): embedding throughput, hybrid query latency, database size.

    python benchmarks/bench_hybrid.py [--src /tmp/nexusmem-bench] [--dir /tmp/nexusmem-hybrid-bench]

SRC is a synced generated history (repo/ + home/, as benchmarks/bench_foundation.py leaves it). It is
copied to DIR first (`cp -a`) and never modified. Then, on the copy: its vectors dropped (that store is
embedded already), sync without the embedding pass, the
database size per 10,000 nodes without vectors, the embedding pass through `nexusmem sync` (texts/s), the
size with vectors, the in-process query latency (hybrid vs BM25-only, p50/p95), and the cold `nexusmem
query` process (p50) with and without vectors. Prints a Markdown table. Not a test: numbers depend on
the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import QUERIES, script


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True, text=True)


def vacuumed_size(db: Path) -> int:
    """Bytes of a VACUUM INTO copy: the size without free pages or WAL."""
    from nexusmem.store import connection

    out = db.with_name("size-probe.db")
    out.unlink(missing_ok=True)
    conn = connection.connect(db, readonly=True)
    conn.execute(f"VACUUM INTO '{out}'")
    conn.close()
    size = out.stat().st_size
    out.unlink()
    return size


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--src", type=Path, default=Path("/tmp/nexusmem-bench"))
    parser.add_argument("--dir", type=Path, default=Path("/tmp/nexusmem-hybrid-bench"))
    parser.add_argument("--cold-runs", type=int, default=10)
    args = parser.parse_args()

    if args.dir.exists():
        shutil.rmtree(args.dir)
    subprocess.run(["cp", "-a", str(args.src), str(args.dir)], check=True)
    repo, home = args.dir / "repo", args.dir / "home"
    env = {**os.environ, "NEXUSMEM_HOME": str(home)}
    os.environ["NEXUSMEM_HOME"] = str(home)
    db = repo / ".nexusmem" / "memory.db"
    rows: list[tuple[str, str]] = []

    t0 = time.perf_counter()
    run([script(), "-C", str(repo), "sync", "--no-embed", "--quiet"], repo, env)
    rows.append(("sync --no-embed on the copy (migrations, catch-up)", f"{time.perf_counter() - t0:.2f} s"))

    from nexusmem import project
    from nexusmem.retrieve import query, vector

    proj = project.load(repo)
    with proj.open_store() as store:
        nodes = store.node_count()
        cjk_rows = store.cjk_count()
        # bench_foundation.py's store is embedded already: its vectors go on the copy, so that the size
        # without them and the embedding pass below are measured, not read off a store that has them.
        with store.transaction():
            dropped = store.drop_vectors()
    if dropped:
        rows.append(("vectors the copy came with, dropped first", f"{dropped:,}"))
    rows.append(("nodes", f"{nodes:,}"))
    rows.append(("CJK trigram rows", f"{cjk_rows:,}"))
    size_plain = vacuumed_size(db)
    rows.append(("DB size per 10k nodes, no vectors", f"{size_plain / nodes * 10_000 / 1e6:.2f} MB"))

    out = run([script(), "-C", str(repo), "sync", "--json"], repo, env)
    emb = json.loads(out.stdout)["embedding"]
    rows.append(
        (
            "embedding pass in `sync` (builtin, batch 256)",
            f"{emb['embedded']:,} texts in {emb['seconds']:.1f} s = {emb['embedded'] / emb['seconds']:,.0f} texts/s",
        )
    )
    size_vec = vacuumed_size(db)
    rows.append(("DB size per 10k nodes, with vectors", f"{size_vec / nodes * 10_000 / 1e6:.2f} MB"))
    out = run([script(), "-C", str(repo), "sync", "--json"], repo, env)
    rows.append(
        (
            "no-op sync after that (embedding pass)",
            f"{json.loads(out.stdout)['embedding']['seconds'] * 1000:.0f} ms",
        )
    )

    with proj.open_store() as store:
        t0 = time.perf_counter()
        first = query.run(store, QUERIES[0], project="repo")
        rows.append(
            ("first in-process hybrid query (loads the model)", f"{(time.perf_counter() - t0) * 1000:.0f} ms")
        )
        hybrid: list[float] = []
        plain: list[float] = []
        knn_only: list[float] = []
        matched: list[int] = []
        for _ in range(3):
            for text in QUERIES:
                t0 = time.perf_counter()
                res = query.run(store, text, project="repo")
                hybrid.append((time.perf_counter() - t0) * 1000)
                matched.append(res.vector_matched)
                t0 = time.perf_counter()
                query.run(store, text, project="repo", vectors=False)
                plain.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                vector.knn(store, text)
                knn_only.append((time.perf_counter() - t0) * 1000)
        assert first.vector_matched > 0
    rows.append(
        ("hybrid query in-process p50 / p95", f"{statistics.median(hybrid):.1f} / {pct(hybrid, 0.95):.1f} ms")
    )
    rows.append(
        (
            "BM25-only query in-process p50 / p95",
            f"{statistics.median(plain):.1f} / {pct(plain, 0.95):.1f} ms",
        )
    )
    rows.append(("  of which embed + k-NN (k=200) p50", f"{statistics.median(knn_only):.1f} ms"))
    rows.append(("vector hits per query (median)", f"{statistics.median(matched):.0f}"))

    def cold(texts: list[str]) -> list[float]:
        times = []
        for text in texts:
            t0 = time.perf_counter()
            run([script(), "-C", str(repo), "query", "--json", "--", text], repo, env)
            times.append((time.perf_counter() - t0) * 1000)
        return times

    cold_hybrid = cold(QUERIES[: args.cold_runs])
    rows.append(("cold `nexusmem query` process, hybrid, p50", f"{statistics.median(cold_hybrid):.0f} ms"))
    cfg = repo / ".nexusmem" / "config.json"
    data = json.loads(cfg.read_text(encoding="utf-8"))
    data.setdefault("embedding", {})["provider"] = "none"
    cfg.write_text(json.dumps(data, indent=2), encoding="utf-8")
    run([script(), "-C", str(repo), "sync", "--quiet"], repo, env)  # provider none: drops the vectors
    cold_plain = cold(QUERIES[: args.cold_runs])
    rows.append(("cold `nexusmem query` process, BM25-only, p50", f"{statistics.median(cold_plain):.0f} ms"))
    imp = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time; t=time.perf_counter(); import wordllama; print(time.perf_counter()-t)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    rows.append(("`import wordllama` alone", f"{float(imp.stdout.split()[-1]) * 1000:.0f} ms"))

    print("| measure | value |\n| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
