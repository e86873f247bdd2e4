#!/usr/bin/env python3
"""Cold CLI processes side by side: this checkout and, with --against REF, the code at git REF, alternately.

    python benchmarks/bench_cold.py --dir DIR [--bm25-dir DIR2] [--against main] [--runs 15]
        [--only version,precheck,precheck-tail,query,query-tail,noop-sync]

DIR holds `repo/` (synced, with `.nexusmem/`) and `home/` (NEXUSMEM_HOME, whose shell-history.jsonl the
store's shell cursor has read), as benchmarks/bench_precheck.py builds them. BM25-DIR is the same layout on
a store without vectors (embedding provider "none"), for the cold BM25 query; DIR is used when not given. A
copy of DIR becomes one by setting `embedding.provider` to "none" in its config.json and running `nexusmem
sync` once: the sync drops the vectors, which until then are still searched (the query embeds the question).

Rows:
  version        `nexusmem --version`
  precheck       `nexusmem precheck`, 20 staged files (a throwaway GIT_INDEX_FILE), hook log fully synced
  precheck-tail  the same with 200 unsynced hook-log lines (appended to home/shell-history.jsonl for the
                 run and truncated away afterwards, so the store's cursor stays valid): test runs of the
                 staged files with a secret in them, every fourth one failing
  precheck-tail-ok  the same 200 lines, all passing (the usual commit after a green test run)
  precheck-agent-tail  the same with 20,000 unsynced lines, an agent's day without a sync: every third a
                 failing test run of a file that is not staged (with a secret), the others passing builds
  query          `nexusmem query Q` on BM25-DIR, Q cycling through the 20 benchmark questions
  query-tail     the same with two unsynced hook-log lines in BM25-DIR's repository (appended for the run,
                 truncated away afterwards): a failing test run, then the `nexusmem query` line the hook
                 logs after a query; the query notes the one it did not search
  noop-sync      `nexusmem sync -q` on DIR, nothing new (writes the store's sync times, nothing else)

Each tree gets its own copy of each store (a store migrated by the newer code is refused by the older one),
renamed into place for its runs, so both trees see the same repository, hook log and cursors; the stores
in DIR are put back untouched at the end.

Each tree runs under the venv's interpreter with PYTHONPATH=<tree> and PYTHONDONTWRITEBYTECODE unset, after
`compileall` (what a pip install gives users). Rounds alternate which tree goes first, so a loaded machine
slows both alike; the table shows medians and p90s of each side.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from bench_precheck import staged_index

from common import QUERIES

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent
LAUNCH = "import sys\nfrom nexusmem.cli.main import main\nsys.exit(main())\n"
ROWS = (
    "version",
    "precheck",
    "precheck-tail",
    "precheck-tail-ok",
    "precheck-agent-tail",
    "query",
    "query-tail",
    "noop-sync",
)
AGENT_TAIL_LINES = 20_000
TAIL_LINES = 200


def export(ref: str, dest: Path) -> Path:
    """The package as it is at REF, extracted under DEST (no worktree, nothing registered in git)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref, "nexusmem"], cwd=CHECKOUT, capture_output=True, check=True
    ).stdout
    dest.mkdir(parents=True, exist_ok=True)
    tar_path = dest / "src.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(dest, filter="data")
    return dest


def compiled(tree: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "nexusmem")], env=env, check=True)


def tail_lines(repo: Path, index: Path, now_ms: int, failing: bool = True) -> str:
    """TAIL_LINES hook-log lines in REPO: test runs naming the staged files (and a secret the findings must
    not show), every fourth one failing."""
    env = dict(os.environ, GIT_INDEX_FILE=str(index))
    files = subprocess.run(
        ["git", "diff", "--cached", "--name-only"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    out = []
    for i in range(TAIL_LINES):
        record = {
            "ts": now_ms - (TAIL_LINES - i) * 1000,
            "cwd": str(repo),
            "exit": 1 if failing and i % 4 == 0 else 0,
            "duration_ms": 1200,
            "command": f"pytest {files[i % len(files)]} -k case_{i} --api-key=sk-{i:040d}",
            "shell": "bash",
            "session": "bench",
            "v": 1,
        }
        out.append(json.dumps(record))
    return "\n".join(out) + "\n"


def agent_tail(repo: Path, now_ms: int) -> str:
    """AGENT_TAIL_LINES hook-log lines in REPO: every third a failing test run of a module that is not staged
    (a secret in it), the others passing builds."""
    out = []
    for i in range(AGENT_TAIL_LINES):
        failing = i % 3 == 0
        command = (
            f"pytest tests/test_mod_{i % 5000}.py -k case_{i} --api-key=sk-{i:040d}"
            if failing
            else f"make build TARGET={i}"
        )
        record = {"ts": now_ms - (AGENT_TAIL_LINES - i) * 1000, "cwd": str(repo), "exit": 1 if failing else 0}
        out.append(json.dumps({**record, "command": command, "shell": "bash", "session": "agent", "v": 1}))
    return "\n".join(out) + "\n"


def query_tail(repo: Path, now_ms: int) -> str:
    """What the hook log holds past the cursor when a query follows a test run: the failing run, then the
    line of the `nexusmem query` before it."""
    base = {"cwd": str(repo), "duration_ms": 900, "shell": "bash", "session": "bench", "v": 1}
    run = {**base, "ts": now_ms - 60_000, "exit": 1, "command": "pytest tests/test_router.py -k case_9"}
    asked = {
        **base,
        "ts": now_ms - 30_000,
        "exit": 0,
        "command": 'nexusmem query "which router tests failed"',
    }
    return json.dumps(run) + "\n" + json.dumps(asked) + "\n"


DB_FILES = ("memory.db", "memory.db-wal", "memory.db-shm")


class Stores:
    """Each tree's own copy of the stores in DIRS, renamed into place for its runs (no copy per run); the
    originals are parked meanwhile and put back by restore(), untouched (no migration, no sync)."""

    def __init__(self, dirs: list[Path], trees: list[str], spare: Path) -> None:
        self.states = [d / "repo" / ".nexusmem" for d in dict.fromkeys(dirs)]
        self.spare = spare
        self.current: str | None = None
        for i, state in enumerate(self.states):
            for name in DB_FILES:
                if (state / name).exists():
                    for tree in trees:
                        shutil.copy2(state / name, self.slot(i, tree, name))
                    os.replace(state / name, self.slot(i, "original", name))

    def slot(self, i: int, tree: str, name: str) -> Path:
        return self.spare / f"{i}-{tree.replace('/', '_')}-{name}"

    def use(self, tree: str) -> None:
        if tree == self.current:
            return
        for i, state in enumerate(self.states):
            for name in DB_FILES:
                live, wanted = state / name, self.slot(i, tree, name)
                if live.exists() and self.current is not None:
                    os.replace(live, self.slot(i, self.current, name))
                if wanted.exists():
                    os.replace(wanted, live)
        self.current = tree

    def restore(self) -> None:
        self.use("original")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/nexusmem-bench"))
    ap.add_argument("--bm25-dir", type=Path, default=None)
    ap.add_argument("--against", metavar="REF", help="also time the code at git REF, alternately")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--only", default=",".join(ROWS), help="comma-separated rows (default: all)")
    args = ap.parse_args()
    rows = [r for r in args.only.split(",") if r]
    unknown = set(rows) - set(ROWS)
    if unknown:
        raise SystemExit(f"unknown row(s): {', '.join(sorted(unknown))}; known: {', '.join(ROWS)}")
    bm25_dir = args.bm25_dir or args.dir
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        trees: dict[str, Path] = {"this": CHECKOUT}
        if args.against:
            trees[args.against] = export(args.against, tmp / "against")
        for tree in trees.values():
            compiled(tree)
        spare = tmp / "stores"
        spare.mkdir()
        stores = Stores([args.dir, bm25_dir], list(trees), spare)
        launcher = tmp / "nexusmem"
        launcher.write_text(LAUNCH, encoding="utf-8")
        index = tmp / "index"
        files = staged_index(args.dir / "repo", index)
        log = args.dir / "home" / "shell-history.jsonl"
        logs = {"query-tail": bm25_dir / "home" / "shell-history.jsonl"}
        now = int(time.time() * 1000)
        extra = {
            "precheck-tail": tail_lines(args.dir / "repo", index, now).encode(),
            "precheck-tail-ok": tail_lines(args.dir / "repo", index, now, failing=False).encode(),
            "precheck-agent-tail": agent_tail(args.dir / "repo", now).encode(),
            "query-tail": query_tail(bm25_dir / "repo", now).encode(),
        }

        def command(row: str, i: int) -> tuple[list[str], Path, dict[str, str]]:
            home = args.dir / "home"
            repo = args.dir / "repo"
            env = dict(base_env, NEXUSMEM_HOME=str(home))
            if row == "version":
                return ["--version"], repo, env
            if row.startswith("precheck"):
                return ["precheck"], repo, dict(env, GIT_INDEX_FILE=str(index))
            if row.startswith("query"):
                env["NEXUSMEM_HOME"] = str(bm25_dir / "home")
                return ["query", QUERIES[i % len(QUERIES)]], bm25_dir / "repo", env
            return ["sync", "-q"], repo, env

        times: dict[tuple[str, str], list[float]] = {}
        outputs: dict[tuple[str, str], str] = {}

        def run(row: str, i: int, name: str, tree: Path) -> float:
            argv, cwd, env = command(row, i)
            env["PYTHONPATH"] = str(tree)
            stores.use(name)
            started = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, str(launcher), *argv], cwd=cwd, env=env, capture_output=True
            )
            elapsed = (time.perf_counter() - started) * 1000
            if proc.returncode != 0:
                raise SystemExit(f"{name} {row} failed: {proc.stderr.decode()[-2000:]}")
            outputs[(row, name)] = (proc.stdout + proc.stderr).decode()
            if "tail" in row and "sk-0000" in outputs[(row, name)]:
                raise SystemExit(f"{name} showed an unredacted secret from the unsynced tail")
            return elapsed

        try:
            for row in rows:
                row_log = logs.get(row, log)
                size = row_log.stat().st_size
                if row in extra:
                    with row_log.open("ab") as f:
                        f.write(extra[row])
                try:
                    for name, tree in trees.items():  # untimed: page cache, a migration, .pyc checks
                        run(row, 0, name, tree)
                    for i in range(args.runs):
                        order = list(trees.items())
                        if i % 2:
                            order.reverse()
                        for name, tree in order:
                            times.setdefault((row, name), []).append(run(row, i, name, tree))
                finally:
                    if row in extra:
                        os.truncate(row_log, size)
        finally:
            stores.restore()

    print(f"cold CLI processes, {args.runs} runs each, alternating; {files} staged files for precheck")
    print(f"{'row':<17} " + "  ".join(f"{name[:20]:>22}" for name in trees))
    for row in rows:
        cells = []
        for name in trees:
            t = sorted(times[(row, name)])
            cells.append(f"{statistics.median(t):7.0f} ms (p90 {t[int(len(t) * 0.9) - 1]:4.0f})")
        print(f"{row:<17} " + "  ".join(f"{c:>22}" for c in cells))
    for row in rows:
        first = outputs[(row, "this")].splitlines()
        print(f"  {row}: {len(first)} output line(s); last: {first[-1][:100] if first else '-'}")
    if args.against:
        for row in rows:
            outs = {outputs[(row, name)] for name in trees}
            if len(outs) > 1 and row != "version":
                print(f"note: {row} printed different output in the two trees")


if __name__ == "__main__":
    main()
