#!/usr/bin/env python3
"""Learn how likely a question's answer is a doc section (nexusmem/retrieve/learned_asks_docs.txt) from the
labelled sets.

    python benchmarks/learn_asks_docs.py --set SET [--set ...] --repo NAME=PATH [--repo ...] \
        [--folds 5] [--out FILE | --write]

It reads the question files only (no store): every answerable question, labelled 1 when one of its targets
is a doc section (`path#Heading`), else 0. The model is a logistic regression over what
retrieve.asks_docs.features reads in the question (its words, adjacent word pairs, and what retrieve.intent
reads: usage, history, a failure, a code name), counting only the features that questions about at least
MIN_REPOSITORIES different repositories hold, fitted by full-batch Adam (ITERATIONS steps at RATE, a light
L2). `--folds K` first fits K times with a Kth of the sets held out (the folds learn_rerank.py uses) and
prints the held-out log loss and accuracy beside intent.intent's "usage" read as the same guess. `--out FILE`
writes the table there; `--write` to the package file. Needs numpy (installed with wordllama).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import eval_real

from nexusmem.retrieve import asks_docs

MIN_REPOSITORIES = 3
ITERATIONS = 400
RATE = 0.05
L2 = 1.0
# Weights smaller than this are left out of the table: they move a score by less than a tenth of a unit
# altogether, and the table halves (6,900 features over 88 sets instead of 12,800).
SMALLEST = 0.05

Example = tuple[str, str, set[str], float]  # (set, repository, features, 1.0 when a doc section answers)


def examples(args: argparse.Namespace) -> list[Example]:
    """What learn() learns from, read from the question files ARGS name (--set, --repo, --questions)."""
    out: list[Example] = []
    for qf in eval_real.collect(args.questions, tuple(args.set), eval_real.parse_repos(args.repo)):
        for q in qf.questions:
            if q.kind == "none" or not q.targets:
                continue
            doc = any(eval_real.target_kind(t) == "doc" for t in q.targets)
            out.append((qf.set, qf.url or qf.name, asks_docs.features(q.q), float(doc)))
    return out


def without(rows: list[Example], sets: Iterable[str]) -> list[Example]:
    """ROWS of every set but SETS."""
    left = set(sets)
    return [row for row in rows if row[0] not in left]


def learn(
    rows: list[Example], *, iterations: int = ITERATIONS, rate: float = RATE, l2: float = L2
) -> dict[str, float]:
    """The regression's weights by feature (the bias under asks_docs.BIAS), fitted on ROWS; none for no rows
    (a fold that leaves no other set)."""
    if not rows:
        return {}
    import numpy as np

    repositories: dict[str, set[str]] = defaultdict(set)
    for _, repository, found, _ in rows:
        for f in found:
            repositories[f].add(repository)
    vocabulary = sorted(f for f, held in repositories.items() if len(held) >= MIN_REPOSITORIES)
    index = {f: i for i, f in enumerate(vocabulary)}
    bias = len(vocabulary)
    # Each row's features as indices into one flat array (the bias last in every row): sparse products by
    # np.add.reduceat and np.bincount, without scipy.
    columns: list[int] = []
    starts: list[int] = []
    for _, _, found, _ in rows:
        starts.append(len(columns))
        columns += sorted(index[f] for f in found if f in index)
        columns.append(bias)
    flat, begin = np.array(columns), np.array(starts)
    lengths = np.diff(np.append(begin, len(flat)))
    y = np.array([row[3] for row in rows])
    w = np.zeros(bias + 1)
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t in range(1, iterations + 1):
        p = 1.0 / (1.0 + np.exp(-np.add.reduceat(w[flat], begin)))
        g = np.bincount(flat, weights=np.repeat(p - y, lengths), minlength=bias + 1) / len(y)
        g[:bias] += l2 * w[:bias] / len(y)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w -= rate * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    table = {f: float(w[i]) for f, i in index.items() if abs(w[i]) >= SMALLEST}
    table[asks_docs.BIAS] = float(w[bias])
    return table


def held_out(rows: list[Example], k: int) -> list[tuple[Example, float]]:
    """Each row with the score of the table learned without its fold of sets (learn_rerank.folds)."""
    import learn_rerank

    out: list[tuple[Example, float]] = []
    for fold in learn_rerank.folds(sorted({row[0] for row in rows}), k):
        table = learn(without(rows, fold))
        out += [(row, _score(table, row[2])) for row in rows if row[0] in fold]
    return out


def _score(table: dict[str, float], found: set[str]) -> float:
    value = table.get(asks_docs.BIAS, 0.0) + sum(table.get(f, 0.0) for f in found)
    return max(-asks_docs.LIMIT, min(asks_docs.LIMIT, value))


def report(scored: list[tuple[Example, float]]) -> str:
    """Held-out log loss and accuracy of SCORED, beside intent's "usage" read as the guess."""
    loss = accurate = usage = 0.0
    for (_, _, found, y), z in scored:
        p = 1.0 / (1.0 + math.exp(-z))
        loss -= math.log(max(p if y else 1.0 - p, 1e-12))
        accurate += (p > 0.5) == (y > 0.5)
        usage += ("@usage" in found) == (y > 0.5)
    n = max(len(scored), 1)
    return f"held out: log loss {loss / n:.3f}, accuracy {accurate / n:.3f} (intent's usage alone: {usage / n:.3f})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", action="append", default=[], metavar="NAME=PATH", help="repeatable")
    ap.add_argument("--set", action="append", choices=eval_real.SETS, help="repeatable (default: dev)")
    ap.add_argument("--questions", type=Path, default=eval_real.QUESTIONS_DIR)
    ap.add_argument("--work", type=Path, help="accepted for the other learners' arguments; not read")
    ap.add_argument("--folds", type=int, default=5, help="held-out folds of sets first (0: none)")
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path)
    where.add_argument("--write", action="store_true", help=f"write {asks_docs.LEARNED_FILE}")
    args = ap.parse_args(argv)
    args.set = args.set or ["dev"]
    rows = examples(args)
    docs = sum(row[3] for row in rows)
    print(f"learn_asks_docs: {len(rows)} questions, {docs:.0f} answered by a doc section")
    if args.folds > 1:
        print(report(held_out(rows, args.folds)))
    table = learn(rows)
    path: Any = asks_docs.LEARNED_FILE if args.write else args.out
    path.write_text(asks_docs.dump(table), encoding="utf-8")
    print(f"learn_asks_docs: {len(table) - 1} features -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
