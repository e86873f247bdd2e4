#!/usr/bin/env python3
"""Learn the weights of ranking's last step (nexusmem/retrieve/rerank.py) from the labelled sets.

    python benchmarks/learn_rerank.py --set SET [--set ...] --work W --repo NAME=PATH [--repo ...] \
        [--folds 5] [--save ROWS.jsonl] [--rows ROWS.jsonl]

It reads the stores `eval_real.py --work W` synced (run that first: nothing is cloned or synced here), in
W/<name>-<pin> or W/<set>/<name>-<pin>. Each answerable question is ranked with the step turned off
(`ranking.rerank: false`); when the step would apply to it, the first ten results are kept with the
features the step computes (rerank.features, so what is learned is what runs) and which of them are a
labelled answer. `--save` writes those rows; `--rows` learns from saved rows without opening a store.

The model: a question's node scores exp(w · x), w the sum of the WEIGHTS rows of the conditions it meets.
It is fitted by the log-probability of the labelled answers under the softmax over the ten (a listwise
loss), with Adam, from "keep the order" (the relevance weight 1, the rest 0), pulled back toward it by an
L2 term. `--folds K` first fits K times with a Kth of the sets held out (sets, not questions: a held-out
repository is one the weights never saw) and prints MRR and R@5 of the held-out questions before and
after; questions the step does not apply to count with their ranks unchanged, so the figures are those of
every answerable question. Then it fits on everything and prints the WEIGHTS table to paste into
rerank.py. Needs numpy (installed with wordllama).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import eval_real


@dataclass
class Row:
    """One question: its set, its answer's rank with the step off, and (when the step applies) the features
    and labels of its first rerank.DEPTH results."""

    set: str
    rank: int | None
    met: list[str]
    x: list[list[float]] | None
    hit: list[bool] | None
    moves: list[bool] | None = None  # which of them the step may move (rerank.head_features)


def collect_rows(args: argparse.Namespace) -> list[Row]:
    from nexusmem.retrieve import query, rank, rerank

    off = replace(rank.DEFAULT, rerank=False)
    rows: list[Row] = []
    for qf, store, index in eval_real.synced_stores(args, "learn_rerank"):
        for q in qf.questions:
            correct, _missing = index.resolve(q)
            if q.kind == "none" or not correct:
                continue
            found = query.retrieve(store, q.q, settings=off)
            ids = [node.id for node, _ in found.scored]
            at = eval_real.first_rank(ids, correct)
            question = found.question
            met = list(rerank.conditions(question.failure, question.names_code, question.asks))
            head = found.scored[: rerank.DEPTH]
            x: list[list[float]] | None = None
            hit: list[bool] | None = None
            moves: list[bool] | None = None
            if found.rerankable and len(head) > 1:
                x, moves = rerank.head_features(
                    head,
                    found.evidence,
                    found.covering or query.Coverage(store, found.terms),
                    found.settings,
                    question.asks,
                    query.on_platform(store, question.platforms, head),
                )
                # The nodes the step does not move (other kinds; those a rule set back) are kept: they hold
                # their places, as in the product.
                hit = [node.id in correct for node, _ in head]
            rows.append(Row(qf.set, at, met, x, hit, moves))
    return rows


def movable_of(row: Row) -> list[bool]:
    """Which of ROW's nodes the step may move: as saved, or (rows saved before that was kept) a commit, diff
    or doc section (its kind features)."""
    assert row.x is not None
    return row.moves if row.moves is not None else [any(xi[1:4]) for xi in row.x]


def new_rank(np: Any, row: Row, weights: dict[str, Any] | None) -> int | None:
    """The rank of ROW's first answer once the step with WEIGHTS ordered its first rerank.DEPTH (None:
    off), placed as the step places them (rerank.placement)."""
    if weights is None or row.x is None or row.hit is None or row.rank is None:
        return row.rank
    from nexusmem.retrieve import rerank

    x = np.array(row.x)
    assert len(rerank.FEATURES) == x.shape[1]
    value = x @ sum(weights[c] for c in row.met)
    movable = {i: float(value[i]) for i in range(len(row.x)) if movable_of(row)[i]}
    for position, i in enumerate(rerank.placement(movable, len(row.x)), 1):
        if row.hit[i]:
            return position
    return row.rank


def score(np: Any, rows: list[Row], weights: dict[str, Any] | None) -> tuple[float, float]:
    ranks = [new_rank(np, r, weights) for r in rows]
    mrr = sum(1 / r for r in ranks if r) / len(rows)
    r5 = sum(1 for r in ranks if r and r <= 5) / len(rows)
    return mrr, r5


def fit(np: Any, rows: list[Row], *, l2: float, iterations: int, rate: float) -> dict[str, Any]:
    from nexusmem.retrieve import rerank

    conditions, n = rerank.CONDITIONS, len(rerank.FEATURES)
    keep = np.zeros((len(conditions), n))
    keep[0, 0] = 1.0  # "keep the order": relevance weight 1 for every question
    w = keep.copy()
    m, v = np.zeros_like(w), np.zeros_like(w)
    data = []
    for r in rows:
        if r.x is None or r.hit is None or not any(r.hit):
            continue
        mask = np.array([c in r.met for c in conditions], float)
        movable = np.array(movable_of(r), float)
        data.append((np.array(r.x), np.array(r.hit, float) * movable, mask, movable))
    data = [d for d in data if d[1].sum() > 0]
    for t in range(1, iterations + 1):
        grad = np.zeros_like(w)
        for x, hit, mask, movable in data:
            s = x @ (mask @ w)
            s = np.where(movable > 0, s, -np.inf)
            p = np.exp(s - s[movable > 0].max())
            p /= p.sum()
            target = p * hit / (p * hit).sum()
            grad += np.outer(mask, x.T @ (p - target))
        grad = grad / len(data) + l2 * (w - keep)
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        w -= rate * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return {c: w[i] for i, c in enumerate(conditions)}


def main(argv: list[str] | None = None) -> int:
    ap = eval_real.synced_stores_parser(__doc__)
    ap.add_argument("--folds", type=int, default=5, help="held-out folds of sets first (0: none)")
    ap.add_argument("--save", type=Path, help="write the rows read from the stores to this JSONL file")
    ap.add_argument("--rows", type=Path, help="learn from rows saved with --save (no store is opened)")
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--rate", type=float, default=0.05)
    args = ap.parse_args(argv)
    args.set = args.set or ["dev"]
    import numpy as np

    from nexusmem.retrieve import rerank

    if args.rows:
        rows = [Row(**json.loads(line)) for line in args.rows.read_text(encoding="utf-8").splitlines()]
    else:
        rows = collect_rows(args)
        if args.save:
            args.save.write_text("".join(json.dumps(r.__dict__) + "\n" for r in rows), encoding="utf-8")
    sets = sorted({r.set for r in rows})
    print(
        f"{len(rows)} answerable questions, {len(sets)} sets; the step applies to {sum(r.x is not None for r in rows)}"
    )
    base = score(np, rows, None)
    shipped = {c: np.array(rerank.WEIGHTS[c]) for c in rerank.CONDITIONS}
    now = score(np, rows, shipped)
    print(
        f"step off: MRR {base[0]:.4f}  R@5 {base[1]:.3f}; the weights rerank.py ships: MRR {now[0]:.4f}  R@5 {now[1]:.3f}"
    )
    if args.folds > 1:
        shuffled = sets[:]
        random.Random(1).shuffle(shuffled)
        before = after = five_before = five_after = shipped_mrr = shipped_five = 0.0
        for k in range(args.folds):
            held = set(shuffled[k :: args.folds])
            test = [r for r in rows if r.set in held]
            weights = fit(
                np,
                [r for r in rows if r.set not in held],
                l2=args.l2,
                iterations=args.iterations,
                rate=args.rate,
            )
            b, a, sh = score(np, test, None), score(np, test, weights), score(np, test, shipped)
            print(
                f"  fold {k + 1}: {len(held)} sets, {len(test)} questions: MRR {b[0]:.4f} -> {a[0]:.4f}, R@5 {b[1]:.3f} -> {a[1]:.3f}"
                f" (shipped weights: {sh[0]:.4f}, {sh[1]:.3f})"
            )
            shipped_mrr += sh[0] * len(test)
            shipped_five += sh[1] * len(test)
            before += b[0] * len(test)
            after += a[0] * len(test)
            five_before += b[1] * len(test)
            five_after += a[1] * len(test)
        n = len(rows)
        print(
            f"held out: MRR {before / n:.4f} -> {after / n:.4f}, R@5 {five_before / n:.3f} -> {five_after / n:.3f}"
            f" (the shipped weights on the same questions: MRR {shipped_mrr / n:.4f}, R@5 {shipped_five / n:.3f})"
        )
    weights = fit(np, rows, l2=args.l2, iterations=args.iterations, rate=args.rate)
    fitted = score(np, rows, weights)
    print(f"fitted on all: MRR {fitted[0]:.4f}  R@5 {fitted[1]:.3f}  (in-sample)")
    print("WEIGHTS: dict[str, tuple[float, ...]] = {")
    for c in rerank.CONDITIONS:
        print(f'    "{c}": ({", ".join(f"{v:.2f}" for v in weights[c])}),')
    print("}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
