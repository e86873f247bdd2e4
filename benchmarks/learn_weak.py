#!/usr/bin/env python3
"""Learn the "no strong match" judgement (query.Strength.weak) from the labelled sets.

    python benchmarks/learn_weak.py --set SET [--set ...] --work W --repo NAME=PATH [--repo ...] \
        [--save ROWS.jsonl] [--rows ROWS.jsonl] [--false-flags 0.055] [--check ROWS.jsonl]

It reads the stores `eval_real.py --work W` synced (nothing is cloned or synced here). Every question,
`none` and answerable, is asked as `query` asks it, with the vectors and without them (`--no-vectors`, a
store synced without embeddings); a row keeps what the judgement reads
(query.Strength.features(), so what is learned is what runs), whether the question asks when a name memory
never saw arrived (weak whatever the model says), whether a rule answered it (never weak) and whether
nothing was found (always weak). `--save` writes the rows; `--rows` learns from saved rows.

The model: logistic regression over the features (standardised, the `none` questions weighted up to as
many as the answerable ones, L2), fitted five times with a fifth of the sets held out each time (sets, not
questions). Its threshold is the one that flags FALSE_FLAGS of the answerable questions it was fitted on.
It prints, for the held-out questions, the share of `none` questions flagged and of answerable ones flagged,
next to the rule it replaced (a share of the question's weight missing from memory, or a name it never saw,
without a close vector neighbour), then fits on every set and prints WEAK_WEIGHTS and WEAK_BIAS (the
standardisation and the threshold folded in) to paste into retrieve/query.py; the same again for the lists
without vectors (WEAK_LEXICAL_WEIGHTS, WEAK_LEXICAL_BIAS). `--check ROWS` also prints
both judgements on other saved rows (sets kept out of the fit). Needs numpy (installed with wordllama).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import eval_real

# The rule the model replaced, for comparison: a quarter of the question's weight missing from memory, or a
# name it never saw, and no vector neighbour at cosine .6 or more.
RULE_MISSING, RULE_COSINE = 0.25, 0.6


def collect_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    from nexusmem.retrieve import query

    rows: list[dict[str, Any]] = []
    for qf, store, index in eval_real.synced_stores(args, "learn_weak"):
        for q in qf.questions:
            correct, _missing = index.resolve(q)
            if q.kind != "none" and not correct:
                continue
            for vectors in (True, False):
                found = query.retrieve(store, q.q, vectors=vectors)
                strength = query.strength(found) if found.scored else None
                rows.append(
                    {
                        "set": qf.set,
                        "id": q.id,
                        "vectors": vectors,
                        "none": q.kind == "none",
                        "empty": not found.scored,
                        "answered": found.answered_by is not None,
                        "arrival": bool(strength and strength.absent_arrival),
                        "no_word": bool(strength and strength.no_word),
                        "x": strength.features() if strength else None,
                    }
                )
    return rows


def rule(row: dict[str, Any]) -> bool:
    """The judgement the model replaced."""
    if row["empty"]:
        return True
    if row["answered"]:
        return False
    missing, cosine, absent_name = row["x"][0], row["x"][1], row["x"][2]
    return row["arrival"] or ((missing >= RULE_MISSING or absent_name > 0) and cosine < RULE_COSINE)


def forced(row: dict[str, Any]) -> bool | None:
    """The judgement of ROW when the model does not make it (None when it does): nothing found is weak, an
    answer a rule found is not, a question that takes for granted a name memory never saw arrive is, and so
    are one half of whose weight memory lacks (query.WEAK_CERTAIN) and one with no informative word."""
    from nexusmem.retrieve import query

    if row["empty"]:
        return True
    if row["answered"]:
        return False
    if row["arrival"] or row.get("no_word") or row["x"][0] >= query.WEAK_CERTAIN:
        return True
    return None


def judged(row: dict[str, Any]) -> bool:
    """Whether the model decides ROW."""
    return forced(row) is None


def fit(np: Any, rows: list[dict[str, Any]], false_flags: float, l2: float) -> tuple[Any, float]:
    """(weights, bias) on the raw features: weak when bias + weights · x > 0."""
    use = [r for r in rows if judged(r)]
    if not any(r["none"] for r in use) or all(r["none"] for r in use):
        raise SystemExit(
            "learn_weak: the rows need `none` questions and answerable ones, judged by the model"
        )
    x = np.array([r["x"] for r in use], float)
    y = np.array([r["none"] for r in use], float)
    mu, sd = x.mean(0), x.std(0) + 1e-9
    z = (x - mu) / sd
    w, b = np.zeros(z.shape[1]), 0.0
    weight = np.where(y > 0, (1 - y.mean()) / max(y.mean(), 1e-9), 1.0)
    for _ in range(2000):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        g = (p - y) * weight
        w -= 0.1 * (z.T @ g / len(y) + l2 * w)
        b -= 0.1 * float(g.mean())
    # The threshold: the answerable questions' (1 - FALSE_FLAGS) quantile, counting those flagged without
    # the model.
    answerable = [r for r in rows if not r["none"]]
    margin = np.sort(((x - mu) / sd @ w + b)[y == 0])
    allowed = int(false_flags * len(answerable)) - sum(1 for r in answerable if forced(r))
    cut = float(margin[max(0, len(margin) - 1 - max(allowed, 0))])
    raw_w = w / sd
    return raw_w, float(b - cut - (raw_w * mu).sum())


def learned(row: dict[str, Any], weights: Any, bias: float) -> bool:
    decided = forced(row)
    if decided is not None:
        return decided
    return bias + float(sum(w * v for w, v in zip(weights, row["x"]))) > 0


def report(label: str, rows: list[dict[str, Any]], flags: list[bool]) -> str:
    none = [f for r, f in zip(rows, flags) if r["none"]]
    answerable = [f for r, f in zip(rows, flags) if not r["none"]]
    return (
        f"{label}: `none` flagged {sum(none) / max(len(none), 1):.3f} ({sum(none)} of {len(none)}),"
        f" answerable flagged {sum(answerable) / max(len(answerable), 1):.4f} ({sum(answerable)} of {len(answerable)})"
    )


def main(argv: list[str] | None = None) -> int:
    ap = eval_real.synced_stores_parser(__doc__)
    ap.add_argument("--save", type=Path, help="write the rows read from the stores to this JSONL file")
    ap.add_argument("--rows", type=Path, help="learn from rows saved with --save (no store is opened)")
    ap.add_argument("--check", type=Path, action="append", default=[], help="saved rows to judge, not fit")
    ap.add_argument("--false-flags", type=float, default=0.055, help="share of answerable questions flagged")
    ap.add_argument("--l2", type=float, default=1e-2)
    args = ap.parse_args(argv)
    args.set = args.set or ["dev"]
    import numpy as np

    if args.rows:
        rows = [json.loads(line) for line in args.rows.read_text(encoding="utf-8").splitlines()]
    else:
        rows = collect_rows(args)
        if args.save:
            args.save.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    sets = sorted({r["set"] for r in rows})
    shuffled = sets[:]
    random.Random(1).shuffle(shuffled)
    other = [
        (path, [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()])
        for path in args.check
    ]
    for vectors, name in ((True, "WEAK"), (False, "WEAK_LEXICAL")):
        mode = [r for r in rows if r["vectors"] is vectors]
        print(
            f"{'with' if vectors else 'without'} vectors: {len(mode)} questions"
            f" ({sum(r['none'] for r in mode)} `none`), {len(sets)} sets"
        )
        print("  " + report("the rule", mode, [rule(r) for r in mode]))
        held_flags: dict[int, bool] = {}
        for k in range(5 if len(sets) >= 5 else 0):
            held = set(shuffled[k::5])
            weights, bias = fit(np, [r for r in mode if r["set"] not in held], args.false_flags, args.l2)
            for i, r in enumerate(mode):
                if r["set"] in held:
                    held_flags[i] = learned(r, weights, bias)
        if held_flags:
            print("  " + report("learned, held out", mode, [held_flags[i] for i in range(len(mode))]))
        else:
            print("  (fewer than five sets: no held-out figures)")
        weights, bias = fit(np, mode, args.false_flags, args.l2)
        print(
            "  " + report("learned on every set (in-sample)", mode, [learned(r, weights, bias) for r in mode])
        )
        for path, checked in other:
            checked = [r for r in checked if r["vectors"] is vectors]
            print(f"  {path}:")
            print("    " + report("the rule", checked, [rule(r) for r in checked]))
            print("    " + report("learned", checked, [learned(r, weights, bias) for r in checked]))
        print(f"{name}_WEIGHTS: tuple[float, ...] = ({', '.join(f'{w:.4f}' for w in weights)})")
        print(f"{name}_BIAS = {bias:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
