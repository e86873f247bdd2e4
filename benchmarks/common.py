"""What the benchmark scripts share: the generated history, the query set, the console script, a timer."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# The history generator lives in the repository, so that every benchmark re-runs from a clone.
MAKE_HISTORY = HERE / "eval" / "make_history.py"
QUERIES = [
    "stale lock files in the cache",
    "why does the parser crash on unicode paths",
    "retry budget timeouts",
    "windows line endings",
    "concurrent writers storage",
    "expired tokens auth",
    "gzip streams http",
    "keep-alive sockets network",
    "daylight saving time scheduler",
    "nested transactions index",
    "pytest tests/test_router.py",
    "mypy src/worker",
    "duplicate keys config",
    "zero-length files upload",
    "symlinked roots plugins",
    "partial reads session",
    "negative offsets search",
    "why a write-ahead log",
    "large payloads render",
    "missing config cli",
]

# Questions that take the recent-work and origin paths of retrieval (timecue.CUE_WINDOW_MS,
# runs.with_neighbours, search.first_holder): each asks the store once or twice more.
CUE_QUERIES = [
    "which router tests failed yesterday",
    "what broke in the cache recently",
    "my push was rejected just now, what did I do next",
    "what did I run just before the mypy check failed this morning",
    "when was retry_budget added",
    "the lint run that failed two hours ago",
]


# Questions that name code in compound names (camelCase, snake_case): their parts are asked in one more
# query (query.NAME_PARTS_WEIGHT).
NAME_QUERIES = [
    "why does parseConfig crash on duplicate keys in the scheduler",
    "RetryBudget timeouts in the httpClient",
    "auth_entry_0 fails with expired tokens",
    "helper_auth_1_3 returns nothing for zero-length files",
    "StaleLockFiles left behind by the cacheManager",
    "writeAheadLog keeps growing in storage",
]


def script() -> str:
    path = Path(sys.executable).parent / "nexusmem"
    return str(path) if path.exists() else shutil.which("nexusmem") or "nexusmem"


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def query_latencies(store: Any, project: str, questions: list[str], rounds: int = 5) -> list[float]:
    """Seconds of each in-process `query.run` of QUESTIONS, ROUNDS times over, sorted; every question is
    asked once first to warm the page cache."""
    from nexusmem.retrieve import query

    for q in questions:
        query.run(store, q, project=project)
    runs = []
    for _ in range(rounds):
        for q in questions:
            t = time.perf_counter()
            query.run(store, q, project=project)
            runs.append(time.perf_counter() - t)
    return sorted(runs)


def synced_dir_args(doc: str | None, rounds: int, questions: bool = False) -> argparse.Namespace:
    """--dir (a history a benchmark synced, e.g. bench_foundation.py's /tmp/nexusmem-bench) and --rounds
    (default ROUNDS), and with QUESTIONS any number of --question, parsed; NEXUSMEM_HOME and HOME pointed
    inside DIR, so that nothing of the operator's own memory or shell history is read."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/nexusmem-bench"))
    ap.add_argument("--rounds", type=int, default=rounds)
    if questions:
        ap.add_argument("--question", action="append", default=[], help="also time this question alone")
    args = ap.parse_args()
    os.environ["NEXUSMEM_HOME"] = str(args.dir / "home")
    os.environ["HOME"] = str(args.dir / "user-home")
    return args
