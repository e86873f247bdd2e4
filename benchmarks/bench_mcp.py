#!/usr/bin/env python3
"""MCP server benchmarks (issue 6): spawn → initialize, and tool round trips over stdio on a 10,000-commit history.

    python benchmarks/bench_mcp.py [--dir /tmp/nexusmem-bench] [--rounds 10]
    python benchmarks/bench_mcp.py --start-only   # spawn → initialize, and → first tools/list; no history

Uses DIR/repo with its memory when DIR/repo/.nexusmem exists (read-only: nothing is synced); otherwise builds the
history with benchmarks/eval/make_history.py and syncs it once. Drives the installed `nexusmem mcp` script next
to this Python with the SDK's stdio client, as an agent would. Prints a Markdown table. Not a test: numbers
depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from common import HERE, MAKE_HISTORY, QUERIES, script


def prepare(base: Path, commits: int, shell_lines: int) -> tuple[Path, dict[str, str]]:
    repo, home = base / "repo", base / "home"
    env = {**os.environ, "NEXUSMEM_HOME": str(home)}
    if (repo / ".nexusmem" / "memory.db").exists():
        return repo, env
    if not repo.exists():
        subprocess.run(
            [
                sys.executable,
                str(MAKE_HISTORY),
                str(base),
                "--commits",
                str(commits),
                "--shell-lines",
                str(shell_lines),
            ],
            check=True,
        )
    home.mkdir(exist_ok=True)
    shutil.copy(base / "shell-history.jsonl", home / "shell-history.jsonl")
    subprocess.run([script(), "-C", str(repo), "sync", "--quiet"], env=env, check=True)
    return repo, env


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


async def spawn_to_initialize(env: dict[str, str], cwd: Path) -> float:
    params = StdioServerParameters(command=script(), args=["mcp"], env=env, cwd=str(cwd))
    start = time.perf_counter()
    with open(os.devnull, "w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return time.perf_counter() - start


async def spawn_to_tools(env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Spawn → initialize answered, and → the first tools/list answered (which waits for the SDK import)."""
    params = StdioServerParameters(command=script(), args=["mcp"], env=env, cwd=str(cwd))
    start = time.perf_counter()
    with open(os.devnull, "w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            initialized = time.perf_counter() - start
            await session.list_tools()
            return initialized, time.perf_counter() - start


async def _no_validation(self: ClientSession, name: str, result: Any) -> None:
    return None


async def round_trips(
    env: dict[str, str], repo: Path, rounds: int, validate: bool = True
) -> dict[str, list[float]]:
    """Tool round trips as the SDK's Python client sees them. That client checks every structured result
    against the tool's output schema with `jsonschema` (pure Python: ~15 ms for a 2,000-token search result
    here); VALIDATE=False skips that check to show what the server and the transport cost."""
    if not validate:
        ClientSession.validate_tool_result = _no_validation  # type: ignore[method-assign]
    params = StdioServerParameters(command=script(), args=["mcp"], env=env, cwd=str(repo))
    timings: dict[str, list[float]] = {"search": [], "get_memory": [], "get_status": []}
    root = str(repo)
    with open(os.devnull, "w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            ids: list[str] = []
            for query in QUERIES:  # warm-up: page cache, first store open, code paths
                result = await session.call_tool("search_memory", {"projectRoot": root, "query": query})
                assert not result.is_error and result.structured_content is not None, result.content
                ids += [item["id"] for item in result.structured_content["items"][:2]]
            for _ in range(rounds):
                for query in QUERIES:
                    start = time.perf_counter()
                    result = await session.call_tool("search_memory", {"projectRoot": root, "query": query})
                    timings["search"].append(time.perf_counter() - start)
                    assert not result.is_error
            for node_id in ids:
                start = time.perf_counter()
                result = await session.call_tool("get_memory", {"projectRoot": root, "id": node_id})
                timings["get_memory"].append(time.perf_counter() - start)
                assert not result.is_error
            for _ in range(20):
                start = time.perf_counter()
                result = await session.call_tool("get_status", {"projectRoot": root})
                timings["get_status"].append(time.perf_counter() - start)
                assert not result.is_error
    return timings


def in_process_search(repo: Path, rounds: int) -> list[float]:
    """The library's own cost for the same queries (no process, no protocol), for comparison."""
    sys.path.insert(0, str(HERE.parent))
    from nexusmem import project
    from nexusmem.retrieve import query

    proj = project.load(repo)
    out: list[float] = []
    for _ in range(rounds):
        for text in QUERIES:
            start = time.perf_counter()
            with proj.open_store() as store:
                query.run(store, text, project=proj.root.name)
            out.append(time.perf_counter() - start)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/nexusmem-bench"))
    ap.add_argument("--commits", type=int, default=10_000)
    ap.add_argument("--shell-lines", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=10, help="passes over the query set")
    ap.add_argument("--start-only", action="store_true", help="only time the server's start (no history)")
    args = ap.parse_args()
    if args.start_only:
        args.dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "NEXUSMEM_HOME": str(args.dir / "home")}
        pairs = [anyio.run(spawn_to_tools, env, args.dir) for _ in range(7)]
        for label, values in (
            ("initialize", [p[0] for p in pairs]),
            ("first tools/list", [p[1] for p in pairs]),
        ):
            print(
                f"spawn → {label}: median {ms(statistics.median(values))}, min {ms(min(values))}, max {ms(max(values))}"
            )
        return
    repo, env = prepare(args.dir, args.commits, args.shell_lines)
    os.environ["NEXUSMEM_HOME"] = env["NEXUSMEM_HOME"]

    starts = [anyio.run(spawn_to_initialize, env, repo) for _ in range(7)]
    timings = anyio.run(round_trips, env, repo, args.rounds)
    unchecked = anyio.run(round_trips, env, repo, args.rounds, False)
    library = in_process_search(repo, args.rounds)

    rows: list[tuple[str, str, str]] = [
        (
            "spawn `nexusmem mcp` → initialize answered (median of 7)",
            ms(statistics.median(starts)),
            f"min {ms(min(starts))}, max {ms(max(starts))}; target < 1 s",
        )
    ]
    search = timings["search"]
    from nexusmem import project

    with project.load(repo).open_store(readonly=True) as store:
        mode = "hybrid" if store.has_vectors() else "BM25"  # what the store holds decides the search
    rows.append(
        (
            f"search_memory round trip, {mode} (p50 of {len(search)})",
            ms(pct(search, 0.5)),
            f"p95 {ms(pct(search, 0.95))}, max {ms(max(search))}; target < 50 ms",
        )
    )
    bare = unchecked["search"]
    rows.append(
        (
            "… the same without the Python client's jsonschema check of the result",
            ms(pct(bare, 0.5)),
            f"p95 {ms(pct(bare, 0.95))}: server + stdio transport; a client in another language pays its own validator instead",
        )
    )
    rows.append(
        (
            "same queries in-process (query.run + store open, p50)",
            ms(pct(library, 0.5)),
            f"p95 {ms(pct(library, 0.95))}: the library's share of the round trip",
        )
    )
    for name in ("get_memory", "get_status"):
        values: list[Any] = timings[name]
        rows.append(
            (
                f"{name} round trip (p50 of {len(values)})",
                ms(pct(values, 0.5)),
                f"p95 {ms(pct(values, 0.95))}",
            )
        )

    print(f"MCP server on {repo} ({sys.platform}, Python {sys.version.split()[0]})\n")
    print("| measure | value | notes |\n|---|---|---|")
    for name, value, note in rows:
        print(f"| {name} | {value} | {note} |")


if __name__ == "__main__":
    main()
