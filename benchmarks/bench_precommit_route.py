"""What the pre-commit framework route costs a user: the environment it builds and the first commit's time.

    python benchmarks/bench_precommit_route.py [--rev REV] [--source REPO]

Clones SOURCE (default: this checkout) at REV (default: HEAD) as the hook repository, makes a fresh
repository with a .pre-commit-config.yaml using nexusmem-precheck and nexusmem-sync, runs
`pre-commit install` with an empty PRE_COMMIT_HOME, and times the first `git commit` (which builds whatever
environment the hooks declare) and a second one, with the nexusmem next to this Python on PATH, then measures PRE_COMMIT_HOME with `du`. The pre-commit
used is the one next to this Python (the test extra installs it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def du_mb(path: Path) -> float:
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--source", default=str(HERE))
    args = parser.parse_args()
    pre_commit = Path(sys.executable).parent / "pre-commit"
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env |= {"HOME": str(base / "home"), "NEXUSMEM_HOME": str(base / "home" / ".nexusmem")}
        env |= {"PRE_COMMIT_HOME": str(base / "cache"), "PRE_COMMIT_COLOR": "never"}
        env |= {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b"}
        env |= {"GIT_COMMITTER_EMAIL": "b@x"}
        # The user's own install on PATH (the `language: script` hooks run it; the python route ignores it).
        env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
        (base / "home").mkdir()
        hooks = base / "hooks-src"
        subprocess.run(["git", "clone", "-q", args.source, str(hooks)], check=True, env=env)
        sha = run(["git", "rev-parse", args.rev], Path(args.source), env).stdout.strip()
        repo = base / "repo"
        repo.mkdir()
        run(["git", "init", "-q", "-b", "main"], repo, env)
        (repo / ".pre-commit-config.yaml").write_text(
            f"repos:\n  - repo: {hooks}\n    rev: {sha}\n    hooks:\n"
            "      - id: nexusmem-precheck\n      - id: nexusmem-sync\n",
            encoding="utf-8",
        )
        (repo / "a.py").write_text("x = 1\n", encoding="utf-8")
        installed = run(
            [str(pre_commit), "install", "--hook-type", "pre-commit", "--hook-type", "post-commit"], repo, env
        )
        assert installed.returncode == 0, installed.stdout + installed.stderr
        run(["git", "add", "-A"], repo, env)
        t0 = time.perf_counter()
        first = run(["git", "commit", "-q", "-m", "first"], repo, env)
        first_s = time.perf_counter() - t0
        assert first.returncode == 0, first.stdout + first.stderr
        (repo / "a.py").write_text("x = 2\n", encoding="utf-8")
        run(["git", "add", "-A"], repo, env)
        t0 = time.perf_counter()
        second = run(["git", "commit", "-q", "-m", "second"], repo, env)
        second_s = time.perf_counter() - t0
        assert second.returncode == 0, second.stdout + second.stderr
        print(f"hook repository {args.source} @ {sha[:10]}")
        print(f"first commit (builds the hook environment): {first_s:.2f} s")
        print(f"second commit: {second_s:.2f} s")
        print(f"PRE_COMMIT_HOME after both: {du_mb(base / 'cache'):.1f} MB")
        print("first commit's hook output:\n  " + (first.stdout + first.stderr).strip().replace("\n", "\n  "))


if __name__ == "__main__":
    main()
