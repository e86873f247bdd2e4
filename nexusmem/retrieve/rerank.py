"""The last step of ranking: the first DEPTH results, with the few nearest by vector below them, put in order
again by a small learned model.

Every rule before this one is a factor tuned by hand, one at a time, and each ran into the same wall: a
factor that helps one kind of question costs another (docs/evaluation.md, the waves' "tried and not kept").
What they leave is a list whose first forty hold the answer to most questions, in an order that weighs
their evidence one way for every question. This step weighs it per question: a node's score is
exp(w · x + h(x)), where x is what ranking already knows about it (FEATURES: its relevance relative to the
first result, its kind, whether it is a changelog entry, the size of its change, whether its subject says
it fixes something, its kind's signal, its age against the newest of the list, its place in the list),
what the retrieval lists said of it (how much of the question's IDF mass its words hold, its BM25 share,
its vector share), whether it is a commit whose subject names an issue or pull request, whether it is
about an operating system the question names (by its message, its files, its path), how much of the
question's learned kin its message holds (thesaurus.kin_strengths: "hangs" asked, "deadlock" said), and for
a doc section how likely the question's answer is in the docs (asks_docs.score, learned), and how long
its own text is (the words of its body, change words and title, the files it changed); w depends on
what the question is (CONDITIONS, from retrieve.intent: every question, one that reports a failure, names
code, asks how to use something, asks what happened). WEIGHTS holds one row of w per condition; a
question's w is the sum of the rows of the conditions it meets. h is one hidden layer of eight tanh units
over x and the conditions met (HIDDEN): how much one feature counts depending on the others, which no sum
of rows can say.

The weights are learned, not set: `benchmarks/learn_rerank.py` reads every labelled set's synced store,
ranks each question with this step turned off, keeps the first DEPTH with these features and the labels,
and fits w by a listwise softmax (the log-probability of the labelled answers among them) with Adam,
pulled toward "keep the order" by an L2 term. Fitted five times with a fifth of the sets held out each
time, over fifty-seven sets (5,270 questions; docs/evaluation.md, thirty-second wave), the held-out sets
went from MRR .6846 / R@5 .804 with the step off to .6994 / .823 (the first version of the step,
ten deep without what the lists said: .6945 / .816). Fitted again over eighty sets (7,376 questions;
fifty-third wave) once a subject naming an issue or pull request joined the features: held out, MRR .6784
/ R@5 .796 off, .6976 / .815 on (the same features without it: .6949 / .813). Fitted again over
eighty-three sets (7,658 questions; fifty-fourth wave) once a change about the operating system the
question names joined them: held out .6946 → .6954 without and with it (three shuffles of the folds:
+.0008, +.0009, +.0008; R@5 .814 either way). Since the fifty-fifth wave the model has its hidden layer
and is fitted on each question's list twice, ranked with the vectors and by the words alone (a store with
`provider: none` or not yet embedded): over eighty-four sets (7,751 questions), held out by set, hybrid
MRR .6759 off → .6998 on (R@5 .794 → .818; linear alone .6961 / .813), words alone .6422 → .6690 (linear
.6655); three shuffles of the folds, the hidden layer +.0035 to +.0046 each. Fitted again over eighty-eight
sets (8,123 questions; sixtieth wave) once the learned kin joined the features, each set's lists ranked
with the kin learned without its fold of sets (learn_rerank.py --kin-folds), so that the step trusts them
as far as they carry to a repository they were not learned from: held out by set, hybrid MRR .7442 without
the kin feature → .7474 with it (three random starts each: .7431–.7452 and .7464–.7481; R@5 .862 either
way), words alone .6706 → .6749; with the question map held out by fold too, .7122 / .7124 → .7133 / .7168
(two starts; R@5 .834 → .835). Fitted again over the same sets once the docs score joined the features,
its table held out by the same folds as the kin (learn_rerank.py; sixty-first wave): held out by set,
.7478 / .7482 / .7453 without it → .7512 / .7508 / .7492 / .7524 / .7519 with it (five random starts; R@5
.862 → .864), words alone .6730 → .6789 (means); with the question map held out by fold too, .7149 / .7156
→ .7207 / .7199 (R@5 .837; benchmarks/held_out_rows.py). Fitted again over the same rows once the node's own
lengths joined the features (query.text_sizes; sixty-third wave), weighed by w alone (LINEAR): held out by
set, the same five starts .7511 (mean) → .7539 / .7530 / .7533 / .7516 / .7529 (mean .7529; R@5 .864 →
.864–.866), words alone .6789 → .6814; with the question map held out by fold too, .7207 → .7226 (first start;
the third .7223; R@5 .837 → .838). Read by the hidden units too they gained as much (mean .7531) but turned
near ties of short commits: a fix below an older rework of the same words (the fourth start; four of five with
those commits half as long again). The tables were then fitted on all of them with the first start (--seed 0),
the best held out; no start keeps a mode-only commit above a commit that also made a file executable and
changed the same script for "made run.sh executable" (they are the first two); the starts differ on such near
ties. Since the sixty-fourth wave the step puts the first forty in order, not twenty (DEPTH): one answer in
ten ranked below twentieth, where the step never saw it. Fitted again on the same questions' lists kept forty
deep: held out by set, the same five starts .7529 (mean) → .7539 / .7546 / .7552 / .7547 / .7548 (mean .7546;
R@5 .864–.866 → .867–.868), words alone .6814 → .6842; with the question map held out by fold too,
.7226 → .7233 (first start; the third .7245; R@5 .838 → .840–.841). Since the sixty-fifth wave the few nearest
the question by vector that rank below the first forty join them (window, RECRUITS): a change that says in
other words what the user reports is often nearest by vector and buried by pages that share the question's
common words (128 of 9,145 labelled answers were among them and nowhere in the first forty). Fitted again
over ninety-nine sets (9,145 questions: the eighty-eight and the eleven blind sets written since, whose lists
were ranked with tables that never saw them), held out by set, two random starts: .7552 / .7554 (R@5 .868 /
.866) with the first forty alone → .7572 / .7573 (R@5 .873 / .874) with the nearest ten below them, .7576 /
.7585 (.873 / .874) with twenty; on the eighty-eight sets' own folds .7539 / .7552 → .7558 / .7584 (R@5 .867 /
.867 → .873 / .873). The tables below are fitted on all ninety-nine with the first start (--seed 0), which
held out scores as the third and keeps a doc section a question reads as the docs above a change it ties
with, unless the docs score says otherwise (tests/test_rerank.py), where the third does not.

It leaves alone what other rules decided on purpose. A question with a time cue, a named release, a name whose
first or last change is asked for, a "what was run after X", or one about the asker's own change whose own
commits are among the first (history.own_changes_first: a lift no feature here sees) is not reordered (those
rules pin their answer). A node a rule set back (a test-only change, a blog post for a usage question, an
older major's page, a diff of a change already listed, a page of the docs for a question about what happened)
and a section a rule lifted (the one that heads the matter asked about) keep their places (held()), and what
the lists said of any node counts times the factor the rules gave it, so that the words a question shares with
a page never undo the rule that put the page below another. Nodes of kinds the labelled sets do not hold
(shell commands, conversation) keep their places too; the others are put in order in the places that are left.
A list keeps its scores slot by slot, so what reads them (the packer, the "no strong match" check) sees the
same numbers; a node taken in from below scores no less than the first node left below.
`ranking.rerank: false` in config.json turns the step off.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from operator import mul

from nexusmem.retrieve import rank
from nexusmem.retrieve.fuse import Evidence
from nexusmem.store import StoredNode

DEPTH = 40
# The first RECRUITS nearest the question by vector that rank below DEPTH join the nodes the step orders
# (window): ten and twenty gained alike held out (module docstring), and each costs the step a node.
RECRUITS = 10
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
    # What the retrieval lists said of it, each times the factor ranking's rules gave it (its score over its
    # relevance and its kind's prior, rank.kind_prior, which the features above weigh): a node a rule set
    # back (a test-only change, a blog post, an older major's page) is set back here too, and a section a
    # rule lifted (the one that heads the matter asked about) lifted.
    "coverage",  # the share of the question's IDF mass among the words it holds (query.Coverage)
    "lexical",  # its BM25 share (fuse.Evidence.lexical)
    "semantic",  # its cosine above the embedder's noise floor, scaled to [0, 1] (fuse.Evidence.semantic)
    "numbered",  # a commit whose subject names an issue or pull request (rank.names_number: "Fixes #339")
    "platform",  # a change or section about an operating system the question names (query.on_platform)
    # ln(1 + the strengths of the question's learned kin its message holds / 10) (query.kin_held): "hangs"
    # asked, "deadlock" in the message (thesaurus.kin_strengths).
    "kin",
    # for a doc section, how likely the question's answer is a doc section: the log-odds asks_docs.score
    # learned from the labelled questions ("which response will it hand back if two stubs match?"); 0 for
    # a change.
    "asks_docs",
    # What the node is, by its own text (query.text_sizes): ln(1 + the words of its body, of its change
    # words, of its title; the files a commit changed). A one-line commit of one file and a release's long
    # merge are not answers alike, whatever their share of the question.
    "body_words",
    "change_words",
    "title_words",
    "files",
)
# Features the hidden layer does not read (their HIDDEN weights are 0), weighed by w alone: a node's
# lengths. Read by the hidden units too, they gained as much held out but turned near ties of short commits
# (a fix below an older rework of the same words) on the strength of a few lines more or less.
LINEAR: tuple[str, ...] = ("body_words", "change_words", "title_words", "files")
CONDITIONS = ("always", "failure", "names_code", "usage", "history")
KINDS = frozenset({"git_commit", "code_diff", "doc_section"})
CHANGE_KINDS = frozenset({"git_commit", "code_diff"})
DAY_MS = 86_400_000
# A node a rule set back (ruling() below this) or a section one lifted (above its inverse) keeps the place the
# rules gave it: the step does not undo a rule (a test-only change below the fix, a blog post below the
# how-to page, an older major's page below the current one, the section that heads the matter asked about
# above the commits that name the project), however many of the question's words the others hold.
HELD = 0.99

# Learned by benchmarks/learn_rerank.py over ninety-nine labelled sets, forty deep and the nearest ten below
# (--seed 0); see the module docstring.
# One row of weights a line, so that the table reads as one.
# fmt: off
WEIGHTS: dict[str, tuple[float, ...]] = {
    "always": (1.65, -0.35, -0.04, 0.45, -0.16, 0.22, 0.37, 0.09, 0.08, -0.48, 0.41, 0.53, 0.83, 0.09, 0.07, 0.96, 0.71, -0.20, -0.32, 0.28, 0.28),
    "failure": (0.44, -0.22, 0.19, 0.04, -0.31, -0.11, -0.04, 0.18, -0.02, 0.09, -0.04, -0.03, 0.01, 0.01, 0.09, 0.05, 0.06, -0.05, -0.03, 0.22, 0.35),
    "names_code": (0.28, 0.05, -0.02, 0.00, -0.08, 0.05, 0.17, 0.14, 0.00, -0.01, 0.23, 0.50, 0.22, 0.11, -0.20, -0.03, 0.02, -0.07, -0.19, 0.18, -0.08),
    "usage": (0.10, 0.18, -0.01, -0.17, -0.16, 0.01, -0.71, -0.07, -0.06, 0.03, 0.13, 0.13, 0.19, 0.41, -0.30, 0.11, -0.15, -0.15, 0.25, -0.08, 0.53),
    "history": (0.47, -0.24, 0.14, 0.12, 0.12, 0.11, -0.63, -0.06, 0.00, -0.05, 0.71, 0.40, 0.02, 0.02, -0.02, -0.02, -0.10, -0.22, -0.05, -0.32, 0.48),
}
# fmt: on
# One hidden layer of tanh units over the same features and the conditions the question meets (1 or 0
# each, in CONDITIONS order), added to w · x: what no sum of per-condition rows can weigh, how much one
# feature counts depending on another (and on the kind of question). A row per unit: its bias, its weight
# in the value, then its weights over FEATURES and CONDITIONS. Learned with WEIGHTS.
# fmt: off
HIDDEN: tuple[tuple[float, ...], ...] = (
    (4.33, -1.07, 0.86, 0.77, -1.25, -0.64, -0.74, -0.08, -0.32, -0.33, -0.05, -0.45, -2.00, 0.59, -3.89, -0.06, -4.96, 0.26, -0.12, 0.00, 0.00, 0.00, 0.00, 0.03, 0.27, 0.20, 0.04, 0.01),
    (1.77, 1.11, 0.00, 3.37, -2.96, -3.19, 0.29, -0.02, 0.36, 1.41, -0.75, 0.09, -1.13, 1.31, -0.28, 0.09, -0.03, 0.03, 0.09, 0.00, 0.00, 0.00, 0.00, -0.07, -0.03, 0.12, -0.05, 0.21),
    (-0.16, -1.03, 0.24, 1.24, -1.22, -1.18, 1.38, -0.01, 0.61, -0.74, 0.04, 0.19, -0.63, 0.45, -6.30, 0.03, 0.21, -0.08, 0.07, 0.00, 0.00, 0.00, 0.00, 0.01, 0.14, -0.08, -0.38, -0.08),
    (3.86, 1.20, 0.30, 0.72, -1.44, -0.57, -3.08, -0.40, 0.14, -3.94, 0.04, -0.16, -0.81, 0.39, 1.41, -0.05, -0.01, -0.10, -0.17, 0.00, 0.00, 0.00, 0.00, 0.09, -0.30, -0.20, 0.00, 0.07),
    (0.99, -1.39, -0.52, 0.14, 2.38, -0.67, -0.45, 0.03, 0.21, 0.91, 0.00, 0.06, -4.84, 0.21, 0.60, -0.10, -0.04, 0.41, 0.02, 0.00, 0.00, 0.00, 0.00, -0.02, 0.40, 0.05, 0.19, -0.78),
    (-2.10, 1.48, -0.21, -0.54, -1.95, 1.05, 0.14, 0.02, 0.03, -0.19, 0.00, 0.20, 2.05, 1.05, 3.13, 0.20, 0.00, -0.24, 0.20, 0.00, 0.00, 0.00, 0.00, -0.01, -0.17, 0.30, -0.32, 0.21),
    (-3.47, 1.17, 0.61, 0.72, -2.26, -0.34, -2.51, -0.06, 0.49, 4.43, -0.01, 0.27, 0.62, 1.07, 3.69, 0.12, 0.21, 0.00, 0.01, 0.00, 0.00, 0.00, 0.00, 0.09, 0.07, 0.14, 0.10, 0.10),
    (-2.62, -1.04, -0.34, 0.45, 0.42, -0.58, -0.31, 0.52, -0.15, -1.66, 0.02, 0.06, 2.22, -0.08, 0.13, -0.02, 0.46, 0.02, 0.03, 0.00, 0.00, 0.00, 0.00, 0.08, -0.18, -0.08, -0.06, 0.43),
)
# fmt: on


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


NO_EVIDENCE = Evidence()
# The words of a node's body, of its change words and of its title, and the files a commit changed
# (query.text_sizes; the last 0 for a diff or a section).
Sizes = tuple[int, int, int, int]
NO_SIZES: Sizes = (0, 0, 0, 0)


def ruling(
    node: StoredNode, score: float, evidence: Evidence, settings: rank.Settings, asks: str
) -> float | None:
    """The factor ranking's rules gave NODE, scored SCORE: its score over its relevance (rank.relevance of
    EVIDENCE under the question's SETTINGS) and its kind's prior for a question that ASKS so
    (rank.kind_prior, which the step's own features weigh, all but the cut a question about what happened
    gives a page of the docs). Below 1, a rule set it back (a test-only change, an older major's page, a
    blog post, which misses the lift a usage question gives doc sections, a diff of a change already
    listed, a page of the docs for a question about what happened); above 1 one lifted it (the section that
    heads the matter asked about, a commit that took its best diff's score). None when no list found it
    (nothing to compare with)."""
    fix = rank.says_fix(node.kind, node.title)
    # The cut a question about what happened gives a page of the docs stays a rule's (the changes answer
    # it: the page keeps the place the rules gave it); the lift a usage question gives one the step weighs.
    prior = rank.kind_prior(
        node.signal or 0.0,
        node.kind,
        node.source,
        "neutral" if asks == "history" else asks,
        fix=fix,
        post=False,
    )
    relevance = rank.relevance(evidence, settings)
    if relevance <= 0 or prior <= 0:
        return None
    return score / (relevance * prior)


def features(
    node: StoredNode,
    score: float,
    first: float,
    newest: int,
    position: int,
    evidence: Evidence = NO_EVIDENCE,
    covered: float = 0.0,
    ruled: float | None = None,
    platform: bool = False,
    kin: float = 0.0,
    asks_docs: float = 0.0,
    sizes: Sizes = NO_SIZES,
) -> list[float]:
    """What the model knows of NODE, scored SCORE, at POSITION of a list whose first scores FIRST and whose
    newest node is from NEWEST (epoch ms); EVIDENCE: what the retrieval lists said of it; COVERED: the share
    of the question's IDF mass among its words; RULED: ruling(); PLATFORM: it is about an operating system
    the question names; KIN: the strengths of the question's learned kin its message holds; ASKS_DOCS: the
    log-odds that the question's answer is a doc section (asks_docs.score); SIZES: the words of its body,
    change words and title and the files it changed (query.text_sizes)."""
    kind = node.kind
    change = kind in CHANGE_KINDS
    meta = node.meta or {}
    size = 0.0
    if change:
        lines = meta.get("insertions", 0), meta.get("deletions", 0)
        size = math.log1p(sum(n for n in lines if isinstance(n, int) and n > 0))
    age = math.log1p(max(0, newest - node.ts) / DAY_MS) if node.ts else 0.0
    # What the lists said of a change is its own: a commit's lift (its best diff's score) is not its words.
    factor = 0.0 if ruled is None else min(ruled, 1.0) if change else ruled
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
        covered * factor,
        evidence.lexical * factor,
        evidence.semantic * factor,
        float(rank.names_number(kind, node.title)),
        float(platform),
        math.log1p(kin / 10.0),
        asks_docs if kind == "doc_section" else 0.0,
        *(math.log1p(n) for n in sizes),
    ]


Covering = Callable[[list[str]], Mapping[str, float]]


def head_features(
    head: Sequence[tuple[StoredNode, float]],
    evidence: Mapping[str, Evidence],
    covering: Covering,
    settings: rank.Settings,
    asks: str,
    on_platform: Collection[str] = (),
    kin: Mapping[str, float] | None = None,
    asks_docs: float = 0.0,
    sizes: Mapping[str, Sizes] | None = None,
) -> tuple[list[list[float]], list[bool]]:
    """features() of every node of HEAD (the first DEPTH of a ranked list), in order, and whether the step
    may move it: a commit, diff or doc section not held() in place. COVERING gives, for the ids of the
    nodes it may move, the share of the question's IDF mass each one's words hold (query.Coverage: the
    nodes copied into a small index and probed once per question word, so it is asked for those alone; the
    others' share is never read). ON_PLATFORM: the ids of those about an operating system the question
    names (query.on_platform); KIN: by id, the strengths of the question's learned kin each one's message
    holds (query.kin_held); ASKS_DOCS: the log-odds that the question's answer is a doc section; SIZES: by
    id, the lengths of each one's text (query.text_sizes)."""
    first = head[0][1]
    newest = max(node.ts or 0 for node, _ in head)
    found = [evidence.get(node.id, NO_EVIDENCE) for node, _ in head]
    rulings = [ruling(node, score, ev, settings, asks) for (node, score), ev in zip(head, found)]
    moves = [node.kind in KINDS and not held(node.kind, ruled) for (node, _), ruled in zip(head, rulings)]
    covered = covering([node.id for (node, _), moving in zip(head, moves) if moving])
    x = [
        features(
            node,
            score,
            first,
            newest,
            i,
            found[i],
            covered.get(node.id, 0.0),
            rulings[i],
            node.id in on_platform,
            (kin or {}).get(node.id, 0.0),
            asks_docs,
            (sizes or {}).get(node.id, NO_SIZES),
        )
        for i, (node, score) in enumerate(head)
    ]
    return x, moves


def held(kind: str, ruled: float | None) -> bool:
    """Whether a node of KIND that the rules gave the factor RULED (ruling()) keeps its place: one a rule
    set back, or a section one lifted (a commit's lift is its best diff's score, not a rule's judgement)."""
    if ruled is None:
        return False
    return ruled < HELD or (kind not in CHANGE_KINDS and ruled > 1 / HELD)


def weights_for(met: Sequence[str]) -> list[float]:
    return [sum(WEIGHTS[c][i] for c in met) for i in range(len(FEATURES))]


def values(x: Sequence[Sequence[float]], met: Sequence[str]) -> list[float]:
    """The model's value of each row of X (features()) for a question meeting MET: w · x plus the hidden
    units' (HIDDEN)."""
    w = weights_for(met)
    n = len(FEATURES)
    # Each unit's bias with what the conditions met add to it, once for the list.
    units = [
        (bias + sum(u for u, c in zip(unit[n:], CONDITIONS) if c in met), weight, unit[:n])
        for bias, weight, *unit in HIDDEN
    ]
    out = []
    for row in x:  # sum(map(mul, …)): the same sums in the same order, twice as fast as a generator's
        value = sum(map(mul, w, row))
        for bias, weight, unit in units:
            value += weight * math.tanh(bias + sum(map(mul, unit, row)))
        out.append(value)
    return out


def rerank(
    scored: list[tuple[StoredNode, float]],
    met: Sequence[str],
    evidence: Mapping[str, Evidence] | None = None,
    covering: Covering | None = None,
    settings: rank.Settings = rank.DEFAULT,
    asks: str = "neutral",
    on_platform: Collection[str] = (),
    kin: Mapping[str, float] | None = None,
    asks_docs: float = 0.0,
    sizes: Mapping[str, Sizes] | None = None,
    *,
    nearest: Sequence[str] = (),
) -> list[tuple[StoredNode, float]]:
    """SCORED with the nodes window() takes (its first DEPTH, and those of the first RECRUITS of NEAREST, the
    ids nearest the question by vector, that rank below them) put in order by the model for a question
    meeting MET (see the module docstring), given what the retrieval lists said of each node (EVIDENCE, by
    id), how much of the question the nodes it may move hold (COVERING, see head_features), the question's
    ranking SETTINGS and what the question ASKS for, which of them are about an operating system it names
    (ON_PLATFORM, by id) and how much of its learned kin their messages hold (KIN, by id), how likely its
    answer is a doc section (ASKS_DOCS, asks_docs.score) and how long their texts are (SIZES, by id); nodes
    held() in place and of other kinds keep their places, and every place keeps its score."""
    head, rest = window(scored, nearest)
    if len(head) < 2:
        return scored
    x, moves = head_features(
        head, evidence or {}, covering or (lambda ids: {}), settings, asks, on_platform, kin, asks_docs, sizes
    )
    moved = [i for i in range(len(head)) if moves[i]]
    value = dict(zip(moved, values([x[i] for i in moved], met)))
    # A node taken in from below scores no less than the first node left below: the list stays in order.
    floor = rest[0][1] if rest else 0.0
    placed = [(head[i][0], max(head[slot][1], floor)) for slot, i in enumerate(placement(value, len(head)))]
    return placed + rest


def window(
    scored: list[tuple[StoredNode, float]], nearest: Sequence[str] = ()
) -> tuple[list[tuple[StoredNode, float]], list[tuple[StoredNode, float]]]:
    """SCORED split into what the step orders and the rest, each in order: its first DEPTH, then those of
    the first RECRUITS of NEAREST (the ids nearest the question by vector, nearest first) of the kinds it
    moves that rank below them."""
    head, below = scored[:DEPTH], scored[DEPTH:]
    near = set(nearest[:RECRUITS])
    taken = {node.id for node, _ in below if node.id in near and node.kind in KINDS}
    if not taken:
        return head, below
    return head + [p for p in below if p[0].id in taken], [p for p in below if p[0].id not in taken]


def placement(value: Mapping[int, float], size: int) -> list[int]:
    """For each of SIZE places, which node goes there: the movable ones (VALUE's keys, by their places)
    best value first in the places they held (a tie keeps the earlier), the others where they were."""
    movable = sorted(value)
    placed = list(range(size))
    for slot, i in zip(movable, sorted(movable, key=lambda i: (-value[i], i))):
        placed[slot] = i
    return placed
