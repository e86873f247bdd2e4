#!/usr/bin/env python3
"""Foundation benchmarks (issue 2): first sync vs raw git, no-op re-sync, query latency, --version, memory.

    python benchmarks/bench_foundation.py [--dir /tmp/nexusmem-bench] [--commits 10000] [--shell-lines 115000]

Builds the history with benchmarks/eval/make_history.py (unless DIR already has one), then measures with
the installed `nexusmem` console script next to this Python. Prints a Markdown table. Not a test: numbers
depend on the machine; the README quotes a run of this script.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from common import CUE_QUERIES, HERE, MAKE_HISTORY, QUERIES, query_latencies, script, timed


def peak_rss_of_sync(repo: Path, env: dict[str, str], only: list[str]) -> tuple[float, float]:
    """Run a first sync in a fresh Python process; return (seconds, its own peak RSS in MB, git excluded)."""
    code = (
        "import resource, sys, time; from nexusmem import sync;"
        "t = time.perf_counter(); sync.sync(sys.argv[1], only=sys.argv[2:] or None, embed=False);"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(repo), *only], env=env, check=True, capture_output=True, text=True
    ).stdout.split()
    return float(out[0]), float(out[1])


def fresh(repo: Path) -> None:
    shutil.rmtree(repo / ".nexusmem", ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/nexusmem-bench"))
    ap.add_argument("--commits", type=int, default=10_000)
    ap.add_argument("--shell-lines", type=int, default=115_000)
    args = ap.parse_args()
    base: Path = args.dir
    if not (base / "repo").exists():
        subprocess.run(
            [
                sys.executable,
                str(MAKE_HISTORY),
                str(base),
                "--commits",
                str(args.commits),
                "--shell-lines",
                str(args.shell_lines),
            ],
            check=True,
        )
    repo = base / "repo"
    home = base / "home"
    home.mkdir(exist_ok=True)
    shutil.copy(base / "shell-history.jsonl", home / "shell-history.jsonl")
    user_home = base / "user-home"  # no real shell history is scraped into the benchmark's memory
    user_home.mkdir(exist_ok=True)
    env = {**os.environ, "NEXUSMEM_HOME": str(home), "HOME": str(user_home)}
    nm = script()
    rows: list[tuple[str, str, str]] = []

    raw = min(
        timed(["git", "log", "--numstat"], repo, env) + timed(["git", "log", "-p", "-200"], repo, env)
        for _ in range(3)
    )
    git_runs = []
    for _ in range(3):
        fresh(repo)
        git_runs.append(
            timed([nm, "sync", "-q", "--no-embed", "--source", "git", "--source", "diff"], repo, env)
        )
    first_git = min(git_runs)
    rows.append(("raw `git log --numstat` + `git log -p -200`", f"{raw:.2f} s", ""))
    rows.append(
        (
            "first sync, git + diff sources (cold CLI, best of 3)",
            f"{first_git:.2f} s",
            f"{first_git / raw:.2f}× raw git (target ≤ 3×)",
        )
    )

    fresh(repo)
    seconds, rss = peak_rss_of_sync(repo, env, [])
    status = json.loads(
        subprocess.run(
            [nm, "status", "--json"], cwd=repo, env=env, check=True, capture_output=True, text=True
        ).stdout
    )
    nodes = status["nodes"]
    rows.append((f"first full sync, all sources, no embedding ({nodes:,} nodes)", f"{seconds:.2f} s", ""))
    rows.append(
        ("peak memory of that first sync (Python process, git excluded)", f"{rss:.0f} MB", "target < 200 MB")
    )

    sys.path.insert(0, str(HERE.parent))
    from nexusmem import project

    proj = project.load(repo)
    with proj.open_store() as store:
        for questions, label in (
            (QUERIES, ""),
            (CUE_QUERIES, ", questions with a time cue, a sequence or a name's origin"),
        ):
            latencies = query_latencies(store, proj.root.name, questions)
            p50 = statistics.median(latencies)
            p95 = latencies[int(len(latencies) * 0.95)]
            rows.append(
                (
                    f"`query` in-process at {nodes:,} nodes{label}, p50 / p95 ({len(latencies)} runs)",
                    f"{p50 * 1000:.1f} / {p95 * 1000:.1f} ms",
                    "target p50 ≤ 25 ms",
                )
            )

    cold = [timed([nm, "query", q], repo, env) for q in QUERIES[:10]]
    rows.append(
        (
            "`nexusmem query` as a cold CLI process, p50 (10 queries)",
            f"{statistics.median(cold) * 1000:.0f} ms",
            "target < 300 ms",
        )
    )

    # The query figures above are BM25 only (no vectors yet); the hybrid ones are in
    # benchmarks/bench_hybrid.py. The no-op re-sync is the default command, embedding check included.
    embed_seconds = timed([nm, "sync", "-q"], repo, env)
    rows.append(
        (
            f"embedding pass of those {nodes:,} nodes (builtin wordllama)",
            f"{embed_seconds:.1f} s",
            f"{nodes / embed_seconds:,.0f} texts/s",
        )
    )
    noop = statistics.median(timed([nm, "sync", "-q"], repo, env) for _ in range(7))
    rows.append(
        (
            "no-op re-sync (default `nexusmem sync`, cold CLI, median of 7)",
            f"{noop * 1000:.0f} ms",
            "target < 300 ms",
        )
    )

    version = statistics.median(timed([nm, "--version"], repo, env) for _ in range(20))
    rows.append(("`nexusmem --version` cold, median of 20", f"{version * 1000:.0f} ms", "target < 150 ms"))

    print(f"\nMachine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; history: {base}\n")
    print("| measurement | result | note |\n|---|---|---|")
    for name, value, note in rows:
        print(f"| {name} | {value} | {note} |")


if __name__ == "__main__":
    main()
