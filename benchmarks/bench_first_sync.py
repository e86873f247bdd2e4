#!/usr/bin/env python3
"""bench_foundation's first-sync row with checkouts side by side: raw git vs the cold CLI first sync.

    python benchmarks/bench_first_sync.py REPO [--rounds 3] CHECKOUT [CHECKOUT ...]

Raw git is `git log --numstat` + `git log -p -200` in REPO (best of 3, wall and CPU). Then, ROUNDS times,
each CHECKOUT in turn (PYTHONPATH=CHECKOUT, so `/path/to/main` and this worktree run the same installed
console script) runs `nexusmem sync -q --no-embed --source git --source diff` into a fresh store of REPO.
Alternating rounds put the checkouts under the same load on a shared machine; the CPU time (the sync and its
git children) moves less with load than wall time does. Prints best and median of each, and the ratios to
raw git.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU of the process and its children) of CMD."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def load_average() -> str:
    """The machine's 1, 5 and 15 minute load averages ("?" where /proc/loadavg is not)."""
    loadavg = Path("/proc/loadavg")
    return " ".join(loadavg.read_text().split()[:3]) if loadavg.exists() else "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", type=Path)
    ap.add_argument("checkouts", nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    repo: Path = args.repo.resolve()
    nm = str(Path(sys.executable).parent / "nexusmem")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "home").mkdir()
        env = {**os.environ, "NEXUSMEM_HOME": str(Path(tmp) / "home"), "HOME": tmp}
        raw = []
        for _ in range(3):
            numstat = run(["git", "log", "--numstat"], repo, env)
            patches = run(["git", "log", "-p", "-200"], repo, env)
            raw.append((numstat[0] + patches[0], numstat[1] + patches[1]))
        runs: dict[str, list[tuple[float, float]]] = {c: [] for c in args.checkouts}
        for _ in range(args.rounds):
            for checkout in args.checkouts:
                shutil.rmtree(repo / ".nexusmem", ignore_errors=True)
                sync = [nm, "sync", "-q", "--no-embed", "--source", "git", "--source", "diff"]
                runs[checkout].append(run(sync, repo, {**env, "PYTHONPATH": checkout}))
        shutil.rmtree(repo / ".nexusmem", ignore_errors=True)
    raw_wall, raw_cpu = min(w for w, _ in raw), min(c for _, c in raw)
    print(f"raw git: best wall {raw_wall:.2f} s, best CPU {raw_cpu:.2f} s; load average {load_average()}")
    for checkout, got in runs.items():
        walls, cpus = [w for w, _ in got], [c for _, c in got]
        print(
            f"{checkout}: wall best {min(walls):.2f} s, median {statistics.median(walls):.2f} s"
            f" ({statistics.median(walls) / raw_wall:.2f}x raw); CPU best {min(cpus):.2f} s,"
            f" median {statistics.median(cpus):.2f} s ({statistics.median(cpus) / raw_cpu:.2f}x raw CPU);"
            f" runs {', '.join(f'{w:.1f}/{c:.1f}' for w, c in got)}"
        )


if __name__ == "__main__":
    main()
