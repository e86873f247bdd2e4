#!/usr/bin/env python3
"""Latency of the questions the name and release rules answer, on real synced stores.

    python benchmarks/bench_name_questions.py --work W [--set fresh8 ...] [--rounds 5] [--list FILE]

W is the work dir of `benchmarks/eval_real.py --work W` (its stores: W/<NAME>-<pin>/repo), or a dir of such
work dirs, one per set (W/<set>/<NAME>-<pin>/repo). Every labelled question of those sets that asks where
a name came from, what it is for, when a project started using something, when a name was removed, or that
names a release of the project (retrieve.intent) is asked ROUNDS times of its own store, in-process, with
vectors (what `nexusmem query` runs, minus packing); the median of each question, then p50 / p95 over the
questions, are printed. To compare two versions on one store, run it with PYTHONPATH at each checkout and
the same --list FILE: the first run writes the questions it chose there, later runs ask those (an older
version's rules would choose fewer).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "eval" / "real"


def name_questions(text: str) -> bool:
    from nexusmem.retrieve import intent

    checks = ("origin_name", "purpose_name", "adopted_name", "removed_name", "release_version")
    return any(getattr(intent, check, lambda _t: None)(text) for check in checks)


def stores(work: Path, sets: list[str]) -> list[tuple[Path, list[str]]]:
    found: list[tuple[Path, list[str]]] = []
    for name in sets:
        for qfile in sorted((QUESTIONS / name).glob("*.json")):
            data = json.loads(qfile.read_text(encoding="utf-8"))
            slot = f"{qfile.stem}-{data['commit'][:12]}"
            candidates = [work / name / slot / "repo", work / slot / "repo"]
            root = next((c for c in candidates if c.is_dir()), None)
            if root is None:
                continue
            asked = [q["q"] for q in data["questions"] if name_questions(q["q"])]
            if asked:
                found.append((root, asked))
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--set", action="append", dest="sets", help="question sets (default: every set)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--list", type=Path, help="the questions asked: read if it exists, else written")
    args = ap.parse_args(argv)
    from nexusmem import project
    from nexusmem.retrieve import query

    sets = args.sets or sorted(p.name for p in QUESTIONS.iterdir() if p.is_dir())
    if args.list is not None and args.list.exists():
        chosen = [(Path(root), asked) for root, asked in json.loads(args.list.read_text(encoding="utf-8"))]
    else:
        chosen = stores(args.work, sets)
        if args.list is not None:
            args.list.write_text(json.dumps([[str(root), asked] for root, asked in chosen]), encoding="utf-8")
    medians: list[float] = []
    for root, asked in chosen:
        with project.load(root).open_store(readonly=True) as store:
            query.ranked_candidates(store, "warm up", vectors=True)
            for text in asked:
                times = []
                for _ in range(args.rounds):
                    start = time.perf_counter()
                    query.ranked_candidates(store, text, vectors=True)
                    times.append((time.perf_counter() - start) * 1000)
                medians.append(statistics.median(times))
    if not medians:
        print(
            "no synced store holds such a question: run benchmarks/eval_real.py --work W first",
            file=sys.stderr,
        )
        return 1
    medians.sort()
    p95 = medians[min(len(medians) - 1, int(len(medians) * 0.95))]
    print(f"{len(medians)} questions: p50 {medians[len(medians) // 2]:.1f} ms, p95 {p95:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
