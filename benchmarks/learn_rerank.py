#!/usr/bin/env python3
"""Learn the weights of ranking's last step (nexusmem/retrieve/rerank.py) from the labelled sets.

    python benchmarks/learn_rerank.py --set SET [--set ...] --work W --repo NAME=PATH [--repo ...] \
        [--folds 5] [--kin-folds 5] [--save ROWS.jsonl] [--rows ROWS.jsonl]

It reads the stores `eval_real.py --work W` synced (run that first: nothing is cloned or synced here), in
W/<name>-<pin> or W/<set>/<name>-<pin>. Each answerable question is ranked twice with the step turned off
(`ranking.rerank: false`): with the vectors, and by the words alone (as a store with `provider: none` or
not embedded yet answers); when the step would apply to a list, the nodes it would order (rerank.window:
the first rerank.DEPTH results and the nearest by vector below them) are kept with the features the step
computes (rerank.head_features, so what is learned is what runs) and which of them are a labelled answer.
`--save` writes those rows; `--rows` learns from saved rows without opening a store.

The learned kin (thesaurus.learned, learned by learn_kin.py from these same sets) are held out too: each
set is ranked with the kin learned from the sets outside its fold (`--kin-folds K`, the folds `--folds`
holds out), so that what a row says of them (the feature "kin", the thesaurus query's words) is what a
repository the kin never saw gets, and the step learns to trust them no more than that. The same folds hold
out the table asks_docs.score reads (learn_asks_docs.py: the feature "asks_docs"). `--kin-folds 0` ranks
with the shipped kin and table.

The model: a question's node scores exp(w · x + h(x)), w the sum of the WEIGHTS rows of the conditions it
meets, h the hidden layer (HIDDEN: `--units` tanh units over the features and the conditions met; `--units
0` for the linear model alone). It is fitted by the log-probability of the labelled answers under the
softmax over the list (a listwise loss), with full-batch Adam, from "keep the order" (the relevance weight
1, the rest 0), the linear part pulled back toward it and the hidden units toward 0 by an L2 term; the
hidden units start small at random (`--seed`). `--folds K` first fits K times with a Kth of the sets held
out (sets, not questions: a held-out repository is one the weights never saw) and prints MRR and R@5 of
the held-out questions before and after, for the lists ranked with the vectors (the figure of record) and
by the words alone apart; questions the step does not apply to count with their ranks unchanged, so the
figures are those of every answerable question. Then it fits on everything and prints the WEIGHTS and
HIDDEN tables to paste into rerank.py, rounded as printed and scored so. Needs numpy (installed with
wordllama).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

import eval_real

T = TypeVar("T")


@dataclass
class Row:
    """One question: its set, its answer's rank with the step off, and (when the step applies) the features
    and labels of the nodes it orders (rerank.window)."""

    set: str
    rank: int | None
    met: list[str]
    x: list[list[float]] | None
    hit: list[bool] | None
    moves: list[bool] | None = None  # which of them the step may move (rerank.head_features)
    # Ranked by the word lists alone (no vectors: `provider: none`, a store not embedded yet).
    words_only: bool = False


def folds(sets: list[str], k: int) -> list[set[str]]:
    """SETS dealt into K folds, the same ones for the learned kin (held_out_kin) and the held-out fits."""
    shuffled = sorted(sets)
    random.Random(1).shuffle(shuffled)
    return [set(shuffled[i::k]) for i in range(k)]


def per_set(sets: list[str], k: int, learned_without: Callable[[set[str]], T]) -> dict[str, T]:
    """Per set of SETS, what LEARNED_WITHOUT(its fold) gives: learned from the sets outside its fold (folds(),
    K of them)."""
    tables: dict[str, T] = {}
    for fold in folds(list(set(sets)), k):
        tables.update(dict.fromkeys(fold, learned_without(fold)))
    return tables


def held_out_kin(args: argparse.Namespace, k: int) -> dict[str, dict[str, str]]:
    """Per set ARGS names, the learned kin (thesaurus.learned_kin's table) learned from the stores of the sets
    outside its fold (folds(), K of them): what a set is ranked with, so that what its rows say of the kin
    ("kin", and the thesaurus query's words) is what a repository the kin never saw gets."""
    import learn_kin

    examples = learn_kin.examples(args)
    return per_set(
        args.set, k, lambda fold: learn_kin.as_table(learn_kin.learn(learn_kin.without(examples, fold)))
    )


def held_out_asks_docs(args: argparse.Namespace, k: int) -> dict[str, dict[str, float]]:
    """Per set ARGS names, the table asks_docs.score reads learned from the questions of the sets outside its
    fold (folds(), K of them), as held_out_kin does for the kin."""
    import learn_asks_docs

    examples = learn_asks_docs.examples(args)
    return per_set(args.set, k, lambda fold: learn_asks_docs.learn(learn_asks_docs.without(examples, fold)))


@contextmanager
def ranked_with(kin: dict[str, str] | None, docs: dict[str, float] | None) -> Iterator[None]:
    """The ranking reads KIN as the learned kin's table and DOCS as asks_docs's (each: the shipped one when
    None) while this holds."""
    from nexusmem.retrieve import asks_docs, thesaurus

    with ExitStack() as held:
        if kin is not None:
            held.enter_context(mock.patch.object(thesaurus, "learned_kin", lambda: kin))
        if docs is not None:
            held.enter_context(mock.patch.object(asks_docs, "learned", lambda: docs))
        yield


def collect_rows(args: argparse.Namespace) -> list[Row]:
    from nexusmem.retrieve import rank

    off = replace(rank.DEFAULT, rerank=False)
    rows: list[Row] = []
    held_out = args.kin_folds > 1
    kin_tables = held_out_kin(args, args.kin_folds) if held_out else {}
    docs_tables = held_out_asks_docs(args, args.kin_folds) if held_out else {}
    for qf, store, index in eval_real.synced_stores(args, "learn_rerank"):
        with ranked_with(kin_tables.get(qf.set), docs_tables.get(qf.set)):
            rows += question_rows(qf, store, index, off)
    return rows


def question_rows(qf: eval_real.QuestionFile, store: Any, index: eval_real.RefIndex, off: Any) -> list[Row]:
    """The rows of QF's answerable questions, ranked in STORE with the step OFF."""
    from nexusmem.retrieve import query, rerank

    rows: list[Row] = []
    for q in qf.questions:
        correct, _missing = index.resolve(q)
        if q.kind == "none" or not correct:
            continue
        for vectors in (True, False):  # with the vectors, and by the words alone
            found = query.retrieve(store, q.q, settings=off, vectors=vectors)
            ids = [node.id for node, _ in found.scored]
            at = eval_real.first_rank(ids, correct)
            question = found.question
            met = list(rerank.conditions(question.failure, question.names_code, question.asks))
            head = rerank.window(found.scored, found.nearest)[0]
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
                    *query.step_reads(store, question, found.terms.counted, head),
                )
                # The nodes the step does not move (other kinds; those a rule set back) are kept: they
                # hold their places, as in the product.
                hit = [node.id in correct for node, _ in head]
            rows.append(Row(qf.set, at, met, x, hit, moves, words_only=not vectors))
    return rows


def movable_of(row: Row) -> list[bool]:
    """Which of ROW's nodes the step may move: as saved, or (rows saved before that was kept) a commit, diff
    or doc section (its kind features)."""
    assert row.x is not None
    return row.moves if row.moves is not None else [any(xi[1:4]) for xi in row.x]


@dataclass
class Model:
    """What the step computes: per condition a row of weights over the features (WEIGHTS), and the units of
    its hidden layer (HIDDEN: a row per unit, its bias, its weight in the score, then its weights over the
    features and the conditions met), or none."""

    weights: dict[str, Any]
    hidden: Any = None


def shipped(np: Any) -> Model:
    """The model rerank.py ships."""
    from nexusmem.retrieve import rerank

    weights = {c: np.array(rerank.WEIGHTS[c]) for c in rerank.CONDITIONS}
    return Model(weights, np.array(rerank.HIDDEN) if rerank.HIDDEN else None)


def values(np: Any, model: Model, x: Any, met: list[str]) -> Any:
    """The step's value of each row of X (features) for a question meeting MET, as rerank.values computes it."""
    from nexusmem.retrieve import rerank

    value = x @ sum(model.weights[c] for c in met)
    if model.hidden is not None and len(model.hidden):
        met_mask = np.array([float(c in met) for c in rerank.CONDITIONS])
        inputs = np.hstack([x, np.broadcast_to(met_mask, (len(x), len(met_mask)))])
        value = value + np.tanh(model.hidden[:, 0] + inputs @ model.hidden[:, 2:].T) @ model.hidden[:, 1]
    return value


def new_rank(np: Any, row: Row, model: Model | None) -> int | None:
    """The rank of ROW's first answer once the step with MODEL ordered the nodes it orders (None: off),
    placed as the step places them (rerank.placement); an answer below them keeps the rank it had."""
    if model is None or row.x is None or row.hit is None or row.rank is None:
        return row.rank
    from nexusmem.retrieve import rerank

    x = np.array(row.x)
    assert len(rerank.FEATURES) == x.shape[1]
    value = values(np, model, x, row.met)
    movable = {i: float(value[i]) for i in range(len(row.x)) if movable_of(row)[i]}
    for position, i in enumerate(rerank.placement(movable, len(row.x)), 1):
        if row.hit[i]:
            return position
    return row.rank


def figures(ranks: list[int | None]) -> tuple[float, float]:
    """MRR and R@5 of the first answers' RANKS (None: not found)."""
    mrr = sum(1 / r for r in ranks if r) / len(ranks)
    r5 = sum(1 for r in ranks if r and r <= 5) / len(ranks)
    return mrr, r5


def score(np: Any, rows: list[Row], model: Model | None) -> tuple[float, float]:
    return figures([new_rank(np, r, model) for r in rows])


def modes(rows: list[Row]) -> list[tuple[str, list[Row]]]:
    """ROWS by how they were ranked: with the vectors (the figure of record), by the words alone."""
    out = [
        ("hybrid", [r for r in rows if not r.words_only]),
        ("words only", [r for r in rows if r.words_only]),
    ]
    return [(mode, of_mode) for mode, of_mode in out if of_mode]


def fit(
    np: Any,
    rows: list[Row],
    *,
    l2: float,
    iterations: int,
    rate: float,
    units: int = 0,
    seed: int = 0,
    linear: tuple[str, ...] | None = None,
) -> Model:
    """The model that maximises the log-probability of ROWS' answers under the softmax of the step's values
    over the nodes it may move, by full-batch Adam: the linear part pulled toward "keep the order" by L2,
    and UNITS tanh units (none: linear alone) over the features standardised (folded back into the raw
    features' weights when done), their weights pulled toward 0 by the same L2, started small at random
    (SEED). The features LINEAR names (rerank.LINEAR unless given) are read by the linear part alone: the
    hidden units' weights over them stay 0."""
    from nexusmem.retrieve import rerank

    alone = [rerank.FEATURES.index(f) for f in (rerank.LINEAR if linear is None else linear)]

    conditions, n = rerank.CONDITIONS, len(rerank.FEATURES)
    depth = max((len(r.x) for r in rows if r.x is not None), default=rerank.DEPTH)
    usable = []
    for r in rows:
        if r.x is None or r.hit is None:
            continue
        if any(h and m for h, m in zip(r.hit, movable_of(r))):
            usable.append(r)
    # Every list padded to the longest (rerank.window); a padded or held node is never a candidate.
    x = np.zeros((len(usable), depth, n))
    movable = np.zeros((len(usable), depth))
    hit = np.zeros((len(usable), depth))
    met = np.zeros((len(usable), len(conditions)))
    for i, r in enumerate(usable):
        k = len(r.x or [])
        x[i, :k] = r.x
        movable[i, :k] = movable_of(r)
        hit[i, :k] = np.array(r.hit, float) * movable[i, :k]
        met[i] = [c in r.met for c in conditions]
    keep = np.zeros((len(conditions), n))
    keep[0, 0] = 1.0  # "keep the order": relevance weight 1 for every question
    params = {"w": keep.copy()}
    if units:
        flat = x[movable > 0]
        mean, spread = flat.mean(0), flat.std(0) + 1e-6
        z = np.concatenate(
            [(x - mean) / spread, np.broadcast_to(met[:, None, :], (*x.shape[:2], len(conditions)))], 2
        )
        random = np.random.default_rng(seed)
        params["u"] = random.normal(0.0, 0.3, (n + len(conditions), units))
        params["u"][alone] = 0.0
        params["b"] = np.zeros(units)
        params["o"] = random.normal(0.0, 0.01, units)
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v2 = {k: np.zeros_like(v) for k, v in params.items()}
    for t in range(1, iterations + 1):
        s = np.einsum("qkf,qf->qk", x, met @ params["w"])
        if units:
            h = np.tanh(z @ params["u"] + params["b"])
            s = s + h @ params["o"]
        s = np.where(movable > 0, s, -np.inf)
        p = np.exp(s - s.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        target = p * hit
        target /= target.sum(1, keepdims=True)
        d = (p - target) / len(usable)
        grad = {"w": met.T @ np.einsum("qk,qkf->qf", d, x) + l2 * (params["w"] - keep)}
        if units:
            grad["o"] = np.einsum("qk,qkh->h", d, h) + l2 * params["o"]
            da = d[:, :, None] * params["o"] * (1 - h * h)
            grad["u"] = np.einsum("qkd,qkh->dh", z, da) + l2 * params["u"]
            grad["u"][alone] = 0.0
            grad["b"] = da.sum((0, 1))
        for key, g in grad.items():
            m[key] = 0.9 * m[key] + 0.1 * g
            v2[key] = 0.999 * v2[key] + 0.001 * g * g
            params[key] = params[key] - rate * (m[key] / (1 - 0.9**t)) / (
                np.sqrt(v2[key] / (1 - 0.999**t)) + 1e-8
            )
    weights = {c: params["w"][i] for i, c in enumerate(conditions)}
    if not units:
        return Model(weights)
    # Back to the raw features: u·((x - mean) / spread) + b = (u / spread)·x + b - (mean / spread)·u.
    u = params["u"].copy()
    u[:n] /= spread[:, None]
    bias = params["b"] - (mean / spread) @ params["u"][:n]
    return Model(weights, np.hstack([bias[:, None], params["o"][:, None], u.T]))


def main(argv: list[str] | None = None) -> int:
    ap = eval_real.synced_stores_parser(__doc__)
    ap.add_argument("--folds", type=int, default=5, help="held-out folds of sets first (0: none)")
    ap.add_argument("--save", type=Path, help="write the rows read from the stores to this JSONL file")
    ap.add_argument("--rows", type=Path, help="learn from rows saved with --save (no store is opened)")
    ap.add_argument(
        "--kin-folds",
        type=int,
        default=5,
        help="rank each set with the learned kin learned without its fold of sets (0: the shipped kin)",
    )
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--rate", type=float, default=0.05)
    ap.add_argument("--units", type=int, default=8, help="tanh units of the hidden layer (0: linear alone)")
    ap.add_argument("--seed", type=int, default=0, help="the hidden units' random start")
    ap.add_argument(
        "--linear",
        action="append",
        metavar="FEATURE",
        help="a feature the hidden units do not read (repeatable; default: rerank.LINEAR)",
    )
    args = ap.parse_args(argv)
    args.set = args.set or ["dev"]
    # `--linear ""`: every feature read by the hidden units too
    linear = None if args.linear is None else tuple(f for f in args.linear if f)
    import numpy as np

    from nexusmem.retrieve import rerank

    if args.rows:
        rows = [Row(**json.loads(line)) for line in args.rows.read_text(encoding="utf-8").splitlines()]
    else:
        rows = collect_rows(args)
        if args.save:
            args.save.write_text("".join(json.dumps(r.__dict__) + "\n" for r in rows), encoding="utf-8")
    sets = sorted({r.set for r in rows})
    words = sum(r.words_only for r in rows)
    print(
        f"{len(rows) - words} answerable questions ranked with the vectors and {words} by the words alone,"
        f" {len(sets)} sets; the step applies to {sum(r.x is not None for r in rows)} of the lists"
    )
    ships = shipped(np)
    fitting = partial(
        fit,
        np,
        l2=args.l2,
        iterations=args.iterations,
        rate=args.rate,
        units=args.units,
        seed=args.seed,
        linear=linear,
    )
    for mode, of_mode in modes(rows):
        base, now = score(np, of_mode, None), score(np, of_mode, ships)
        print(
            f"{mode}: step off MRR {base[0]:.4f}  R@5 {base[1]:.3f}; the model rerank.py ships: MRR {now[0]:.4f}  R@5 {now[1]:.3f}"
        )
    if args.folds > 1:
        held_out: list[tuple[Row, int | None, int | None]] = []  # (row, rank with the fitted model, shipped)
        for k, held in enumerate(folds(sets, args.folds)):
            test = [r for r in rows if r.set in held]
            model = fitting([r for r in rows if r.set not in held])
            fold = [(r, new_rank(np, r, model), new_rank(np, r, ships)) for r in test]
            held_out += fold
            b, a = figures([r.rank for r, _, _ in fold]), figures([fitted for _, fitted, _ in fold])
            print(
                f"  fold {k + 1}: {len(held)} sets, {len(test)} lists: MRR {b[0]:.4f} -> {a[0]:.4f}, R@5 {b[1]:.3f} -> {a[1]:.3f}"
            )
        ranks = {id(r): (fitted, ship) for r, fitted, ship in held_out}
        for mode, of_mode in modes([r for r, _, _ in held_out]):
            before = figures([r.rank for r in of_mode])
            after = figures([ranks[id(r)][0] for r in of_mode])
            ship = figures([ranks[id(r)][1] for r in of_mode])
            print(
                f"held out, {mode}: MRR {before[0]:.4f} -> {after[0]:.4f}, R@5 {before[1]:.3f} -> {after[1]:.3f}"
                f" (the shipped model on the same questions: MRR {ship[0]:.4f}, R@5 {ship[1]:.3f})"
            )
    model = fitting(rows)
    # What is printed is what rerank.py will hold: rounded, and scored so.
    printed = Model(
        {c: np.round(model.weights[c], 2) + 0.0 for c in rerank.CONDITIONS},
        None if model.hidden is None else np.round(model.hidden, 2) + 0.0,
    )
    for mode, of_mode in modes(rows):
        fitted, rounded = score(np, of_mode, model), score(np, of_mode, printed)
        print(
            f"fitted on all, {mode}: MRR {fitted[0]:.4f}  R@5 {fitted[1]:.3f}  (in-sample; as printed: {rounded[0]:.4f}, {rounded[1]:.3f})"
        )
    print("WEIGHTS: dict[str, tuple[float, ...]] = {")
    for c in rerank.CONDITIONS:
        print(f'    "{c}": ({", ".join(f"{v:.2f}" for v in printed.weights[c])}),')
    print("}")
    print("HIDDEN: tuple[tuple[float, ...], ...] = (")
    for unit in printed.hidden if printed.hidden is not None else ():
        print(f"    ({', '.join(f'{v:.2f}' for v in unit)}),")
    print(")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
