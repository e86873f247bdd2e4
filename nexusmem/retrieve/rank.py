"""score = relevance × priors.

relevance = lexical + w·semantic (see fuse.Evidence and query.retrieve): a node's BM25 score over the
query's best, scaled by how much of the question that best match contains, plus its vector similarity
above the embedder's noise floor, weighted by w (`ranking.vectorWeight`, default VECTOR_WEIGHT). A node
that only BM25 found keeps its whole lexical score (rank fusion halved it); with w < 1 a node that only the
vectors found cannot outrank a word match that contains the whole question. The five changes or doc
sections nearest to the question by vector get a little more semantic share (fuse.lift_nearest).

w was tuned on the dev questions of four real repositories (docs/evaluation.md): hybrid MRR .261 at
w = 0 (words only), .330 at .4, .356 at .6 and .8, .362 at 1, .357 at 1.5, .353 at 2; .8 sits in the
middle of that plateau. Weighting the vectors per node kind (commit, diff, doc) did no better.

A question that names an identifier, a file or an option (intent.names_code) and does not ask how to use
something weighs the vectors CODE_VECTOR_FACTOR × w (query.vector_weight): the vectors cost code
questions on five of six real-repository sets (hybrid below words only). With the origin rule in place
(search.first_holder), hybrid MRR on dev / held-out / fresh / fresh2 / fresh3 / fresh4 at factor 1:
.547 / .478 / .570 / .421 / .559 / .544 (mean .520); .75: mean .526; .5: .542 / .517 / .611 / .436 /
.562 / .549 (.536); .25: .549 / .508 / .615 / .455 / .564 / .560 (.542); 0: .550 / .474 / .612 / .471 /
.554 / .533 (.532). Chosen at .25 before the blind fresh5 set was run once: .514 at 1, .524 at .25 (code
.518 → .567, symptom .407 → .447, multi .759 → .690). Tried before the origin rule, the same factor lost
on the then-blind fresh2 (.349 → .340 at .5) and was dropped until the sets above said otherwise.
A question that names code *and reports a failure* ("`hexyl big.iso | head` ends with 'Broken pipe'")
weighs them FAILURE_CODE_VECTOR_FACTOR × w instead: its code names are what the user saw, and the rest is
an account of the symptom, prose the vectors know. Thirty-nine labelled sets, with the failure questions'
filler words dropped (text.FILLER_WORDS): .25 → .6984, .5 → .6993, then without the filler: .25 → .6977,
.5 → .6987, .75 → .6975, 1 → .6952.

priors = signal_w^SE × recency^RE × superseded × rejected, each bounded so that it cannot overturn a clear
relevance winner:
- signal_w = .2 + .8·signal (the kind's prior: a fix commit .8, a chore .25) spans 5×; SE squeezes that to
  SIGNAL_GAP (1.15×).
- recency halves every 30 days (faster for less trusted provenance) down to a floor of .3. It counts only
  for the kinds whose worth fades (shell commands, conversation) — up to RECENCY_GAP (1.41×) — unless the
  question carries a time cue ("yesterday", "recently", a date), when it counts for every kind, up to
  CUE_RECENCY_GAP (3×): then a fresh weaker match should beat an old stronger one.
- a node the user marked superseded counts SUPERSEDED_FACTOR, one they rejected REJECTED_FACTOR.
- a commit (or one of its diffs) whose subject says it fixes something counts FIX_FACTOR: most questions
  about how a program behaves are answered by the fix that changed the behaviour. The conventional-commit
  signal only sees "fix:" prefixes; most fixes are written "Fix …", "ignore: fix deadlock …", "Fixed …".
  On the dev questions (hybrid MRR over 84, with the symptom thesaurus): .445 at 1, .470 at 1.1, .483 at
  1.15, .498 at 1.2, .493 at 1.25, .491 at 1.3, .469 at 2 (symptom questions .118 → .215 at 1.2).
- a commit (or diff) that changed documentation only counts DOCS_ONLY_FACTOR, unless the question speaks
  of docs (intent.mentions_docs); one that changed tests and no program file counts TESTS_ONLY_FACTOR,
  unless it speaks of tests (intent.mentions_tests). The files are read once per query
  (search.change_scope).
- a doc section counts USAGE_DOC_FACTOR when the question asks how to use something (retrieve.intent):
  without age, docs lost the hidden boost that looking new gave them (up to ~2× under the old priors).
  Dev hybrid MRR overall / doc / multi: .499 / .439 / .643 at 1, .499 / .454 / .620 at 1.2, .514 / .524 /
  .610 at 1.4, .520 / .552 / .606 at 1.6, .537 / .631 / .591 at 2, .530 / .642 / .524 at 2.5, .527 / .643
  / .499 at 3 (multi questions phrased "can I …" are answered by commits, and lose). Re-measured on sixteen
  sets once every word was stemmed (retrieve.search.stem_terms), hybrid MRR: .6049 at 2, .6073 at 2.5,
  .6078 at 3, .6061 at 4 (doc .591 → .608 at 2.5; code .831 → .827). Changelog entries
  (doc sections of the `changelog` source) are not lifted: an entry records what changed in a release, not
  how to use the program, and on a usage question it crowded out the section that answers it ("is there
  an equivalent of response.ok?" met five entries that mention `response` attributes before the
  compatibility guide). Dev hybrid MRR overall / doc: .522 / .631 lifting every doc section, .536 / .689
  lifting all but changelog entries; the factor re-tuned with them left out: .519 at 1.6, .536 at 2,
  .531 at 2.5, .529 at 3.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from nexusmem.retrieve.fuse import Evidence

VECTOR_WEIGHT = 0.8
CODE_VECTOR_FACTOR = 0.25
FAILURE_CODE_VECTOR_FACTOR = 0.5
SIGNAL_GAP = 1.15
RECENCY_GAP = math.sqrt(2.0)
CUE_RECENCY_GAP = 3.0
RECENCY_FLOOR = 0.3
SIGNAL_EXP = math.log(SIGNAL_GAP) / math.log(5)  # ≈ .087: signal_w spans .2..1 (5×)
RECENCY_EXP = math.log(RECENCY_GAP) / math.log(1 / RECENCY_FLOOR)  # ≈ .288: recency spans .3..1
CUE_RECENCY_EXP = math.log(CUE_RECENCY_GAP) / math.log(1 / RECENCY_FLOOR)  # ≈ .912
HALF_LIFE_DAYS = 30.0
PROVENANCE_RATE = {"observed": 1.0, "authored": 0.75, "recorded": 0.5, "derived": 0.35}
# Kinds whose worth fades with age whatever the question: what was typed or said, not what was decided.
RECENCY_KINDS = frozenset({"shell_command", "conversation_turn", "session_summary"})
FIX_FACTOR = 1.2
USAGE_DOC_FACTOR = 2.5
# A doc section (not a changelog entry) counts HISTORY_DOC_FACTOR when the question asks what happened
# ("when did …", "which change …", "how has X changed over the years?"): the guide says how a thing works
# now, the changes say how it came to. Sixteen labelled sets, hybrid MRR: 1 → .6077, .85 → .6094, .7 →
# .6098, .5 → .6099 (26 questions better, 1 worse at .7: "why did black explode my short list?", a doc
# question asked in history's words). On the dev set alone (an older ranking) it had been flat.
HISTORY_DOC_FACTOR = 0.7
# A doc section whose heading (or file) names the practical matter a question asks about (installing, the
# licence, supported versions, contributing, security, uninstalling: intent.topic) counts TOPIC_FACTOR:
# "how do I get thor onto my machine?" is answered by the README's "Installation", which shares no word
# with it but the project's name.
TOPIC_FACTOR = 2.0
# A doc section with nothing a reader sees under its title (an RST section of `.. autoclass::` and its
# options alone: Sphinx fills it from docstrings memory does not read; docs.py marks it `bare`) counts
# BARE_DOC_FACTOR: short, and all title, it matched a question about its class better than the page that
# says what the class does ("what does the CoverageData class do?": coverage.py's empty "The CoverageData
# class" first at twice the score of api.rst's text, shown as its title alone; at .5 still first, at .35
# third, at .25 gone from the answer even for "where is the CoverageData class documented?"). fresh66 /
# fresh68 hybrid MRR .764 / .569 at 1, .5, .35 and .25 alike (bm25 on fresh68 .534 → .539).
BARE_DOC_FACTOR = 0.35
# The source whose doc sections are release notes (sources/changelog.py): history, not usage docs.
CHANGELOG_SOURCE = "changelog"
# A post of the project's blog (docs/blog/, website/src/blog/, mkdocs-material's blog/posts/, Jekyll's
# _posts/) announces a release or tells a story ("Announcing 4.0", "Task in 2023"): it is news, not the
# page that says how to use the program, and a how-to question must not lift it above that page. Its
# sections count as changelog entries do: no usage lift, no topic lift, no history cut.
_POST_DIR = re.compile(r"(?:^|/)(?:blog|_?posts)/", re.IGNORECASE)
_FIX = re.compile(
    r"\b(fix|fixes|fixed|fixing|bugfix|hotfix|regression|revert|reverts|workaround)\b", re.IGNORECASE
)
# A fix of the text or the style ("Fix typo in fish completions", "fix spelling", "Fix/ignore new ruff
# errors") changed no behaviour, and a question about how the program behaves is not answered by it: no
# FIX_FACTOR, unless the subject says the slip broke something ("Fix typo that broke outputJSONSync()").
# Forty-nine labelled sets (benchmarks/eval_real.py, packed): MRR .6876 -> .6890, 123 questions better, 1 worse.
_COSMETIC = re.compile(
    r"\b(typos?|spelling|misspell\w*|grammar|wording|docstrings?|code ?style|flake8|eslint|prettier|gofmt|rustfmt"
    r"|clippy|mypy|pylint|ruff|golangci(-lint)?)\b",
    re.IGNORECASE,
)
_BROKE = re.compile(r"\b(crash\w*|broke|broken|breaks|panic\w*|hang\w*|causes?|caused)\b", re.IGNORECASE)
# A commit (or diff) that changed documentation only counts DOCS_ONLY_FACTOR unless the question speaks of
# docs (intent.mentions_docs): a question about how the program behaves, or what changed in it, is answered
# by a change to the program. A doc-only commit matches such a question well, since docs describe the
# behaviour in a user's words, and on the sixteen labelled sets one sat above the target of 156 of 472
# symptom questions. Hybrid MRR (mean of the sixteen sets): 1 → .6098, .7 → .6162, .5 → .6167, .3 → .6167;
# two blind sets run once after: .696 → .698, .756 → .763.
DOCS_ONLY_FACTOR = 0.5
# Documentation by its path: a doc format, a docs or man folder, or a project's notes by their usual names
# ("CHANGELOG", "HISTORY.rst"; not `src/history.rs`, nor `requirements.txt`).
_DOC_PATH = re.compile(
    r"\.(md|mdx|markdown|rst|rest|adoc|asciidoc|rdoc|pod|org)$"
    r"|(^|/)(docs?|man|documentation)/"
    r"|(^|/)(changelog|changes|news|history|release[-_]?notes|readme|authors|contributors|contributing"
    r"|license|copying)(\.(txt|md|rst|adoc|rdoc|markdown))?$",
    re.IGNORECASE,
)
# A commit (or diff) that changed tests only (docs perhaps too, but no program file) counts TESTS_ONLY_FACTOR
# unless the question speaks of tests (intent.mentions_tests): "regression test for issue #88", "Add a test
# for loading config when the drive letter doesn't match" repeat the words of the fix they test, and on the
# labelled sets one sat first above the fix of 49 questions. A diff counts as its commit does (a fix's new
# test is often the part of it that says the symptom best). Hybrid MRR over 35 sets, 3,194 questions
# (docs/evaluation.md): 1 → .6855, .8 → .6879, .6 → .6880, .4 → .6881 (2 questions worse at each).
TESTS_ONLY_FACTOR = 0.6
# Tests by their path: a folder of tests, specs, fixtures or test data, or a file named as a test by its
# language's convention (test_x.py, x_test.go, x.test.ts, x_spec.rb, XTest.java), or a snapshot.
_TEST_PATH = re.compile(
    r"(^|/)(?i:tests?|specs?|__tests__|__mocks__|__snapshots__|testdata|test_data|testing|fixtures?|e2e)/"
    r"|(^|/)(test_[^/]+|conftest\.py)$"
    r"|_(test|tests|spec)\.\w+$"
    r"|\.(test|spec)\.[cm]?[jt]sx?$"
    r"|[a-z0-9]Tests?\.(java|kt|cs|swift|scala|php)$"
    r"|\.snap$"
)
# A change to more than WIDE_FILES files counts WIDE_FACTOR when the question reports a failure
# (intent.reports_failure: "fails", "crashed", "refused", "error" …): such a question is answered by the fix,
# and a fix is narrow. A sweep (a rename, a lint pass, a release, a refactor) touches many files and so holds
# many of the question's words. Of the symptom questions whose answer ranked 2nd to 10th, 2% of the answers
# changed more than five files, 15% of the changes ranked above them did. Counting less for every question
# had cost code and multi questions (thirteenth wave: .6167 → .6151 or lower). Hybrid MRR over 35 sets,
# 3,194 questions (docs/evaluation.md): 1 → .6880, .9 → .6902, .8 → .6900 (129 better, 10 worse), .65 →
# .6902; more than ten files at .8 → .6890. The gain is on the nineteen newest sets (.7170 → .7206); the
# sixteen older ones hold (.6523 → .6522).
WIDE_FILES = 5
WIDE_FACTOR = 0.8
# A merge commit changes nothing of its own: its words (the pull request's title, the branch name
# "fix-1843-windows-hyperlink-slash") repeat the change it merged, and it sat above that change on 66 of the
# labelled symptom questions, first on 7. It counts MERGE_FACTOR, so the commit that holds the change is
# shown first. Hybrid MRR over 39 sets, 3,597 questions (docs/evaluation.md): 1 → .6993, .75 → .6999,
# .5 → .7001 (55 better, none worse), .25 → .7001.
MERGE_FACTOR = 0.5
SUPERSEDED_FACTOR = 0.7
REJECTED_FACTOR = 0.5
DAY_MS = 86_400_000


@dataclass(frozen=True)
class Settings:
    """The tunable part of ranking (`ranking` in config.json)."""

    vector_weight: float = VECTOR_WEIGHT
    rerank: bool = True  # the learned last step (retrieve.rerank)
    question_map: bool = True  # a question's vector through the learned map (embed.question_map)
    # Where the question may be sent to an Ollama embedder: the project's trusted config's embedding.url
    # (project.config_of), never the URL memory.db recorded. None: no Ollama call (BM25 with other lists).
    embedding_url: str | None = None
    # The embedder the config names ("builtin", "ollama", "local", "none") and its model, as written: a query
    # answered from the words alone although one is named says so, and why (vector.neighbours); the stored
    # vectors may be another embedder's until the next sync (embed.stored_elsewhere). None: not known.
    embedding_provider: str | None = None
    embedding_model: str = ""


DEFAULT = Settings()


def settings_from(config: Mapping[str, Any]) -> Settings:
    """The Settings of a validated config.json: one project.config_of gave (a URL the repository brought
    and its user did not confirm is left out there), for its embedding.url is where a question is sent."""
    from nexusmem.embed import ollama_url

    section = config.get("ranking", {})
    embedding = config.get("embedding", {})
    return Settings(
        vector_weight=float(section.get("vectorWeight", VECTOR_WEIGHT)),
        rerank=bool(section.get("rerank", True)),
        question_map=bool(section.get("questionMap", True)),
        # Only while the config still uses Ollama: vectors it made before a switch to another provider are
        # not searched (the next sync drops them).
        embedding_url=ollama_url(config),
        embedding_provider=str(embedding.get("provider", "builtin")),
        embedding_model=str(embedding.get("model", "") or ""),
    )


def relevance(ev: Evidence, settings: Settings = DEFAULT) -> float:
    return ev.lexical + settings.vector_weight * ev.semantic


def recency(ts_ms: int, now_ms: int, provenance: str) -> float:
    age_days = abs(now_ms - ts_ms) / DAY_MS  # abs: a question's date can lie before an event
    rate = PROVENANCE_RATE.get(provenance, 1.0)
    return RECENCY_FLOOR + (1 - RECENCY_FLOOR) * math.pow(2.0, -age_days / (HALF_LIFE_DAYS * rate))


def recency_exponent(kind: str, time_cue: bool) -> float:
    """How much age counts for KIND: fully with a time cue, a little for fading kinds, else not at all."""
    if time_cue:
        return CUE_RECENCY_EXP
    return RECENCY_EXP if kind in RECENCY_KINDS else 0.0


# A subject that names an issue or pull request ("Fixes #339", "fix: lazy load getRandomValues (#537)",
# "gh-1204: …"): a change someone asked for or reported, which is what a question about a problem a user
# hit is most often answered by (the learned step weighs it: rerank.FEATURES).
_NUMBERED = re.compile(r"(?:#|\bgh-)\d+", re.IGNORECASE)


def names_number(kind: str, title: str) -> bool:
    """Whether a node of KIND titled TITLE is a commit whose subject names an issue or pull request."""
    return kind == "git_commit" and _NUMBERED.search(title) is not None


def says_fix(kind: str, title: str) -> bool:
    """Whether a node of KIND titled TITLE is a commit (or one of its diffs) that says it fixes something
    other than a slip of text or style."""
    if kind not in ("git_commit", "code_diff") or _FIX.search(title) is None:
        return False
    return _COSMETIC.search(title) is None or _BROKE.search(title) is not None


def is_post(kind: str, title: str) -> bool:
    """Whether a node of KIND titled TITLE ("path — heading") is a section of a blog post."""
    return kind == "doc_section" and _POST_DIR.search(title.split(" — ", 1)[0]) is not None


def docs_only(paths: Iterable[str]) -> bool:
    """Whether PATHS (the files of one change) are documentation only; False for none."""
    listed = list(paths)
    return bool(listed) and all(_DOC_PATH.search(path) for path in listed)


Role = Literal["docs", "tests", "program"]


def path_role(path: str) -> Role:
    """What the file at PATH is to a change: documentation, tests, or the program."""
    if _DOC_PATH.search(path):
        return "docs"
    return "tests" if _TEST_PATH.search(path) else "program"


def tests_only(paths: Iterable[str]) -> bool:
    """Whether PATHS (the files of one change) are tests, or tests and docs: no program file, and not docs
    only (docs_only); False for none."""
    return roles_tests_only([path_role(path) for path in paths])


def roles_tests_only(roles: Iterable[Role]) -> bool:
    """tests_only for the files' ROLES (path_role)."""
    seen = set(roles)
    return "tests" in seen and "program" not in seen


def score(
    relevance: float,
    signal: float,
    ts_ms: int,
    now_ms: int,
    provenance: str,
    *,
    kind: str = "git_commit",
    time_cue: bool = False,
    superseded: bool = False,
    rejected: bool = False,
    fix: bool = False,
    asks: str = "neutral",
    source: str = "",
    docs_only: bool = False,
    tests_only: bool = False,
    wide: bool = False,
    on_topic: bool = False,
    merge: bool = False,
    post: bool = False,
    bare: bool = False,
) -> float:
    value = relevance * kind_prior(signal, kind, source, asks, fix=fix, post=post)
    exponent = recency_exponent(kind, time_cue)
    if exponent:
        value *= math.pow(recency(ts_ms, now_ms, provenance), exponent)
    if superseded:
        value *= SUPERSEDED_FACTOR
    if rejected:
        value *= REJECTED_FACTOR
    if docs_only:
        value *= DOCS_ONLY_FACTOR
    if tests_only:
        value *= TESTS_ONLY_FACTOR
    if wide:
        value *= WIDE_FACTOR
    if merge:
        value *= MERGE_FACTOR
    if on_topic and _docs_page(kind, source, post):
        value *= TOPIC_FACTOR
    if bare:
        value *= BARE_DOC_FACTOR
    return value


def _docs_page(kind: str, source: str, post: bool) -> bool:
    """Whether a node of KIND from SOURCE is a page of the project's docs: a doc section, not a changelog
    entry, not a blog POST."""
    return kind == "doc_section" and source != CHANGELOG_SOURCE and not post


def kind_prior(signal: float, kind: str, source: str, asks: str, *, fix: bool, post: bool) -> float:
    """The part of score() that follows from what a node is and what the question asks: its kind's SIGNAL,
    whether it says it fixes something, and a doc section's lift or cut for a usage or history question.
    The learned last step (retrieve.rerank) weighs these from its own features."""
    signal_w = 0.2 + 0.8 * max(0.0, min(1.0, signal))
    value = math.pow(signal_w, SIGNAL_EXP)
    if fix:
        value *= FIX_FACTOR
    if _docs_page(kind, source, post):  # what the question asks (intent)
        if asks == "usage":
            value *= USAGE_DOC_FACTOR
        elif asks == "history":
            value *= HISTORY_DOC_FACTOR
    return value
