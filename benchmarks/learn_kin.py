#!/usr/bin/env python3
"""Learn the word kin a question's words bring into the thesaurus query (nexusmem/retrieve/learned_kin.txt)
from the labelled sets.

    python benchmarks/learn_kin.py --set SET [--set ...] --work W --repo NAME=PATH [--repo ...] \
        [--leave-out SET ...] [--out FILE | --write]

It reads the stores `eval_real.py --work W` synced (run that first: nothing is cloned or synced here).
For every answerable question whose labels name a commit (`sha` or `sha:path`), it pairs each word of the
question with each word of the labelled commits' messages (title and body) that the question lacks. A pair
is kept when the question word brings the commit word at least MIN_LIFT times as often as commit messages
hold it at all (over the labelled commits of every set), and when questions about at least MIN_REPOSITORIES
different repositories made it: one project's vocabulary (its function names, its components) never
qualifies, the words any project's users and commits say for one thing ("hangs" and "deadlock", "folder"
and "directory", "codec" and "encoding") do. Each question word keeps its PER_WORD strongest kin, by how
many questions made the pair times the log of its lift.

Words are the ones the retrieval searches (nexusmem.text.terms: lower-cased, no stop words), ASCII letters
only, three letters or more, no code noise word (text.is_noise_word).

`--leave-out SET` learns without that set's questions (a held-out measurement: rank the left-out set with
the kin learned without it). `--out FILE` writes the kin there; `--write` to the package file. The kin that
ships was learned from every labelled set but the newest blind one (docs/evaluation.md).
"""

from __future__ import annotations

import math
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import eval_real

from nexusmem.retrieve import thesaurus
from nexusmem.text import is_noise_word, terms

MIN_REPOSITORIES = 3
MIN_LIFT = 3.0
PER_WORD = 4


def words(text: str) -> set[str]:
    """The words of TEXT a pair can be made of."""
    return {w for w in terms(text) if w.isascii() and w.isalpha() and not is_noise_word(w)}


def learn(examples: Iterable[tuple[str, set[str], set[str]]]) -> dict[str, list[tuple[str, float]]]:
    """Each question word's kin, strongest first, with their strength, from EXAMPLES: (repository, the
    question's words, the words of its labelled commits' messages)."""
    asked: Counter[str] = Counter()  # questions holding a word
    held: Counter[str] = Counter()  # questions whose answer's message holds a word
    together: Counter[tuple[str, str]] = Counter()
    repositories: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    total = 0
    for repository, question, answer in examples:
        total += 1
        asked.update(question)
        held.update(answer)
        for a in question:
            for b in answer - question:
                together[a, b] += 1
                repositories[a, b].add(repository)
    kin: defaultdict[str, list[tuple[float, str]]] = defaultdict(list)
    for (a, b), n in together.items():
        if len(repositories[a, b]) < MIN_REPOSITORIES:
            continue
        lift = (n / asked[a]) / (held[b] / total)
        if lift >= MIN_LIFT:
            kin[a].append((n * math.log(lift), b))
    return {
        a: [(b, round(strength, 2)) for strength, b in sorted(found, key=lambda x: (-x[0], x[1]))[:PER_WORD]]
        for a, found in sorted(kin.items())
    }


def examples(args: object) -> list[tuple[str, str, set[str], set[str]]]:
    """What learn() learns from, read from the stores ARGS name, with the set of each: (set, repository, the
    question's words, the words of its labelled commits' messages)."""
    out: list[tuple[str, str, set[str], set[str]]] = []
    for qf, store, index in eval_real.synced_stores(args, "learn_kin"):
        for q in qf.questions:
            if q.kind == "none":
                continue
            shas = {t[:40] for t in q.targets if eval_real.target_kind(t) in ("commit", "diff")}
            ids = [index.commits[sha] for sha in sorted(shas) if sha in index.commits]
            nodes = store.get_many(ids)
            if not nodes:
                continue
            answer: set[str] = set()
            for node in nodes.values():
                answer |= words(node.title) | words(node.body)
            out.append((qf.set, qf.url or qf.name, words(q.q), answer))
    return out


def without(
    rows: list[tuple[str, str, set[str], set[str]]], sets: set[str]
) -> list[tuple[str, set[str], set[str]]]:
    """ROWS (examples()) of every set but SETS, as learn() takes them."""
    return [(repository, question, answer) for s, repository, question, answer in rows if s not in sets]


def as_table(kin: dict[str, list[tuple[str, float]]]) -> dict[str, str]:
    """KIN as thesaurus.learned_kin() answers it: each word's line after the word, unparsed."""
    return {
        word: " ".join(f"{other}:{strength:g}" for other, strength in row)
        for word, row in sorted(kin.items())
    }


def dump(kin: dict[str, list[tuple[str, float]]]) -> str:
    """KIN as thesaurus.LEARNED_KIN_FILE holds it: one question word a line, then each kin:strength."""
    return "".join(f"{word} {line}\n" for word, line in as_table(kin).items())


def main(argv: list[str] | None = None) -> int:
    ap = eval_real.synced_stores_parser(__doc__)
    ap.add_argument("--leave-out", action="append", default=[], metavar="SET", help="repeatable")
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path)
    where.add_argument("--write", action="store_true", help=f"write {thesaurus.LEARNED_KIN_FILE}")
    args = ap.parse_args(argv)
    if not args.set:
        args.set = ["dev"]
    rows = without(examples(args), set(args.leave_out))
    kin = learn(rows)
    path = thesaurus.LEARNED_KIN_FILE if args.write else args.out
    path.write_text(dump(kin), encoding="utf-8")
    pairs = sum(len(v) for v in kin.values())
    print(f"learn_kin: {len(rows)} questions, {len(kin)} words, {pairs} pairs -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
