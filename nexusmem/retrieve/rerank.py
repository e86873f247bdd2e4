"""The last step of ranking: the first DEPTH results put in order again by a small learned model.

Every rule before this one is a factor tuned by hand, one at a time, and each ran into the same wall: a
factor that helps one kind of question costs another (docs/evaluation.md, the waves' "tried and not kept").
What they leave is a list whose first ten hold the answer to most questions, in an order that weighs
their evidence one way for every question. This step weighs it per question: a node's score is
exp(w · x), where x is what ranking already knows about it (FEATURES: its relevance relative to the
first result, its kind, whether it is a changelog entry, the size of its change, whether its subject says
it fixes something, its kind's signal, its age against the newest of the ten, its place in the list) and
w depends on what the question is (CONDITIONS, from retrieve.intent: every question, one that reports a
failure, names code, asks how to use something, asks what happened). WEIGHTS holds one row of w per
condition; a question's w is the sum of the rows of the conditions it meets.

The weights are learned, not set: `benchmarks/learn_rerank.py` reads every labelled set's synced store,
ranks each question with this step turned off, keeps the first ten with these features and the labels,
and fits w by a listwise softmax (the log-probability of the labelled answers among the ten) with Adam,
pulled toward "keep the order" by an L2 term. Fitted five times with a fifth of the sets held out each
time, over fifty-seven sets (5,270 questions; docs/evaluation.md, thirty-first wave), the held-out sets
went from MRR .6846 / R@5 .804 to .6945 / .816; the weights below are fitted on all of them, and the three
blind sets written since the last ranking change were run once on them (.711, .677, .718).

It leaves alone what other rules decided on purpose: a question with a time cue, a named release, a name
whose first or last change is asked for, or a "what was run after X" (those rules pin their answer), and
the nodes of kinds the labelled sets do not hold (shell commands, conversation): they keep their places,
and the commits, diffs and doc sections among them are put in order in the places that are left. A list
keeps its scores slot by slot, so what reads them (the packer, the "no strong match" check) sees the same
numbers. `ranking.rerank: false` in config.json turns the step off.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from nexusmem.retrieve import rank
from nexusmem.store import StoredNode

DEPTH = 10
FEATURES = (
    "relevance",  # ln(score / the first result's score)
    "commit",
    "diff",
    "doc",
    "changelog",  # a doc section of the changelog source (a release-notes entry)
    "size",  # ln(1 + lines added and deleted), commits and diffs
    "fix",  # rank.says_fix
    "signal",  # the kind's prior (a fix commit .8, a chore .25)
    "age",  # ln(1 + days older than the newest of the list)
    "position",  # ln(1 + its place in the list as the rules before left it, from 0)
)
CONDITIONS = ("always", "failure", "names_code", "usage", "history")
KINDS = frozenset({"git_commit", "code_diff", "doc_section"})
DAY_MS = 86_400_000

# Learned by benchmarks/learn_rerank.py over fifty-seven labelled sets; see the module docstring.
WEIGHTS: dict[str, tuple[float, ...]] = {
    "always": (3.84, 0.43, -0.85, 0.40, -1.19, -0.35, 0.49, 0.23, -0.06, -0.78),
    "failure": (0.89, 0.30, -0.13, -0.16, -0.21, 0.05, 0.06, -0.01, 0.02, 0.15),
    "names_code": (1.60, 0.93, -0.44, -0.50, -0.43, -0.12, 0.12, -0.15, 0.04, 0.34),
    "usage": (1.47, 0.23, -0.00, -0.23, 0.83, 0.42, -0.62, -0.49, -0.03, 0.40),
    "history": (1.26, 0.62, -0.17, -0.45, -0.54, 0.23, -1.07, -0.50, -0.03, 0.05),
}


def conditions(failure: bool, names_code: bool, asks: str) -> tuple[str, ...]:
    """The CONDITIONS a question meets."""
    met = ["always"]
    if failure:
        met.append("failure")
    if names_code:
        met.append("names_code")
    if asks in ("usage", "history"):
        met.append(asks)
    return tuple(met)


def features(node: StoredNode, score: float, first: float, newest: int, position: int) -> list[float]:
    """What the model knows of NODE, scored SCORE, at POSITION of a list whose first scores FIRST and whose
    newest node is from NEWEST (epoch ms)."""
    kind = node.kind
    change = kind in ("git_commit", "code_diff")
    meta = node.meta or {}
    size = 0.0
    if change:
        lines = meta.get("insertions", 0), meta.get("deletions", 0)
        size = math.log1p(sum(n for n in lines if isinstance(n, int) and n > 0))
    age = math.log1p(max(0, newest - node.ts) / DAY_MS) if node.ts else 0.0
    return [
        math.log(max(score, 1e-9) / max(first, 1e-9)),
        float(kind == "git_commit"),
        float(kind == "code_diff"),
        float(kind == "doc_section"),
        float(kind == "doc_section" and node.source == rank.CHANGELOG_SOURCE),
        size,
        float(rank.says_fix(kind, node.title)),
        float(node.signal or 0.0),
        age,
        math.log1p(position),
    ]


def weights_for(met: Sequence[str]) -> list[float]:
    return [sum(WEIGHTS[c][i] for c in met) for i in range(len(FEATURES))]


def rerank(scored: list[tuple[StoredNode, float]], met: Sequence[str]) -> list[tuple[StoredNode, float]]:
    """SCORED with its first DEPTH put in order by the model for a question meeting MET (see the module
    docstring); nodes of other kinds keep their places, and every place keeps its score."""
    head = scored[:DEPTH]
    if len(head) < 2:
        return scored
    w = weights_for(met)
    first = head[0][1]
    newest = max(node.ts or 0 for node, _ in head)
    value = {
        i: sum(wi * xi for wi, xi in zip(w, features(node, score, first, newest, i)))
        for i, (node, score) in enumerate(head)
        if node.kind in KINDS
    }
    placed = [(head[i][0], head[slot][1]) for slot, i in enumerate(placement(value, len(head)))]
    return placed + scored[DEPTH:]


def placement(value: Mapping[int, float], size: int) -> list[int]:
    """For each of SIZE places, which node goes there: the movable ones (VALUE's keys, by their places)
    best value first in the places they held (a tie keeps the earlier), the others where they were."""
    movable = sorted(value)
    placed = list(range(size))
    for slot, i in zip(movable, sorted(movable, key=lambda i: (-value[i], i))):
        placed[slot] = i
    return placed
