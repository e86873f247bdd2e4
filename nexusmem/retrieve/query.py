"""One query against one project's store: retrieve → fuse → rank → pack. Returns plain data for present."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from nexusmem import authors, embed, identity, lazyre, paths, resolved, timefmt
from nexusmem.retrieve import (
    asks_docs,
    cjk,
    fuse,
    order,
    rank,
    recent,
    rerank,
    search,
    thesaurus,
    timecue,
    vector,
)
from nexusmem.retrieve.fuse import Evidence
from nexusmem.retrieve.intent import (
    Intent,
    Topic,
    asks_arrival,
    asks_own_change,
    asks_which_release,
    code_names,
    conversation_of_day,
    platforms_named,
)
from nexusmem.retrieve.pack import Candidate, estimate_tokens, pack
from nexusmem.retrieve.question import Question, prepare, terse_text
from nexusmem.retrieve.summarise import MAX_SUMMARY_CHARS, doc_summary_chars
from nexusmem.retrieve.summarise import summary as make_summary
from nexusmem.show import replacement
from nexusmem.store import StoredNode
from nexusmem.store.interface import SearchStore
from nexusmem.store.releases import ReleaseRange, version_key
from nexusmem.text import (
    informative,
    is_noise_word,
    one_line,
    well_formed,
    word_bases,
    word_parts,
)

DEFAULT_BUDGET = 2000
# The header echoes at most this much of the question.
SHOWN_QUERY_CHARS = 160
# The BM25 list counts in proportion to how much of the question's IDF mass the best of its top
# STRENGTH_TOP hits contains (to this power): see `retrieve`.
STRENGTH_TOP = 3
LEXICAL_COVERAGE_EXP = 1.0
# The thesaurus query (retrieve.thesaurus) counts this share of the question's own words, its best hit
# capped at the question's best (merge_scored). Hybrid MRR over the 84 dev questions of the real
# repositories / their 28 symptom questions / the generated-history evaluation (benchmarks/
# eval_retrieval.py): without the thesaurus .503 / .102 / .619; capped: .508 / .118 / .619 at .2, .518 /
# .147 / .617 at .35, .522 / .154 / .617 at .5; uncapped: .511 / .126 / .601, .527 / .173 / .588, .537 /
# .216 / .585 (common kin such as "drop" or "empty" then buried generated answers).
THESAURUS_WEIGHT = 0.5
# The thesaurus words together match at most this many nodes (their commonest dropped first).
THESAURUS_POSTINGS = 2000
# What a pasted trace's frame words count beside its headline's (prepare, intent.pasted_trace).
TRACE_FRAMES_WEIGHT = 0.25
# The parts of the question's compound names (search.name_parts) count this share of its own words, their
# best hit capped at the question's best, as the thesaurus words are. The index holds `HasDarkBackground`
# as one word; the fix of its hang is titled "avoid background color query hang". Hybrid MRR, the mean of
# the sixteen older labelled sets / of the eight newest (benchmarks/eval_real.py): without .6218 / .7124;
# .3 → .6266 / .7148, .5 → .6285 / .7155, .75 → .6288 / .7160, 1 → .6296 / .7162, 1.5 → .6289 / .7163.
# A plateau from .5 on; .75 sits in it. Stemmed parts: .6265 / .7161 at .3, as exact ones.
NAME_PARTS_WEIGHT = 0.75
# The doc sections that head the practical matter a question asks about (intent.topic: installing, the
# licence…), found by the matter's words among their TOPIC_CANDIDATES best matches, join the BM25 list at
# this share of the question's best match (rank.TOPIC_FACTOR then lifts them).
TOPIC_WEIGHT = 1.0
TOPIC_CANDIDATES = 200
# The words of the question's code names (intent.code_names: identifiers, members, calls, options,
# backticked spans) asked once more, merged at this weight: the names a user quotes from their code or
# their terminal are the question's most exact words. Hybrid MRR, sixteen older sets / eight newest, with
# the parts above: without .6288 / .7160; .3 → .6307 / .7198, .5 → .6354 / .7208, .75 → .6356 / .7221,
# 1 → .6342 / .7218 (R@5 .741 / .825 → .751 / .839 at .75). Quoted spans ('…', "…") as well: .6341 /
# .7195 at .5; quoted spans alone .6281 / .7180.
CODE_NAMES_WEIGHT = 0.75
# The dotted numbers a question writes ("Python 3.9", "TLS 1.3", "an ETag of 2.0.1") asked once more, each as
# the phrase of its parts ("3 9": the index holds 3.9 as the words 3 and 9, which the question's words leave
# out as single characters), merged at this weight: "which version dropped support for Python 3.9?" matched
# "drop support for Python 3.7" as well as the entry that says 3.9. Not for a release of the project the
# question names (the release rules answer it).
NUMBERS_WEIGHT = 0.75
# The code names a question writes that the index holds as several words (`--no-html`, `max_retries`,
# `markdown-it`, `lib/rules_core/normalize.js`) asked once more, each as the phrase of its words, merged at
# this weight: "`markdown-it --no-html notes.md` still lets <script> through" shares only the common word
# "html" with "Make --no-html have an effect in CLI" (not among the candidates at all), while the phrase
# "no html" is held by that commit, its merge and its changelog entry. Hybrid MRR over ten sets (fresh66-74,
# dev2; --no-pack): without .6660; .5 → .6700, .75 → .6711, 1 → .6708, 1.5 → .6689; with the names inside a
# backticked span too (below), .6726 at .75. Scaled to the words' best match like the lists above
# (merge_scored); scaled up to it when weaker, .6637. The blind fresh75, run once before: .723 → .719.
NAME_PHRASES_WEIGHT = 0.75
_DOTTED = lazyre.compile(r"(?<![\w.])v?(\d+(?:\.\d+)+)(?![\w.]*\d)")
# A question with a time cue also asks for its words within timecue.CUE_WINDOW_MS before the newest event (or
# the date it names), up to CUE_CANDIDATES more candidates from the exact index: see `retrieve`.
CUE_CANDIDATES = 50
# How much of the question memory lacks (Strength.missing): the share of its IDF mass carried by words no
# node contains, an absent word that is ordinary English (one whole-word token of the built-in tokenizer:
# "inside", "program", "although") at COMMON_WORD_SHARE of its weight: a long account of a symptom holds
# many, and a small store lacks them by chance; a name no node holds ("brotli", "cobertura", "kafka" are
# split into pieces) counts in full. The vocabulary is read once the absent words carry WEAK_MISSING of the
# mass. Until the thirty-third wave an answer was weak when missing reached WEAK_MISSING (or a name was
# absent) and no vector neighbour had a cosine of STRONG_COSINE; on fifty-seven labelled sets that flagged
# 54.2% of the `none` questions and 6.64% of the answerable ones (docs/evaluation.md has the curves).
WEAK_MISSING = 0.25
COMMON_WORD_SHARE = 0.25
# The judgement is learned (benchmarks/learn_weak.py): a logistic model over Strength.features(), fitted on
# every labelled set's `none` questions against its answerable ones, its threshold (5.5% of the answerable
# questions it was fitted on) folded into WEAK_BIAS: weak when WEAK_BIAS + WEAK_WEIGHTS · features > 0.
# Lists without vectors have their own weights. A question that takes for granted a name memory never saw
# arrive is weak whatever the model says (Strength.absent_arrival), and so is one half of whose weight
# memory lacks (WEAK_CERTAIN: on the labelled sets the model flags nearly all of those anyway; the rule keeps
# a small store, whose lists look like none the model was fitted on, from answering them as strong). A weak
# answer shows WEAK_ITEMS items.
WEAK_CERTAIN = 0.5
WEAK_TOP = 5
# A list shorter than WEAK_TOP (a small store) says nothing of its flatness: it counts as the median over the
# labelled sets' questions, where every list had WEAK_TOP results or more.
FLATNESS_UNKNOWN = 0.67
WEAK_FEATURES = (
    "missing",
    "cosine",
    "absent_name",
    "first_coverage",
    "best_coverage",
    "first_lexical",
    "first_cosine",
    "heaviest_absent",
    "flatness",
    "missing_unlike",  # missing × (1 − cosine)
)
WEAK_WEIGHTS: tuple[float, ...] = (
    -0.2833,
    -2.2256,
    0.8274,
    1.1441,
    1.0110,
    -0.8493,
    -2.8666,
    8.2245,
    5.2494,
    3.3453,
)
WEAK_BIAS = -4.3090
# The same for lists without vectors (`--no-vectors`, a store synced without embeddings, a provider down).
WEAK_LEXICAL_WEIGHTS: tuple[float, ...] = (
    1.0528,
    0.0000,
    0.9022,
    1.3090,
    0.6545,
    -1.7517,
    0.0000,
    7.2041,
    5.3079,
    1.0528,
)
WEAK_LEXICAL_BIAS = -6.0282
# The shortest word of a code name that counts as the name for Strength.absent_arrival ("-n" is no name).
ARRIVAL_NAME_LETTERS = 3
WEAK_ITEMS = 5
WEAK_LINE = "No strong match: nothing in memory covers this question well; the closest items follow."
WEAK_SHORT = "No strong match."  # WEAK_LINE under a budget too small for it
_BODY_WINDOW = 40
_NEEDS_BODY = {
    "code_diff",
    "git_commit",
    "doc_section",
    "conversation_turn",
    "github_thread",
    "session_summary",
}


@dataclass
class Item:
    id: str
    kind: str
    ts: int
    title: str
    summary: str
    provenance: str
    trust: str
    score: float
    project: str
    ref: str
    linked_from: str | None = None
    relation: str | None = None
    recorded_by: str = ""  # the team member who recorded it (an item of the team store); "" for local
    verdict_by: str = ""  # the team member whose verdict `trust` is (an item of the team store); "" for local
    also_in: list[str] = field(default_factory=list)  # refs of doc sections with the same text (doc_twins)
    superseded: bool = False  # marked by `mark-stale`
    superseded_by: str | None = None  # the id it named as what replaced it, while memory holds that node
    # Across projects: the root of the project it came from, and the tag the text gives it when another
    # searched project has the same name ("dotenv (b/x)"; "" = its name).
    project_root: str = ""
    project_label: str = ""
    # A commit's author as git records it (its name): who made the change, what a "who added X?" question
    # asks; "" for any other kind of item (a Co-authored-by trailer in its message is not its author).
    author: str = ""


@dataclass
class QueryResult:
    query: str  # the question as searched: an overlong one cut (Question.cut)
    budget: int
    tokens_used: int = 0
    matched: int = 0
    bm25_matched: int = 0
    vector_matched: int = 0
    items: list[Item] = field(default_factory=list)
    projects: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    weak: bool = False
    query_cut: bool = False
    # The tokens the header leaves for the best item: a note that would take them is left out of the header
    # (said on stderr, or after the footer), so that a small budget shows the answer rather than the notes.
    item_room: int = 0
    # The items are final (pack_items has returned): an answer with none needs no note that qualifies items.
    packed: bool = False
    # The line `render` prints after a release's items (relation "release") when other items follow them
    # (RELEASE_END); "" when the answer holds no release's items or nothing after them.
    release_end: str = ""


# What separates a release's items (what the release holds) from the other matches of the question's words.
RELEASE_END = (
    "-- end of what the release holds; below: other matches of the question's words, not part of it --"
)


def parse_as_of(value: str | None) -> int | None:
    """--as-of / asOf → epoch ms: what --until takes (timecue.parse_when: a date, an ISO 8601 time, today,
    yesterday, an age such as 2d), a bare date meaning the end of that day as --until's does."""
    return None if value is None else timecue.parse_when(value, end=True)


# The most of a title an item shows; a best match shown by its head alone under a small budget shows less
# (HEAD_TITLE_CHARS), the longest of these that lets it fit.
TITLE_CHARS = 160
HEAD_TITLE_CHARS = (TITLE_CHARS, 120, 96, 72, 48)


def clipped_title(title: str, limit: int = TITLE_CHARS) -> str:
    """TITLE as an item shows it: at most LIMIT characters, the last an ellipsis when cut."""
    return title if len(title) <= limit else title[: limit - 1] + "…"


def item_text(item: Item, *, with_project: bool = False) -> str:
    """The plain-text lines of one item: what `query` prints and what the token estimate counts."""
    date = timefmt.day(item.ts)
    tags = f"[{item.provenance}]"
    if item.trust != "candidate":
        tags += f" [{item.trust} by {item.verdict_by}]" if item.verdict_by else f" [{item.trust}]"
    if item.superseded:
        tags += " [superseded]"
    if with_project:
        tags += f" [{item.project_label or item.project}]"
    if item.recorded_by:
        tags += f" [by {item.recorded_by}]"
    title = clipped_title(item.title)
    if not title.strip():
        title = "(no commit message)" if item.kind == "git_commit" else "(untitled)"  # a bare dangling line
    by = f" by {one_line(item.author)}" if item.author else ""
    head = f"- {date}{by} {tags} {title}"
    if item.linked_from and item.relation == "changelog":
        head += "  -- the commit this changelog entry describes"
    elif item.linked_from and item.relation == "discussion":
        head += "  -- linked as its discussion (not a fix)"  # a conversation about it: nothing says it passed
    elif item.linked_from:
        head += f"  -- linked as the fix ({item.relation})"
    # A commit names its sha, what `git show` and a reader of the log go by (a diff names it in its title).
    sha = f"  commit {item.ref[:7]}" if item.kind == "git_commit" and item.ref else ""
    lines = [head, f"  id {item.id}{sha}"]
    if item.superseded_by:
        lines.append(f"  superseded by {item.superseded_by}")
    if item.also_in:
        lines.append("  also in " + ", ".join(ref.split("#", 1)[0] for ref in item.also_in))
    lines += ["  " + line for line in item.summary.splitlines() if line.strip()]
    return "\n".join(lines)


def make_item(
    node: StoredNode,
    score: float,
    project: str,
    query: str,
    *,
    replaced_by: str | None = None,
    root: str = "",
    label: str = "",
    doc_chars: int = MAX_SUMMARY_CHARS,
    asked_only: bool = False,
) -> Item:
    """The presentable item for NODE (its summary chosen for QUERY); REPLACED_BY: show.replacement; ROOT and
    LABEL: its project's root and tag across projects (Item.project_root, Item.project_label); DOC_CHARS: how much
    of a doc section its summary shows (summarise.doc_summary_chars); ASKED_ONLY (`--author me`): a
    conversation turn's summary is the person's question, the agent's answer counted, not shown."""
    return Item(
        id=node.id,
        kind=node.kind,
        ts=node.ts,
        title=node.title,
        summary=make_summary(node, query, doc_chars, asked_only=asked_only),
        provenance=node.provenance,
        trust=node.trust,
        score=score,
        project=project,
        ref=node.ref,
        recorded_by=node.recorded_by,
        verdict_by=node.verdict_by,
        superseded=node.superseded_by is not None,
        superseded_by=replaced_by,
        project_root=root,
        project_label=label,
        author=order.commit_author(node),
    )


def _is_merge(node: StoredNode) -> bool:
    """Whether NODE is a merge commit. Its metadata is parsed only when it holds a `true` (ranking reads
    hundreds of rows, and most commits' metadata has none)."""
    return node.kind == "git_commit" and "true" in node.raw_meta and node.meta.get("merge") is True


def _is_bare(node: StoredNode) -> bool:
    """Whether NODE is a doc section with nothing a reader sees under its title (docs.py's `bare`). Its
    metadata is parsed only when it holds a `true`, as _is_merge's."""
    return node.kind == "doc_section" and "true" in node.raw_meta and node.meta.get("bare") is True


def score_fused(
    store: SearchStore,
    evidence: dict[str, Evidence],
    as_of: int | None = None,
    *,
    cue: timecue.Cue | None = None,
    settings: rank.Settings = rank.DEFAULT,
    asks: Intent = "neutral",
    doc_changes_count: bool = False,
    test_changes_count: bool = False,
    failure: bool = False,
    matter: Topic | None = None,
) -> list[tuple[StoredNode, float]]:
    """Fused evidence → final scores (relevance × priors), best first. With a time CUE age counts for every
    node, from the cue's date when it names one, else from the newest event in the store. ASKS (what the
    question asks for, retrieve.intent) lifts doc sections (not changelog entries) for a usage question.
    A change to documentation only counts rank.DOCS_ONLY_FACTOR unless DOC_CHANGES_COUNT (the question
    speaks of docs); one to tests and no program file rank.TESTS_ONLY_FACTOR unless TEST_CHANGES_COUNT; one
    to many files rank.WIDE_FACTOR when the question reports a FAILURE. A doc section that heads the
    practical MATTER the question asks about (intent.topic) counts rank.TOPIC_FACTOR; a merge commit
    rank.MERGE_FACTOR; a doc section with nothing under its title rank.BARE_DOC_FACTOR.

    Ties are broken by id so that the same store and query give the same bytes."""
    nodes = store.get_many(list(evidence), light=True)
    now = cue.anchor_ms if cue is not None and cue.anchor_ms is not None else store.reference_time(as_of) or 0
    time_cue = cue is not None
    scope = (
        search.ChangeScope(set(), set(), set())
        if doc_changes_count and test_changes_count and not failure
        else search.change_scope(store, list(nodes.values()))
    )
    doc_changes = set() if doc_changes_count else scope.docs
    test_changes = set() if test_changes_count else scope.tests
    scored: list[tuple[StoredNode, float]] = []
    for node_id, ev in evidence.items():
        node = nodes.get(node_id)
        if node is None:
            continue
        value = rank.score(
            rank.relevance(ev, settings),
            node.signal,
            node.ts,
            now,
            node.provenance,
            kind=node.kind,
            time_cue=time_cue,
            superseded=node.superseded_by is not None,
            rejected=node.trust == "rejected",
            fix=rank.says_fix(node.kind, node.title),
            asks=asks,
            source=node.source,
            docs_only=node_id in doc_changes,
            tests_only=node_id in test_changes,
            wide=failure and node_id in scope.wide,
            on_topic=matter is not None and _heads(matter, node),
            merge=_is_merge(node),
            post=rank.is_post(node.kind, node.title),
            bare=_is_bare(node),
        )
        scored.append((node, value))
    return order.best_first(scored)


class StepReads(NamedTuple):
    """What the learned last step reads of a list's first rerank.DEPTH beyond what ranking kept, in the order
    of rerank.rerank's (and rerank.head_features') last arguments: from one read of their whole rows."""

    on_platform: frozenset[str]
    kin: dict[str, float]
    asks_docs: float
    sizes: dict[str, rerank.Sizes]


def step_reads(
    store: SearchStore, question: Question, counted: list[str], head: list[tuple[StoredNode, float]]
) -> StepReads:
    """What the learned last step reads of HEAD for QUESTION, whose COUNTED words' learned kin it weighs:
    the whole rows of HEAD's commits, diffs and doc sections, read once (ranking reads nodes light)."""
    whole = store.get_many([node.id for node, _ in head if node.kind in rerank.KINDS])
    return StepReads(
        on_platform(whole, question.platforms, head),
        kin_held(whole, thesaurus.kin_strengths(counted), head),
        asks_docs.score(question.text),
        text_sizes(whole),
    )


def on_platform(
    whole: Mapping[str, StoredNode], platforms: frozenset[str], head: list[tuple[StoredNode, float]]
) -> frozenset[str]:
    """The ids of HEAD's commits, diffs and doc sections about one of PLATFORMS (the operating systems a
    question names, intent.platforms_named): a commit by its message and the files it changed, a diff by
    its file's path and its patch (their WHOLE rows, by id), a section by its title."""
    if not platforms:
        return frozenset()
    about: set[str] = set()
    for node, _ in head:
        if node.kind in rerank.CHANGE_KINDS:
            text = f"{node.title}\n{node.ref}\n{whole.get(node.id, node).body}"
        elif node.kind == "doc_section":
            text = node.title
        else:
            continue
        if platforms_named(text) & platforms:
            about.add(node.id)
    return frozenset(about)


_KIN_WORD = lazyre.compile(r"[a-z]+")


def kin_held(
    whole: Mapping[str, StoredNode], strengths: Mapping[str, float], head: list[tuple[StoredNode, float]]
) -> dict[str, float]:
    """For HEAD's commits, diffs and doc sections, the sum of the STRENGTHS of the question's learned kin
    (thesaurus.kin_strengths) that their message holds: a commit's title and body (its WHOLE row, by id), a
    diff's title (its commit's subject), a section's heading. What the learned last step weighs as "kin"
    (retrieve.rerank): "hangs" in the question and "deadlock" in the message."""
    if not strengths:
        return {}
    out: dict[str, float] = {}
    for node, _ in head:
        if node.kind not in rerank.KINDS:
            continue
        text = node.title
        if node.kind == "git_commit":
            text += "\n" + whole.get(node.id, node).body
        held = set(_KIN_WORD.findall(text.lower()))
        value = sum(strength for word, strength in strengths.items() if word in held)
        if value:
            out[node.id] = value
    return out


def text_sizes(whole: Mapping[str, StoredNode]) -> dict[str, rerank.Sizes]:
    """For the nodes of WHOLE (whole rows, by id), the words of their body, of their change words and of
    their title, and the files a commit changed (its body's "Files:" entries with a line count, " (+"; a
    mode-only entry has none): what the learned last step weighs of their length (retrieve.rerank)."""
    return {
        node.id: (
            len(node.body.split()),
            len(node.words.split()),
            len(node.title.split()),
            node.body.count(" (+") if node.kind == "git_commit" else 0,
        )
        for node in whole.values()
    }


@dataclass
class Retrieved:
    """Everything one query found in one store, ranked, with what judging its strength needs."""

    question: Question
    scored: list[tuple[StoredNode, float]]
    counts: dict[str, int]
    evidence: dict[str, Evidence]
    terms: search.QueryTerms
    # A change or command found by what the question asks, not by its words alone: the first or last change
    # that holds a name it asks about, the command a "what did I do next" answer follows.
    answered_by: str | None = None
    # The learned last step (retrieve.rerank) may order this list: no rule above pinned its answer.
    rerankable: bool = False
    settings: rank.Settings = (
        rank.DEFAULT
    )  # what it was ranked with (the vectors' weight set for the question)
    # How much of the question the nodes hold, for the nodes asked about so far (the weak-match judgement
    # asks about the first few).
    covering: Coverage | None = None
    # The ids a rule listed first in time order (the failures or the newest work of the question's time),
    # and the note that says so (or that nothing was there).
    listing: frozenset[str] = frozenset()
    listing_note: str | None = None
    # The time a failure the question reports happened ("when the docker build failed yesterday") when none
    # of the first WEAK_TOP results happened then: how to say that time (the answer is then weak).
    missed_window: str | None = None
    # The changelog entries of the release the question asks about (release_nodes), or an upgrade guide's
    # sections: shown all, budget permitting, not capped as siblings of one heading (pack.MAX_SIBLINGS), and
    # with no linked commit between them.
    whole: frozenset[str] = frozenset()
    # The ids a rule above put first, in their order (a guide's sections, a release's entries, the commit a
    # sha names, what was run after a command): an answer fused from several projects keeps them so.
    pinned: tuple[str, ...] = ()
    # What a question about a release put first as what that release holds (its entries, its commits, the
    # commits they describe): marked `release` in the answer, which says where they end (RELEASE_END).
    release: frozenset[str] = frozenset()
    # How many of the newest a recent-work question asked for ("my last 3 commits": asked_count), which its
    # listing holds at most; None when it named no count (or asked no such question).
    listing_count: int | None = None
    # The ids counts["matched"] counts (the rest of it: the word matches past the candidate cut): an item
    # linked to a ranked one that is not among them is counted when it rides along (linked_fixes).
    counted: frozenset[str] = frozenset()
    # The ids nearest the question by vector, nearest first, above the embedder's floor: the learned last
    # step takes the first few of them in from below (rerank.window).
    nearest: tuple[str, ...] = ()


def _pinned(first: list[str], pinned: list[str]) -> list[str]:
    """FIRST, just put before everything, then what PINNED held before it."""
    return [*first, *(node_id for node_id in pinned if node_id not in first)]


def retrieve(
    store: SearchStore,
    text: str,
    *,
    as_of: int | None = None,
    since: int | None = None,
    until: int | None = None,
    limit: int = search.CANDIDATES,
    vectors: bool = True,
    settings: rank.Settings = rank.DEFAULT,
    author: str | None = None,
    project: str | None = None,
) -> Retrieved:
    """Nodes matching TEXT with their final scores, best first, plus match counts and evidence.

    Lists fused on their scores (fuse.evidence): BM25 over the word index; the CJK trigram index when TEXT
    has CJK characters; vector k-NN when the store holds vectors and their provider answers (VECTORS=False
    skips). SINCE/UNTIL keep nodes whose event time lies in the window; AUTHOR (nexusmem.authors) keeps the
    commands of that author (other kinds pass); PROJECT is the project's name (prepare).
    """
    question = prepare(well_formed(text), project)
    question.search_text = authors.without_author_words(question.search_text, author)
    # The stored vectors are another embedder's than the config's: said once, after the search (semantic_note).
    stored_elsewhere = (
        stored_vectors_elsewhere(store, settings.embedding_provider, settings.embedding_model)
        if vectors and settings.embedding_provider is not None
        else None
    )
    words = search.query_terms(store, question.search_text, failure=question.failure)
    answered_by: str | None = None
    # What a rule listed in time order (the failures, or the newest work, of the question's time), and what
    # it says of it (an answer fused from several projects lists them together, newest first).
    listed: list[StoredNode] = []
    listing_note: str | None = None
    whole: frozenset[str] = frozenset()  # a release's entries, packed all (Retrieved.whole)
    pinned: list[str] = []  # Retrieved.pinned
    released: frozenset[str] = frozenset()  # Retrieved.release
    listing_count: int | None = None  # Retrieved.listing_count
    bm25_hits, bm25_total = search.bm25_scored(
        store, words.words, limit=limit, as_of=as_of, since=since, until=until
    )
    if (question.cue is not None or question.then is not None) and since is None and bm25_hits:
        # A question about recent work ("my push was rejected just now", "once compose couldn't bind the
        # port, what did I do") can match hundreds of old runs of the same command: the candidate cut,
        # made on words alone, would drop the recent ones before recency counts. The words are asked again
        # within the last timecue.CUE_WINDOW_MS, and both lists kept.
        cued = question.cue.anchor_ms if question.cue is not None else None
        newest = cued or store.reference_time(as_of)
        if newest is not None:
            in_window, _ = search.bm25_scored(
                store,
                words.words,
                limit=CUE_CANDIDATES,
                as_of=as_of,
                since=newest - timecue.CUE_WINDOW_MS,
                until=until,
                stemmed=False,  # the exact index alone: half the cost, and the main list has the stems
            )
            bm25_hits = with_hits(bm25_hits, in_window)
    # A day named ("what did the agent try yesterday") comes first (of_the_day): its matches are searched
    # apart too, as the cut made on words alone may drop them among a month's.
    day = (
        recent.named_day(question.text) if since is None and until is None and question.then is None else None
    )
    if day is not None and bm25_hits:
        of_day, _ = search.bm25_scored(
            store,
            words.words,
            limit=CUE_CANDIDATES,
            as_of=as_of,
            since=day.low,
            until=day.high,
            stemmed=False,
        )
        bm25_hits = with_hits(bm25_hits, of_day)
    since_range: ReleaseRange | None = None
    since_releases: list[
        str
    ] = []  # "since 7.5.0": the releases tagged since besides the newest, highest first
    if question.span is not None and question.shipped is None:
        # "What changed since 7.5.0?": every commit made after its tag up to HEAD (`git log 7.5.0..HEAD`, the
        # releases since with them), led by the changelog entries of the release that followed it, if any.
        since_range = store.range_since(question.span[0])
        if since_range is not None and since_range.held:
            # Every release since: the newest's entries first, then the others', highest first (as the
            # changelog lists them), not only the release that followed it.
            later = [v for v in store.releases_within(since_range.shas) if v != question.span[0]]
            question.shipped, question.release = (later[-1] if later else None), None
            since_releases = later[-2::-1]
        else:
            since_range = None
            following = store.release_after(question.span[0])
            if following is not None:
                question.shipped, question.release = following, None
    window = store.release_window(question.release) if question.release else None
    if question.release and window is not None:
        # "Since upgrading to 0.30.4, POSTs hang": the changes made after that release was tagged and before
        # the next one are asked for (the fix of a regression it shipped goes into the next). They are
        # searched apart too (the candidate cut, made on words alone, may drop them), and lifted below.
        low = max(window[0] + 1, since or 0)
        high = window[1] if until is None else min(until, window[1] or until)
        found_in, _ = search.bm25_scored(
            store, words.words, limit=CUE_CANDIDATES, as_of=as_of, since=low, until=high
        )
        bm25_hits = with_hits(bm25_hits, found_in)
        question.notes.append(_release_note(question.release, window, _unreached(store, question.release)))
    # "What did we change in the parser in March 2021?": the dates written are the window its changes are
    # looked for in, as --since/--until (not only the words "March 2021"): searched apart, and lifted below.
    dated = (
        timecue.asked_dates(question.text)
        if since is None
        and until is None
        and window is None
        and question.shipped is None
        and question.span is None
        else None
    )
    if dated is not None:
        found_in, _ = search.bm25_scored(
            store, words.words, limit=CUE_CANDIDATES, as_of=as_of, since=dated.low, until=dated.high
        )
        bm25_hits = with_hits(bm25_hits, found_in)
    # "When was editDistance added?" is answered by the first change that holds the name, as `git log -S
    # --reverse` would, however many later changes touch it (and their diffs hold it more often); "when was
    # getUsDateFormat removed?" by the last one, as `git log -S` finds it.
    exact = search.ExactSearches(store, as_of=as_of, since=since, until=until)
    ends: tuple[tuple[str | None, search.Which], ...] = ((question.origin, "first"), (question.gone, "last"))
    holding: tuple[str, str] | None = None  # (the sha of the change a note names, that note)
    still_holder: str | None = None  # the sha a "still in the code" note names (listed first: still_first)
    for name, which in ends:
        if name is None:
            continue
        moved = recent.renamed_file(store, question, name) if which == "last" else None
        if moved is not None:
            # "When was src/alpha.py removed?" of a file renamed away: no change removed it.
            answered_by, note = moved
            bm25_hits = recent.lifted(store, bm25_hits, answered_by)
            holding = holding or moved
            question.notes.append(note)
            continue
        bm25_hits, sha = search.holder(store, name, bm25_hits, which, searches=exact)
        if sha is not None:
            answered_by = sha
            note = f"{which} change that holds {name}: {sha[:10]}"
            stays = (
                search.still_in(store, name, searches=exact) if which == "last" else search.Presence([], [])
            )
            if stays.code:
                # "When was X removed?" of a name the code still holds: no change removed it, and the last
                # that holds it (a typo fixed beside it) is no answer to "when".
                where = _paths_listed(stays.code)
                note = f"{name} is still in the code ({where}): no change removed it; the last that changed it: {sha[:10]}"
                if question.still:
                    note = f"yes: {name} is still in the code ({where}); the last change that holds it: {sha[:10]}"
                still_holder = still_holder or sha
            elif stays.comments:
                # A comment that names it ("formerly the `TOMLChar` constants") is no code that holds it.
                where = _paths_listed(stays.comments)
                note = f"{note} ({name} is only in a comment now: {where})"
                if question.still:
                    note = f"no: {name} is only in a comment now ({where}); the last change that holds it: {sha[:10]}"
            elif question.still:
                note = f"no: {name} is not in the code any more; the last change that holds it: {sha[:10]}"
            holding = holding or (sha, note)
            question.notes.append(note)
        elif which == "first" and not search.held_whole(store, name, searches=exact):
            question.unheld = name
            question.notes.append(f"nothing in memory holds {name}")
    if question.purpose and question.asks == "neutral" and question.unheld is None:
        # "What is COVERAGE_PROCESS_START for?" of a name the docs define: the page that says what it does
        # answers it, as for "what does COVERAGE_PROCESS_START do?" (a usage question); the change that
        # brought it in follows, and the note still names it.
        assert question.origin is not None
        if search.docs_hold(store, question.origin, searches=exact):
            question.asks = "usage"
    # Three more low-weight queries over the exact index, each merged into the list (merge_scored):
    # - symptom words ("hangs", "ignored") bring their thesaurus kin ("deadlock", "respect"): a commit that
    #   names the mechanism is found by a question that names the symptom; and a few words bring what
    #   commits of any project say for them ("folder" → "directory": thesaurus.learned). A smaller postings
    #   budget: these words count half, and must not cost more.
    # - "HasDarkBackground() blocks forever" names a function the index holds as one word, and the fix is
    #   titled "avoid background color query hang": the parts of the question's compound names (a pasted
    #   log's first MAX_QUERY_TERMS of them), within the same budget.
    # - "TimestampSigner('key').unsign() on a token from Signer raises ValueError": the code a question names
    #   is its most exact part, and its prose ("on a server whose TZ is …") can outweigh it. The words of its
    #   code names are asked once more.
    # The learned kin were learned from questions about a project's history; a question about what was run
    # just now, or next, is about the commands the user typed, in the user's own words.
    learned = question.cue is None and question.then is None
    kin = thesaurus.expand(words.counted, kin=learned) if THESAURUS_WEIGHT and not words.dropped else []
    if kin:
        kin = search.affordable_terms(store, kin, THESAURUS_POSTINGS)
    parts = search.name_parts(question.search_text, words.counted) if NAME_PARTS_WEIGHT else []
    if parts:
        parts = search.affordable_terms(store, parts[: search.MAX_QUERY_TERMS], THESAURUS_POSTINGS)
    searched = set(words.words)
    named = [w for w in search.terms(" ".join(code_names(question.search_text))) if w in searched]
    # A pasted trace's frames: their rarest words the headline lacks, as context (TRACE_FRAMES_WEIGHT).
    frames = search.query_terms(store, question.frames).counted if question.frames else []
    frames = [w for w in frames if w not in searched and not is_noise_word(w)]
    if frames:
        frames = search.affordable_terms(store, frames, THESAURUS_POSTINGS)
    for extra, weight in (
        (kin, THESAURUS_WEIGHT),
        (parts, NAME_PARTS_WEIGHT),
        (named, CODE_NAMES_WEIGHT),
        (frames, TRACE_FRAMES_WEIGHT),
    ):
        if extra and weight:
            bm25_hits = merge_scored(bm25_hits, exact.words(extra, limit), weight, limit)
    phrases = name_phrases(question) if NAME_PHRASES_WEIGHT else None
    if phrases:
        bm25_hits = merge_scored(bm25_hits, exact.scored(phrases, limit), NAME_PHRASES_WEIGHT, limit)
    numbers = number_phrases(question) if NUMBERS_WEIGHT else None
    if numbers:
        bm25_hits = merge_scored(bm25_hits, exact.scored(numbers, limit), NUMBERS_WEIGHT, limit)
    # "How do I get thor onto my machine?" shares no word with the README's "Installation" but the project's
    # name: the sections that head the matter asked about are searched by its own words, and join the list.
    if question.topic is not None and TOPIC_WEIGHT:
        bm25_hits = merge_scored(bm25_hits, topic_sections(store, exact, question.topic), TOPIC_WEIGHT, limit)
    # A run of CJK characters is one token to the word index: the trigram index recalls its substrings.
    cjk_hits = cjk.search_scored(store, question.search_text, limit=limit, as_of=as_of)
    if since is not None or until is not None:
        cjk_hits = _in_window(store, cjk_hits, since, until)
    # A long question (a pasted log) is embedded as its informative words: embedding 8,000 characters
    # took ~0.5-1 s and averages them into mush.
    embed_text = " ".join(words.counted) if words.dropped else terse_text(question.search_text)
    near = (
        vector.neighbours(
            store,
            embed_text,
            as_of=as_of,
            since=since,
            until=until,
            also=[node_id for node_id, _ in bm25_hits],
            url=settings.embedding_url,
            configured=(settings.embedding_provider, settings.embedding_model),
            question=settings.question_map,
        )
        if vectors
        else vector.Neighbours([], 0.0)
    )
    if near.skipped and not never_synced(store) and not synced_empty(store):  # each has a note of its own
        question.semantic_skipped = semantic_note(near.skipped, stored_elsewhere)
    elif stored_elsewhere is not None:
        question.notes.append(stored_elsewhere.text())
    covering = Coverage(store, words)
    scale = 1.0
    if bm25_hits and LEXICAL_COVERAGE_EXP:
        # BM25 shares are relative to the query's best match, however poor that match is. Scaling the list
        # by how much of the question its best few hits contain lets the vectors speak when the words
        # matched are only the common ones.
        best = max(covering([i for i, _ in bm25_hits[:STRENGTH_TOP]]).values())
        scale = best**LEXICAL_COVERAGE_EXP
    found = fuse.evidence([bm25_hits, cjk_hits], [*near.hits, *near.more], near.floor, scales=[scale, 1.0])
    found = lift_nearest(store, found, near.hits)
    settings = replace(settings, vector_weight=vector_weight(question, settings))
    scored = score_fused(
        store,
        found,
        as_of,
        cue=dated_cue(question.cue, dated),
        settings=settings,
        asks=question.asks,
        doc_changes_count=question.about_docs,
        test_changes_count=question.about_tests,
        failure=question.failure,
        matter=question.topic,
    )
    # NexusMem's own lines (`clear; nexusmem query "…" | tee out.txt`) hold the question's words: they are the
    # question being asked, never its answer, and not counted among the matches.
    asking = {node.id for node, _ in scored if order.is_own_line(node)}
    if asking:
        scored = [(node, score) for node, score in scored if node.id not in asking]
    if window is not None and question.asks != "usage":  # "since 1.20 X is gone, how do I ...": the docs say
        scored = in_release(scored, window)
    dated_first = (
        dated is not None and question.asks != "usage" and any(_in_dates(n, dated) for n, _ in scored)
    )
    if dated is not None and dated_first:
        scored = in_dates(scored, dated)
    if question.asks != "usage":
        scored = commits_before_entries(store, scored, as_of=as_of, since=since, until=until)
        if asks_which_release(question.text):
            scored = entries_after_commits(store, scored, as_of=as_of, since=since, until=until)
    if question.release is None:
        scored = current_docs_first(scored, frozenset(_WORDS.findall(question.text.lower())))
    scored = originals_first(scored, question.text)
    scored = distinct_changes(scored)
    # "why did I change…": the asker's own commits lifted (None: not asked, or no git user to know them by).
    asker = _git_user_of(store) if asks_own_change(question.text) else None
    scored = own_changes_first(scored, asker)
    if holding is not None:
        holder_note_if_listed(scored, *holding, question.notes)
    if still_holder is not None:
        scored = still_first(scored, still_holder)
    if question.migrates is not None:
        # "How do I migrate from v6 to v7?": the upgrade guide's section for those releases, whole; the
        # versions are no searchable words (6, 0, 7), and "migrate" matched every commit that says it.
        guide = [
            node
            for node in upgrade_guide(store, exact, *question.migrates)
            if order.within(node, as_of, since, until)
        ]
        if guide:
            scored = order.put_first(scored, guide)
            pinned = _pinned([node.id for node in guide], pinned)
            answered_by = guide[0].id
            whole = frozenset(node.id for node in guide)
            question.notes.append(f"first: the upgrade guide's {guide[0].ref}")
    if question.newest and question.shipped is None:
        # "What changed in the last release?": the highest version the tags name (at the question's end of
        # time), answered as if named.
        question.shipped = store.newest_release(until)
        if question.shipped is not None:
            question.notes.append(f"the newest release: {question.shipped} (the highest version tag)")
    if question.first and question.shipped is None:
        # "What changed in the first release?": the lowest version the tags name, answered as if named.
        question.shipped = store.first_release(until)
        if question.shipped is not None:
            question.notes.append(f"the first release: {question.shipped} (the lowest version tag)")
    if question.shipped is not None or since_range is not None:
        # "What changed in 7.4.1?": the release's changelog entries and its release commit are the answer,
        # whatever else its words ("changed") match; the version itself is no searchable word (7, 4, 1).
        spanned = (
            since_range
            if since_range is not None
            else store.release_range(
                question.shipped or "", question.span[0] if question.span is not None else None
            )
        )
        # "What changed between 1.2.0 and 1.4.0?": the entries of every release tagged between them (1.3.0)
        # follow 1.4.0's, highest first (as a changelog lists them).
        between = (
            store.releases_between(spanned)
            if since_range is None and question.span is not None and spanned is not None and spanned.base
            else since_releases
            if since_range is not None
            else []
        )
        shipped = [
            node
            for node in (release_nodes(store, exact, question.shipped) if question.shipped else [])
            if order.within(node, as_of, since, until)
        ]
        pointed = _pre_releases_pointed(store, shipped, question.shipped) if question.shipped else []
        if pointed:
            # "Nothing new beyond 7.0.0b1.": the release's entries only point to its pre-release (a release
            # of its own), whose entries say what it holds; they follow.
            question.notes.append(
                f"release {question.shipped}: its changelog only points to {', '.join(pointed)}; the entries of"
                f" {', '.join(pointed)} follow"
            )
            for version in pointed:
                shipped += [
                    node
                    for node in release_nodes(store, exact, version)
                    if node.kind == "doc_section"
                    and node.source == rank.CHANGELOG_SOURCE
                    and order.within(node, as_of, since, until)
                ]
        for version in between[:SPAN_RELEASES]:
            shipped += [
                node
                for node in release_nodes(store, exact, version)
                if node.kind == "doc_section" and order.within(node, as_of, since, until)
            ]
        shipped = list({node.id: node for node in shipped}.values())
        # The commits its entries describe follow its release commit, with what the budget leaves: shown
        # beside each entry they crowded the release's own entries out (and mostly repeat them).
        described = [
            node
            for node in described_by(store, [node for node in shipped if node.kind == "doc_section"])
            if order.within(node, as_of, since, until)
        ]
        shipped, range_note = with_release_commits(
            store,
            shipped,
            described,
            spanned,
            lambda node: order.within(node, as_of, since, until),
            store.releases_within(spanned.shas)
            if since_range is not None and spanned is not None
            else between,
        )
        unreached = _unreached(store, question.shipped) if question.shipped else None
        if unreached is not None:
            # "What changed in 6.5.7?", tagged on a maintenance branch: its commits are not in memory, and
            # what its words matched elsewhere is no answer unless its changelog entries are.
            question.notes.append(f"release {question.shipped}: {_unreached_note(unreached)}")
            question.unreached = not any(node.kind == "doc_section" for node in shipped)
        highest = store.newest_release(until) if question.shipped and since_range is None else None
        if (
            question.shipped
            and highest is not None
            and (question.shipped.count(".") < 3 or highest.count(".") >= 3)  # "127.0.0.1" is no release
            and store.release_commit(question.shipped) is None
            and not any(node.kind == "doc_section" for node in shipped)
        ):
            # "What changed in 7.1.2?" before 7.1.2 exists: nothing says what it holds, and what its words
            # ("changed") match is no answer.
            question.notes.append(
                f"release {question.shipped}: no tag or changelog heading of that release is known (the newest"
                f" known is {highest})"
            )
            question.unreached = not shipped
        if shipped:
            scored = order.put_first(scored, shipped)
            pinned = _pinned([node.id for node in shipped], pinned)
            answered_by = shipped[0].id
            whole = frozenset(node.id for node in shipped if node.kind == "doc_section")
            released = frozenset(node.id for node in shipped)
            # What the answer holds of it, as it is: thiserror keeps no changelog, and a version only a
            # changelog heading names has no tag (so no commit range either).
            tag = store.release_commit(question.shipped) if question.shipped else None
            entries_held = any(node.kind == "doc_section" for node in shipped)
            highest_only = (
                f"; only the {SPAN_RELEASES + 1} highest of the {len(between) + 1} releases in the range"
                if len(between) > SPAN_RELEASES
                else ""
            )
            if question.shipped and between:
                lowest = between[:SPAN_RELEASES][-1]
                what = ", ".join(
                    [
                        *(["their changelog"] if entries_held else ["no changelog entry"]),
                        *([f"{question.shipped}'s commit"] if tag else []),
                    ]
                )
                since_said = f"the releases since {question.span[0]}" if since_range and question.span else ""
                question.notes.append(
                    f"first: what {since_said} hold, {lowest} to {question.shipped} ({what}{highest_only})"
                    if since_said
                    else f"first: what releases {lowest} to {question.shipped} hold ({what}{highest_only})"
                )
            elif question.shipped:
                what = ", ".join(
                    [
                        *(["its changelog"] if entries_held else ["no changelog entry"]),
                        *(["its commit"] if tag else []),
                    ]
                )
                question.notes.append(f"first: what release {question.shipped} holds ({what})")
                if tag is None and entries_held and since_range is None:
                    question.notes.append(
                        f"release {question.shipped}: no tag names it (a changelog heading only), so no commits"
                        " are counted for it"
                    )
        if range_note is not None:
            question.notes.append(range_note)
    prefix, pasted = search.named_commits(store, question.search_text)
    if pasted:
        # "What did 1fb23b7 do?", a pasted sha: no index holds a sha, and its words matched other commits that
        # quote other shas. The commit it names and its diffs are the answer; a prefix several commits' shas
        # start with names each of them (as `show` lists them), and the answer says so.
        commits = store.get_many(pasted, light=True)
        diffs = [
            i for node_id in pasted if node_id in commits for i, _ in store.diffs_of(commits[node_id].ref)
        ]
        held = store.get_many([*pasted, *diffs], light=True)
        shown = [
            held[i] for i in [*pasted, *diffs] if i in held and order.within(held[i], as_of, since, until)
        ]
        if shown:
            scored = order.put_first(scored, shown)
            pinned = _pinned([node.id for node in shown], pinned)
            answered_by = shown[0].id
            question.notes.append(
                f"first: commit {shown[0].ref[:10]}, whose sha the question names"
                if len(pasted) == 1
                else f"first: the {len(pasted)} commits whose sha starts with {prefix}, which is ambiguous: "
                + ", ".join(node.ref[:12] for node in shown if node.id in commits)
            )
    # "What did I commit in cJSON yesterday", "which tests failed in this repo": the project's own name says
    # which memory is asked (this one), not what about; the rules below read the question without it.
    names = recent.project_names(store, project) if answered_by is None else frozenset()
    file_said = False  # a question about one file's changes, answered by its own note (file_changes_first)
    if answered_by is None and question.then is None and not question.failure:
        scored, listed, listing_note = recent.file_changes_first(
            store, scored, question, names, as_of=as_of, since=since, until=until
        )
        if listing_note is not None:
            file_said = True
            question.notes.append(listing_note)
            if not listed:
                listing_note = None  # nothing then: said, and answered by the ranking below
    attempts = (
        recent.attempts_before_fix(store, question, as_of=as_of, since=since, until=until, names=names)
        if question.then == "before" and answered_by is None and recent.asks_before_fix(question.text)
        else None
    )
    if attempts is not None:
        # In time order, the budget keeping the first (listing), and no fix riding up after its failure
        # (whole): the fix ends the listing, its patch after the commit.
        listed = [attempts.failure, *attempts.tried, *attempts.fixes]
        patches = {
            node.id: patch
            for node in attempts.fixes
            if node.kind == "git_commit"
            for patch in [recent.fix_patch(store, attempts.failure.ref, node.ref)]
            if patch is not None
        }
        patch_nodes = store.get_many(list(patches.values()), light=True)
        listed = [
            shown
            for node in listed
            for shown in (node, patch_nodes.get(patches.get(node.id, "")))
            if shown is not None
        ]
        scored = order.listed_first(scored, listed, keep=True)
        whole = whole | {node.id for node in listed}
        answered_by = attempts.failure.id
        question.notes.append(
            f"first: what was run from `{attempts.failure.ref}` ({_exit_text(attempts.failure)},"
            f" {timefmt.iso(attempts.failure.ts)}) up to the fix memory linked to it, oldest first"
        )
    elif question.then is not None:
        ceiling = scored[0][1] if scored else 0.0  # what the commands run next are put above
        scored, anchor = recent.with_neighbours(
            store,
            scored,
            question.then,
            found,
            latest=recent.AGAIN.search(question.text) is not None,
            failed=question.run_failure,
            between=recent.BETWEEN.search(question.text) is not None,
            asked=question.text,
            window=recent.sequence_window(store, question, as_of, since, until),
            timed=recent.asked_window(question, since, until) is not None,
            as_of=as_of,
            since=since,
            until=until,
        )
        if anchor is not None:
            answered_by = anchor.id
            pinned = _pinned([node.id for node, value in scored if value > ceiling], pinned)
            when = "after" if question.then == "after" else "before"
            question.notes.append(
                f"first: what was run {when} `{anchor.ref}` ({_exit_text(anchor)}, {timefmt.iso(anchor.ts)})"
            )
    if listed:
        answered_by = listed[0].id
    if answered_by is None and question.then is None and question.failure and recent.asks_fix(question.text):
        scored, listed, failures = recent.fixes_first(
            store, scored, question, as_of=as_of, since=since, until=until, names=names
        )
        if listed:
            answered_by = listed[0].id
            listing_note = (
                "first: the newest failures memory linked to their fix, each with what fixed it (the commit"
                " made after it, the passing re-run), newest first"
                if failures > 1
                else "first: the newest failure memory linked to its fix, with what fixed it (the commit made"
                " after it, the passing re-run)"
            )
            question.notes.append(listing_note)
    if answered_by is None and question.then is None and recent.asks_got_working(question.text):
        scored, listed, working = recent.got_working_first(
            store, scored, question, as_of=as_of, since=since, until=until, names=names
        )
        if working is not None:
            answered_by = listed[0].id
            listing_note = (
                f"first: what was done before `{working.ref}` passed ({timefmt.iso(working.ts)}), since it last"
                " failed, nearest first"
            )
            question.notes.append(listing_note)
    # A run that did not finish ("the training run ran out of GPU memory", "the feature build got killed")
    # is asked about as a failure here, though the learned step does not read it as one (question.failure).
    asks_failures = question.run_failure and question.then is None and answered_by is None
    said = set(search.terms(recent.without_names(question.search_text, names))) if names else None
    unnamed = words.words if said is None else [w for w in words.words if w in said]
    if asks_failures:
        scored, listed, span, passed = recent.failed_runs_first(
            store, scored, question, as_of=as_of, since=since, until=until, names=names, author=author
        )
        if listed:
            listing_note = (
                f"no run of {span}; first: its runs, newest first (the newest passed, exit 0)"
                if passed
                else f"first: the failed runs of {span}"
                + ("" if ", newest first" in span else ", newest first")
            )
            question.notes.append(listing_note)
        elif span:  # none of the runs it names ran in the time it names (failed_runs_first)
            listing_note = span
            question.notes.append(listing_note)
    recent_work = False  # a listing of the newest work (activity_first)
    if asks_failures and not listed and not recent.a_subject(unnamed):
        scored, listed, span = recent.failures_first(
            store, scored, question, as_of=as_of, since=since, until=until, author=author
        )
        listing_note = (
            f"first: the commands that failed {span}" + ("" if ", newest first" in span else ", newest first")
            if listed
            else f"no recorded command {recent.by_author(author)}failed {span}"
        )
        question.notes.append(listing_note)
    elif (
        not asks_failures and answered_by is None and recent.asks_recent_work(question, unnamed, since, until)
    ):
        recent_work = True
        scored, listed, span = recent.activity_first(
            store, scored, question, as_of=as_of, since=since, until=until, author=author
        )
        listing_count = recent.asked_count(question.text)
        listing_note = f"first: {span}" if listed else recent.nothing_done(author, span)
        question.notes.append(listing_note)
    if listed:
        answered_by = listed[0].id
    others: set[str] = set()  # matches of another author: left out, so not counted among the matches either
    if author is not None:
        kept = [(n, s) for n, s in scored if order.authored(author, n, store.member)]
        others = {n.id for n, _ in scored if n.id in found} - {n.id for n, _ in kept}
        scored = kept
        if answered_by is None:
            scored = recent.authored_first(scored, {node_id for node_id, _ in bm25_hits})
        if recent_work and not listed and (author != authors.ME or recent.none_held(store, author)):
            # What an agent has been doing is its commands (activity_first): with none of them listed, the
            # commits and docs its filter lets through are no one's work of its, nothing to stand in; nor
            # yours when memory holds no command of yours.
            scored = [(n, s) for n, s in scored if n.kind in authors.AUTHORED_KINDS]
        if not any(node.kind == "shell_command" for node, _ in scored):
            recorded = store.command_authors()  # only when none of the author's commands is in the answer
            if not authors.held_by(author, recorded):
                holders = f"recorded: {authors.recorded_names(recorded)}" if recorded else "memory holds none"
                no_commands = f"{NO_COMMANDS_BY}{author!r}; {holders}"
                if listing_note is not None and not listed and listing_note in question.notes:
                    # "no command by codex recorded" (the listing's note) and this said the same: once.
                    question.notes.remove(listing_note)
                    listing_note = no_commands
                question.notes.append(no_commands)
    if dated is not None and dated_first and not listed and answered_by is None:
        question.notes.append(f"first: changes made {dated.phrase} (the dates the question writes)")
    elif (
        dated is not None
        and question.asks != "usage"
        and not listed
        and answered_by is None
        and not file_said
    ):
        # (A file's changes in dates that hold none of them: its note says so and names its last change.)
        # "What did we change in March 2021?" with no change that month: said, before the changes of other
        # months that follow, not a silent list of them; those nearest to it by date first, before and after.
        said = {node_id for node_id, _ in bm25_hits}
        words_said = [node for node, _ in scored if node.kind == "git_commit" and node.id in said]
        # Any change at all in those dates: one read, for the nearest and the note.
        changed_then = bool(store.newest_of_kind("git_commit", dated.low, dated.high, 1))
        nearest = (
            [] if changed_then else changes_nearest(store, dated, as_of, author, among=words_said or None)
        )
        question.notes.append(_dates_missed(dated, held=changed_then, listed=bool(nearest)))
        if nearest:
            scored = order.put_first(scored, nearest)
            pinned = _pinned([node.id for node in nearest], pinned)
            answered_by = nearest[0].id
    lexical = {node_id for node_id, _ in bm25_hits}
    day_asked = conversation_of_day(question.text) if day is not None else None
    if day_asked is not None and day is not None and answered_by is None and not listed:
        typed = recent.questions_of_day(store, day, day_asked.agent, as_of)
        whom = day_asked.agent or "your agents"
        if typed:
            # The day's questions are the whole answer (the question names nothing else): listed in their
            # order, none of today's commands or old commits after them as filler, nor in place of the next
            # one a small budget leaves out (the listing's note says how many).
            scored = order.put_first([], typed)
            listed = typed
            pinned = _pinned([node.id for node in typed], pinned)
            answered_by = typed[0].id
            listing_note = f"first: the questions you asked {whom} {day.said}, newest first"
            question.notes.append(listing_note)
        else:
            question.notes.append(f"no question you asked {whom} is recorded {day.said}")
    if question.conversation is not None and answered_by is None and not listed:
        turns = recent.conversations_first(scored, lexical, question.conversation, day)
        if turns:
            scored = order.put_first(scored, turns)
            pinned = _pinned([node.id for node in turns], pinned)
            answered_by = turns[0].id
            with_whom = question.conversation.agent or "your agents"
            question.notes.append(f"first: the conversations with {with_whom} that match the question")
    if day is not None and answered_by is None and not listed:
        on_day = recent.of_the_day(scored, lexical, day)
        if on_day:
            scored = order.put_first(scored, on_day)
            pinned = _pinned([node.id for node in on_day], pinned)
            answered_by = on_day[0].id  # as a listing: what it asks, not only what its words match
            question.notes.append(f"first: what matches the question from {day.said}, then the rest")
        elif not question.failure:  # a reported failure's miss is said by _window_missed, and weighs
            question.notes.append(f"nothing recorded {day.said} matches the question; the closest follow")
    missed = (
        None
        if listing_note is not None or answered_by is not None
        else recent.window_missed(question, scored, WEAK_TOP)
    )
    if missed is not None:
        question.notes.append(f"nothing recorded {missed} matches the question")
    # The learned last step (retrieve.rerank), unless a rule above pinned its answer on purpose: a time cue,
    # a named release, the first or last holder of a name, what was run after a command, the asker's own
    # change (a lift the step cannot see: the labelled questions ask about nobody's own work).
    rerankable = (
        question.cue is None
        and window is None
        and not dated_first
        and answered_by is None
        and question.then is None
        and not (asker and any(is_own_commit(node, asker) for node, _ in scored[: rerank.DEPTH]))
    )
    by_vector = tuple(node_id for node_id, cosine in near.hits if cosine > near.floor)
    if settings.rerank and rerankable:
        scored = rerank.rerank(
            scored,
            rerank.conditions(question.failure, question.names_code, question.asks),
            found,
            covering,
            settings,
            question.asks,
            *step_reads(store, question, words.counted, rerank.window(scored, by_vector)[0]),
            nearest=by_vector,
        )
    bm25_ids = {node_id for node_id, _ in bm25_hits}
    lexical_extra = sum(1 for node_id, _ in cjk_hits if node_id not in bm25_ids)
    # What a rule listed without its words matching (the failures or the newest work of a time) counts too.
    counted = (set(found) - others - asking) | {node.id for node, _ in scored}
    matched = len(counted) + max(0, bm25_total - len(bm25_hits))
    if listed and {node.id for node, _ in scored} <= {node.id for node in listed}:
        # A listing that is the whole answer ("what failed today": the failed runs, _listed): what else the
        # words matched (old commits that say "fail", a run that found no test, exit 5) is never shown, so
        # not counted ("42 of 45 match(es) shown" could never be 45); an item linked to a listed failure
        # (its retry, the turn that discussed it) is counted when it rides along, matched or not.
        counted = {node.id for node, _ in scored}
        matched = len(counted)
    counts = {
        # Distinct ids in the fused lists, plus the BM25 matches past the candidate cut.
        "matched": matched,
        "bm25": bm25_total + lexical_extra,
        "vector": len(near.hits),
    }
    # What the weak-match judgement reads of the first few (most were asked about above): asked now, while
    # the store is open (an answer fused from several stores is judged after they are closed).
    covering([node.id for node, _ in scored[:WEAK_TOP]])
    return Retrieved(
        question,
        scored,
        counts,
        found,
        words,
        answered_by,
        rerankable,
        settings,
        covering,
        frozenset(node.id for node in listed),
        listing_note,
        missed,
        whole,
        tuple(node_id for node_id in pinned if node_id in {node.id for node, _ in scored}),
        released,
        listing_count,
        frozenset(counted),
        by_vector,
    )


# What a change made within a named release's window counts, against the same match outside it.
RELEASE_FACTOR = 4.0


def _paths_listed(paths: list[str]) -> str:
    return ", ".join(paths[:STILL_IN_PATHS]) + (" …" if len(paths) > STILL_IN_PATHS else "")


def in_release(
    scored: list[tuple[StoredNode, float]], window: tuple[int, int | None]
) -> list[tuple[StoredNode, float]]:
    """SCORED with the changes made within WINDOW (after the release's tag, up to the next one's) counted
    RELEASE_FACTOR, best first again: commits, their diffs, and changelog entries (dated by the commit that
    wrote them)."""
    start, end = window
    lifted = [
        (node, value * RELEASE_FACTOR if _is_change(node) and start < node.ts <= (end or node.ts) else value)
        for node, value in scored
    ]
    return order.best_first(lifted)


def in_dates(scored: list[tuple[StoredNode, float]], dated: timecue.Dated) -> list[tuple[StoredNode, float]]:
    """SCORED with the changes made within the dates the question writes (DATED, timecue.asked_dates)
    counted RELEASE_FACTOR, as a named release's window counts them, best first again."""
    lifted = [(node, value * RELEASE_FACTOR if _in_dates(node, dated) else value) for node, value in scored]
    return order.best_first(lifted)


def _in_dates(node: StoredNode, dated: timecue.Dated) -> bool:
    return _is_change(node) and dated.low <= node.ts <= dated.high


def _dates_missed(dated: timecue.Dated, *, held: bool, listed: bool = False) -> str:
    """The note of a question whose dates (DATED) hold none of its matches: no change at all then (HELD
    false; the changes nearest to them by date LISTED first), or none that matches."""
    if not held:
        follow = "the nearest by date follow, closest first" if listed else "the nearest follow"
        return f"no change recorded {dated.phrase}; {follow}"
    return f"nothing recorded {dated.phrase} matches the question; the closest follow"


def changes_nearest(
    store: SearchStore,
    dated: timecue.Dated,
    as_of: int | None,
    author: str | None,
    among: list[StoredNode] | None = None,
) -> list[StoredNode]:
    """The NEAREST_CHANGES commits nearest by date to DATED, a window that holds none, before it and after it,
    the closest first (ties: the earlier first), that pass the query's filters: what "what did we change in
    March 2021" lists when nothing changed that month (February 19th before May 16th). AMONG: the commits the
    question's other words matched ("… in the parser in March 2021"), when there are some."""
    if among is None:
        before = store.newest_of_kind("git_commit", 0, max(0, dated.low - 1), NEAREST_CHANGES * 2)
        after = store.oldest_of_kind("git_commit", dated.high + 1, 2**62, NEAREST_CHANGES * 2)
        among = list(store.get_many([*before, *after], light=True).values())
    kept = [
        node
        for node in among
        if not dated.low <= node.ts <= dated.high
        and order.passes(node, as_of, None, None, author, store.member)
    ]

    def distance(node: StoredNode) -> tuple[int, int]:
        return (dated.low - node.ts if node.ts < dated.low else node.ts - dated.high), node.ts

    return sorted(kept, key=distance)[:NEAREST_CHANGES]


def lift_nearest(
    store: SearchStore, found: dict[str, fuse.Evidence], nearest: list[tuple[str, float]]
) -> dict[str, fuse.Evidence]:
    """FOUND with the nearest few by vector lifted (fuse.lift_nearest), the changes and doc sections among
    them: a shell command or a turn of conversation keeps its share. Commands repeat one another ("docker
    compose up -d redis", run five times) and when one was run says more than how near it stands; lifted,
    the nearest runs pushed the fix they led to down a place or two on the recent-work sets (recent4
    .592 -> .525)."""
    head = [node_id for node_id, _ in nearest[: fuse.NEAREST_DEPTH]]
    if not head:
        return found
    nodes = store.get_many(head, light=True)
    kept = frozenset(i for i in head if i in nodes and nodes[i].kind not in rank.RECENCY_KINDS)
    return fuse.lift_nearest(found, nearest, only=kept)


def dated_cue(cue: timecue.Cue | None, dated: timecue.Dated | None) -> timecue.Cue | None:
    """The time CUE the scores measure age by: for dates written as a closed window (DATED), from its middle,
    not from the newest event (recency counted from now took "in March 2021" away from March 2021)."""
    if cue is None or dated is None or cue.anchor_ms is not None or not 0 < dated.low <= dated.high < 2**62:
        return cue
    return replace(cue, anchor_ms=(dated.low + dated.high) // 2)


def _is_change(node: StoredNode) -> bool:
    return node.kind in _CHANGE_KINDS or node.source == rank.CHANGELOG_SOURCE


def _release_note(version: str, window: tuple[int, int | None], unreached: str | None = None) -> str:
    """What a question naming release VERSION says of its WINDOW (and of its tag, not in HEAD's history,
    when UNREACHED is the sha that tag names)."""
    start, end = window
    until = f" and before the next ({timefmt.iso(end)[:10]})" if end is not None else ""
    note = f"release {version}: changes made after its tag ({timefmt.iso(start)[:10]}){until} come first"
    return note + (f"; {_unreached_note(unreached)}" if unreached is not None else "")


def _unreached(store: SearchStore, version: str) -> str | None:
    """The sha release VERSION's tag names when memory does not hold that commit (a tag on a maintenance
    branch HEAD does not reach: memory holds the commits HEAD reaches), else None."""
    sha = store.release_commit(version)
    return sha if sha is not None and not store.commit_held(sha) else None


def _unreached_note(sha: str) -> str:
    return f"its tag is commit {sha[:10]}, which is not in HEAD's history (memory holds the commits HEAD reaches)"


# How many nodes the version's phrase ("7 4 1", as the index holds 7.4.1) may match to be read for release_nodes.
RELEASE_CANDIDATES = 200
_RELEASE_NUMBER = lazyre.compile(r"\d+(?:\.\d+)*")
# A pre-release's version: its number, its label and the label's count ("7.0.0-rc.1", "2.0.0b2", "4.0.0.rc-2").
_PRE_RELEASE = lazyre.compile(r"(\d+(?:\.\d+)*)[-.]?(alpha|beta|rc)[.-]?(\d*)", re.IGNORECASE)


_RELEASE_PAGE = lazyre.compile(
    r"\b(?:what'?s new|new in|changes|changed|release notes?|highlights)\b", re.IGNORECASE
)


def release_nodes(store: SearchStore, exact: search.ExactSearches, version: str) -> list[StoredNode]:
    """What says what release VERSION holds, in this order: the changelog entries under its heading (in the
    order the file holds them), the commit its tag names, and the commits whose title names it ("Release 7.4.1 (#2965)", "Prepare 1.7.15")."""
    pre = _PRE_RELEASE.fullmatch(version)
    if pre is None:
        phrase = search.phrase_of(_WORDS.findall(version))
    else:  # "7.0.0-rc.1" is "7 0 0 rc 1" to the index, the heading "7.0.0-rc1" is "7 0 0 rc1"
        number, label, count = " ".join(_WORDS.findall(pre.group(1))), pre.group(2).lower(), pre.group(3)
        phrase = (
            f'"{number} {label} {count}" OR "{number} {label}{count}"' if count else f'"{number} {label}"'
        )
    hits = exact.scored(phrase, RELEASE_CANDIDATES)
    nodes = store.get_many([node_id for node_id, _ in hits], light=True)
    # 7.4.1 and not 7.4.10 or 2.7.4.1, nor a pre- or post-release of it (7.4.1-beta.1, 7.4.1rc1, 7.4.1.post0);
    # "1.7" names 1.7.0 too. A pre-release named (2.0.0-alpha.1) is its own release.
    final = _RELEASE_NUMBER.fullmatch(version) is not None
    # A pre-release however it is spelt: the tag's 7.0.0-rc.1 is the heading's 7.0.0-rc1 (and 7.0.0.RC-1).
    spelt = (
        re.escape(pre.group(1)) + rf"[-.]?(?i:{pre.group(2)})[.-]?" + re.escape(pre.group(3)) + r"(?!\d)"
        if pre is not None
        else re.escape(version) + (r"(\.0)*" if final else "")
    )
    # Not the final's with a pre-release after it ("Added changelog for 7.0.0 Beta1").
    named = re.compile(r"(?<![\w.])[vV]?" + spelt + r"(?![\w]|\.\w|-[A-Za-z]|\s+(?i:alpha|beta|rc)\d*\b)")
    listed = [node for node_id, _ in hits if (node := nodes.get(node_id)) is not None]
    entries = {
        node.id: node
        for node in listed
        if node.kind == "doc_section"
        and node.source == rank.CHANGELOG_SOURCE
        and named.search(node.ref.partition("#")[2].split(" › ", 1)[0])
    }
    # The project's own page about the release ("Major changes in 5.0", "What's new in 2.0"): a doc page
    # whose heading names the version and says what is new in it.
    pages = [
        node
        for node in listed
        if node.kind == "doc_section"
        and node.source != rank.CHANGELOG_SOURCE
        and not rank.is_post(node.kind, node.title)
        and named.search(heading := node.ref.partition("#")[2])
        and _RELEASE_PAGE.search(heading)
    ]
    commits = [node for node in listed if node.kind == "git_commit" and named.search(node.title)]
    sha = store.release_commit(version) if final else None  # the version tags held are final releases
    tagged = store.get_many(store.commits_by_sha(sha)[:1], light=True) if sha else {}
    in_file = [entries[node_id] for node_id in store.written_order(list(entries))]
    if not in_file and not tagged and version.count(".") >= 3:
        # "127.0.0.1": four numbers name a release only when a tag or a changelog heading names it, not
        # when some commit's title holds an address ("Cookie domain: 127.0.0.1").
        return []
    return list({node.id: node for node in [*pages, *in_file, *tagged.values(), *commits]}.values())


# A changelog entry that only points to a pre-release ("Nothing new beyond 7.0.0b1.", "No changes since
# 2.0.0rc2"): short, and naming a pre-release of the same version.
_POINTER_CHARS = 200
_PRE_RELEASE_NAMED = lazyre.compile(
    r"(?<![\w.])v?(\d+(?:\.\d+)*)[-.]?((?:a|b|alpha|beta|rc|c|pre|dev)[.-]?\d*)(?!\w|\.\w)"
)


def _zero_padded(number: str) -> tuple[int, ...]:
    """The version NUMBER's parts (7.0.0b1's 7.0.0), trailing zeros dropped: 7.0 is 7.0.0."""
    found = _RELEASE_NUMBER.match(number)
    parts = [int(part) for part in found.group(0).split(".")] if found else []
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _pre_releases_pointed(store: SearchStore, shipped: list[StoredNode], version: str) -> list[str]:
    """The pre-releases of VERSION (as written: 7.0.0b1) that its changelog entries among SHIPPED only point
    to (each entry short and naming one); empty when an entry says more, or none is there."""
    entries = [n.id for n in shipped if n.kind == "doc_section" and n.source == rank.CHANGELOG_SOURCE]
    if not entries or not _RELEASE_NUMBER.match(version):
        return []
    held = store.get_many(entries)
    pointed: list[str] = []
    for entry in entries:
        text = held[entry].body.strip() if entry in held else ""
        named = [
            m.group(0).lstrip("v")
            for m in _PRE_RELEASE_NAMED.finditer(text)
            if _zero_padded(m.group(1)) == _zero_padded(version)
        ]
        if len(text) > _POINTER_CHARS or not named:
            return []
        pointed += [v for v in named if v not in pointed]
    return pointed


# How many of the commits between a release's tag and the previous one's are listed with what it holds: the
# changes (newest first), then its merges and its bookkeeping (a release commit, a changelog-only commit).
RANGE_CHANGES = 30
RANGE_BOOKKEEPING = 10
# How many of the releases tagged between the two a question names ("between 1.2.0 and 1.4.0") have their
# changelog entries listed, the highest first (each costs one search of its version's phrase).
SPAN_RELEASES = 20
_RELEASE_TITLE = lazyre.compile(
    r"^\s*(?:release|prepare|preparing|bump|bumped|tag|tagged|version|changelog|update changelog)\b.*\d",
    re.IGNORECASE,
)


def with_release_commits(
    store: SearchStore,
    shipped: list[StoredNode],
    described: list[StoredNode],
    found: ReleaseRange | None,
    within: Callable[[StoredNode], bool],
    later: list[str] | None = None,
) -> tuple[list[StoredNode], str | None]:
    """What a release holds, in order: SHIPPED's changelog entries, the commits of FOUND (`git log
    PREVIOUS..VERSION`, or VERSION..HEAD for a question about what came since VERSION, LATER being the releases
    tagged in it; from memory's commit parents: no git on a question's path) that change something, newest
    first (RANGE_CHANGES at most), SHIPPED's commits (the tagged one, those whose title names it), the range's
    merges and bookkeeping (a release commit, one that only touched the release notes), then the DESCRIBED
    commits not in the range (said so; bookkeeping ones left out). Only those WITHIN the question's window.
    Also the note that names the range (None without one: no earlier tag is reached, or the tag is not in
    memory), and the releases tagged within it besides VERSION when LATER names them (releases_between,
    highest first)."""
    entries = [node for node in shipped if node.kind == "doc_section"]
    tagged = [node for node in shipped if node.kind != "doc_section"]
    if found is None or not found.held or (found.base is None and not found.first) or not found.shas:
        return list({node.id: node for node in [*shipped, *described]}.values()), None
    tip = store.get_many(store.commits_by_sha(found.sha)[:1], light=True)
    if not tip:
        return list({node.id: node for node in [*shipped, *described]}.values()), None
    project_id = next(iter(tip.values())).project_id
    commits = store.get_many(
        [identity.node_id(project_id, "git_commit", sha) for sha in found.shas], light=True
    )
    by_sha = {node.ref: node for node in commits.values()}
    walk = {sha: n for n, sha in enumerate(found.shas)}
    ranged = sorted(
        (by_sha[sha] for sha in found.shas if sha in by_sha), key=lambda node: (-node.ts, walk[node.ref])
    )
    in_range = {node.id for node in ranged}
    outside = [node for node in described if node.id not in in_range]
    files: dict[str, list[str]] = {}
    for node_id, path in store.files_of_many([node.id for node in [*ranged, *outside]]):
        files.setdefault(node_id, []).append(path)
    from nexusmem.sources.docs import is_release_notes

    def keeping(node: StoredNode) -> bool:
        return bool(
            sha_is_merge(node)
            or _RELEASE_TITLE.search(node.title)
            or (files.get(node.id) and all(is_release_notes(path) for path in files[node.id]))
        )

    own = {node.id for node in tagged}
    bookkeeping = {node.id for node in ranged if node.id in own or keeping(node)}
    changes = [node for node in ranged if node.id not in bookkeeping][:RANGE_CHANGES]
    rest = [node for node in ranged if node.id in bookkeeping and node.id not in own][:RANGE_BOOKKEEPING]
    # A commit an entry names that the range does not hold (one made before the previous release's tag, or
    # on another branch) comes after the range, said so; one that only touched the changelog is left out.
    elsewhere = [node for node in outside if not keeping(node)]
    ordered = [*entries, *changes, *tagged, *rest, *elsewhere]
    listed = list({node.id: node for node in ordered if node in entries or within(node)}.values())
    count = len(found.shas)
    more = (
        "" if count <= len(changes) + len(rest) + len(own) else f"; the newest {len(changes)} changes listed"
    )
    commits_word = "commit" if count == 1 else "commits"
    counted = f"{count}{'+' if found.truncated else ''} {commits_word}"
    if found.name == "HEAD":
        later = later or []
        since = ", ".join(later[:8]) + (", …" if len(later) > 8 else "")
        reached = set(found.shas)
        off = [(v, sha) for v, sha in store.releases_above(found.base or "") if sha not in reached]
        tagged_since = (
            f"; released since: {since}"
            if later
            else "; no release is tagged after it" + (" in HEAD's history" if off else "")
        )
        if off:
            # "Since 0.15.0" where 0.15.1 was tagged on a branch HEAD does not reach: a release after it exists.
            named = ", ".join(f"{v} ({sha[:10]})" for v, sha in off[:3]) + (", …" if len(off) > 3 else "")
            tagged_since += f"; tagged after it on commits HEAD does not reach: {named}"
        note = (
            f"since {found.base}: the {counted} after its tag up to HEAD (git log {found.base_name}..HEAD)"
            f"{tagged_since}{more}"
        )
    elif found.first:
        note = (
            f"release {found.version}: the {counted} from the start of history up to its tag, the first release"
            f" (git log {found.name}){more}"
        )
    else:
        lower = sorted(later or [], key=version_key)
        listed_between = ", ".join(lower[:8]) + (", …" if len(lower) > 8 else "")
        between = f"; released between: {listed_between}" if lower else ""
        note = (
            f"release {found.version}: the {counted} after {found.base} (git log {found.base_name}..{found.name})"
            f"{between}{more}"
        )
    shown_elsewhere = [node for node in elsewhere if node in listed]
    if shown_elsewhere:
        which = "commit" if len(shown_elsewhere) == 1 else "commits"
        note += (
            f"; after them, the {len(shown_elsewhere)} {which} its changelog entries name outside that range"
            f" ({', '.join(node.ref[:8] for node in shown_elsewhere[:5])})"
        )
    return listed, note


def sha_is_merge(node: StoredNode) -> bool:
    """Whether the commit NODE has more than one parent (its meta's parents; a light node keeps its meta)."""
    parents = node.meta.get("parents")
    return isinstance(parents, list) and len(parents) > 1


def described_by(store: SearchStore, entries: list[StoredNode]) -> list[StoredNode]:
    """The commits the changelog ENTRIES describe (their `changelog` links), in the entries' order."""
    place = {node.id: n for n, node in enumerate(entries)}
    links = sorted(
        (place[src], dst) for src, dst, relation in store.links_from(list(place)) if relation == "changelog"
    )
    ids = list(dict.fromkeys(dst for _, dst in links))
    held = store.get_many(ids, light=True) if ids else {}
    return [held[node_id] for node_id in ids if node_id in held]


# How many doc sections titled with an upgrade word and one of the versions are read for upgrade_guide.
GUIDE_CANDIDATES = 200
# How many sections of the chosen part of an upgrade guide (it and its subsections) are read, at most.
GUIDE_SECTIONS = 40
_GUIDE_WORDS = ("upgrading", "upgrade", "upgrades", "migrating", "migration", "migrate", "updating")
_GUIDE_MARK = lazyre.compile(r"upgrad|migrat|updat", re.IGNORECASE)
_HEADING_VERSION = lazyre.compile(r"(?<![\w.])v?(\d+(?:\.\d+){0,3})(?:\.x)?(?![\w.]*\d)")
_HEADING_FROM_TO = lazyre.compile(r"\d(?:\.x)?\s*(?:to|->|→|-)\s*v?\d", re.IGNORECASE)


def upgrade_guide(
    store: SearchStore, exact: search.ExactSearches, start: str | None, end: str | None
) -> list[StoredNode]:
    """The sections of an upgrade guide for moving from release START to END (either may be None), best
    first: those whose heading names both ("6.0 to 7.0" in UPGRADING.md, "From 6 to 7"), then END ("Upgrading
    to Moshi 2.x", "7.0" in a MIGRATION.md), then START ("Migrating from 5.x"). A guide is a file named for
    upgrading or migrating, or a heading that says so or names two releases. The sections under a heading
    chosen (a changelog's "Upgrading to Moshi 2.x › Properties") follow it, as the file lists them."""
    asked = [v for v in (start, end) if v is not None]
    numbers = sorted({part for v in asked for part in (v.split(".")[0], "v" + v.split(".")[0])})
    match = (
        "title : ("
        + " OR ".join(_GUIDE_WORDS)
        + ") AND title : ("
        + " OR ".join(f'"{n}"' for n in numbers)
        + ")"
    )
    hits = exact.scored(match, GUIDE_CANDIDATES)
    nodes = store.get_many([node_id for node_id, _ in hits], light=True)
    ranked: dict[tuple[str, str], int] = {}  # (path, heading) -> 0 both named, 1 END, 2 START
    for node_id, _ in hits:
        node = nodes.get(node_id)
        if node is None or node.kind != "doc_section":
            continue
        path, _, heading = node.ref.partition("#")
        top = heading.split(" › ", 1)[0]
        named = [found.group(1) for found in _HEADING_VERSION.finditer(top)]
        two = len(named) == 2 and _HEADING_FROM_TO.search(top) is not None
        if not (_GUIDE_MARK.search(path) or _GUIDE_MARK.search(top) or two) or not named or len(named) > 2:
            continue
        if two:
            first, last = named
            place = 0 if _same_release(first, start) and _same_release(last, end) else None
            if place is None and start is None and _same_release(last, end):
                place = 1
        else:
            place = 1 if _same_release(named[0], end) else 2 if _same_release(named[0], start) else None
        if place is not None:
            ranked[(path, top)] = min(place, ranked.get((path, top), place))
    if not ranked:
        return []
    best = min(ranked.values())
    chosen = {key for key, place in ranked.items() if place == best}
    members = [
        node
        for node in nodes.values()
        if node.kind == "doc_section"
        and (node.ref.partition("#")[0], node.ref.partition("#")[2].split(" › ", 1)[0]) in chosen
    ]
    # The whole section: its subsections too, whose titles the search did not match ("6.0 to 7.0 › Native
    # functions calls"); a doc's ref names its last heading only, its natural key the heading path.
    heads = {(node.source, _heading_path(node)) for node in members}
    under = [
        node_id for source, head in heads for node_id in store.sections_under(source, head, GUIDE_SECTIONS)
    ]
    held = {node.id: node for node in members} | store.get_many(under, light=True)
    written = store.written_order(list(held))[:GUIDE_SECTIONS]
    return [held[node_id] for node_id in written]


def _heading_path(node: StoredNode) -> str:
    """NODE's natural key up to the heading its ref names first ("UPGRADING.md#Guide > 6.0 to 7.0" of
    "UPGRADING.md#Guide > 6.0 to 7.0 > Native functions calls#0", whose ref is "UPGRADING.md#6.0 to 7.0")."""
    path, _, heading = node.ref.partition("#")
    top = heading.split(" › ", 1)[0]
    at = node.natural_key.find(top, len(path) + 1)
    return node.natural_key if at < 0 else node.natural_key[: at + len(top)]


def _same_release(named: str, asked: str | None) -> bool:
    """Whether the release a heading NAMED ("6.0", "7", "2.x" as "2") is the one ASKED about ("v6", "6.0"):
    the same numbers, a trailing .0 or a missing part counting as any."""
    if asked is None:
        return False
    a, b = (v.split(".") for v in (named, asked))
    while len(a) > 1 and a[-1] == "0":
        a.pop()
    while len(b) > 1 and b[-1] == "0":
        b.pop()
    depth = min(len(a), len(b))
    return a[:depth] == b[:depth]


# How many of the paths that still hold a name "when was X removed?" was asked about its note names.
STILL_IN_PATHS = 3


def holder_note_if_listed(
    scored: list[tuple[StoredNode, float]], sha: str, note: str, notes: list[str]
) -> None:
    """Take NOTE (naming SHA, the first or last change that holds a name) out of NOTES when none of that
    change's nodes is in SCORED (left out since): it would name a change the answer does not show.
    search.holder scored the change ORIGIN_LEAD above the best word match; the vectors and the title may
    still put a later change whose title names the name above it ("Fix broken caching in
    guessOffsetForZone"). Putting the holder first regardless was measured and not kept: two questions of
    a real-repository set lost a rank each (moshi .725 -> .708, PHPMailer .716 -> .699)."""
    listed = any(node.kind in _CHANGE_KINDS and node.ref.split(":", 1)[0] == sha for node, _ in scored)
    if not listed and note in notes:
        notes.remove(note)


def still_first(scored: list[tuple[StoredNode, float]], sha: str) -> list[tuple[StoredNode, float]]:
    """SCORED with the change SHA put first (its commit node, else its best-ranked diff): the last change that
    holds a name the code still holds, which the note answering "is X still …" or "when was X removed" names
    ("yes: AsDisplay is still in the code (…); the last change that holds it: aa9d91f753"). There the note is
    the answer and the list its evidence, so they must agree: the vectors and the title put the change whose
    title names the name (thiserror's 2023 "Replace … with AsDisplay trait") above a later one that only
    holds it (a ui test's expected output). Only for such a note: for the first or last holder of an
    ordinary question the move was measured and not kept (holder_note_if_listed)."""
    nodes = [node for node, _ in scored if node.kind in _CHANGE_KINDS and node.ref.split(":", 1)[0] == sha]
    lead = next((node for node in nodes if node.kind == "git_commit"), nodes[0] if nodes else None)
    if lead is None or scored[0][0].id == lead.id:
        return scored
    return order.put_first(scored, [lead])


def vector_weight(question: Question, settings: rank.Settings) -> float:
    """The weight of the vector list for QUESTION: rank.CODE_VECTOR_FACTOR of the configured one when it
    names an identifier, a file or an option, unless it asks how to use something (the docs answer that):
    word vectors know prose, not identifiers, and the change that holds the named characters answers.
    rank.FAILURE_CODE_VECTOR_FACTOR when it also reports a failure: the rest is an account of a symptom."""
    if question.names_code and question.asks != "usage":
        factor = rank.FAILURE_CODE_VECTOR_FACTOR if question.failure else rank.CODE_VECTOR_FACTOR
        return settings.vector_weight * factor
    return settings.vector_weight


# A changelog entry says in a user's words what a change did ("the client hangs when the server closes the
# connection"); the commit it links to is the change itself, what a question about what happened asks for.
# So an entry among the first ENTRY_DEPTH results puts the commits it links to (at most ENTRY_LINKS: an
# entry that names more describes a release, not a change) just above itself, unless they rank higher
# already. A usage question is answered by the docs, and is left alone. Over the seven real-repository sets
# (hybrid MRR, docs/evaluation.md) this moved dev / held-out / fresh / fresh2 / fresh3 / fresh4 / fresh5 by
# .000 / +.003 / -.001 / +.009 / +.001 / +.009 / +.007 (mean .5401 → .5443); one linked commit at most:
# +.002 on average; the commit placed after the entry instead of before it: +.000. The commits of one entry
# keep their own order (ties broken by id before): mean .5470 → .5487 with distinct_changes in place.
# A commit that changed docs only is not lifted: an entry with no number links to the commit that added it,
# and when that commit is "Update changelog." it is bookkeeping, not the change the entry describes
# (pytest-cov's "Update changelog. Close #422." came first for the failure its entry names). Thirty-nine
# sets: .7000 → .7001 (55 questions better, 1 worse).
# Once a commit ranks above an entry that links to it, the entry repeats that change in other words: it
# counts ENTRY_ECHO_FACTOR, so that the next distinct change comes before it (as a commit's diffs do,
# SIBLING_FACTOR). Forty-five sets (4,155 questions, hybrid MRR, docs/evaluation.md): .6913 at 1, .6922 at
# .7 (142 questions better, none worse), .6922 at .5 (162 better), .6923 at .3 (171 better); R@5 .812 → .814
# at each.
ENTRY_DEPTH = 40
ENTRY_LINKS = 2
ENTRY_RELATION = "changelog"
ENTRY_ECHO_FACTOR = 0.5


def commits_before_entries(
    store: SearchStore,
    scored: list[tuple[StoredNode, float]],
    *,
    as_of: int | None = None,
    since: int | None = None,
    until: int | None = None,
) -> list[tuple[StoredNode, float]]:
    """SCORED with the commits each changelog entry among its first ENTRY_DEPTH links to (1 to ENTRY_LINKS
    of them) scored just above that entry when they ranked below it (or not at all). A commit outside the
    AS_OF / SINCE / UNTIL window stays out, and one that changed docs only stays where it was."""
    entries = [
        (node, value)
        for node, value in scored[:ENTRY_DEPTH]
        if node.kind == "doc_section" and node.source == rank.CHANGELOG_SOURCE
    ]
    if not entries:
        return scored
    linked: dict[str, list[str]] = {}
    for src, dst, relation in store.links_from([node.id for node, _ in entries]):
        if relation == ENTRY_RELATION:
            linked.setdefault(src, []).append(dst)
    values = {node.id: value for node, value in scored}
    lifted: dict[str, float] = {}
    for node, value in entries:
        commits = linked.get(node.id, [])
        if not 1 <= len(commits) <= ENTRY_LINKS:
            linked.pop(node.id, None)
            continue
        # Above the entry, in their own order (a commit the entry names by number has its words as notes).
        ordered = sorted(commits, key=lambda c: (-values.get(c, 0.0), c))
        for step, commit in enumerate(ordered):
            lift = value * (1.0 + 1e-6 * (len(ordered) - step))
            if max(values.get(commit, 0.0), lifted.get(commit, 0.0)) < lift:
                lifted[commit] = lift
    if not lifted:
        return _after_their_commits(scored, linked)
    return _after_their_commits(
        _placed(store, scored, lifted, as_of, since, until, docs_only_stay=True), linked
    )


def _placed(
    store: SearchStore,
    scored: list[tuple[StoredNode, float]],
    placed: dict[str, float],
    as_of: int | None,
    since: int | None,
    until: int | None,
    *,
    docs_only_stay: bool = False,
) -> list[tuple[StoredNode, float]]:
    """SCORED with each node of PLACED (id -> the score it is given) scored so, those SCORED lacks added; a node
    memory no longer holds, one the user rejected or that was superseded (a verdict the user gave is not
    overturned by another node's words), one outside the AS_OF / SINCE / UNTIL window that SCORED lacked, and
    with DOCS_ONLY_STAY a commit that changed docs only, stay where they were."""
    nodes = {n.id: n for n, _ in scored}
    missing = [i for i in placed if i not in nodes]
    nodes.update(store.get_many(missing, light=True) if missing else {})
    keep: dict[str, float] = {}
    for node_id, value in placed.items():
        held = nodes.get(node_id)
        if held is None or held.trust == "rejected" or held.superseded_by is not None:
            continue
        if node_id in missing and not order.within(held, as_of, since, until):
            continue
        keep[node_id] = value
    if docs_only_stay and keep:
        for node_id in search.change_scope(store, [nodes[i] for i in keep]).docs:
            del keep[node_id]
    out = [(n, keep.get(n.id, v)) for n, v in scored]
    out += [(nodes[node_id], keep[node_id]) for node_id in missing if node_id in keep]
    return out


# "Which release fixed is_unique for a Bytes from a shared BytesMut?", "from which version on does it limit the
# response size?": the question asks for a release, and the changelog entry that describes the change is what
# names it. The commit itself often ranks first (its message and patch hold the question's words), while its
# entry, in fewer words, ranks far below it and counts ENTRY_ECHO_FACTOR once its commit outranks it. So for
# such a question the entries that link to one of the first RELEASE_COMMIT_DEPTH commits come right after it.
RELEASE_COMMIT_DEPTH = 3
RELEASE_ENTRIES_PER_COMMIT = 1


def entries_after_commits(
    store: SearchStore,
    scored: list[tuple[StoredNode, float]],
    *,
    as_of: int | None = None,
    since: int | None = None,
    until: int | None = None,
) -> list[tuple[StoredNode, float]]:
    """SCORED with the changelog entry that describes each of its first RELEASE_COMMIT_DEPTH commits scored just
    below that commit, when it ranked lower (or not at all). An entry outside the window, or one the user
    rejected, stays where it was."""
    commits = [(node, value) for node, value in scored if node.kind == "git_commit"][:RELEASE_COMMIT_DEPTH]
    if not commits:
        return scored
    values = {node.id: value for node, value in scored}
    placed: dict[str, float] = {}
    for commit, value in commits:
        arriving, _ = store.links_to(commit.id, 8)
        entries = [src for src, relation in arriving if relation == ENTRY_RELATION]
        for step, entry in enumerate(entries[:RELEASE_ENTRIES_PER_COMMIT]):
            below = value * (1.0 - 1e-6 * (step + 1))
            if max(values.get(entry, 0.0), placed.get(entry, 0.0)) < below:
                placed[entry] = below
    if not placed:
        return scored
    return order.best_first(_placed(store, scored, placed, as_of, since, until))


def links_of(store: SearchStore, nodes: list[StoredNode]) -> dict[str, list[tuple[str, str]]]:
    """(to id, relation) of the links leaving each of NODES: a changelog entry's commits in the order the
    entry names them (its meta `commits`: those it names by sha or number first, the one that added its line
    after), not in the store's (by id), so that the commit shown first beside it is the change it names."""
    links: dict[str, list[tuple[str, str]]] = {}
    for src, dst, rel in store.links_from([n.id for n in nodes]):
        links.setdefault(src, []).append((dst, rel))
    for node in nodes:
        if node.id in links and node.source == rank.CHANGELOG_SOURCE:
            named = node.meta.get("commits")
            if isinstance(named, list) and named:
                place = {
                    identity.node_id(node.project_id, "git_commit", sha): n
                    for n, sha in enumerate(named)
                    if isinstance(sha, str)
                }
                links[node.id].sort(
                    key=lambda link: (link[1] != ENTRY_RELATION, place.get(link[0], len(place)))
                )
    return links


def _after_their_commits(
    scored: list[tuple[StoredNode, float]], linked: dict[str, list[str]]
) -> list[tuple[StoredNode, float]]:
    """SCORED, each changelog entry of LINKED (entry id -> the 1 to ENTRY_LINKS commits it links to) that
    one of its commits now outranks counting ENTRY_ECHO_FACTOR, best first."""
    values = {node.id: value for node, value in scored}
    out = [
        (node, value * ENTRY_ECHO_FACTOR)
        if node.id in linked and any(values.get(c, 0.0) >= value for c in linked[node.id])
        else (node, value)
        for node, value in scored
    ]
    return order.best_first(out)


# A commit and its diffs are one change, led by the commit: it takes the place of the change's best node
# (the message says why; a diff only what), and the change's other nodes count SIBLING_FACTOR of their
# score, so that the next distinct change that matches nearly as well comes before them (the packer shows
# at most two nodes of one commit anyway: without the lead, a commit whose test files match the question
# best was shown as two diffs and no message). Over the seven real-repository sets (hybrid MRR,
# docs/evaluation.md): mean .5443 at 1, .5457 at .9, .5470 at .7 and at .5 (no set lower at any factor).
SIBLING_FACTOR = 0.7
_CHANGE_KINDS = ("git_commit", "code_diff")
NEAREST_CHANGES = (
    5  # the commits nearest to a window of dates that holds none, listed first (changes_nearest)
)


def _usage_doc_path(node: StoredNode) -> str | None:
    """The file path of NODE when it is a doc section of the docs source (not a changelog entry), else None."""
    if node.kind != "doc_section" or node.source == rank.CHANGELOG_SOURCE:
        return None
    return node.title.split(" — ", 1)[0]


# A project that keeps one docs folder per major version (league/commonmark's docs/1.x and docs/2.x, urfave/
# cli's docs/v1 … docs/v3, Docusaurus's versioned_docs/version-2.1) holds the same page once per version,
# and a question about how to use the program asks about the release in use: the newest. A doc section under
# an older version folder than the newest one the results hold under the same parent counts
# OLDER_DOCS_FACTOR, unless the question names a release (intent.release_version). Folders named by a year
# (docs/news/2020/) are not versions: a version is one to three digits per part. A folder for the release
# not yet made (league/container's docs/unstable next to docs/4.x, go-task's website/src/next next to
# website/src/latest) comes before every numbered one, and one named for the release in use (latest,
# stable, current) after them, so the unreleased page counts the factor too, unless the question says the
# folder's name ("what changes in next?").
OLDER_DOCS_FACTOR = 0.5
_VERSION_DIR = lazyre.compile(r"(?:^|/)(?:v|version-)?(\d{1,3}(?:\.\d{1,3})*)(?:\.x)?/")
_NAMED_RELEASE_DIR = lazyre.compile(
    r"(?:^|/)(unstable|next|nightly|canary|edge|preview|unreleased|dev|develop|main|master|latest|stable|current)/"
)
_UNRELEASED = -1  # the version of a folder for the next release; one for the release in use sorts last
_RELEASED = 1 << 30


def _docs_version(path: str) -> tuple[str, str, tuple[int, ...]] | None:
    """(parent folder, the folder's name when it is a word, version order) of the version folder PATH is
    under, or None."""
    numbered = _VERSION_DIR.search(path)
    if numbered is not None:
        return path[: numbered.start()], "", tuple(int(part) for part in numbered.group(1).split("."))
    named = _NAMED_RELEASE_DIR.search(path)
    if named is None:
        return None
    name = named.group(1)
    return (
        path[: named.start()],
        name,
        (_RELEASED,) if name in ("latest", "stable", "current") else (_UNRELEASED,),
    )


def current_docs_first(
    scored: list[tuple[StoredNode, float]], said: frozenset[str] = frozenset()
) -> list[tuple[StoredNode, float]]:
    """SCORED (best first) with each doc section under an older version folder than the newest the list
    holds under the same parent at OLDER_DOCS_FACTOR of its score; re-sorted when any was. A folder whose
    name is in SAID (the question's words, lower-case) is left as it is."""
    found: dict[str, tuple[str, tuple[int, ...]]] = {}
    newest: dict[str, tuple[int, ...]] = {}
    for node, _ in scored:
        path = _usage_doc_path(node)
        version = _docs_version(path) if path is not None else None
        if version is None:
            continue
        parent, name, key = version
        newest[parent] = max(newest.get(parent, key), key)
        if name not in said:
            found[node.id] = (parent, key)
    older = {node_id for node_id, (parent, key) in found.items() if key < newest[parent]}
    if not older:
        return scored
    out = [(n, v * OLDER_DOCS_FACTOR if n.id in older else v) for n, v in scored]
    return order.best_first(out)


# A project that keeps its docs translated (vuejs/vitepress's docs/en next to docs/ja, docs/ru, docs/zh …)
# holds each page once per language, and a translation keeps the original's code, option names and
# headings' loan words, so it matches an English question nearly as well as the original does. A doc
# section under a language folder counts TRANSLATION_FACTOR when the question is in English and the results
# hold the same page in English (under en/, or where the language folder would be): the reader asked in
# English, and the English page says the same.
TRANSLATION_FACTOR = 0.5
_LANGUAGE_DIR = lazyre.compile(
    r"(?:^|/)(ar|bn|cs|da|de|el|es|fa|fi|fr|he|hi|hu|id|it|ja|ko|nl|no|pl|pt|ro|ru|sv|th|tr|uk|vi|zh)"
    r"(?:[-_][a-z]{2,4})?/",
    re.IGNORECASE,
)
_ENGLISH_DIR = lazyre.compile(r"(?:^|/)en(?:[-_][a-z]{2})?/", re.IGNORECASE)
# English function words that other languages written in Latin letters do not share ("a", "do", "in" and
# "no" are Spanish, Portuguese or Italian words too).
_ENGLISH_WORD = lazyre.compile(
    r"\b(the|how|what|why|when|where|which|who|does|did|is|are|was|were|can|could|should|i|my|we|our|to|of"
    r"|for|with|it|this|that|and|or|not|after|before)\b",
    re.IGNORECASE,
)
_OTHER_SCRIPT = lazyre.compile(
    r"[\u0400-\u04ff\u0590-\u06ff\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]"
)


def asked_in_english(text: str) -> bool:
    """Whether TEXT reads as English: no letters of another script, and two or more English function words."""
    if _OTHER_SCRIPT.search(text):
        return False
    return len({word.lower() for word in _ENGLISH_WORD.findall(text)}) >= 2


def translated(ref: str) -> bool:
    """Whether the doc section REF (path#Heading) lies under a language folder."""
    return _LANGUAGE_DIR.search(ref.split("#", 1)[0]) is not None


def originals_first(scored: list[tuple[StoredNode, float]], text: str) -> list[tuple[StoredNode, float]]:
    """SCORED (best first) with each doc section under a language folder at TRANSLATION_FACTOR of its score
    when TEXT is in English and SCORED holds the same page in English; re-sorted when any was."""
    if TRANSLATION_FACTOR == 1 or not asked_in_english(text):
        return scored
    paths = [(node.id, path) for node, _ in scored if (path := _usage_doc_path(node)) is not None]
    copies: dict[str, tuple[str, str]] = {}  # node id → (parent, page) of a section under a language folder
    for node_id, path in paths:
        folder = _LANGUAGE_DIR.search(path)
        if folder is not None:
            copies[node_id] = (path[: folder.start()], path[folder.end() :])
    if not copies:  # most projects keep no translation: nothing to compare
        return scored
    english: set[tuple[str, str]] = set()
    for node_id, path in paths:
        if node_id in copies:
            continue
        folder = _ENGLISH_DIR.search(path)
        if folder is not None:
            english.add((path[: folder.start()], path[folder.end() :]))
        # where a language folder would be: docs/guide/x.md is the original of docs/ja/guide/x.md
        for cut in (m.start() for m in re.finditer("/", path)):
            english.add((path[:cut], path[cut + 1 :]))
        english.add(("", path))
    demoted = {node_id for node_id, page in copies.items() if page in english}
    if not demoted:
        return scored
    return order.best_first([(n, v * TRANSLATION_FACTOR if n.id in demoted else v) for n, v in scored])


# What a commit of the asker's own counts, against another's matching as well, when the question asks about
# a change the asker made ("why did I change the easter function": today's own refactor, not 2016's
# "Clean up easter documentation" sharing its one word): a modest lift, not a filter.
OWN_CHANGE_FACTOR = 1.5


def own_changes_first(
    scored: list[tuple[StoredNode, float]], me: str | None
) -> list[tuple[StoredNode, float]]:
    """SCORED with the commits whose author is ME (git's user.name, any case) at OWN_CHANGE_FACTOR of their
    score; re-sorted. SCORED itself when ME is None."""
    if not me:
        return scored
    return order.best_first(
        [
            (node, value * OWN_CHANGE_FACTOR) if is_own_commit(node, me) else (node, value)
            for node, value in scored
        ]
    )


def is_own_commit(node: StoredNode, me: str) -> bool:
    """Whether NODE is a commit whose author is ME (git's user.name, any case)."""
    return node.kind == "git_commit" and str(node.meta.get("author", "")).casefold() == me.casefold()


def _git_user_of(store: SearchStore) -> str | None:
    """The git user.name of the work tree whose memory STORE is (ROOT/.nexusmem/memory.db), None when STORE
    is no such file (the team store)."""
    path = getattr(store, "path", None)
    if not isinstance(path, Path) or path.name != paths.DB_NAME or path.parent.name != paths.STATE_DIR:
        return None
    return authors.git_user(path.parent.parent)


def distinct_changes(scored: list[tuple[StoredNode, float]]) -> list[tuple[StoredNode, float]]:
    """SCORED (best first) with each commit's nodes led by the commit node when it is listed (else by the
    best of them) at the best score among them, the others at SIBLING_FACTOR of their own; re-sorted."""
    best: dict[str, float] = {}
    leader: dict[str, str] = {}
    for node, value in scored:
        group = node.group if node.kind in _CHANGE_KINDS else None
        if group is None:
            continue
        best.setdefault(group, value)
        if node.kind == "git_commit" or group not in leader:
            leader[group] = node.id
    out: list[tuple[StoredNode, float]] = []
    for node, value in scored:
        group = node.group if node.kind in _CHANGE_KINDS else None
        if group is not None:
            value = best[group] if leader[group] == node.id else value * SIBLING_FACTOR
        out.append((node, value))
    out.sort(key=lambda pair: (-round(pair[1], 9), pair[0].kind != "git_commit", pair[0].id))
    return out


def as_of_note(store: SearchStore, as_of: int | None) -> str | None:
    """A note when AS_OF is before STORE's first recording: as-of is recording time (when a sync stored an
    item), so nothing was recorded yet, whatever happened then. Said in the answer (it went to the CLI's
    stderr only: `--json` and an agent's asOf got an empty answer with no reason)."""
    first_recorded = getattr(store, "first_recorded", None)
    if as_of is None or first_recorded is None:
        return None
    first = first_recorded()
    if first is None or as_of >= first:
        return None
    from nexusmem import timefmt

    # The same day twice ("as-of 2026-12-04 is before … (2026-12-04)") says nothing: then the times.
    shown = timefmt.day if timefmt.day(as_of) != timefmt.day(first) else timefmt.iso
    return (
        f"as-of {shown(as_of)} is before this memory's first recording ({shown(first)}): as-of means"
        " recording time (when a sync stored an item), so nothing was recorded yet"
    )


def _exit_text(node: StoredNode) -> str:
    code = node.meta.get("exit")
    return "exit unknown" if code is None else f"exit {code}"


def with_hits(hits: list[tuple[str, float]], more: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """HITS and the hits of MORE they lack (a second search of the same words within a window of time: the
    same scores), best first."""
    union = dict(hits)
    union.update((node_id, score) for node_id, score in more if node_id not in union)
    return sorted(union.items(), key=lambda pair: (-pair[1], pair[0]))


def _heads(matter: Topic, node: StoredNode) -> bool:
    """Whether NODE is a doc section (not a changelog entry) that heads MATTER."""
    return node.kind == "doc_section" and node.source != rank.CHANGELOG_SOURCE and matter.heads(node.ref)


def topic_sections(store: SearchStore, exact: search.ExactSearches, matter: Topic) -> list[tuple[str, float]]:
    """(id, BM25 score) of the doc sections that head MATTER, among the TOPIC_CANDIDATES best matches of
    its words."""
    hits = exact.words(list(matter.words), TOPIC_CANDIDATES)
    nodes = store.get_many([node_id for node_id, _ in hits], light=True)
    return [
        (node_id, value) for node_id, value in hits if node_id in nodes and _heads(matter, nodes[node_id])
    ]


def number_phrases(question: Question) -> str | None:
    """The FTS5 expression asking for the dotted numbers QUESTION writes, each as the phrase of its parts
    (`"3 9" OR "1 3"`), None when it writes none or names a release of the project (NUMBERS_WEIGHT)."""
    if question.release or question.shipped or question.span or question.migrates:
        return None
    found = list(dict.fromkeys(_DOTTED.findall(question.search_text)))[: search.MAX_QUERY_TERMS]
    return " OR ".join(search.phrase_of(number.split(".")) for number in found) or None


def name_phrases(question: Question) -> str | None:
    """The FTS5 expression asking for the code names QUESTION writes (and those in a backticked span) that
    the index holds as two to eight words, each as the phrase of its words (`"no html" OR "max retries"`),
    None when it writes none (NAME_PHRASES_WEIGHT)."""
    found: list[tuple[str, ...]] = []
    for name in code_names(question.search_text):
        # A quoted command line (`mdconv --no-html notes.md`) is asked whole and by the names in it.
        bare = name.strip("`")
        inner = code_names(bare) if name.startswith("`") else []
        for each in [name, *(n for n in inner if n != bare)]:
            words = tuple(word_parts(each.lower()))
            if 2 <= len(words) <= 8:
                found.append(words)
    kept = list(dict.fromkeys(found))[: search.MAX_QUERY_TERMS]
    return " OR ".join(search.phrase_of(list(words)) for words in kept) or None


def merge_scored(
    hits: list[tuple[str, float]], extra: list[tuple[str, float]], weight: float, limit: int
) -> list[tuple[str, float]]:
    """HITS with WEIGHT × the scores of EXTRA added, best first. EXTRA is first scaled so that its best
    is no higher than the best of HITS: a thesaurus word is never worth more than the question's own
    words (uncapped, common kin such as "drop" or "empty" buried answers on the generated history)."""
    best = max((value for _, value in hits), default=0.0)
    best_extra = max((value for _, value in extra), default=0.0)
    scale = min(1.0, best / best_extra) if best_extra > 0 else 0.0
    scores = dict(hits)
    for node_id, value in extra:
        scores[node_id] = scores.get(node_id, 0.0) + weight * scale * value
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))[:limit]


def _in_window(
    store: SearchStore, hits: list[tuple[str, float]], since: int | None, until: int | None
) -> list[tuple[str, float]]:
    nodes = store.get_many([node_id for node_id, _ in hits], light=True)
    lo, hi = since if since is not None else -(2**62), until if until is not None else 2**62
    return [(i, s) for i, s in hits if i in nodes and lo <= nodes[i].ts <= hi]


def ranked_candidates(
    store: SearchStore,
    text: str,
    *,
    as_of: int | None = None,
    since: int | None = None,
    until: int | None = None,
    limit: int = search.CANDIDATES,
    vectors: bool = True,
    settings: rank.Settings = rank.DEFAULT,
) -> tuple[list[tuple[StoredNode, float]], dict[str, int]]:
    """Nodes matching TEXT with their final scores, best first, plus match counts (see retrieve)."""
    found = retrieve(
        store, text, as_of=as_of, since=since, until=until, limit=limit, vectors=vectors, settings=settings
    )
    return found.scored, found.counts


@dataclass(frozen=True)
class Strength:
    """How well memory can answer the question, from evidence a reader can check.

    missing: the share of the question's IDF mass carried by words that no node contains (an ordinary
    English word at COMMON_WORD_SHARE of its weight). A question about something that never happened
    names it ("NTLM", "brotli", "tcsh"), and those words, the rarest and so the heaviest, are nowhere in
    memory. cosine: the best vector similarity (0 without vectors); a close semantic neighbour weighs
    against missing words (the same thing said in other words). `weak` weighs these and what the list
    itself says (below) by learned weights (WEAK_WEIGHTS).

    absent_name: a name the question writes with capitals (a product, protocol or format: "GraphQL",
    "Kafka", "OpenTelemetry") that no node holds in any form. It is what the question is about, and weighs
    more than its share of the IDF mass says: "when did httpie add a GraphQL query mode?" matches "httpie",
    "query" and "mode" everywhere.

    On the eight real-repository sets (docs/evaluation.md, 74 `none` and 714 answerable questions) a
    query's answer was flagged for 41% of the `none` questions and 2.4% of the answerable ones with missing
    alone; with absent_name 62% and 3.1%. Since then the judgement is learned: see WEAK_WEIGHTS.

    absent_arrival: the question asks when something arrived ("which version added `vi.mockRequire()`?",
    intent.asks_arrival) and one of the code names it writes has a word of three letters or more that no
    node holds: it takes for granted a thing memory never saw. A vector neighbour does not override it (a
    made-up name's pieces, "mock" and "require", sit close to real ones). On fifty-three sets (479 `none`
    and 4,899 answerable questions) it flags 28 more `none` questions (49.9% → 55.7%) and 1 more
    answerable one (6.90% → 6.92%); with words of four letters or more, 24 (`--dry-run`'s "dry" is three)."""

    missing: float
    cosine: float
    absent_name: bool = False
    absent_arrival: bool = False
    # The question has no word that says what it is about ("the of and a", "it is not working", unreadable
    # bytes: text.informative): whatever its stopwords match, nothing covers it.
    no_word: bool = False
    # What the list itself says (see WEAK_WEIGHTS): how much of the question its first result holds and the
    # most any of the first WEAK_TOP holds (Coverage), the first result's BM25 share and cosine, the
    # heaviest word no node holds (its share of the IDF mass; an ordinary word's discounted as in missing
    # once that counts), and how flat the list is (the WEAK_TOP-th score over the first: near 1 when
    # nothing stands out).
    first_coverage: float = 0.0
    best_coverage: float = 0.0
    first_lexical: float = 0.0
    first_cosine: float = 0.0
    heaviest_absent: float = 0.0
    flatness: float = 0.0
    vectors: bool = True  # whether the lists had a vector list (without one, the lexical weights judge)

    def features(self) -> list[float]:
        """The values WEAK_WEIGHTS weigh, in WEAK_FEATURES order."""
        return [
            self.missing,
            self.cosine,
            float(self.absent_name),
            self.first_coverage,
            self.best_coverage,
            self.first_lexical,
            self.first_cosine,
            self.heaviest_absent,
            self.flatness,
            self.missing * (1.0 - self.cosine),
        ]

    @property
    def weak(self) -> bool:
        if self.no_word or self.absent_arrival or self.missing >= WEAK_CERTAIN:
            return True
        weights, bias = (
            (WEAK_WEIGHTS, WEAK_BIAS) if self.vectors else (WEAK_LEXICAL_WEIGHTS, WEAK_LEXICAL_BIAS)
        )
        return bias + sum(w * x for w, x in zip(weights, self.features())) > 0


def is_weak(found: Retrieved) -> bool:
    """Whether FOUND is a weak answer, for one store and in every answer that fuses several (`--all-projects`,
    the team store). Nothing found at all is the weakest answer of all (`render` then says no memory
    matches). A question answered by what it asks (the change that brought a name in or took it out, the
    commands run after the one it names) is answered, whatever share of its words ("rejected", "blew up")
    no node holds: on the recent-work sets the flag fired on 25-60% of answerable questions, 15-45% since."""
    if found.listing_note is not None and not found.listing:
        return True  # it asked for the failures (or the work) of a time, and there were none
    if found.missed_window is not None:
        return True  # it named a time, and nothing of that time came first
    if found.question.unreached:
        return True  # it asked what a release holds, and memory holds none of it
    if found.question.unheld is not None and found.answered_by is None:
        return True  # it asked what a name is for (or where it began), and nothing holds the name
    return not found.scored or (found.answered_by is None and strength(found).weak)


def ordinary_words(words: list[str]) -> set[str]:
    """Those of WORDS that are ordinary English: a whole-word token of the built-in tokenizer's vocabulary
    ("inside", "blow"), or an inflection of one ("blows", "mocked", "hanging": the vocabulary holds many
    words in one form only). A name the vocabulary splits ("brotli", "kafka") is none, nor its plural."""
    from nexusmem.embed import builtin

    forms = {word: word_bases(word) for word in words}
    known = builtin.whole_words(sorted(set(words).union(*forms.values())))
    return {word for word in words if word in known or forms[word] & known}


def strength(found: Retrieved) -> Strength:
    """The Strength of FOUND (no store access: the words' document counts and the first WEAK_TOP results'
    coverage are already known)."""
    cosine = max((ev.cosine for ev in found.evidence.values()), default=0.0)
    vectors = found.counts.get("vector", 0) > 0
    words = found.terms
    mass = sum(words.idf(w) for w in words.counted)
    no_word = not informative(found.question.search_text)
    if mass <= 0:
        return Strength(0.0, cosine, no_word=no_word, vectors=vectors)
    gone = [w for w in words.counted if words.doc_counts.get(w, 0) == 0]
    absent = sum(words.idf(w) for w in gone)
    share = dict.fromkeys(gone, 1.0)
    if absent >= WEAK_MISSING * mass:  # else the discount matters less: the vocabulary is read only here
        common = ordinary_words(gone)
        absent -= (1.0 - COMMON_WORD_SHARE) * sum(words.idf(w) for w in common)
        share.update(dict.fromkeys(common, COMMON_WORD_SHARE))
    top = [node.id for node, _ in found.scored[:WEAK_TOP]]
    known = found.covering.known if found.covering is not None else {}
    covered = {node_id: known.get(node_id, 0.0) for node_id in top}
    first = found.evidence.get(top[0], Evidence()) if top else Evidence()
    scores = [score for _, score in found.scored[:WEAK_TOP]]
    return Strength(
        absent / mass,
        cosine,
        names_absent(found.question.text, gone),
        arrival_absent(found.question, words),
        no_word,
        first_coverage=covered.get(top[0], 0.0) if top else 0.0,
        best_coverage=max(covered.values(), default=0.0),
        first_lexical=first.lexical,
        first_cosine=first.cosine,
        heaviest_absent=max((share[w] * words.idf(w) / mass for w in gone), default=0.0),
        flatness=scores[-1] / scores[0] if len(scores) == WEAK_TOP and scores[0] > 0 else FLATNESS_UNKNOWN,
        vectors=vectors,
    )


# A name as a question writes it: 4+ letters with an upper- and a lower-case one ("GraphQL", "Kafka"), not
# the question's first word. All-capital words are left out: "CPU", "RAM", "OOM" are how people describe a
# symptom, and memory need not hold them for the question to be answerable.
_NAME = lazyre.compile(r"(?<![\w.])[A-Za-z]{4,}(?![\w])")


# An exception or a type the user saw ("TypeError", "NoneType", "DeprecationWarning") is part of the symptom,
# not a thing the question asks about: memory need not hold it for the question to be answerable.
_SEEN_NAME = lazyre.compile(r"(error|exception|warning|type)$", re.IGNORECASE)


def names_absent(text: str, absent: list[str]) -> bool:
    """Whether TEXT writes one of ABSENT (words no node holds) as a name (not an exception or type name)."""
    if not absent:
        return False
    missing = set(absent)
    for match in _NAME.finditer(text):
        word = match.group(0)
        if match.start() == 0 or word.lower() not in missing or _SEEN_NAME.search(word):
            continue
        if not word.islower() and not word.isupper():
            return True
    return False


def arrival_absent(question: Question, words: search.QueryTerms) -> bool:
    """Whether QUESTION asks when something arrived and writes a code name (not an exception or type name)
    with a word of three letters or more that no node holds (see Strength)."""
    if not asks_arrival(question.text):
        return False
    for name in code_names(question.search_text):
        if _SEEN_NAME.search(name.strip("`()")):
            continue
        if any(len(w) >= ARRIVAL_NAME_LETTERS and words.doc_counts.get(w) == 0 for w in search.terms(name)):
            return True
    return False


class Coverage:
    """For each node asked about, the share of the question's IDF mass among the words it contains. Each node
    is looked up once (the weak-match scale and the learned step ask about overlapping nodes), all the
    question's words at a time."""

    def __init__(self, store: SearchStore, words: search.QueryTerms) -> None:
        self.store, self.words = store, words
        self.known: dict[str, float] = {}
        mass = sum(words.idf(w) for w in words.counted)
        # No node contains a word with no document count: nothing to probe.
        self.probes = {
            expr: words.idf(word) / mass
            for word in words.counted
            if mass > 0 and words.doc_counts.get(word, 0) > 0 and (expr := search.fts_expression([word]))
        }

    def __call__(self, ids: list[str]) -> dict[str, float]:
        missing = [node_id for node_id in dict.fromkeys(ids) if node_id not in self.known]
        if missing:
            self.known.update(dict.fromkeys(missing, 0.0))
            if self.probes:
                for expr, found in self.store.matching_each(list(self.probes), missing).items():
                    for node_id in found:
                        self.known[node_id] += self.probes[expr]
        return {node_id: self.known[node_id] for node_id in ids}


def run(
    store: SearchStore,
    text: str,
    *,
    project: str,
    budget: int = DEFAULT_BUDGET,
    as_of: int | None = None,
    since: int | None = None,
    until: int | None = None,
    vectors: bool = True,
    settings: rank.Settings = rank.DEFAULT,
    author: str | None = None,
    root: Path | None = None,
) -> QueryResult:
    """Answer TEXT from one store within BUDGET tokens (VECTORS=False: lexical lists only; AUTHOR: see
    nexusmem.authors; ROOT: the work tree whose memory STORE is, for the note when HEAD moved since its last
    sync)."""
    text = well_formed(text)
    author, named = asked_author(text, author)
    found = retrieve(
        store,
        text,
        as_of=as_of,
        since=since,
        until=until,
        vectors=vectors,
        settings=settings,
        author=author,
        project=project,
    )
    scored, counts = found.scored, found.counts
    asked = found.question
    result = QueryResult(
        query=asked.text,
        budget=budget,
        projects=[project],
        notes=[*named, *answer_notes(store, found, as_of=as_of, root=root)],
        query_cut=asked.cut,
    )
    result.matched, result.bm25_matched, result.vector_matched = (
        counts["matched"],
        counts["bm25"],
        counts["vector"],
    )
    result.weak = is_weak(found)
    links = links_of(store, [n for n, _ in scored])
    shelf = Shelf(project, store, [n.id for n, _ in scored], links)
    result.items, used = pack_items(
        {n.id: (n, s) for n, s in scored},
        lambda _node_id: shelf,
        budget=budget,
        header_cost=lambda: header_tokens(result),
        max_items=WEAK_ITEMS if result.weak else None,
        as_of=as_of,
        since=since,
        until=until,
        search_text=found.question.search_text,
        notes=result.notes,
        author=author,
        whole=found.whole,
        make_room=lambda tokens: setattr(result, "item_room", tokens),
        release=found.release,
        end_line=lambda line: setattr(result, "release_end", line),
        listing=found.listing,
    )
    result.packed = True
    result.matched += linked_fixes(
        store, links, found.counted, as_of=as_of, since=since, until=until, author=author
    )
    # "No memory matches" under a window or an author read as "this never happened"; an author memory holds
    # no command of was said so, with those it holds (NO_COMMANDS_BY).
    windowed = since is not None or until is not None
    said_author = any(n.startswith(NO_COMMANDS_BY) for n in result.notes)
    if not result.items and not result.matched and (windowed or (author and not said_author)):
        result.notes.append(filtered_out_note(since, until, author))
    if (not result.items or result.weak) and syncing(store.path):
        result.notes.append(SYNCING_NOTE)
    elif (not result.items or result.weak) and never_synced(store):
        result.notes.append(NEVER_SYNCED_NOTE)
    elif not result.items and synced_empty(store):
        result.notes.append(EMPTY_NOTE)
    result.tokens_used = used + header_tokens(result)  # the header as `render` prints it, with every note
    return result


def asked_author(text: str, author: str | None) -> tuple[str | None, list[str]]:
    """AUTHOR (an --author filter), or without one the agent TEXT asks about as its subject ("what has claude
    been doing": claude-code, authors.subject_agent), read as --author; with the note that says so."""
    if author is not None:
        return author, []
    named = authors.subject_agent(text)
    if named is None:
        return None, []
    return named, [f"the question names {named}: read as --author {named}"]


def answer_notes(store: SearchStore, found: Retrieved, *, as_of: int | None, root: Path | None) -> list[str]:
    """The notes of STORE's answer FOUND (retrieve's) said before its items: what the question's rules found
    or did ("first change that holds X: …", a listing), an as-of before the first recording, HEAD moved
    since the last sync of ROOT's memory, a sync stopped, words left out. `query --team` says this memory's
    as its own answer does."""
    notes = list(found.question.notes)
    for note in (as_of_note(store, as_of), head_note(store, root), unfinished_note(root)):
        if note:
            notes.append(note)
    if found.terms.dropped:
        notes.append(
            f"searched the {len(found.terms.counted)} rarest known words of the question"
            f" ({found.terms.dropped} left out)"
        )
    if found.question.semantic_skipped:
        notes.append(found.question.semantic_skipped)
    return notes


def semantic_note(why: str, elsewhere: embed.Elsewhere | None = None) -> str:
    """The note of an answer found by its words alone although an embedder is configured: WHY, a phrase.
    When the stored vectors are another embedder's than the config's (ELSEWHERE), one note says both, and
    what to run: that and why the vectors were not searched are one story, told once."""
    if elsewhere is None:
        return f"semantic search skipped ({why}); answered from the words alone"
    # Ollama's vectors under a config naming another provider: WHY only says that again.
    cause = "" if elsewhere.not_searched else f", and their model cannot embed the question now ({why})"
    searched = f", and {elsewhere.searched}" if elsewhere.not_searched else ""
    return (
        f"semantic search skipped: {elsewhere.made}{searched}{cause}; answered from the words alone"
        f" {elsewhere.until} (an agent: the sync_project tool)"
    )


def pinned(found: Retrieved) -> list[str]:
    """The ids FOUND's rules put first on purpose, in its order: its `answered_by` node (an upgrade guide's
    section, a release's changelog, the commit a pasted sha names), or for the first or last change that
    holds a name (a sha) that commit and its diffs. None for a listing (the failures or newest work of a
    time: fused newest first), nor for what was run next (`answered_by` is the command it follows, and each
    store finds the commands its own members ran)."""
    by = found.answered_by
    if by is None or by in found.listing or found.question.then is not None:
        return []
    return [
        node.id
        for node, _ in found.scored
        if node.id == by or (node.kind in ("git_commit", "code_diff") and node.ref.split(":", 1)[0] == by)
    ]


# The start of the note saying memory holds no command by the --author asked for ("…'robots'; recorded: me").
NO_COMMANDS_BY = "no commands by "


def filtered_out_note(
    since: int | None, until: int | None, author: str | None, *, as_of: int | None = None
) -> str:
    """What kept every match out of an empty answer: the --since/--until window, the --author filter, and
    (across projects, where no one store's first recording is the whole story) --as-of."""
    parts = [] if as_of is None else [f"in what was recorded by {timefmt.iso(as_of)}"]
    if since is not None:
        parts.append(f"since {timefmt.iso(since)}")
    if until is not None:
        parts.append(f"until {timefmt.iso(until)}")
    if author:
        parts.append(f"by {author}")
    return f"nothing matches {' and '.join(parts)}: without that filter the question may find more"


# Said when nothing (or nothing strong) was found while a sync of the same memory runs: a first sync of a
# large history takes a while, and what it has not stored yet is not there to find.
SYNCING_NOTE = "a sync of this memory is running: what it has not stored yet is not searched"


# Said when nothing (or nothing strong) was found in a memory no sync ever finished a source of (`init` alone,
# or a first sync stopped before it stored anything): "no match" would read as "this never happened".
NEVER_SYNCED_NOTE = "this memory was never synced, so it holds nothing yet: run `nexusmem sync` (an agent: the sync_project tool)"


# Said when a memory a sync did read holds nothing (a repository with no commit yet, no doc, no command run
# in it): nothing to find, and no sync to ask for (nor vectors to make).
EMPTY_NOTE = "memory is empty (no commits, docs or commands yet)"


def synced_empty(store: SearchStore) -> bool:
    """Whether STORE, synced, holds no node at all (a local store's count; the team store's: False)."""
    count = getattr(store, "node_count", None)
    return count is not None and not never_synced(store) and count() == 0


def never_synced(store: SearchStore) -> bool:
    """Whether STORE has no source a sync ever finished (a store without that record, the team's: False)."""
    sources = getattr(store, "sources", None)
    return sources is not None and not sources()


def stored_vectors_elsewhere(store: SearchStore, provider: str, model: str) -> embed.Elsewhere | None:
    """What to say when the stored vectors are not the configured embedder's (embed.elsewhere): None when
    they are, or there are none."""
    identity = embed.Identity.from_json(store.vector_identity_json())
    if identity is None or not store.has_vectors():
        return None
    count = getattr(store, "node_count", None)  # a local store's (SyncStore)
    return embed.elsewhere(identity, provider, model, count() if count is not None else None)


def head_note(store: SearchStore, root: Path | None) -> str | None:
    """The note when HEAD at ROOT is not the commit STORE's git source last synced (a reset, a checkout or a
    rebase since, which no hook runs for: the answer may hold commits no branch has now), as status says it;
    None when it is (HEAD read from .git's files: no process), or there is no git cursor (the team store).
    Right after a migration that made the next sync read the history again, the HEAD memory was at is the
    one the cleared cursor held (synced_git_cursor)."""
    synced = getattr(store, "synced_git_cursor", None)  # a local store's (SyncStore), not the team store's
    if root is None or synced is None:
        return None
    from nexusmem import synced_head

    moved = synced_head.head_moved(root, synced())
    return None if moved is None else f"{synced_head.moved_text(moved)} (an agent: the sync_project tool)"


def unfinished_note(root: Path | None) -> str | None:
    """The note when the last sync of ROOT's memory was stopped before it ended (killed: paths.sync_unfinished);
    None otherwise (one stat when it was not)."""
    started = None if root is None else paths.sync_unfinished(root)
    if started is None:
        return None
    assert root is not None
    said, args = paths.unfinished_text(root, timefmt.iso(started))
    return f"{said}; run `nexusmem {args}`" + (" (an agent: the sync_project tool)" if args == "sync" else "")


def syncing(db: Path) -> bool:
    """Whether a sync holds the run lock beside the memory database DB (sync.RUN_LOCK_NAME)."""
    from nexusmem.oslock import held

    return held(Path(db).parent / "sync.run.lock")


@dataclass
class Shelf:
    """One store's side of packing: where its items' bodies, names and links come from.

    Ranking runs on light rows; bodies are read only for the items the packer actually considers, a window
    of ORDER at a time (one query instead of one per item)."""

    name: str
    store: SearchStore
    order: list[str]  # the store's ranked ids, best first
    links: dict[str, list[tuple[str, str]]]  # failure id -> [(fix id, relation)]
    group_prefix: str = ""  # sibling groups are per store when several are packed together
    root: str = ""  # across projects: the project's root, and its tag when its name is shared (Item)
    label: str = ""
    full: dict[str, StoredNode] = field(default_factory=dict)
    position: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.position = {node_id: i for i, node_id in enumerate(self.order)}

    def full_node(self, node: StoredNode) -> StoredNode:
        if node.body or node.kind not in _NEEDS_BODY:
            return node
        if node.id not in self.full:
            start = self.position.get(node.id)
            window = [node.id] if start is None else self.order[start : start + _BODY_WINDOW]
            self.full.update(self.store.get_many([i for i in window if i not in self.full]))
        return self.full.get(node.id, node)


# The start of the note saying the best match is larger than the whole budget (pack_items).
TOO_LARGE_NOTE = "the best match (~"


def pack_items(
    chosen: dict[str, tuple[StoredNode, float]],
    shelf_of: Callable[[str], Shelf | None],
    *,
    budget: int,
    header_cost: Callable[[], int],
    max_items: int | None,
    as_of: int | None,
    search_text: str,
    with_project: bool = False,
    since: int | None = None,
    until: int | None = None,
    notes: list[str] | None = None,
    author: str | None = None,
    whole: frozenset[str] = frozenset(),
    make_room: Callable[[int], None] | None = None,
    release: frozenset[str] = frozenset(),
    end_line: Callable[[str], None] | None = None,
    listing: frozenset[str] = frozenset(),
) -> tuple[list[Item], int]:
    """The one pack driver, for one store and for several: CHOSEN (id -> (node, score), in ranked order)
    packed into BUDGET with each failure's linked fixes beside it. SHELF_OF names the store an id (a
    candidate, or a fix to read) belongs to; a linked fix recorded after AS_OF, outside SINCE..UNTIL or
    run by another than AUTHOR (nexusmem.authors) is left out, as the search left out such nodes, and under
    AUTHOR `me` a conversation turn shows the person's question, not the agent's answer. HEADER_COST
    is what the header and footer take as NOTES stand (header_tokens). The ids in WHOLE (a release's entries,
    Retrieved.whole) are not capped as siblings: each is packed if it fits, and no linked item rides after it. When the best match is too large for
    the budget (it is skipped, and smaller ones below it fill the budget), a line saying so goes to NOTES.
    The ids in RELEASE (Retrieved.release) not shown as linked to another item get the relation "release";
    END_LINE is told the line that separates them from what follows (release_end), and a note in NOTES says
    how many of the release's entries the budget held when it did not hold them all (entries_note). The ids
    in LISTING (Retrieved.listing: the failures of a day, newest first) keep their order (pack's in_order),
    and a note in NOTES counts those the budget left out (listing_left_note).
    Returns (items in packed order, the tokens they take: what the answer's header leaves them or less)."""
    items: dict[str, Item] = {}
    doc_chars = doc_summary_chars(budget)  # an answer with room shows more of each doc section
    twins = doc_twins(list(chosen.values()), shelf_of)
    # The same section read twice (as a doc and as a changelog entry) has the same ref: nothing to name.
    also = {
        group[0].id: list(dict.fromkeys(n.ref for n in group[1:] if n.ref != group[0].ref))
        for group in twins.values()
        if group
    }

    def candidate(node: StoredNode, score: float) -> Candidate:
        shelf = shelf_of(node.id)
        assert shelf is not None

        def shown(linked_from: str | None = None, relation: str | None = None) -> int:
            """Its tokens as `render` prints it: its "also in" line, and its mark when shown as linked."""
            if node.id not in items:
                items[node.id] = make_item(
                    shelf.full_node(node),
                    score,
                    shelf.name,
                    search_text,
                    replaced_by=replacement(shelf.store, node),
                    root=shelf.root,
                    label=shelf.label,
                    doc_chars=doc_chars,
                    asked_only=author == authors.ME,  # what is the person's of a turn: their question
                )
                items[node.id].also_in = also.get(node.id, [])
            item = replace(items[node.id], linked_from=linked_from, relation=relation)
            return estimate_tokens(item_text(item, with_project=with_project)) + 1

        group = None if node.group is None or node.id in whole else f"{shelf.group_prefix}{node.group}"
        return Candidate(node.id, score, group, shown, floor=min_tokens(node), linked_size=shown)

    def fixes_of(node_id: str) -> list[tuple[str, str]]:
        shelf = shelf_of(node_id)
        # A release's entries (and a guide's sections) are shown together; what they link to rides not
        # between them (retrieve lists a release's described commits after its release commit).
        return [] if shelf is None or node_id in whole else shelf.links.get(node_id, [])

    def candidate_for(node_id: str) -> Candidate | None:
        if node_id in chosen:
            node, score = chosen[node_id]
            return candidate(node, score)
        shelf = shelf_of(node_id)
        if shelf is None:
            return None
        fix = shelf.store.get(node_id)
        if fix is None or not order.passes(fix, as_of, since, until, author, shelf.store.member):
            return None
        chosen[node_id] = (fix, 0.0)
        return candidate(fix, 0.0)

    sources = [
        (twins[node.id][0], score) if node.id in twins else (node, score)
        for node, score in list(chosen.values())
        if node.id not in twins or twins[node.id]
    ]
    ranked = [candidate(node, score) for node, score in sources]
    header_tokens = header_cost()

    def room_for_best() -> bool:
        """Make the header leave room for the best item as it stands (its notes on stderr): whether it fits."""
        nonlocal header_tokens
        assert make_room is not None
        make_room(ranked[0].tokens)
        header_tokens = header_cost()
        if header_tokens + ranked[0].tokens > budget:
            make_room(0)
            header_tokens = header_cost()
        return header_tokens + ranked[0].tokens <= budget

    if make_room is not None and ranked and header_tokens + ranked[0].tokens > budget and not room_for_best():
        # The best item first, the notes a small budget cannot hold with it after (on stderr): three notes
        # of 80 tokens took the place of the answer they were about. Still too large: it is shown by its
        # head alone (title, id, a commit's sha), without its files and body (~35 tokens where a whole one
        # took 83 and the answer held nothing), its title cut shorter while that is what keeps it out (a
        # release entry's 160 characters beside the note that its tag is not in HEAD's history, at 80 and
        # 100 tokens). Only an item too large even so is said not to fit.
        full, whole_item = ranked[0].tokens, items[ranked[0].id]

        def head_fits(limit: int) -> bool:
            """Show the best item by its head alone, its title cut at LIMIT characters: whether it fits."""
            title = clipped_title(whole_item.title, limit)
            items[whole_item.id] = replace(whole_item, summary="", also_in=[], title=title)
            ranked[0] = replace(candidate(*sources[0]), floor=0)  # its floor counts the title uncut
            return room_for_best()

        if any(head_fits(limit) for limit in HEAD_TITLE_CHARS):
            if notes is not None:
                notes.append(
                    f"the best match is shown without its details (~{full} tokens in full): a larger budget"
                    " or `nexusmem show ID` (MCP get_memory) shows them"
                )
                header_tokens = header_cost()
        else:
            items[whole_item.id] = whole_item
            ranked[0] = candidate(*sources[0])
            room_for_best()
    if notes is not None and ranked and header_tokens + ranked[0].tokens > budget:
        # Said before packing, so that the line is counted in the budget like the rest of the header.
        # What the budget left room for is said with it: "~34 tokens does not fit the budget of 50" read as
        # wrong arithmetic when the header and footer had spent half of it.
        room = max(0, budget - header_tokens)
        spare = f" (~{room} left after the header)" if room < budget - 10 else ""
        too_large = f"{TOO_LARGE_NOTE}{ranked[0].tokens} tokens) does not fit"
        note = f"{too_large} the budget of {budget}{spare}: a larger budget shows it"
        for fewer in (  # a small budget: the note in as few words as leave the answer within it
            f"{too_large} the budget of {budget}{spare}",
            f"{too_large} the budget of {budget}" + (f" (~{room} left)" if spare else ""),
            f"{too_large} (~{room} left)" if spare else f"{too_large} the budget of {budget}",
            too_large,
        ):
            if estimate_tokens(f"note: {note}\n") > room:
                note = fewer
        # Kept in the notes (--json, and `render` knows the matches were too large rather than none); in
        # the header where it fits, counted as header() prints it (it drops the note else).
        notes.append(note)
        header_tokens = header_cost()
    entries = [c.id for c in ranked if c.id in whole and c.id in release]
    ranked = sections_fed(
        ranked,
        frozenset(entries),
        lambda node_id: chosen[node_id][0].ref if node_id in chosen else node_id,
        budget - header_tokens,
    )
    in_order = frozenset(node_id for node_id in listing if node_id in chosen)
    placed, used = pack(
        ranked,
        budget,
        fixes_of,
        candidate_for,
        header_tokens=header_tokens,
        max_items=max_items,
        in_order=in_order,
    )
    left = in_order - {e.id for e in placed}
    if left and notes is not None:
        notes.append(listing_left_note([chosen[node_id][0] for node_id in left]))
        # The note lengthens the header: the last items give way until it fits (the header keeps its notes).
        while len(placed) > 1 and used + header_cost() > budget:
            gone = placed.pop()
            used -= estimate_tokens(item_text(items[gone.id], with_project=with_project)) + 1
            if gone.id in in_order:
                notes[-1] = listing_left_note([chosen[node_id][0] for node_id in left | {gone.id}])
                left = left | {gone.id}
    out = [
        replace(
            items[e.id],
            score=e.score,
            linked_from=e.linked_from,
            relation="release" if e.linked_from is None and e.id in release else e.relation,
        )
        for e in placed
    ]
    used -= header_tokens
    if release and end_line is not None:
        # What is said of a release's items once they are packed: the line after them when others follow
        # (RELEASE_END), and how many of its entries the budget held. The best item comes first: the header
        # keeps room for it (its notes that no longer fit go to stderr, the MCP server's after the footer),
        # and the items after it give way, the last first, until the line and the header fit.
        said: str | None = None
        wanted = set(entries)
        while True:
            if said is not None and notes is not None:
                notes.remove(said)
                said = None
            shown = sum(1 for item in out if item.id in wanted)
            if shown < len(entries) and notes is not None:
                said = entries_note(shown, len(entries))
                notes.append(said)
            end_line(release_end(out))
            if out and make_room is not None:
                make_room(estimate_tokens(item_text(out[0], with_project=with_project)) + 1)
            if len(out) < 2 or used + header_cost() <= budget:
                break
            used -= estimate_tokens(item_text(out.pop(), with_project=with_project)) + 1
    return out, used


def listing_left_note(left: list[StoredNode]) -> str:
    """The note of a listing newest first whose budget left LEFT (its oldest) out: "3 older failures not
    shown: raise --budget" (commands, or items, when they are not all failures)."""
    if all(node.kind == "shell_command" for node in left):
        noun = "failure" if all(resolved.failed(node.meta.get("exit")) for node in left) else "command"
    else:
        noun = "item"
    return f"{len(left)} older {noun}{'s' if len(left) != 1 else ''} not shown: raise --budget"


def entries_note(shown: int, total: int) -> str:
    """The note of an answer about a release whose budget showed SHOWN of its TOTAL changelog entries (none:
    the answer may hold its commit, or nothing; never "0 of 36 … shown" above an item)."""
    if not shown:
        return f"none of the {total} changelog entries of the release fit the budget (raise --budget)"
    return f"{shown} of {total} changelog entries of the release shown (raise --budget)"


def sections_fed(
    ranked: list[Candidate], entries: frozenset[str], section_of: Callable[[str], str], room: int
) -> list[Candidate]:
    """RANKED without the release ENTRIES (ids; SECTION_OF names an entry's section, its ref) that ROOM tokens
    cannot hold: when they do not all fit, each section (Changed, Fixed; each release's, across several) gets
    its first entry before any gets its second, and so on while they fit, and those chosen keep their order
    (a budget that holds 11 of 36 entries shows Fixed's first beside Changed's, not 11 of Changed's)."""
    listed = [c for c in ranked if c.id in entries]
    if not listed or sum(c.tokens for c in listed) <= room:
        return ranked
    sections: dict[str, list[Candidate]] = {}
    for c in listed:
        sections.setdefault(section_of(c.id), []).append(c)
    chosen: set[str] = set()
    used = 0
    for depth in range(max(len(members) for members in sections.values())):
        for members in sections.values():
            if depth < len(members) and used + members[depth].tokens <= room:
                chosen.add(members[depth].id)
                used += members[depth].tokens
    return [c for c in ranked if c.id not in entries or c.id in chosen]


# Doc sections with the same heading and nearly the same words (a README kept in two places, a template
# and the file made from it, a guide copied into a per-version folder) are one text: packed once, at the
# best place any of them ranked, under the path a reader would open, the others named on its "also in"
# line. Compared among the first TWIN_DEPTH doc sections (their bodies are read for packing anyway).
TWIN_DEPTH = 40
TWIN_JACCARD = 0.9
_WORDS = lazyre.compile(r"\w+")


def doc_twins(
    ranked: list[tuple[StoredNode, float]], shelf_of: Callable[[str], Shelf | None]
) -> dict[str, list[StoredNode]]:
    """For each doc section of RANKED (best first) that has twins: its id -> [the twin to pack in its place,
    then the others] on the group's first (best-ranked) member, and -> [] on the other members (not
    packed). The twin packed is the first whose path has no hidden folder or file (".meta/.readme.rst" is
    the template of "README.rst"), else the best-ranked. Twins are only sought within one store."""
    groups: list[tuple[Shelf, str, set[str], list[StoredNode]]] = []
    seen = 0
    for node, _score in ranked:
        if node.kind != "doc_section":
            continue
        seen += 1
        if seen > TWIN_DEPTH:
            break
        shelf = shelf_of(node.id)
        if shelf is None:
            continue
        full = shelf.full_node(node)
        heading = full.ref.split("#", 1)[-1]
        words = set(_WORDS.findall(full.body.lower()))
        for g_shelf, g_heading, g_words, members in groups:
            union = len(words | g_words)
            if (
                g_shelf is shelf
                and g_heading == heading
                and union
                and len(words & g_words) / union >= TWIN_JACCARD
            ):
                members.append(full)
                break
        else:
            groups.append((shelf, heading, words, [full]))
    out: dict[str, list[StoredNode]] = {}
    for _shelf, _heading, _words, members in groups:
        if len(members) < 2:
            continue
        keep = next((m for m in members if not _hidden(m.ref.split("#", 1)[0])), members[0])
        out[members[0].id] = [keep] + [m for m in members if m is not keep]
        for m in members[1:]:
            out[m.id] = []
    return out


def _hidden(path: str) -> bool:
    return any(part.startswith(".") and part not in (".", "..") for part in path.split("/"))


def min_tokens(node: StoredNode) -> int:
    """A lower bound of the token cost of NODE's item, without its summary: the first two lines of item_text
    (date, provenance tag, title cut at 160 characters; the id line) are part of every rendering."""
    title = node.title[:TITLE_CHARS]
    return (len(f"- 0000-00-00 [{node.provenance}] {title}\n  id {node.id}") // 4) + 1


def shown_query(text: str, budget: int | None = None) -> str:
    """The question as the answer's header echoes it: one line, at most SHOWN_QUERY_CHARS, and at most a
    quarter of BUDGET's tokens (a pasted log, or a long question under a small budget, must not spend the
    budget on its own echo)."""
    line = " ".join(text.split())
    limit = SHOWN_QUERY_CHARS if budget is None else max(24, min(SHOWN_QUERY_CHARS, budget))
    return line if len(line) <= limit else line[: limit - 1] + "…"


def header(result: QueryResult, scope: str | None = None) -> str:
    """The lines `render` prints above the items (counted against the budget, with the footer). A weak
    answer starts with WEAK_LINE, where a reader (or an agent checking the first line) sees it first.

    Under a budget too small for all of it (50 tokens for a weak answer to a long question across many
    projects), the lines give way, in this order, until the header and the footer fit: the weak line's
    explanation (it still starts "No strong match"), the list of projects, the echoed question, and last
    the notes (they say what was done: a question cut, a best match too large). A note that does not fit
    even when all the rest has given way is left out first, so that it takes nothing else with it
    (`left_out` names it: the CLI prints it on stderr, the MCP server after the footer)."""
    room = result.budget - FOOTER_TOKENS - result.item_room

    def text(weak: list[str], echo: str, scope: str | None, notes: list[str]) -> str:
        lines = [*weak, f"Relevant history for: {echo}", *([scope] if scope is not None else []), *notes]
        return "\n".join(lines) + "\n"

    weak = [WEAK_LINE] if result.weak else []
    echo = shown_query(result.query, result.budget)
    least = ([WEAK_SHORT] if weak else [], shown_query(result.query, 24), scope and scope.split(":", 1)[0])
    notes: list[str] = []

    def holds(note: str) -> bool:
        # An answer with no item says why: its best match too large (TOO_LARGE_NOTE) stays with it too.
        told = note.removeprefix("note: ")
        if binding(note) or settles(told):
            return True
        return not result.items and told.startswith("the best match") and "not fit" in told

    for note in result.notes:
        if estimate_tokens(text(*least, [*notes, f"note: {note}"])) <= room:
            notes.append(f"note: {note}")
        elif holds(note):  # never on stderr alone: the answer would read as what it is not
            short = binding_short(note)
            if estimate_tokens(text(*least, [*notes, f"note: {short}"])) > room:
                short = binding_least(short)
            notes.append(f"note: {short}")
    kept = [line for line in notes if holds(line)]
    for shorter in (binding_short, fewest):
        # Each fitted beside those before it, not beside those after (the line that the best match does not
        # fit came last): together, in fewer words, then in their fewest.
        if estimate_tokens(text(*least, kept)) <= room:
            break
        notes = [shorter(line) if line in kept else line for line in notes]
        kept = [line for line in notes if holds(line)]
    if result.packed and not result.items and estimate_tokens(text(*least, kept)) > room:
        # Nothing shown, so nothing for a binding note to qualify: the line saying why stays (one line,
        # within the budget), the binding notes go beside the answer (left_out) with the rest.
        notes = [line for line in notes if not binding(line)]
        kept = [line for line in notes if holds(line)]
        if any(settles(line) for line in kept) and estimate_tokens(text(*least, kept)) > room:
            # The answer is that nothing of what was asked is recorded: the line saying that the best match
            # (an old one the words matched) does not fit gives way to it.
            kept = [line for line in kept if settles(line)]
    if weak and estimate_tokens(text(weak, echo, scope, notes)) > room:
        weak = [WEAK_SHORT]
    if scope is not None and estimate_tokens(text(weak, echo, scope, notes)) > room:
        scope = scope.split(":", 1)[0]
    if estimate_tokens(text(weak, echo, scope, notes)) > room:
        echo = shown_query(result.query, 24)
    while len(notes) > len(kept) and estimate_tokens(text(weak, echo, scope, notes)) > room:
        notes.remove(next(line for line in reversed(notes) if line not in kept))
    return text(weak, echo, scope, notes)


# Notes that change what the items mean: without them a lone commit reads as the removal asked about, or a
# release's window as HEAD's (header keeps them at any budget, shortened when need be).
_BINDING = (
    "is still in the code",
    "is only in a comment now",
    "is not in the code any more",
    "was not removed: it was renamed",
    "is not in the work tree any more",
    "not in HEAD's history",
    "no such release",
)


# Notes that are the answer themselves: memory holds nothing of what was asked for in the time it names ("which
# tests failed yesterday": none ran). Short, and kept at any budget: without them the answer reads as no
# answer at all, or as the old matches that follow.
_SETTLING = (
    "no recorded run of ",
    "no recorded command ",
    "no commit or command recorded",
    "no question you asked ",
    "no change recorded ",
    "no run of ",
)


def settles(note: str) -> bool:
    """Whether NOTE is the answer itself (_SETTLING): nothing recorded of what the question asks for."""
    return note.removeprefix("note: ").startswith(_SETTLING)


def binding(note: str) -> bool:
    """Whether NOTE changes what the answer's items mean (_BINDING): it stays with them at any budget."""
    return any(phrase in note for phrase in _BINDING)


def binding_short(note: str) -> str:
    """NOTE's binding clauses alone, without what they name in parentheses: "ParserError is still in the
    code: no change removed it"."""
    clauses = [clause for clause in note.split("; ") if binding(clause)]
    if not clauses and settles(note):
        # The answer is its first clause ("no run of tests failed yesterday"); what follows says how the
        # items are ordered.
        clauses = note.split("; ")[:1]
    clauses = clauses or [note]
    return "; ".join(re.sub(r" \([^)]*\)", "", clause) for clause in clauses)


def fewest(line: str) -> str:
    """A header's note LINE kept at any budget in its fewest words (binding_short, then binding_least): "the
    best match does not fit", "release 0.15.1: its tag is not in HEAD's history"."""
    return binding_least(binding_short(line))


def binding_least(note: str) -> str:
    """NOTE (binding_short's) in the fewest words that keep its meaning, for a budget that holds the best item
    only beside them: without the commit a tag names ("release 0.15.1: its tag is not in HEAD's history")."""
    return _NAMED_COMMIT.sub(" is ", note)


_NAMED_COMMIT = lazyre.compile(r" is commit [0-9a-f]{7,40}, which is ")


def linked_fixes(
    store: SearchStore,
    links: dict[str, list[tuple[str, str]]],
    matched: set[str] | frozenset[str],
    *,
    as_of: int | None,
    since: int | None,
    until: int | None,
    author: str | None = None,
) -> int:
    """How many fixes LINKS (from the ranked ids) names that are not among the MATCHED ids and pass the
    query's filters (AUTHOR's too): each rides along after its failure, so it counts among the matches
    ("5 of 2 match(es) shown" otherwise), whatever the budget lets through."""
    fixes = sorted({fix for pairs in links.values() for fix, _rel in pairs} - matched)
    if not fixes:
        return 0
    nodes = store.get_many(fixes, light=True)
    return sum(
        1
        for fix in fixes
        if fix in nodes and order.passes(nodes[fix], as_of, since, until, author, store.member)
    )


def footer(result: QueryResult) -> str:
    return f"{len(result.items)} of {result.matched} match(es) shown, ~{result.tokens_used}/{result.budget} tokens"


# What the footer costs, counted before packing: its numbers at their widest.
FOOTER_TOKENS = estimate_tokens("\n99 of 9999999 match(es) shown, ~100000/100000 tokens")


def header_tokens(result: QueryResult, scope: str | None = None) -> int:
    """The tokens the answer spends besides its items: header, the blank line, the footer, and the line
    after a release's items (RELEASE_END) when it is printed."""
    end = estimate_tokens(result.release_end + "\n") if result.release_end else 0
    return estimate_tokens(header(result, scope)) + FOOTER_TOKENS + end


def release_end(items: list[Item]) -> str:
    """RELEASE_END when ITEMS hold a release's items (relation "release") and others after the last of them;
    "" otherwise (nothing to separate)."""
    marks = [item.relation == "release" for item in items]
    return RELEASE_END if any(marks) and not marks[-1] else ""


def add_note(result: QueryResult, note: str, budget: int) -> None:
    """NOTE said in RESULT's header after RESULT was packed into a budget that kept room for it, and BUDGET
    (the one asked for) made its budget: `tokens_used` counts the header as it now prints."""
    items = result.tokens_used - header_tokens(result)
    result.notes.append(note)
    result.budget = budget
    result.tokens_used = items + header_tokens(result)


def left_out(result: QueryResult, text: str) -> list[str]:
    """The notes of RESULT that its rendered TEXT does not hold: a budget too small for them left them out of
    the header (they are said beside the answer, outside its budget: on stderr, or after the footer)."""
    return [note for note in result.notes if note and f"note: {note}" not in text]


def to_json(result: QueryResult) -> dict[str, Any]:
    """The `query --json` contract of docs/contracts.md, plus `weak` (no candidate matches the question well:
    the items are only the closest few) and `notes` (what was done to the question, e.g. cut)."""
    return {
        "query": result.query,
        "query_cut": result.query_cut,
        "budget": result.budget,
        "tokens_used": result.tokens_used,
        "matched": result.matched,
        "bm25_matched": result.bm25_matched,
        "vector_matched": result.vector_matched,
        "items": [
            {
                "id": it.id,
                "kind": it.kind,
                "ts": timefmt.iso(it.ts),
                "title": it.title,
                "summary": it.summary,
                "provenance": it.provenance,
                "trust": it.trust,
                "score": round(it.score, 6),
                "project": it.project,
                "ref": it.ref,
                "author": it.author or None,
                "linked_from": it.linked_from,
                "relation": it.relation if it.linked_from or it.relation == "release" else None,
                "also_in": list(it.also_in),
                "superseded": it.superseded,
                "superseded_by": it.superseded_by,
            }
            for it in result.items
        ],
        "weak": result.weak,
        "notes": list(result.notes),
    }


def render(result: QueryResult, *, with_project: bool = False, scope: str | None = None) -> str:
    """The packed block a person (and an agent) reads. Same store and query → same bytes. WITH_PROJECT tags
    each item with its project and adds the SCOPE line (by default, the list of RESULT.projects)."""
    if not result.items and not any(note.startswith(TOO_LARGE_NOTE) for note in result.notes):
        # Nothing matched, or every match was filtered out (--author, a window): nothing to show. When the
        # matches were only too large for the budget, the header's note says so instead.
        return "\n".join(
            [
                f"No memory matches: {shown_query(result.query, result.budget)}",
                *(f"note: {n}" for n in result.notes),
            ]
        )
    if with_project and scope is None:
        scope = f"scope   {len(result.projects)} project(s): {', '.join(result.projects)}"
    elif not with_project:
        scope = None
    lines = [header(result, scope)]
    last = max((n for n, it in enumerate(result.items) if it.relation == "release"), default=None)
    for n, it in enumerate(result.items):
        lines.append(item_text(it, with_project=with_project))
        if n == last and result.release_end and n + 1 < len(result.items):
            lines.append(result.release_end)
    if result.items:
        lines.append("")
    lines.append(footer(result))
    return "\n".join(lines)
