#!/usr/bin/env python3
"""What the git hooks add to `git commit`: median over 50 commits without hooks, with the post-commit
auto-sync hook, and with both hooks (pre-commit precheck too). Target for the post-commit hook: < 30 ms.

    python benchmarks/bench_commit_hook.py [--commits 50]

Runs in a temporary repository with a synced memory; HOME and NEXUSMEM_HOME point at temp dirs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = Path(sys.executable).parent / "nexusmem"


def git(repo: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def commits(repo: Path, env: dict[str, str], label: str, count: int, *, settled: bool = False) -> list[float]:
    """Time COUNT commits. SETTLED waits for the background sync between commits: what one commit costs
    when nothing else runs (the usual case); otherwise back to back, each competing with earlier syncs."""
    times = []
    for n in range(count):
        if settled:
            settle(repo)
        path = repo / f"{label}-{n}.txt"
        path.write_text(f"{n}\n", encoding="utf-8")
        git(repo, env, "add", path.name)
        started = time.perf_counter()
        git(repo, env, "commit", "-q", "-m", f"feat: {label} {n}")
        times.append((time.perf_counter() - started) * 1000)
    return times


def settle(repo: Path, timeout: float = 120) -> None:
    """Wait for the detached syncs to finish, so they do not slow down the next series."""
    state = repo / ".nexusmem"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = subprocess.run(["pgrep", "-f", "nexusmem sync --auto"], capture_output=True).returncode == 0
        if not busy and not (state / "sync.pending").exists():
            return
        time.sleep(0.5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        home = base / "home"
        home.mkdir()
        (home / ".gitconfig").write_text(
            "[user]\n\tname = Bench\n\temail = bench@example.com\n", encoding="utf-8"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(HOME=str(home), NEXUSMEM_HOME=str(home / ".nexusmem"), GIT_CONFIG_NOSYSTEM="1")
        repo = base / "repo"
        repo.mkdir()
        git(repo, env, "init", "-q", "-b", "main")
        (repo / "README.md").write_text("# bench\n", encoding="utf-8")
        git(repo, env, "add", "README.md")
        git(repo, env, "commit", "-q", "-m", "init")
        subprocess.run([str(SCRIPT), "sync", "-q"], cwd=repo, env=env, check=True)

        plain = commits(repo, env, "plain", args.commits)
        subprocess.run(
            [str(SCRIPT), "hook", "git-post", "install"], cwd=repo, env=env, check=True, capture_output=True
        )
        post = commits(repo, env, "post", args.commits)
        settle(repo)
        post_settled = commits(repo, env, "settled", args.commits, settled=True)
        settle(repo)
        subprocess.run(
            [str(SCRIPT), "hook", "git", "install"], cwd=repo, env=env, check=True, capture_output=True
        )
        both = commits(repo, env, "both", args.commits)
        settle(repo)
        runs = (repo / ".nexusmem" / "auto-sync.log").read_text(encoding="utf-8").count("sync run ")

    base_ms = statistics.median(plain)
    print(f"git commit, median of {args.commits} commits each:")
    print(f"  no hooks:                       {base_ms:6.1f} ms")
    print(
        f"  post-commit auto-sync hook:     {statistics.median(post):6.1f} ms (+{statistics.median(post) - base_ms:.1f} ms)"
    )
    print(
        f"  post-commit hook, each commit after the previous sync settled:"
        f" {statistics.median(post_settled):6.1f} ms (+{statistics.median(post_settled) - base_ms:.1f} ms)"
    )
    print(
        f"  + pre-commit precheck hook:     {statistics.median(both):6.1f} ms (+{statistics.median(both) - base_ms:.1f} ms)"
    )
    print(f"  auto-sync runs for {3 * args.commits} hooked commits: {runs}")


if __name__ == "__main__":
    main()
