"""Turning a person's question into an FTS5 expression, and running it."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal, NamedTuple

from nexusmem import identity
from nexusmem.retrieve import rank
from nexusmem.store import StoredNode
from nexusmem.store.interface import SearchStore
from nexusmem.text import (
    FILLER_WORDS,
    STOPWORDS,
    identifiers,
    is_compound,
    is_noise_word,
    split_identifier,
    terms,
)

__all__ = ["STOPWORDS", "affordable_terms", "bm25", "fts_expression", "terms"]


CANDIDATES = 200
# BM25 costs ~1-2 µs for every matching node. Past this many postings a query drops its most common words
# (rarest kept first, at least one always kept): they carry the least IDF and the most cost.
MAX_POSTINGS = 8000


def fts_expression(text: str | list[str]) -> str | None:
    """An OR of the quoted terms: BM25 then prefers items that match more of them."""
    words = terms(text) if isinstance(text, str) else text
    if not words:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def phrase_of(words: list[str]) -> str:
    """The FTS5 phrase of WORDS, in order ("max retries" finds `max_retries`, not max and retries apart)."""
    return '"' + " ".join(w.replace('"', '""') for w in words) + '"'


def affordable_terms(
    store: SearchStore, words: list[str], budget: int = MAX_POSTINGS, *, counts: dict[str, int] | None = None
) -> list[str]:
    """WORDS, minus the most common ones when together they would match more than BUDGET nodes (COUNTS:
    the words' document counts when the caller has them)."""
    if len(words) < 2 or store.size_hint() <= budget:
        return words
    if counts is None:
        counts = store.term_doc_counts(words)
    if sum(counts.values()) <= budget:
        return words
    kept: set[str] = set()
    total = 0
    for word in sorted(words, key=lambda w: (counts[w], words.index(w))):
        if kept and total + counts[word] > budget:
            continue
        kept.add(word)
        total += counts[word]
    return [w for w in words if w in kept]


# Every query word is also looked up by its stem, in the stemmed index of prose (titles, messages, doc
# text; no diffs, no change words), for a small share of the score (store.fulltext.STEM_SHARE): "crashed"
# finds "crash", "threads" finds "thread", and an exact match still outranks a stem-only one. Measured on
# sixteen labelled sets (docs/evaluation.md): stemming only the words fewer than three nodes held as written
# gave hybrid MRR .5981; every word held by less than 5% / 10% / 25% / 50% of the nodes .5998 / .6008 /
# .6041 / .6049 (doc questions .576 → .591, multi .677 → .696, code and symptom unchanged); every word
# .6048. A word held by half the nodes or more is left out: BM25 gives it no weight in the exact index (its
# IDF is floored there), so in a small store the stemmed index alone would decide (four commits and a guide
# that all say "retries": the commit's title won over the guide's section). STEM_RARE keeps the stem of a
# word so rare that it is its own evidence.
STEM_RARE = 3
STEM_COMMON = 0.5


def stem_terms(store: SearchStore, words: list[str]) -> list[str]:
    """Those of WORDS the stemmed index is asked for: those fewer than STEM_RARE nodes hold as written, and
    those held by less than STEM_COMMON of the nodes."""
    if not words:
        return []
    counts = store.term_doc_counts(words)
    common = STEM_COMMON * store.size_hint()
    return [w for w in words if counts[w] < STEM_RARE or counts[w] < common]


# A pasted log can hold hundreds of distinct words. Past this many, a query keeps its rarest words that the
# store knows (the most informative: highest IDF), and leaves out words no node contains (hashes, times).
MAX_QUERY_TERMS = 24


@dataclass
class QueryTerms:
    """The words of a question: what is searched, and what judging the match needs (their IDF)."""

    words: list[str]  # searched with BM25 (informative, affordable), in question order
    counted: list[str]  # the words whose IDF mass a strong match must cover
    doc_counts: dict[str, int]  # word -> how many nodes contain it
    nodes: int  # corpus size for IDF
    dropped: int = 0  # words left out because the question had more than MAX_QUERY_TERMS

    def idf(self, word: str) -> float:
        """BM25's IDF, ln(1 + (N - df + .5) / (df + .5)): a word no node has weighs the most."""
        df = self.doc_counts.get(word, 0)
        return math.log(1.0 + (self.nodes - df + 0.5) / (df + 0.5))


def query_terms(store: SearchStore, text: str, *, failure: bool = False) -> QueryTerms:
    """The informative words of TEXT: every significant word, or (past MAX_QUERY_TERMS) the rarest ones
    the store knows; then, at large stores, minus the commonest while their postings cost too much. When
    TEXT reports a FAILURE, the filler of its account ("goes completely silent", "keeps going") is left out
    too (text.FILLER_WORDS)."""
    words = terms(text, FILLER_WORDS) if failure else terms(text)
    counts = doc_counts(store, words)
    nodes = max(store.size_hint(), 1)
    dropped = 0
    counted = words
    if len(words) > MAX_QUERY_TERMS:
        known = [w for w in words if counts.get(w, 0) > 0 and not _noise(w)]
        keep = set(sorted(known, key=lambda w: (counts[w], words.index(w)))[:MAX_QUERY_TERMS])
        counted = [w for w in words if w in keep]
        dropped = len(words) - len(counted)
    searched = affordable_terms(store, counted, counts=counts)
    return QueryTerms(searched, counted, counts, nodes, dropped)


def name_parts(text: str, known: list[str]) -> list[str]:
    """The words of TEXT's compound names (`HasDarkBackground` → dark, background; `max_retries` → max,
    retries) that KNOWN (the question's own search words) lacks, noise words left out, in order."""
    have = set(known)
    parts: list[str] = []
    for ident in identifiers(text):
        if not is_compound(ident):
            continue
        for part in split_identifier(ident):
            if part not in have and not is_noise_word(part):
                have.add(part)
                parts.append(part)
    return parts


_HEXISH = re.compile(r"[0-9a-f]*[0-9][0-9a-f]*")


def _noise(word: str) -> bool:
    """A number, or a hex id of 6+ characters: in a pasted log these are rare, yet say nothing."""
    return word.isdigit() or (len(word) >= 6 and _HEXISH.fullmatch(word) is not None)


# A commit's sha or its start as `git log --oneline` or an answer shows it: 7 to 40 hex digits, a word alone.
_SHA_WORD = re.compile(r"(?<![\w.:/#-])[0-9a-fA-F]{7,40}(?![\w])")
# An all-digit word this long may be a sha (one in 10**5 shas has no letter in its first 12 characters); a
# shorter one is an id, an order number or a count.
SHA_DIGITS = 12


def named_commits(store: SearchStore, text: str) -> tuple[str, list[str]]:
    """The commits a sha TEXT holds names ("what did 1fb23b7 do?"): the first such word that starts a commit's
    sha in memory, and the ids of the commits it starts (one, or more when the prefix is ambiguous, as `show`
    says); ("", []) when none does. A number of fewer than SHA_DIGITS digits ("order 8459341", "user id
    9833955") is no sha, whatever sha it starts."""
    for word in _SHA_WORD.findall(text):
        if word.isdigit() and len(word) < SHA_DIGITS:
            continue
        found = store.commits_by_sha(word.lower())
        if found:
            return word, found
    return "", []


def doc_counts(store: SearchStore, words: list[str]) -> dict[str, int]:
    """How many nodes contain each word. The index splits "max_retries" into two tokens, and a phrase has
    no count of its own: it is counted as its rarest token (an upper bound). A word in no node exactly
    may be there in another form ("crashed" for "crash"): it is counted in the stemmed index."""
    parts = {w: [t for t in w.split("_") if t] or [w] for w in words}
    counts = store.term_doc_counts(sorted({t for ts in parts.values() for t in ts})) if words else {}
    out = {w: min(counts.get(t, 0) for t in ts) for w, ts in parts.items()}
    for word, count in out.items():
        if count == 0:  # not in any node as written; maybe in another form ("crashed" for "crash")
            expr = fts_expression([word])
            out[word] = store.count_stemmed(expr) if expr else 0
    return out


def bm25_scored(
    store: SearchStore,
    words: list[str],
    *,
    limit: int = CANDIDATES,
    as_of: int | None = None,
    since: int | None = None,
    until: int | None = None,
    stemmed: bool = True,
) -> tuple[list[tuple[str, float]], int]:
    """((id, BM25 score) best first, total number of matches) for an OR of WORDS (STEMMED=False: the
    exact index only, and the total is a lower bound)."""
    expr = fts_expression(words)
    if expr is None:
        return [], 0
    if not stemmed:
        hits = store.search_fts_scored(expr, limit, as_of, since=since, until=until, stemmed=False)
        return hits, len(hits)
    stem_match = fts_expression(stem_terms(store, words)) or ""
    hits = store.search_fts_scored(expr, limit, as_of, since=since, until=until, stem_match=stem_match)
    total = len(hits) if len(hits) < limit else store.count_matches(expr, as_of, since=since, until=until)
    return hits, total


class ExactSearches:
    """The searches of the exact index that one question makes within its window (AS_OF, SINCE, UNTIL), each
    asked of the store once: "when was retry_budget added?" asks for `retry_budget` as the name whose first
    change is sought (holder) and again as one of its code names, the same search (~5 ms at 100k nodes). Made
    for one question and dropped with it: nothing is kept from one query (or sync) to the next."""

    def __init__(
        self, store: SearchStore, *, as_of: int | None, since: int | None, until: int | None
    ) -> None:
        self.store = store
        self.as_of, self.since, self.until = as_of, since, until
        self._found: dict[tuple[str, int], list[tuple[str, float]]] = {}

    def scored(self, match: str, limit: int) -> list[tuple[str, float]]:
        """(id, BM25 score) of the nodes the FTS5 expression MATCH finds in the exact index, best first."""
        key = (match, limit)
        if key not in self._found:
            self._found[key] = self.store.search_fts_scored(
                match, limit, self.as_of, since=self.since, until=self.until, stemmed=False
            )
        return list(self._found[key])

    def words(self, words: list[str], limit: int) -> list[tuple[str, float]]:
        """scored() for an OR of WORDS (as bm25_scored with stemmed=False)."""
        expr = fts_expression(words)
        return [] if expr is None else self.scored(expr, limit)


# "When was editDistance added?" is answered by the first change that holds the name (`git log -S
# --reverse`), "when was getUsDateFormat removed?" by the last one (`git log -S`, newest first): the change
# that deleted its last lines. Other changes that touch the name hold it as often (their diffs more), so the
# one asked for is put ORIGIN_LEAD above the best word match: at 1 it tied and lost to them on the vectors;
# on sixteen labelled sets (docs/evaluation.md), once "first" went by the history graph: 1.25 → MRR .5956,
# 1.5 → .5979, 2 → .5981, 3 → .5989, a plateau from 1.5. A name held by ORIGIN_LIMIT nodes or more is a
# word of the project, not one change's identifier. A change to docs alone (the release notes that say
# "removed X") is not the one that removed it.
ORIGIN_LEAD = 2.0
ORIGIN_LIMIT = 200
_HISTORY_KINDS = ("git_commit", "code_diff")
Which = Literal["first", "last"]


def holder(
    store: SearchStore,
    name: str,
    hits: list[tuple[str, float]],
    which: Which = "first",
    *,
    searches: ExactSearches,
) -> tuple[list[tuple[str, float]], str | None]:
    """(HITS (id, BM25 score), best first, with the first (WHICH) or last commit whose words hold NAME (its
    commit node and its diffs that hold it, added when HITS lacks them) scored ORIGIN_LEAD × the best of
    HITS; that commit's sha). HITS unchanged and None when no commit holds NAME, or ORIGIN_LIMIT nodes or
    more do. SEARCHES: the question's searches of the exact index (and its window)."""
    words = terms(name)
    if not words or not hits:
        return hits, None
    holders = searches.scored(phrase_of(words), ORIGIN_LIMIT)
    member = _member(store, name)
    if member is not None:
        # `pool.SIZE_LIMIT` is written `SIZE_LIMIT = 10` in pool.py: the changes that hold its last part
        # are read too (member_holds says which of them hold the member).
        found = searches.words(terms(member[1]), ORIGIN_LIMIT)
        holders = [*holders, *found] if len(found) < ORIGIN_LIMIT else holders
    if not holders or len(holders) >= ORIGIN_LIMIT:
        return hits, None
    exact = _exact_name(name)
    nodes = [
        n
        for n in store.get_many(
            list(dict.fromkeys(i for i, _ in holders)), light=exact is None and member is None
        ).values()
        if n.kind in _HISTORY_KINDS
    ]
    if member is not None:
        # "number of connections to pool, defaults to 5" holds the words of `pool.DEFAULTS`, not the member:
        # no change holds it whole, and none is its first or last.
        nodes = member_holds(store, name, member, nodes)
    if exact is not None:
        # The word index reads `_IMPLICIT_NAMES` as the words "implicit names": a change that only had a
        # local `implicit_names` (or said "implicit names") matches it too, and may be older; and when no
        # change holds the name whole ("cobertura_version", which no commit ever wrote, beside one that says
        # "Cobertura version"), none is its first.
        nodes = [n for n in nodes if _holds(exact, n)]
    if which == "last":
        docs = change_scope(store, nodes).docs
        nodes = [n for n in nodes if n.id not in docs]
        # The removal is the change whose diff took the name out (`git log -S`): a later commit whose message
        # only recalls it ("Prior to PR 251, DisplayAsDisplay …") changed no line that holds it, and a merge
        # of the branch that removed it (its message quoting the PR) is not where it was removed. A diff that
        # holds it, or a commit's change words (the names on its changed lines, kept for every commit while
        # the diffs are kept for the newest only), say it changed such a line.
        core = name.strip("`").lower()
        changed = {
            n.ref.split(":", 1)[0]
            for n in nodes
            if n.kind == "code_diff"
            or (exact.search(n.words) is not None if exact is not None else core in n.words.lower())
        }
        merges = {n.ref for n in nodes if n.kind == "git_commit" and n.meta.get("merge") is True}
        nodes = [n for n in nodes if n.ref.split(":", 1)[0] in changed - merges] or [
            n for n in nodes if n.ref not in merges
        ]
    if not nodes:
        return hits, None
    sha = _end_sha(nodes, which, store.generations({node.ref.split(":", 1)[0] for node in nodes}))
    best = max(score for _, score in hits)
    scores = dict(hits)
    for node in nodes:
        if node.ref.split(":", 1)[0] == sha:
            scores[node.id] = max(scores.get(node.id, 0.0), best * ORIGIN_LEAD)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0])), sha


_MEMBER = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")


def _member(store: SearchStore, name: str) -> tuple[str, str] | None:
    """(The part before the last dot, the last part) when NAME is a member (`pool.DEFAULTS`,
    `tomlkit.api.dumps`: dotted identifiers, backticks and a call's "()" aside) and no file a commit touched
    is named so (`setup.py` is a file); else None."""
    core = name.strip("`")
    core = core[:-2] if core.endswith("()") else core
    if not _MEMBER.fullmatch(core) or store.commit_paths_ending(core):
        return None
    owner, _, last = core.rpartition(".")
    return owner, last


def member_holds(
    store: SearchStore, name: str, member: tuple[str, str], nodes: list[StoredNode]
) -> list[StoredNode]:
    """Those of NODES (changes and their diffs) that hold the member NAME (MEMBER: its owner and last part,
    _member) whole: that write NAME as written (`pool.DEFAULTS`), or that hold its last part as one
    identifier in a file whose name or a folder of it is the owner's last part, any case (`SIZE_LIMIT` in
    app/pool.py or pool/limits.py for `pool.SIZE_LIMIT`; not in lib/connection_pool.rb). A commit is read by
    its files, a diff by its one file."""
    written = _written(name)
    last = _exact_name(member[1])
    owner = member[0].rpartition(".")[2].lower()
    commits = [n.id for n in nodes if n.kind == "git_commit"]
    files: dict[str, list[str]] = {}
    for node_id, path in store.files_of_many(commits) if commits else []:
        files.setdefault(node_id, []).append(path)

    def owned(path: str) -> bool:
        parts = path.lower().split("/")
        return owner in parts[:-1] or parts[-1].split(".", 1)[0] == owner

    kept: list[StoredNode] = []
    for node in nodes:
        if _holds(written, node):
            kept.append(node)
            continue
        paths = files.get(node.id, []) if node.kind == "git_commit" else [node.ref.split(":", 1)[-1]]
        if (
            last is not None
            and any(owned(p) for p in paths)
            and (last.search(node.body) or last.search(node.words))
        ):
            kept.append(node)
    return kept


def held_whole(store: SearchStore, name: str, *, searches: ExactSearches) -> bool:
    """Whether any node (a change, a doc section, a command…) holds NAME whole: a plain identifier as one
    identifier, any case (`cobertura_version`, not "Cobertura version"), or as the family it heads
    (_family_name: `try_get` in "`try_get_*` methods" or `fn try_get_u8`); an option as written, any case
    (`--parallel-workers`, not "parallel workers"). True when ORIGIN_LIMIT nodes or more hold its words (a
    word of the project), when NAME has no words to search, and for any other name: a member or a path
    (`tomlkit.dumps`) is often written whole nowhere (`def dumps` in tomlkit/api.py). SEARCHES: the
    question's searches of the exact index (and its window)."""
    family = _family_name(name)
    if family is None and not _OPTION.fullmatch(name.strip("`")):
        return True
    holding = holders_whole(store, name, searches=searches, matcher=family)
    return holding is None or bool(holding)


def docs_hold(store: SearchStore, name: str, *, searches: ExactSearches) -> bool:
    """Whether a page of the project's docs (a doc section, not a changelog entry or a blog post) holds
    NAME whole (as held_whole reads it); False when ORIGIN_LIMIT nodes or more hold its words."""
    holding = holders_whole(store, name, searches=searches)
    return any(
        n.kind == "doc_section" and n.source != rank.CHANGELOG_SOURCE and not rank.is_post(n.kind, n.title)
        for n in holding or []
    )


def holders_whole(
    store: SearchStore, name: str, *, searches: ExactSearches, matcher: re.Pattern[str] | None = None
) -> list[StoredNode] | None:
    """The nodes that hold NAME whole (see held_whole), or what MATCHER matches when given; None when NAME
    has no words to search or ORIGIN_LIMIT nodes or more hold its words (a word of the project: not read one
    by one)."""
    words = terms(name)
    if not words:
        return None
    found = searches.scored(phrase_of(words), ORIGIN_LIMIT)
    if len(found) >= ORIGIN_LIMIT:
        return None
    if not found:
        return []
    exact = matcher or _exact_name(name) or _written(name)
    return [n for n in store.get_many([i for i, _ in found]).values() if _holds(exact, n)]


_OPTION = re.compile(r"--?[A-Za-z][\w-]*")


def _holds(exact: re.Pattern[str], node: StoredNode) -> bool:
    """Whether NODE's title, body or change words hold what EXACT matches."""
    return bool(exact.search(node.title) or exact.search(node.body) or exact.search(node.words))


def _written(name: str) -> re.Pattern[str]:
    """A matcher of NAME as written (backticks and a call's "()" aside), any case, not inside a longer name:
    `--parallel-workers` is not `--parallel-workers-max`, `res.json` not `res.jsonp`."""
    core = name.strip("`")
    core = core[:-2] if core.endswith("()") else core
    return re.compile(r"(?<![\w$-])" + re.escape(core) + r"(?![\w$-])", re.IGNORECASE)


# A renamed file (`git mv`) keeps its history: the commits that changed it under the names it had before are
# found from the renames the commits recorded (meta `renames`), as `git log --follow` finds them. At most
# FOLLOWED_RENAMES renames of one file are followed.
FOLLOWED_RENAMES = 20


class FileName(NamedTuple):
    """A name a file had: its PATH, the author times it had it (LOW..HIGH, both included), and the sha of the
    rename that gave it its next name (None for the name asked about)."""

    path: str
    low: int
    high: int
    renamed: str | None


def former_names(store: SearchStore, path: str) -> list[FileName]:
    """PATH and the names the file had before, newest first: from each name back through the newest rename
    into it made by the time it lost that name (a chain of renames followed, each rename once)."""
    names: list[FileName] = []
    high, renamed, current = 2**62, None, path
    followed: set[str] = set()
    while True:
        into = [
            (old, sha, ts)
            for old, new, sha, ts in store.renames_of([current])
            if new == current and old != current and ts <= high and sha not in followed
        ]
        if not into or len(names) >= FOLLOWED_RENAMES:
            names.append(FileName(current, 0, high, renamed))
            return names
        old, sha, ts = into[0]  # the newest
        names.append(FileName(current, ts, high, renamed))
        followed.add(sha)
        high, renamed, current = ts, sha, old


def later_name(store: SearchStore, path: str, after: int) -> str:
    """The name the file named PATH at author time AFTER has now: its renames from PATH made at or after
    AFTER followed, the earliest each time (FOLLOWED_RENAMES at most); PATH when none."""
    steps = later_renames(store, path, after)
    return steps[-1][0] if steps else path


def later_renames(store: SearchStore, path: str, after: int) -> list[tuple[str, str, int]]:
    """The renames of the file named PATH at author time AFTER, oldest first, as (the new name, the sha of
    the rename, its author time): from PATH at or after AFTER, then from each new name, the earliest each
    time (FOLLOWED_RENAMES at most)."""
    current, when, followed = path, after, set()
    steps: list[tuple[str, str, int]] = []
    for _ in range(FOLLOWED_RENAMES):
        later = sorted(
            (ts, sha, new)
            for old, new, sha, ts in store.renames_of([current])
            if old == current and new != current and ts >= when and sha not in followed
        )
        if not later:
            break
        when, sha, current = later[0]
        followed.add(sha)
        steps.append((current, sha, when))
    return steps


def renames_said(steps: list[tuple[str, str, int]]) -> str:
    """STEPS (later_renames) as a reader follows them: "renamed to src/beta.py in 91c265226c, then to
    lib/gamma.py in 31143e1a2b"."""
    return "renamed " + ", then ".join(f"to {new} in {sha[:10]}" for new, sha, _ in steps)


def renamed_since(store: SearchStore, paths: set[str], after: dict[str, tuple[int, int]]) -> dict[str, str]:
    """{path: the name it has now} for those of PATHS renamed after the point AFTER gives for each (its
    (generation, author time): a diff's commit), following a chain of renames; a path not renamed since
    is left out."""
    cache: dict[str, list[tuple[str, str, str, int]]] = {}
    order: dict[str, int] = {}

    def renames(path: str) -> list[tuple[str, str, str, int]]:
        if path not in cache:
            cache[path] = [r for r in store.renames_of([path]) if r[0] == path and r[1] != path]
            order.update(store.generations({sha for _, _, sha, _ in cache[path]} - order.keys()))
        return cache[path]

    moved: dict[str, str] = {}
    for path in paths:
        current, point = path, after[path]
        for _ in range(FOLLOWED_RENAMES):
            later = sorted(
                ((order.get(sha, 0), ts), sha, new)
                for _, new, sha, ts in renames(current)
                if (order.get(sha, 0), ts) > point
            )
            if not later:
                break
            point, _, current = later[0]
        if current != path:
            moved[path] = current
    return moved


class Presence(NamedTuple):
    """Where the code still holds a name (still_in): the paths that hold it in CODE, and those that hold it
    only in COMMENTS (a "formerly the `TOMLChar` constants" left by the change that removed it)."""

    code: list[str]
    comments: list[str]


def still_in(store: SearchStore, name: str, *, searches: ExactSearches) -> Presence:
    """The paths of code (not docs: release notes saying "removed X" hold it) whose newest stored diff that holds NAME keeps it: on an added or an unchanged
    line or in a hunk header (_kept_lines), not only on removed ones. "When was toRelativeCalendar removed?" asked of a name the code still
    holds: the last change that holds it only touched a line near it (a docs typo), and nothing removed
    it. Read from the diffs the sync stored (no git call on the query path): a file deleted whole shows
    its lines removed, so it is not listed; a diff left out (a binary, a file over the diff cap) is not
    read. A path whose kept lines hold NAME only in a comment (_code_part) is listed apart (Presence.comments).
    Nothing when no diff holds NAME, or ORIGIN_LIMIT nodes or more hold it (holder answers nothing)."""
    words = terms(name)
    if not words:
        return Presence([], [])
    found = searches.scored(phrase_of(words), ORIGIN_LIMIT)
    if not found or len(found) >= ORIGIN_LIMIT:
        return Presence([], [])
    diffs = [
        n
        for n in store.get_many([i for i, _ in found]).values()
        if n.kind == "code_diff" and ":" in n.ref and not rank.docs_only([n.ref.split(":", 1)[1]])
    ]
    if not diffs:
        return Presence([], [])
    exact = _exact_name(name)
    core = name.strip("`")

    def holds(line: str) -> bool:
        return exact.search(line) is not None if exact is not None else core in line

    generation = store.generations({n.ref.split(":", 1)[0] for n in diffs})

    def point(diff: StoredNode) -> tuple[int, int]:
        return generation.get(diff.ref.split(":", 1)[0], 0), diff.ts

    # A file renamed after a diff holds what that diff left under its new name (a later diff of the new name,
    # one that removed NAME, replaces it): the old name is no file of the code.
    last: dict[str, tuple[int, int]] = {}
    for diff in diffs:
        path = diff.ref.split(":", 1)[1]
        last[path] = max(last.get(path, (0, 0)), point(diff))
    moved = renamed_since(store, set(last), last)
    newest: dict[str, StoredNode] = {}
    for diff in sorted(diffs, key=lambda n: (*point(n), n.id)):
        path = diff.ref.split(":", 1)[1]
        newest[moved.get(path, path)] = diff  # the later (in the graph, then in time) replaces
    kept: list[str] = []
    commented: list[str] = []
    for path, diff in newest.items():
        lines = [line for line in _kept_lines(diff.body) if holds(line)]
        if any(holds(_code_part(line, path)) for line in lines):
            kept.append(path)
        elif lines:
            commented.append(path)
    return Presence(sorted(kept), sorted(commented))


# Line comments by a file's extension: what follows the marker (outside a string) is no code.
_HASH_COMMENTED = frozenset(
    [
        "py",
        "pyi",
        "pyx",
        "rb",
        "sh",
        "bash",
        "zsh",
        "fish",
        "toml",
        "yaml",
        "yml",
        "pl",
        "pm",
        "r",
        "cmake",
        "mk",
        "nim",
        "cr",
        "ex",
        "exs",
        "jl",
        "ps1",
        "coffee",
        "tcl",
    ]
)
_SLASH_COMMENTED = frozenset(
    [
        "c",
        "h",
        "cc",
        "cpp",
        "cxx",
        "hh",
        "hpp",
        "hxx",
        "rs",
        "go",
        "java",
        "js",
        "jsx",
        "mjs",
        "cjs",
        "ts",
        "tsx",
        "kt",
        "kts",
        "swift",
        "cs",
        "scala",
        "dart",
        "php",
        "m",
        "mm",
        "zig",
        "proto",
        "groovy",
        "sol",
    ]
)


def _code_part(line: str, path: str) -> str:
    """LINE (a kept line of a diff of PATH, its +/space marker first) without its comment: what follows `#`
    (Python, Ruby, shell…) or `//` (C, Rust, JavaScript…) outside a string, and the whole of a line that
    continues a block comment (`* …`, `/* …`). LINE itself for a language not known here."""
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    marker = "#" if ext in _HASH_COMMENTED else "//" if ext in _SLASH_COMMENTED else None
    if marker is None:
        return line
    text = line[1:] if line[:1] in ("+", " ") else line
    if marker == "//" and text.lstrip().startswith(("*", "/*")):
        return ""
    quote = ""
    i = 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "\"'`" and not (char == "'" and ext == "rs"):  # Rust's 'a is a lifetime
            quote = char
        elif text.startswith(marker, i):
            return text[:i]
        i += 1
    return text


def _kept_lines(body: str) -> list[str]:
    """The lines of a diff BODY the change left in the file: added and unchanged ones, and the line a hunk
    header quotes (`@@ -4,10 +4,6 @@ def parse_config(path):`, the function the hunk is in: a line above
    the hunk, which it did not change; a helper dropped below `parse_config` holds that name only there)."""
    kept = []
    for line in body.splitlines():
        if line.startswith("@@"):
            parts = line.split("@@", 2)
            if len(parts) == 3 and parts[2].strip():
                kept.append(parts[2])
        elif line[:1] in ("+", " ") and not line.startswith("+++ "):
            kept.append(line)
    return kept


_PLAIN_NAME = re.compile(r"[A-Za-z_$][\w$]*")


def _plain_name(name: str) -> str | None:
    """NAME without backticks and a call's "()" when it is one plain identifier; None for a member, a path
    or an option."""
    core = name.strip("`")
    core = core[:-2] if core.endswith("()") else core
    return core if _PLAIN_NAME.fullmatch(core) else None


def _exact_name(name: str) -> re.Pattern[str] | None:
    """A matcher of NAME as one whole identifier, any case (change words are lower-cased), when NAME is one
    plain identifier (backticks and a call's "()" aside); None for a member, a path or an option."""
    core = _plain_name(name)
    if core is None:
        return None
    return re.compile(r"(?<![\w$])" + re.escape(core) + r"(?![\w$])", re.IGNORECASE)


def _family_name(name: str) -> re.Pattern[str] | None:
    """_exact_name, and NAME as the head of a family of identifiers: "`try_get_*` methods for `Buf`", or
    `try_get_u8` and `try_get_u16` in a change, hold `try_get` (as `git log -S try_get` finds them). The
    family goes on after an underscore or a `*` (`cobertura_version_max` heads from `cobertura_version`; a
    longer word does not: `try_getter` is no `try_get`). None for a member, a path or an option."""
    core = _plain_name(name)
    if core is None:
        return None
    return re.compile(r"(?<![\w$])" + re.escape(core) + r"(?:_[\w$]*|\*)?(?![\w$])", re.IGNORECASE)


@dataclass(frozen=True)
class ChangeScope:
    """What the files of some changes say of them (rank.docs_only, rank.tests_only, rank.WIDE_FILES)."""

    docs: set[str]  # ids of the commits and diffs that changed documentation only
    tests: set[str]  # ids of the commits and diffs whose commit changed tests (and maybe docs), no program
    wide: set[str]  # ids of the commits and diffs whose commit changed more than rank.WIDE_FILES files


def change_scope(store: SearchStore, nodes: list[StoredNode]) -> ChangeScope:
    """Which commits and diffs among NODES changed docs only, tests and no program file, or many files, in
    one read of their commits' files. A diff is docs by its one file, and tests or many files by its
    commit's: a fix's new test is a part of the fix."""
    changes = [n for n in nodes if n.kind in _HISTORY_KINDS and (n.kind == "git_commit" or ":" in n.ref)]
    docs = {n.id for n in changes if n.kind == "code_diff" and rank.docs_only([n.ref.split(":", 1)[1]])}
    commit_of = {
        n.id: n.id
        if n.kind == "git_commit"
        else identity.node_id(n.project_id, "git_commit", n.ref.split(":", 1)[0])
        for n in changes
    }
    paths: dict[str, list[str]] = {}
    for node_id, path in store.files_of_many(sorted(set(commit_of.values()))):
        paths.setdefault(node_id, []).append(path)
    roles: dict[str, rank.Role] = {}  # a project's paths recur from change to change: each is read once
    for listed in paths.values():
        for path in listed:
            if path not in roles:
                roles[path] = rank.path_role(path)
    docs_commits = {c for c, listed in paths.items() if all(roles[path] == "docs" for path in listed)}
    docs |= {n.id for n in changes if n.kind == "git_commit" and n.id in docs_commits}
    tested = {c for c, listed in paths.items() if rank.roles_tests_only(roles[path] for path in listed)}
    broad = {commit for commit, listed in paths.items() if len(listed) > rank.WIDE_FILES}
    tests = {node_id for node_id, commit in commit_of.items() if commit in tested}
    wide = {node_id for node_id, commit in commit_of.items() if commit in broad}
    return ChangeScope(docs, tests, wide)


def _end_sha(nodes: list[StoredNode], which: Which, generations: dict[str, int] | None = None) -> str:
    """The sha of the first (WHICH `first`) or the last of NODES (commits and diffs) in the history.

    With every one's GENERATIONS (sha → 1 + its parents' highest) the graph decides: an ancestor always
    has a lower generation, so a branch rebased long after it was written (old author dates on top of
    newer history) is not taken for the first; commits of one generation are on parallel branches, and
    the author time tells them apart. Without (a store that keeps no graph), the author time decides, and
    commits of one second (a script, a series rebased at once) are told apart by their parents: the first
    is the one none of the others descends from, the last the one none of the others has for a parent."""
    shas = {node.ref.split(":", 1)[0] for node in nodes}
    if generations and shas <= generations.keys():
        when: dict[str, int] = {}
        for node in nodes:
            sha = node.ref.split(":", 1)[0]
            when[sha] = min(when.get(sha, node.ts), node.ts)
        order = sorted(shas, key=lambda sha: (generations[sha], when[sha], sha))
        return order[0] if which == "first" else order[-1]
    end_ts = (min if which == "first" else max)(node.ts for node in nodes)
    tied = {node.ref.split(":", 1)[0] for node in nodes if node.ts == end_ts}
    if len(tied) == 1:
        return tied.pop()
    parents = {
        node.ref: set(node.meta.get("parents") or ())
        for node in nodes
        if node.kind == "git_commit" and node.ref in tied
    }
    if which == "first":
        ends = sorted(sha for sha in tied if not parents.get(sha, set()) & tied)
    else:
        ends = sorted(sha for sha in tied if not any(sha in parents.get(other, set()) for other in tied))
    return ends[0] if ends else min(tied)


def bm25(
    store: SearchStore, text: str, *, limit: int = CANDIDATES, as_of: int | None = None
) -> tuple[list[str], int]:
    """(ids best first, total number of matches) for TEXT (the BM25 list alone, as retrieve runs it)."""
    hits, total = bm25_scored(store, query_terms(store, text).words, limit=limit, as_of=as_of)
    return [node_id for node_id, _ in hits], total
