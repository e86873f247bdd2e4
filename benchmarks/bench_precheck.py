#!/usr/bin/env python3
"""precheck as a cold process with 20 staged files, on the 10,000-commit + 100,000-shell-line history.

    python benchmarks/bench_precheck.py [--dir /tmp/nexusmem-bench] [--runs 30]

Reuses DIR (repo + home) when DIR/repo/.nexusmem exists, read-only: the 20 staged files come from a
throwaway index (GIT_INDEX_FILE) holding an older tree, so the repository's own index, objects and store are
never written. Otherwise builds DIR with benchmarks/eval/make_history.py and syncs it. Target: < 250 ms.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import MAKE_HISTORY

SCRIPT = Path(sys.executable).parent / "nexusmem"
STAGED = 20


def ensure_history(base: Path) -> None:
    if (base / "repo" / ".nexusmem" / "memory.db").exists():
        return
    subprocess.run(
        [sys.executable, str(MAKE_HISTORY), str(base), "--commits", "10000", "--shell-lines", "100000"],
        check=True,
    )
    (base / "home").mkdir(exist_ok=True)
    shutil.copy(base / "shell-history.jsonl", base / "home" / "shell-history.jsonl")
    env = dict(os.environ, NEXUSMEM_HOME=str(base / "home"))
    subprocess.run([str(SCRIPT), "sync", "-q"], cwd=base / "repo", env=env, check=True)


def staged_index(repo: Path, index: Path) -> int:
    """Fill INDEX with the oldest HEAD~k tree that differs from HEAD in at least STAGED paths."""
    env = dict(os.environ, GIT_INDEX_FILE=str(index))
    for k in range(1, 200):
        subprocess.run(["git", "read-tree", f"HEAD~{k}"], cwd=repo, env=env, check=True)
        out = subprocess.run(
            ["git", "diff", "--cached", "--name-only"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        if len(out) >= STAGED:
            return len(out)
    raise SystemExit("could not find enough changed files")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/nexusmem-bench"))
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    ensure_history(args.dir)
    repo = args.dir / "repo"
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "index"
        files = staged_index(repo, index)
        env = dict(os.environ, NEXUSMEM_HOME=str(args.dir / "home"), GIT_INDEX_FILE=str(index))
        times: list[float] = []
        output = ""
        for _ in range(args.runs):
            started = time.perf_counter()
            proc = subprocess.run(
                [str(SCRIPT), "precheck"], cwd=repo, env=env, capture_output=True, text=True
            )
            times.append((time.perf_counter() - started) * 1000)
            assert proc.returncode == 0, proc.stderr
            output = proc.stderr
        baseline = []
        for _ in range(args.runs):
            started = time.perf_counter()
            subprocess.run([str(SCRIPT), "--version"], capture_output=True, check=True)
            baseline.append((time.perf_counter() - started) * 1000)
    times.sort()
    print(f"precheck, cold process, {files} staged files, {args.runs} runs on {repo}:")
    print(
        f"  median {statistics.median(times):.0f} ms, p90 {times[int(len(times) * 0.9) - 1]:.0f} ms, min {times[0]:.0f} ms"
    )
    print(f"  (nexusmem --version, the floor of a cold start: median {statistics.median(baseline):.0f} ms)")
    lines = output.splitlines()
    print(f"  {len(lines) - 1} finding(s); first: {lines[0] if lines else '-'}")


if __name__ == "__main__":
    main()
