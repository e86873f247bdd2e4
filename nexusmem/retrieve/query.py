"""One query against one project's store: retrieve → fuse → rank → pack. Returns plain data for present."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

from nexusmem import authors, embed, lazyre, paths, timefmt
from nexusmem.retrieve import (
    activity,
    answer,
    asks_docs,
    cjk,
    fuse,
    history,
    order,
    rank,
    recent,
    rerank,
    search,
    thesaurus,
    timecue,
    vector,
    worktime,
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
from nexusmem.retrieve.question import Question, prepare, terse_text
from nexusmem.store import StoredNode
from nexusmem.store.interface import SearchStore
from nexusmem.store.releases import ReleaseRange
from nexusmem.text import (
    informative,
    is_noise_word,
    well_formed,
    word_bases,
    word_parts,
    words_of,
)

DEFAULT_BUDGET = 2000
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


def parse_as_of(value: str | None) -> int | None:
    """--as-of / asOf → epoch ms: what --until takes (timecue.parse_when: a date, an ISO 8601 time, today,
    yesterday, an age such as 2d), a bare date meaning the end of that day as --until's does."""
    return None if value is None else timecue.parse_when(value, end=True)


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
    whole: frozenset[str] = frozenset()  # a release's entries, packed all (Retrieved.whole)
    pinned: list[str] = []  # Retrieved.pinned
    released: frozenset[str] = frozenset()  # Retrieved.release
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
        worktime.named_day(question.text)
        if since is None and until is None and question.then is None
        else None
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
        question.notes.append(
            history.release_note(question.release, window, history.unreached(store, question.release))
        )
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
        moved = activity.renamed_file(store, question, name) if which == "last" else None
        if moved is not None:
            # "When was src/alpha.py removed?" of a file renamed away: no change removed it.
            answered_by, note = moved
            bm25_hits = activity.lifted(store, bm25_hits, answered_by)
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
                where = history.paths_listed(stays.code)
                note = f"{name} is still in the code ({where}): no change removed it; the last that changed it: {sha[:10]}"
                if question.still:
                    note = f"yes: {name} is still in the code ({where}); the last change that holds it: {sha[:10]}"
                still_holder = still_holder or sha
            elif stays.comments:
                # A comment that names it ("formerly the `TOMLChar` constants") is no code that holds it.
                where = history.paths_listed(stays.comments)
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
    found = history.lift_nearest(store, found, near.hits)
    settings = replace(settings, vector_weight=vector_weight(question, settings))
    scored = score_fused(
        store,
        found,
        as_of,
        cue=history.dated_cue(question.cue, dated),
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
        scored = history.in_release(scored, window)
    dated_first = (
        dated is not None
        and question.asks != "usage"
        and any(history.happened_in(n, dated) for n, _ in scored)
    )
    if dated is not None and dated_first:
        scored = history.in_dates(scored, dated)
    if question.asks != "usage":
        scored = history.commits_before_entries(store, scored, as_of=as_of, since=since, until=until)
        if asks_which_release(question.text):
            scored = history.entries_after_commits(store, scored, as_of=as_of, since=since, until=until)
    if question.release is None:
        scored = history.current_docs_first(scored, frozenset(words_of(question.text.lower())))
    scored = history.originals_first(scored, question.text)
    scored = history.distinct_changes(scored)
    # "why did I change…": the asker's own commits lifted (None: not asked, or no git user to know them by).
    asker = history.git_user_of(store) if asks_own_change(question.text) else None
    scored = history.own_changes_first(scored, asker)
    if holding is not None:
        history.holder_note_if_listed(scored, *holding, question.notes)
    if still_holder is not None:
        scored = history.still_first(scored, still_holder)
    if question.migrates is not None:
        # "How do I migrate from v6 to v7?": the upgrade guide's section for those releases, whole; the
        # versions are no searchable words (6, 0, 7), and "migrate" matched every commit that says it.
        guide = [
            node
            for node in history.upgrade_guide(store, exact, *question.migrates)
            if order.within(node, as_of, since, until)
        ]
        if guide:
            scored = order.put_first(scored, guide)
            pinned = order.pin([node.id for node in guide], pinned)
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
            for node in (history.release_nodes(store, exact, question.shipped) if question.shipped else [])
            if order.within(node, as_of, since, until)
        ]
        pointed = history.pre_releases_pointed(store, shipped, question.shipped) if question.shipped else []
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
                    for node in history.release_nodes(store, exact, version)
                    if node.kind == "doc_section"
                    and node.source == rank.CHANGELOG_SOURCE
                    and order.within(node, as_of, since, until)
                ]
        for version in between[: history.SPAN_RELEASES]:
            shipped += [
                node
                for node in history.release_nodes(store, exact, version)
                if node.kind == "doc_section" and order.within(node, as_of, since, until)
            ]
        shipped = list({node.id: node for node in shipped}.values())
        # The commits its entries describe follow its release commit, with what the budget leaves: shown
        # beside each entry they crowded the release's own entries out (and mostly repeat them).
        described = [
            node
            for node in history.described_by(store, [node for node in shipped if node.kind == "doc_section"])
            if order.within(node, as_of, since, until)
        ]
        shipped, range_note = history.with_release_commits(
            store,
            shipped,
            described,
            spanned,
            lambda node: order.within(node, as_of, since, until),
            store.releases_within(spanned.shas)
            if since_range is not None and spanned is not None
            else between,
        )
        unreached = history.unreached(store, question.shipped) if question.shipped else None
        if unreached is not None:
            # "What changed in 6.5.7?", tagged on a maintenance branch: its commits are not in memory, and
            # what its words matched elsewhere is no answer unless its changelog entries are.
            question.notes.append(f"release {question.shipped}: {history.unreached_note(unreached)}")
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
            pinned = order.pin([node.id for node in shipped], pinned)
            answered_by = shipped[0].id
            whole = frozenset(node.id for node in shipped if node.kind == "doc_section")
            released = frozenset(node.id for node in shipped)
            # What the answer holds of it, as it is: thiserror keeps no changelog, and a version only a
            # changelog heading names has no tag (so no commit range either).
            tag = store.release_commit(question.shipped) if question.shipped else None
            entries_held = any(node.kind == "doc_section" for node in shipped)
            highest_only = (
                f"; only the {history.SPAN_RELEASES + 1} highest of the {len(between) + 1} releases in the range"
                if len(between) > history.SPAN_RELEASES
                else ""
            )
            if question.shipped and between:
                lowest = between[: history.SPAN_RELEASES][-1]
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
            pinned = order.pin([node.id for node in shown], pinned)
            answered_by = shown[0].id
            question.notes.append(
                f"first: commit {shown[0].ref[:10]}, whose sha the question names"
                if len(pasted) == 1
                else f"first: the {len(pasted)} commits whose sha starts with {prefix}, which is ambiguous: "
                + ", ".join(node.ref[:12] for node in shown if node.id in commits)
            )
    lists = recent.listing(
        store,
        scored,
        question,
        found,
        words.words,
        project,
        answered_by=answered_by,
        pinned=pinned,
        as_of=as_of,
        since=since,
        until=until,
        author=author,
    )
    # What a rule listed in time order (the failures, or the newest work, of the question's time), and what
    # it says of it (an answer fused from several projects lists them together, newest first).
    scored, listed, listing_note, listing_count = lists.scored, lists.listed, lists.note, lists.count
    answered_by, pinned, whole = lists.answered_by, lists.pinned, whole | lists.whole
    recent_work, file_said = lists.work, lists.file_said
    others: set[str] = set()  # matches of another author: left out, so not counted among the matches either
    if author is not None:
        kept = [(n, s) for n, s in scored if order.authored(author, n, store.member)]
        others = {n.id for n, _ in scored if n.id in found} - {n.id for n, _ in kept}
        scored = kept
        if answered_by is None:
            scored = activity.authored_first(scored, {node_id for node_id, _ in bm25_hits})
        if recent_work and not listed and (author != authors.ME or activity.none_held(store, author)):
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
            []
            if changed_then
            else history.changes_nearest(store, dated, as_of, author, among=words_said or None)
        )
        question.notes.append(history.dates_missed(dated, held=changed_then, listed=bool(nearest)))
        if nearest:
            scored = order.put_first(scored, nearest)
            pinned = order.pin([node.id for node in nearest], pinned)
            answered_by = nearest[0].id
    lexical = {node_id for node_id, _ in bm25_hits}
    day_asked = conversation_of_day(question.text) if day is not None else None
    if day_asked is not None and day is not None and answered_by is None and not listed:
        typed = activity.questions_of_day(store, day, day_asked.agent, as_of)
        whom = day_asked.agent or "your agents"
        if typed:
            # The day's questions are the whole answer (the question names nothing else): listed in their
            # order, none of today's commands or old commits after them as filler, nor in place of the next
            # one a small budget leaves out (the listing's note says how many).
            scored = order.put_first([], typed)
            listed = typed
            pinned = order.pin([node.id for node in typed], pinned)
            answered_by = typed[0].id
            listing_note = f"first: the questions you asked {whom} {day.said}, newest first"
            question.notes.append(listing_note)
        else:
            question.notes.append(f"no question you asked {whom} is recorded {day.said}")
    if question.conversation is not None and answered_by is None and not listed:
        turns = activity.conversations_first(scored, lexical, question.conversation, day)
        if turns:
            scored = order.put_first(scored, turns)
            pinned = order.pin([node.id for node in turns], pinned)
            answered_by = turns[0].id
            with_whom = question.conversation.agent or "your agents"
            question.notes.append(f"first: the conversations with {with_whom} that match the question")
    if day is not None and answered_by is None and not listed:
        on_day = worktime.of_the_day(scored, lexical, day)
        if on_day:
            scored = order.put_first(scored, on_day)
            pinned = order.pin([node.id for node in on_day], pinned)
            answered_by = on_day[0].id  # as a listing: what it asks, not only what its words match
            question.notes.append(f"first: what matches the question from {day.said}, then the rest")
        elif not question.failure:  # a reported failure's miss is said by worktime.window_missed, and weighs
            question.notes.append(f"nothing recorded {day.said} matches the question; the closest follow")
    missed = (
        None
        if listing_note is not None or answered_by is not None
        else worktime.window_missed(question, scored, WEAK_TOP)
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
        and not (asker and any(history.is_own_commit(node, asker) for node, _ in scored[: rerank.DEPTH]))
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
        # A listing that is the whole answer ("what failed today": the failed runs, order.listed_first): what else the
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


def vector_weight(question: Question, settings: rank.Settings) -> float:
    """The weight of the vector list for QUESTION: rank.CODE_VECTOR_FACTOR of the configured one when it
    names an identifier, a file or an option, unless it asks how to use something (the docs answer that):
    word vectors know prose, not identifiers, and the change that holds the named characters answers.
    rank.FAILURE_CODE_VECTOR_FACTOR when it also reports a failure: the rest is an account of a symptom."""
    if question.names_code and question.asks != "usage":
        factor = rank.FAILURE_CODE_VECTOR_FACTOR if question.failure else rank.CODE_VECTOR_FACTOR
        return settings.vector_weight * factor
    return settings.vector_weight


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
) -> answer.QueryResult:
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
    result = answer.QueryResult(
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
    links = history.links_of(store, [n for n, _ in scored])
    shelf = answer.Shelf(project, store, [n.id for n, _ in scored], links)
    result.items, used = answer.pack_items(
        {n.id: (n, s) for n, s in scored},
        lambda _node_id: shelf,
        budget=budget,
        header_cost=lambda: answer.header_tokens(result),
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
    result.matched += answer.linked_fixes(
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
    result.tokens_used = used + answer.header_tokens(
        result
    )  # the header as `render` prints it, with every note
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
