#!/usr/bin/env python3
"""What indexing costs: a first sync (wall and CPU seconds, git included) and the store's size.

    python benchmarks/bench_index_cost.py REPO [--runs 3] [--sources git,diff] [--set KEY=JSON] [--query]

Runs `sync` of the given sources into a fresh store of REPO in a new Python process, RUNS times, and prints
the best wall time, the CPU time of that run (the process and its git children: steadier than wall time
on a shared machine) and the size of memory.db after a checkpoint. To compare with another checkout, run
it with PYTHONPATH pointing at that checkout. Build a history with benchmarks/eval/make_history.py (its
shell-history.jsonl, next to REPO, is used when --sources names shell). --query then measures the
in-process `query` latency over the store (BM25 only, as bench_foundation does: the sync embeds nothing),
p50 / p95 of 5 rounds of the benchmark queries after one warm-up round. --set writes a config value before
the sync (`--set sources.git.changeWords=false`: the same checkout without change words).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = """
import json, resource, sys, time
from nexusmem import paths, project, sync
if sys.argv[3:]:
    project.init(sys.argv[1])
    path = paths.config_path(project.load(sys.argv[1]).root)
    config = json.loads(path.read_text())
    for item in sys.argv[3:]:
        key, _, value = item.partition("=")
        *parents, last = key.split(".")
        node = config
        for part in parents:
            node = node[part]
        node[last] = json.loads(value)
    path.write_text(json.dumps(config))
t = time.perf_counter()
sync.sync(sys.argv[1], only=sys.argv[2].split(","), embed=False)
wall = time.perf_counter() - t
own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(wall, own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime)
"""


_QUERY = """
import statistics, sys
from nexusmem import project
sys.path.insert(0, sys.argv[2])
from common import QUERIES, query_latencies
proj = project.load(sys.argv[1])
with proj.open_store() as store:
    runs = query_latencies(store, proj.root.name, QUERIES)
    print(store.node_count(), statistics.median(runs) * 1000, runs[int(len(runs) * 0.95)] * 1000)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sources", default="git,diff")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=JSON", help="a config value")
    ap.add_argument("--query", action="store_true", help="also measure query p50 / p95 on the last store")
    args = ap.parse_args()
    repo: Path = args.repo.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "NEXUSMEM_HOME": str(Path(tmp) / "home"), "HOME": tmp}
        (Path(tmp) / "home").mkdir()
        history = repo.parent / "shell-history.jsonl"
        if history.exists():
            shutil.copy(history, Path(tmp) / "home" / "shell-history.jsonl")
        runs: list[tuple[float, float]] = []
        for _ in range(args.runs):
            shutil.rmtree(repo / ".nexusmem", ignore_errors=True)
            out = subprocess.run(
                [sys.executable, "-c", _CHILD, str(repo), args.sources, *args.set],
                env=env,
                cwd=tmp,  # not the checkout this script runs from: PYTHONPATH decides which code runs
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
            runs.append((float(out[-2]), float(out[-1])))
        wall, cpu = min(runs)
        code = "import sys; from nexusmem import project; p = project.load(sys.argv[1]); s = p.open_store(); s.checkpoint()"
        subprocess.run([sys.executable, "-c", code, str(repo)], env=env, cwd=tmp, check=True)
        size = sum(f.stat().st_size for f in (repo / ".nexusmem").glob("memory.db*"))
        latency = ""
        if args.query:
            here = str(Path(__file__).resolve().parent)
            out = subprocess.run(
                [sys.executable, "-c", _QUERY, str(repo), here],
                env=env,
                cwd=tmp,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
            latency = (
                f"; query at {int(out[0]):,} nodes p50 {float(out[1]):.1f} ms, p95 {float(out[2]):.1f} ms"
            )
        shutil.rmtree(repo / ".nexusmem", ignore_errors=True)
    settings = "".join(f" ({item})" for item in args.set)
    print(
        f"first sync of {args.sources}{settings} in {repo}: best wall {wall:.2f} s (CPU {cpu:.2f} s);"
        f" runs {', '.join(f'{w:.2f}/{c:.2f}' for w, c in runs)}; store {size / 1e6:.1f} MB{latency}"
    )


if __name__ == "__main__":
    main()
