"""Time the git collectors' first sync against raw git, plus the no-op re-sync and peak RSS.

    python3 benchmarks/eval/make_history.py /tmp/hist10k --commits 10000 --shell-lines 10
    .venv/bin/python benchmarks/bench_git_scan.py /tmp/hist10k/repo [--runs 3]

Baseline: `git log --numstat` + `git log -p -200` (their output discarded). Ours: iterate every node of
GitSource + DiffSource with no cursor (what a first sync asks of them). The target is ratio <= 3.
Peak RSS is this process's high-water mark (Linux: VmHWM; elsewhere ru_maxrss).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexusmem.config import defaults
from nexusmem.sources.base import ScanContext
from nexusmem.sources.git.source import DiffSource, GitSource


def peak_rss_mb() -> float:
    """This process's peak resident set size in MB."""
    try:
        with open("/proc/self/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def raw_git(root: Path) -> float:
    """Seconds for the two raw git commands whose work our scans do."""
    start = time.perf_counter()
    for args in (["log", "--numstat"], ["log", "-p", "-200"]):
        subprocess.run(["git", *args], cwd=root, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def ours(root: Path) -> tuple[float, int, int, dict[str, str | None]]:
    """Seconds, commit nodes, diff nodes and the cursors for a first sync of both sources."""
    start = time.perf_counter()
    counts: list[int] = []
    cursors: dict[str, str | None] = {}
    for source in (GitSource(), DiffSource()):
        result = source.scan(ScanContext(root=root, project_id="bench", config=defaults()))
        counts.append(sum(1 for _ in result.nodes))
        cursors[source.name] = result.cursor
    return time.perf_counter() - start, counts[0], counts[1], cursors


def noop(root: Path, cursors: dict[str, str | None]) -> float:
    """Seconds for a re-sync with nothing new (both sources, their cursors from the first sync)."""
    start = time.perf_counter()
    for source in (GitSource(), DiffSource()):
        result = source.scan(
            ScanContext(root=root, project_id="bench", config=defaults(), cursor=cursors[source.name])
        )
        assert not list(result.nodes)
    return time.perf_counter() - start


def main() -> None:
    """Run the comparison and print one line per figure."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("repo", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    root: Path = args.repo
    raw_times, our_times, noop_times = [], [], []
    commits = diffs = 0
    for _ in range(args.runs):
        raw_times.append(raw_git(root))
        seconds, commits, diffs, cursors = ours(root)
        our_times.append(seconds)
        noop_times.append(noop(root, cursors))
    raw_best, our_best = min(raw_times), min(our_times)
    print(f"repo: {root}  commits: {commits}  diff nodes: {diffs}  (best of {args.runs})")
    print(f"raw git log --numstat + git log -p -200: {raw_best:.3f} s")
    print(f"GitSource + DiffSource first sync:       {our_best:.3f} s")
    print(f"ratio: {our_best / raw_best:.2f}x (target <= 3x)")
    print(f"no-op re-sync (both sources):            {min(noop_times) * 1000:.1f} ms (target < 300 ms)")
    print(f"peak RSS of this process:                {peak_rss_mb():.1f} MB (target well under 200 MB)")


if __name__ == "__main__":
    main()
