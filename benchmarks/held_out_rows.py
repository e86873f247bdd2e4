#!/usr/bin/env python3
"""The last step's rows with every learned part held out: what the ranking gives a repository none of its
learned parts were learned from.

    python benchmarks/held_out_rows.py --set SET [--set ...] --work W --repo NAME=PATH [--repo ...] \
        --save ROWS.jsonl [--map-data DIR]
    python benchmarks/learn_rerank.py --rows ROWS.jsonl --work W --folds 5

The ranking learns four things from the labelled sets: the question map (learn_question_map.py), the
learned kin (learn_kin.py), how likely a question's answer is a doc section (learn_asks_docs.py) and the
last step (learn_rerank.py). learn_rerank.py holds out the kin, the docs table and the step by fold of sets,
and ranks with the shipped question map, which was learned from every set. This script holds out the map
too: for each fold of sets (learn_rerank.folds, five), the map, the kin and the docs table are learned from
the other folds' sets, and the fold's sets are ranked with them (learn_rerank.question_rows, the step off).
learn_rerank.py --rows then fits the step with the same folds held out, so its figures are those of
repositories no learned part saw.

It reads the stores `eval_real.py --work W` synced. The map is fitted from their vectors as
learn_question_map.py reads them (collected into W/question-map-data, or read from `--map-data`, a folder
`learn_question_map.py --save` wrote), with that script's defaults. Needs numpy (installed with wordllama).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

import eval_real
import learn_asks_docs
import learn_kin
import learn_question_map
import learn_rerank


def fold_args(args: argparse.Namespace, fold: set[str]) -> argparse.Namespace | None:
    """ARGS narrowed to the sets of FOLD and the repositories they have question files for; None when none."""
    sets = [s for s in args.set if s in fold]
    repos = [
        value
        for value in args.repo
        if any((args.questions / s / f"{value.partition('=')[0]}.json").exists() for s in sets)
    ]
    if not sets or not repos:
        return None
    narrowed = copy.copy(args)
    narrowed.set, narrowed.repo = sets, repos
    return narrowed


def collect(args: argparse.Namespace, maps: list[dict[str, Any]], folds: int) -> list[learn_rerank.Row]:
    """The rows of every answerable question ARGS name, each fold of sets ranked with the question map (fitted
    on MAPS, learn_question_map.load), the kin and the docs table learned without it."""
    import numpy as np

    from nexusmem.embed import question_map
    from nexusmem.retrieve import rank

    off = replace(rank.DEFAULT, rerank=False)
    kin_examples = learn_kin.examples(args)
    docs_examples = learn_asks_docs.examples(args)
    rows: list[learn_rerank.Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, fold in enumerate(learn_rerank.folds(sorted(set(args.set)), folds)):
            narrowed = fold_args(args, fold)
            if narrowed is None:
                continue
            training = [s for s in maps if s["set"] not in fold]
            fitted = (
                learn_question_map.fit(
                    np,
                    training,
                    l2=learn_question_map.L2,
                    iterations=learn_question_map.ITERATIONS,
                    rate=learn_question_map.RATE,
                )
                if training
                else np.eye(len(maps[0]["Q"][0]))
            )
            map_file = Path(tmp) / f"map-{k}.bin"
            map_file.write_bytes(fitted.astype("<f4").tobytes())
            kin = learn_kin.as_table(learn_kin.learn(learn_kin.without(kin_examples, fold)))
            docs = learn_asks_docs.learn(learn_asks_docs.without(docs_examples, fold))
            question_map.rows.cache_clear()
            try:
                with (
                    mock.patch.object(question_map, "QUESTION_MAP_FILE", map_file),
                    learn_rerank.ranked_with(kin, docs),
                ):
                    for qf, store, index in eval_real.synced_stores(narrowed, "held_out_rows"):
                        rows += learn_rerank.question_rows(qf, store, index, off)
            finally:
                question_map.rows.cache_clear()
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = eval_real.synced_stores_parser(__doc__)
    ap.add_argument("--save", type=Path, required=True, help="write the rows to this JSONL file")
    ap.add_argument("--map-data", type=Path, help="a folder learn_question_map.py --save wrote")
    ap.add_argument("--folds", type=int, default=5, help="folds of sets, as learn_rerank.py --folds")
    args = ap.parse_args(argv)
    args.set = args.set or ["dev"]
    data = args.map_data
    if data is None:
        data = Path(args.work) / "question-map-data"
        learn_question_map.collect(args, data)
    maps = learn_question_map.load(data)
    if not maps:
        raise SystemExit("held_out_rows: no store with vectors to learn the question map from")
    rows = collect(args, maps, args.folds)
    args.save.write_text("".join(json.dumps(r.__dict__) + "\n" for r in rows), encoding="utf-8")
    print(f"held_out_rows: {len(rows)} lists of {len(set(args.set))} sets -> {args.save}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
