#!/usr/bin/env python3
"""How much of the packed answers is another language's copy of a page: for every labelled question of a
project that keeps its docs translated (vuejs/vitepress's docs/en beside docs/ja, docs/ru, ...), the packed
items under a language folder, with the translation rule off (`history.TRANSLATION_FACTOR` = 1) and on.

    python benchmarks/eval_translations.py --set SET [--set ...] --work W --repo NAME=PATH [--repo ...]

It reads the stores `eval_real.py --work W` synced (run that first: nothing is cloned or synced here), in
W/<name>-<pin> or W/<set>/<name>-<pin>. A project with no language folder prints zeros both ways.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import eval_real


def main(argv: list[str] | None = None) -> int:
    args = eval_real.synced_stores_parser(__doc__).parse_args(argv)
    from nexusmem import project
    from nexusmem.retrieve import history, query

    repos = eval_real.parse_repos(args.repo)
    sets = tuple(args.set or ("dev",))
    factor = history.TRANSLATION_FACTOR
    print("| repository | questions | translated items packed, rule off | rule on |")
    print("|---|---|---|---|")
    for qf in eval_real.collect(args.questions, sets, repos):
        slot = eval_real.synced_slot(args.work, qf)
        if slot is None:
            print(f"eval_translations: no synced store for {qf.name} under {args.work}", file=sys.stderr)
            return 1
        root, _info, _ = eval_real.prepare(qf.name, slot, reuse=True, build=lambda s: {}, log=lambda m: None)
        cells = []
        proj = project.load(root)
        with proj.open_store(readonly=True) as store:
            for value in (1.0, factor):
                history.TRANSLATION_FACTOR = value
                translated = packed = 0
                for q in qf.questions:
                    items = query.run(store, q.q, project=proj.id).items
                    packed += len(items)
                    translated += sum(
                        1 for it in items if it.kind == "doc_section" and history.translated(it.ref)
                    )
                cells.append(f"{translated} of {packed}")
        history.TRANSLATION_FACTOR = factor
        print(f"| {qf.name} | {len(qf.questions)} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
