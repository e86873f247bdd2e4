#!/usr/bin/env python3
"""Session summaries' cost without the model: what a sync pays to decide that nothing needs summarising.

    python benchmarks/bench_sessions.py [--sessions 1000] [--turns 20] [--runs 3]

Builds a fresh memory.db in a temp dir holding SESSIONS settled sessions of TURNS conversation turns each,
stores a summary for every one (made from the real prompt, so the memo holds), then times the session
source's scan:

- steady state: nothing changed (the fingerprint answers; no turn is read);
- memo: every session's fingerprint moved but no prompt did (every session's turns read, every prompt built
  and hashed; still no model call);
- and the cost of building one prompt.

Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from nexusmem.config import defaults
from nexusmem.nodes import Node
from nexusmem.sources import session
from nexusmem.sources.base import ScanContext
from nexusmem.store import open_store

PROJECT = "bench"


def turns(sessions: int, per: int, start: int) -> list[Node]:
    out = []
    for s in range(sessions):
        for t in range(per):
            question = f"Session {s} turn {t}: why does the cache evict entries early under load?"
            out.append(
                Node(
                    project=PROJECT,
                    kind="conversation_turn",
                    source="conversation",
                    natural_key=f"claude-code:s{s}:{t}",
                    ref=f"claude-code:s{s}#{t}",
                    title=question[:80],
                    body=question + "\n\n" + "The eviction policy counts stale entries twice. " * 12,
                    ts=start + s * 3_600_000 + t * 60_000,
                    signal=0.5,
                    meta={"agent": "claude-code", "session_id": f"s{s}", "turn": t, "question": question},
                )
            )
    return out


def scan_seconds(
    store: object, config: dict[str, object], cursor: str | None
) -> tuple[float, int, str | None]:
    """Time one scan of the session source (nodes consumed, nothing stored): seconds, nodes, its cursor."""
    t0 = time.perf_counter()
    ctx = ScanContext(
        root=Path("."), project_id=PROJECT, config=config, cursor=cursor, known={"conversations": store}
    )
    result = session.SessionSource().scan(ctx)
    n = sum(1 for _ in result.nodes)
    return time.perf_counter() - t0, n, result.cursor


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    config = defaults()
    config["sources"]["session"].update(enabled=True, url="http://127.0.0.1:9", maxSessions=args.sessions)
    start = int(time.time() * 1000) - (args.sessions + 2) * 3_600_000
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "memory.db", create=True) as store:
        with store.transaction():
            store.upsert(turns(args.sessions, args.turns, start))
        t0 = time.perf_counter()
        work = session.plan(store, PROJECT, config)
        built = time.perf_counter() - t0
        print(
            f"{args.sessions} session(s) x {args.turns} turn(s): first plan (read every turn, build every prompt)"
            f" {built:.3f} s, {built / max(1, len(work.pending)) * 1000:.2f} ms a session"
        )
        with store.transaction():
            store.upsert(
                session.summary_node(PROJECT, p, work.model, "Cache eviction under load", "- a summary")
                for p in work.pending
            )
        planned = [scan_seconds(store, config, None) for _ in range(args.runs)]
        print(
            f"full plan, every summary up to date: median {statistics.median(p[0] for p in planned):.3f} s,"
            f" {planned[0][1]} node(s) written, 0 model calls"
        )
        cursor = planned[-1][2]
        steady = [scan_seconds(store, config, cursor) for _ in range(args.runs)]
        print(
            f"steady state (nothing written, nothing due since the last sync): median"
            f" {statistics.median(p[0] for p in steady):.4f} s, {steady[0][1]} node(s) written"
        )
        config["sources"]["session"]["maxPromptChars"] = 12_001  # moves every fingerprint, no prompt
        memo = [scan_seconds(store, config, None) for _ in range(args.runs)]
        print(
            f"every fingerprint moved, no prompt: median {statistics.median(p[0] for p in memo):.3f} s,"
            f" {memo[0][1]} summary node(s) re-used, 0 model calls"
        )


if __name__ == "__main__":
    main()
