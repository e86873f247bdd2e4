#!/usr/bin/env python3
"""The sync after a commit (what the post-commit hook runs), checkouts side by side: an amend of the last
commit, or with --new a new commit, or with --back N a return to the branch after a sync at HEAD~N (a
tag checked out, a bisect step: the commits in between are all in memory already).

    python benchmarks/bench_rewrite_sync.py REPO [--rounds 5] [--new | --back N] CHECKOUT [CHECKOUT ...]

REPO is cloned once per CHECKOUT into a temporary folder, and each clone gets a first sync by its checkout
(PYTHONPATH=CHECKOUT, untimed). Then, ROUNDS times, each CHECKOUT in turn amends its clone's last commit
(`git commit --amend --allow-empty`, a new message: a new sha; with --new, a new commit of a new file)
and runs `nexusmem sync -q --no-embed`, which is timed (wall, and CPU of the sync with its git children). Alternating rounds put the checkouts under the
same load on a shared machine. HOME and NEXUSMEM_HOME point at temporary folders.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_first_sync import load_average, run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", type=Path)
    ap.add_argument("checkouts", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--new", action="store_true", help="time the sync after a new commit, not an amend")
    ap.add_argument(
        "--back", type=int, default=0, help="time the sync back at the branch after one at HEAD~N"
    )
    args = ap.parse_args()
    nm = str(Path(sys.executable).parent / "nexusmem")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "home").mkdir()
        env = {
            **os.environ,
            "NEXUSMEM_HOME": str(Path(tmp) / "home"),
            "HOME": tmp,
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        }
        clones: dict[str, Path] = {}
        for n, checkout in enumerate(args.checkouts):
            clone = Path(tmp) / f"clone{n}"
            subprocess.run(["git", "clone", "-q", str(args.repo.resolve()), str(clone)], check=True, env=env)
            subprocess.run(
                [nm, "sync", "-q", "--no-embed"], cwd=clone, env={**env, "PYTHONPATH": checkout}, check=True
            )
            clones[checkout] = clone
        runs: dict[str, list[tuple[float, float]]] = {c: [] for c in args.checkouts}
        for round_ in range(args.rounds):
            for checkout, clone in clones.items():
                sync = [nm, "sync", "-q", "--no-embed"]
                if args.back:
                    away = ["git", "checkout", "-q", f"HEAD~{args.back}"]
                    subprocess.run(away, cwd=clone, env=env, check=True)
                    subprocess.run(
                        sync, cwd=clone, env={**env, "PYTHONPATH": checkout}, check=True
                    )  # untimed
                    subprocess.run(["git", "checkout", "-q", "-"], cwd=clone, env=env, check=True)
                    runs[checkout].append(run(sync, clone, {**env, "PYTHONPATH": checkout}))
                    continue
                if args.new:
                    (clone / f"bench-{round_}.txt").write_text(f"{round_}\n", encoding="utf-8")
                    subprocess.run(["git", "add", f"bench-{round_}.txt"], cwd=clone, env=env, check=True)
                    change = ["git", "commit", "-q", "-m", f"bench: commit {round_}"]
                else:
                    change = [
                        "git",
                        "commit",
                        "-q",
                        "--amend",
                        "--allow-empty",
                        "-m",
                        f"bench: amended {round_}",
                    ]
                subprocess.run(change, cwd=clone, env=env, check=True)
                runs[checkout].append(run(sync, clone, {**env, "PYTHONPATH": checkout}))
        commits = subprocess.run(
            ["git", "rev-list", "--count", "HEAD"],
            cwd=next(iter(clones.values())),
            capture_output=True,
            text=True,
        ).stdout.strip()
    print(f"{args.repo}: {commits} commits; load average {load_average()}")
    what = f"a return from HEAD~{args.back}" if args.back else "a new commit" if args.new else "an amend"
    for checkout, got in runs.items():
        walls, cpus = [w for w, _ in got], [c for _, c in got]
        print(
            f"{checkout}: sync after {what}, wall median {statistics.median(walls):.2f} s (best"
            f" {min(walls):.2f}), CPU median {statistics.median(cpus):.2f} s;"
            f" runs {', '.join(f'{w:.2f}/{c:.2f}' for w, c in got)}"
        )


if __name__ == "__main__":
    main()
