#!/usr/bin/env python3
"""What sits above the answer: for each labelled question whose answer the hybrid ranking puts 2nd to
10th, the share of the answers and of the changes ranked above them that hold a feature (the subject says
it fixes something, names an issue number, the change touched many files, one file, tests...), per kind of
question. It is how the twentieth wave found its two priors; run it before choosing the next.

    python benchmarks/eval_above.py --set SET [--set ...] --work W --repo NAME=PATH [--repo ...]

It reads the stores `eval_real.py --work W` synced (run that first: nothing is cloned or synced here), in
W/<name>-<pin> or W/<set>/<name>-<pin>, and grades with the same targets. A change's files are the store's (`files_of_many`), as ranking reads them.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import eval_real

_ISSUE = re.compile(r"#\d+")
_CHANGES = ("git_commit", "code_diff")

Feature = Callable[[Any, list[str]], bool]


def features() -> dict[str, Feature]:
    """The features, read with the ranking's own rules (those the checkout under test has: run on an
    older release, its rank module may lack the tests rule, whose rows are then left out)."""
    from nexusmem.retrieve import rank

    def subject(node: Any) -> str:
        title = str(node.title)
        return title.split(" — ", 1)[-1] if node.kind == "code_diff" else title

    wide = getattr(rank, "WIDE_FILES", 5)
    out: dict[str, Feature] = {
        "the subject says it fixes something": lambda n, f: rank.says_fix(n.kind, subject(n)),
        "the subject names an issue or PR number": lambda n, f: bool(_ISSUE.search(subject(n))),
        f"the change touched more than {wide} files": lambda n, f: len(f) > wide,
        "the change touched one file": lambda n, f: len(f) == 1,
        "a doc section": lambda n, f: n.kind == "doc_section",
    }
    tests_only, role = getattr(rank, "tests_only", None), getattr(rank, "path_role", None)
    if tests_only is not None and role is not None:
        out["the change touched tests and no program file"] = lambda n, f: tests_only(f)
        out["the change touched tests as well as code"] = lambda n, f: (
            any(role(p) == "tests" for p in f) and not tests_only(f)
        )
    return out


def files_of(store: Any, nodes: list[Any]) -> dict[str, list[str]]:
    """node id → the files of its commit (a diff's commit's), as ranking reads them."""
    from nexusmem import identity

    commit_of = {
        n.id: n.id
        if n.kind == "git_commit"
        else identity.node_id(n.project_id, "git_commit", n.ref.split(":")[0])
        for n in nodes
        if n.kind in _CHANGES
    }
    paths: dict[str, list[str]] = {}
    for node_id, path in store.files_of_many(sorted(set(commit_of.values()))):
        paths.setdefault(node_id, []).append(path)
    return {node_id: paths.get(commit, []) for node_id, commit in commit_of.items()}


def main(argv: list[str] | None = None) -> int:
    ap = eval_real.synced_stores_parser(__doc__)
    ap.add_argument("--deepest", type=int, default=10, help="questions whose answer ranks 2nd to this")
    args = ap.parse_args(argv)
    from nexusmem import project
    from nexusmem.retrieve import query

    repos = eval_real.parse_repos(args.repo)
    sets = tuple(args.set or ("dev",))
    table = features()
    answers: dict[str, Counter[str]] = {}
    above: dict[str, Counter[str]] = {}
    counts: Counter[str] = Counter()
    for qf in eval_real.collect(args.questions, sets, repos):
        slot = eval_real.synced_slot(args.work, qf)
        if slot is None:
            print(
                f"eval_above: no synced store for {qf.name} under {args.work}: run eval_real.py first",
                file=sys.stderr,
            )
            return 1
        root, _info, _ = eval_real.prepare(qf.name, slot, reuse=True, build=lambda s: {}, log=lambda m: None)
        with project.load(root).open_store(readonly=True) as store:
            index = eval_real.RefIndex(store)
            for q in qf.questions:
                correct, _missing = index.resolve(q)
                if not correct:
                    continue
                scored, _ = query.ranked_candidates(store, q.q)
                ids = [node.id for node, _ in scored]
                rank_of = next((i for i, node_id in enumerate(ids, 1) if node_id in correct), None)
                if rank_of is None or not 2 <= rank_of <= args.deepest:
                    continue
                nodes = [node for node, _ in scored[:rank_of]]
                files = files_of(store, nodes)
                counts[q.kind] += 1
                counts[q.kind + " above"] += rank_of - 1
                for label, test in table.items():
                    target = nodes[-1]
                    answers.setdefault(q.kind, Counter())[label] += test(target, files.get(target.id, []))
                    for node in nodes[:-1]:
                        above.setdefault(q.kind, Counter())[label] += test(node, files.get(node.id, []))
    for kind in sorted(answers):
        n, m = counts[kind], counts[kind + " above"]
        print(
            f"\n{kind}: {n} questions answered 2nd to {args.deepest}th, {m} nodes ranked above their answers\n"
        )
        print("| feature | answers | ranked above them |\n|---|---|---|")
        for label in table:
            print(f"| {label} | {answers[kind][label] / n:.2f} | {above[kind][label] / m:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
