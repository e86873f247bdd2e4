#!/usr/bin/env python3
"""What the importer check adds to precheck: in-process `precheck.check` on 20 changed files of the
10,000-commit history, with the import edges and with the table hidden, alternately.

    python benchmarks/bench_precheck_importers.py [--dir /tmp/nexusmem-bench] [--rounds 8]

DIR is the one benchmarks/bench_precheck.py builds (run that first). The generated history's Python files
import nothing, so when the store holds no edges this adds synthetic ones (seed 1): 8 importers for every
tracked file (about 160 importers for the 20 files). "Without" renames the table away, which precheck
reads as a store from before the import structure. Writes the store (the edges, the renames).
"""

from __future__ import annotations

import random
import statistics
import subprocess
import time

from common import synced_dir_args


def main() -> None:
    args = synced_dir_args(__doc__, rounds=8)
    from nexusmem import precheck
    from nexusmem.store import connection

    repo = args.dir / "repo"
    db = repo / ".nexusmem" / "memory.db"
    conn = connection.connect(db)
    if not conn.execute("SELECT COUNT(*) FROM import_edges").fetchone()[0]:
        tracked = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True).stdout.split()
        rnd = random.Random(1)
        edges = {(s, d) for d in tracked for s in rnd.sample(tracked, 8) if s != d}
        conn.execute("BEGIN")
        conn.executemany("INSERT OR IGNORE INTO import_edges(src, dst) VALUES (?, ?)", sorted(edges))
        conn.execute("COMMIT")
    total = conn.execute("SELECT COUNT(*) FROM import_edges").fetchone()[0]
    conn.close()
    changed = subprocess.run(
        ["git", "diff", "--name-only", "HEAD~40"], cwd=repo, capture_output=True, text=True
    )
    files = changed.stdout.split()[:20]

    def rename(a: str, b: str) -> None:
        c = connection.connect(db)
        c.execute("BEGIN")
        c.execute(f"ALTER TABLE {a} RENAME TO {b}")
        c.execute("COMMIT")
        c.close()

    times: dict[str, list[float]] = {"with": [], "without": []}
    found: dict[str, int] = {}
    for _ in range(args.rounds):
        for mode in ("with", "without"):
            if mode == "without":
                rename("import_edges", "import_edges_off")
            try:
                t0 = time.perf_counter()
                result = precheck.check(repo, files)
                times[mode].append((time.perf_counter() - t0) * 1000)
                found[mode] = len(result.findings)
            finally:
                if mode == "without":
                    rename("import_edges_off", "import_edges")
    print(f"precheck.check, {len(files)} files, {total} import edges, {args.rounds} rounds:")
    for mode, values in times.items():
        print(f"  {mode} import edges: median {statistics.median(values):.0f} ms (min {min(values):.0f}),"
              f" {found[mode]} finding(s)")  # fmt: skip


if __name__ == "__main__":
    main()
