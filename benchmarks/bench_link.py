#!/usr/bin/env python3
"""Failure → fix linking cost on a synced history: a full pass, an idle incremental run, and the run after
one new commit and two new shell commands (what a post-commit `sync --auto` does).

    python benchmarks/bench_link.py DB [--runs 3]

DB is a synced memory.db (e.g. the one `benchmarks/bench_foundation.py` leaves in
/tmp/nexusmem-bench/repo/.nexusmem/); it is copied first, never written. Not a test: numbers depend on the
machine.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from nexusmem import link
from nexusmem.nodes import Node
from nexusmem.store import open_store


def _node(
    project: str, kind: str, key: str, ts: int, meta: dict[str, object], files: tuple[str, ...] = ()
) -> Node:
    text = "make lint" if kind == "shell_command" else "fix: lint"
    return Node(
        project=project,
        kind=kind,
        source="shell" if kind == "shell_command" else "git",
        natural_key=key,
        ref=text,
        title=text,
        body=text,
        ts=ts,
        signal=0.5,
        files=files,
        meta=dict(meta),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory.db"
        shutil.copyfile(args.db, path)
        with open_store(path) as store:
            full: list[float] = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                with store.transaction():
                    summary = link.link_failures(store)
                full.append(time.perf_counter() - t0)
            print(
                f"full pass: median {statistics.median(full):.3f} s over {args.runs} run(s);"
                f" {summary.failures} failures -> {summary.retry} retry, {summary.commit} commit,"
                f" {summary.discussion} discussion"
            )
            t0 = time.perf_counter()
            with store.transaction():
                idle = link.link_recent(store)
            print(f"incremental, nothing new: {time.perf_counter() - t0:.3f} s (skipped={idle.skipped})")

            newest = store.reference_time() or 0
            project = next(store.iter_nodes("shell_command")).project_id
            fresh = [
                _node(
                    project, "shell_command", f"bench\x1f{newest + 1}", newest + 1, {"cwd": ".", "exit": 2}
                ),
                _node(
                    project,
                    "shell_command",
                    f"bench\x1f{newest + 2}",
                    newest + 60_000,
                    {"cwd": ".", "exit": 0},
                ),
                _node(project, "git_commit", "f" * 40, newest + 30_000, {}, files=("Makefile",)),
            ]
            with store.transaction():
                store.upsert(fresh)
            t0 = time.perf_counter()
            with store.transaction():
                after = link.link_recent(store)
            print(
                f"incremental after one commit and two commands: {time.perf_counter() - t0:.3f} s;"
                f" {after.failures} failures in the last ~24 h reconsidered, +{after.added} link(s)"
            )


if __name__ == "__main__":
    main()
