"""The rules that answer a question about the asker's shell runs: what was run next or before a command
(`with_neighbours`), which runs failed (`failed_runs_first`, `failures_first`), what fixed a failure
(`fixes_first`), how a run was got working (`got_working_first`) and what was tried before a fix
(`attempts_before_fix`). Each takes the ranked list and returns what to put first, with what to say of it."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from nexusmem import lazyre, resolved
from nexusmem.retrieve import order, search, timecue
from nexusmem.retrieve.fuse import Evidence
from nexusmem.retrieve.intent import (
    Runs,
    Sequence,
    before_failure,
    command_head,
    command_words,
    head_words,
    is_run,
    is_run_mainly,
    names_runs_alone,
    runs_named,
)
from nexusmem.retrieve.question import Question
from nexusmem.retrieve.worktime import (
    WHOLE_WORDS,
    Window,
    asked_window,
    ignorable,
    naming_head,
    newest_kept,
    without_names,
)
from nexusmem.sources.shell.launchers import no_test_failed, runs_nothing
from nexusmem.store import StoredNode
from nexusmem.store.interface import SearchStore
from nexusmem.text import FILLER_WORDS, STOPWORDS, word_parts

# "What did I do next?": the anchor is the best shell command among the first SEQUENCE_ANCHORS results, and
# the SEQUENCE_STEPS commands run next to it (same directory, within SEQUENCE_WINDOW_MS) go just above it,
# nearest first: they are the answer, the anchor is what makes them one.
SEQUENCE_ANCHORS = 10
ANCHOR_SHARE = 0.9
BETWEEN = lazyre.compile(r"\bbetween\b", re.IGNORECASE)
# The latest of the runs the question names: "again", or the one it calls the last ("before my last commit",
# "after the latest deploy").
AGAIN = lazyre.compile(
    r"\b(again|once more|the second time|(?:my|the) (?:very )?(?:last|latest|most recent)(?! (?:thing|command|step)))\b",
    re.IGNORECASE,
)
SEQUENCE_STEPS = 3
SEQUENCE_WINDOW_MS = 24 * 3_600_000


def _lexical(evidence: dict[str, Evidence], node: StoredNode) -> float:
    """NODE's word evidence (0 for a node a rule added without its words matching)."""
    found = evidence.get(node.id)
    return found.lexical if found is not None else 0.0


def _semantic(evidence: dict[str, Evidence], node: StoredNode) -> float:
    """NODE's vector evidence (0 for a node the vectors did not find)."""
    found = evidence.get(node.id)
    return found.semantic if found is not None else 0.0


def _exited_badly(command: StoredNode) -> bool:
    """Whether the shell COMMAND exited non-zero (Ctrl-C too: a run cut short is no passing run here)."""
    return _bad_exit(command.meta.get("exit"))


def _bad_exit(code: object) -> bool:
    """Whether a command's exit CODE (None: not recorded) is non-zero, as _exited_badly reads it."""
    return code not in (0, None)


# Failures of the runs a question names no further apart than this are one episode: "as soon as the session
# suite broke, what did I run next?" asks about its first failure, not the narrowed rerun that failed too.
EPISODE_GAP_MS = 3_600_000


# "Once it finally went through", "when the build at last passed": the run asked about ended failures.
_AT_LAST = lazyre.compile(r"\b(?:finally|at last|eventually)\b", re.IGNORECASE)


def ended_failures(run: StoredNode, runs: list[StoredNode]) -> bool:
    """Whether RUN passed and the last run of its command among RUNS before it failed, EPISODE_GAP_MS or less
    before it."""
    before = max((n for n in runs if n.ts < run.ts and n.ref == run.ref), key=lambda n: n.ts, default=None)
    return (
        not _exited_badly(run)
        and before is not None
        and _exited_badly(before)
        and run.ts - before.ts <= EPISODE_GAP_MS
    )


def episode_start(last: StoredNode, runs: list[StoredNode]) -> StoredNode:
    """The first failure of the episode LAST (a failed run) ends: going back through RUNS (the runs a question
    names, passing and failing), each failure EPISODE_GAP_MS or less before the next one, until a run that
    passed or a longer gap."""
    first = last
    for run in sorted((n for n in runs if n.ts < last.ts), key=lambda n: n.ts, reverse=True):
        if first.ts - run.ts > EPISODE_GAP_MS or not _exited_badly(run):
            break
        first = run
    return first


# The most runs of a kind a question names read from its window for its anchor (with_neighbours), newest
# first: a month of test runs is a few hundred.
KIND_RUNS = 500


def _runs_between(
    store: SearchStore,
    kinds: list[Runs],
    window: tuple[int, int],
    listed: set[str],
    as_of: int | None,
    since: int | None,
    until: int | None,
) -> list[StoredNode]:
    """The runs of KINDS in WINDOW (LOW, HIGH epoch ms) not among the ids LISTED, newest first: at most
    KIND_RUNS of them, those recorded by AS_OF and within SINCE..UNTIL."""
    rows = store.shell_commands_between(*window)
    ids = [row[0] for row in reversed(rows) if row[0] not in listed and _runs_of(row[1], kinds)][:KIND_RUNS]
    nodes = store.get_many(ids, light=True)
    return [nodes[i] for i in ids if i in nodes and order.within(nodes[i], as_of, since, until)]


def sequence_window(
    store: SearchStore, question: Question, as_of: int | None, since: int | None, until: int | None
) -> tuple[int, int] | None:
    """Where the run a "what did I do after X" question names is looked for: the time it asks about
    (asked_window), a vague one ("last week", "three days ago") as long again before it (last week's
    Monday is nine days ago on a Wednesday); else the timecue.CUE_WINDOW_MS up to the newest record; None with no
    record."""
    newest = store.reference_time(as_of)
    asked = asked_window(question, since, until)
    if asked is not None:
        if asked.exact or newest is None:
            return asked.low, asked.high
        return asked.low - (min(asked.high, newest) - asked.low), asked.high
    return None if newest is None else (newest - timecue.CUE_WINDOW_MS, newest)


# What a sequence question asks for ("which CI command did I run just before checking the formatting"): a
# kind of run it names there is the answer's, not the anchor's.
_ASKING = lazyre.compile(
    r"\b(?:what|which|where|how)\b(?:\s+[\w-]+){0,3}?\s+(?:did|do|have|had|was|were)\b(?:\s+[\w-]+){0,3}?"
    r"\s+(?:i|we)\s+\w+",
    re.IGNORECASE,
)


_WHOLE_RUN = lazyre.compile(rf"\b(?:{'|'.join(sorted(WHOLE_WORDS))})\b", re.IGNORECASE)
# An argument that narrows a run to some files or tests: a path, a file's name, a test's id (`a.py::t`).
_NARROWING = lazyre.compile(r"/|::|\.[A-Za-z]{1,5}$")


def _narrowed(command: str) -> bool:
    """Whether COMMAND names files or tests to run (an argument past its program that is a path, a file or a
    test id: `pytest tests/test_a.py`, `bundle exec rspec spec/a_spec.rb`), so that it runs part of what it
    would run alone (`go test ./...` names every package)."""
    words = resolved.failed_part(command).split()
    return any(
        _NARROWING.search(word) for word in words[1:] if not word.startswith("-") and word not in _EVERY_PATH
    )


_EVERY_PATH = frozenset([".", "./", "./...", "..."])


# How soon after or before: "right after", "just before", "straight after".
_SOON = lazyre.compile(
    r"\b(?:right|just|straight|immediately|directly)\s+(?=after\b|before\b)", re.IGNORECASE
)


def _in_span(node: StoredNode, window: tuple[int, int] | None) -> bool:
    return window is None or window[0] <= node.ts <= window[1]


def _runs_of(command: str, kinds: list[Runs]) -> bool:
    """Whether COMMAND is a run of one of KINDS (intent.runs_named) before any other kind: `gh run watch` of
    "CI", `pytest` of "tests"; `make lint` of no build."""
    words = command_words(resolved.failed_part(command))
    return any(is_run_mainly(words, kind) for kind in kinds)


def with_neighbours(
    store: SearchStore,
    scored: list[tuple[StoredNode, float]],
    then: Sequence,
    evidence: dict[str, Evidence],
    *,
    latest: bool = False,
    failed: bool = False,
    between: bool = False,
    asked: str = "",
    window: tuple[int, int] | None = None,
    timed: bool = False,
    as_of: int | None = None,
    since: int | None = None,
    until: int | None = None,
) -> tuple[list[tuple[StoredNode, float]], StoredNode | None]:
    """SCORED with the shell commands run right after (THEN `after`) or before its anchor put first, nearest
    first, the anchor right after them, and the anchor (None: no anchor, or nothing run next to it, and
    SCORED unchanged). The neighbours answer the question, the anchor is what makes them the answer. The
    anchor is a run of a kind of run the question names (intent.runs_named: "once CI went red" names `gh run
    watch`), among SCORED or in WINDOW (sequence_window), those holding most of its other words, else
    those nearest it by vector; else, among the first SEQUENCE_ANCHORS results (anywhere when none is a
    command, by its words alone: EVIDENCE), a command whose words match it nearly as well as the best.
    Of those, one that failed when FAILED (the question reports a failure); of a kind's runs the latest
    ("as soon as the session suite broke" asks about the last time it broke, not a run of months ago whose
    words the vectors liked better; an older one is asked about with a time, whose window holds the
    search), else the best ranked (the latest when LATEST: "before I pushed again"). After a failure, the
    first of its episode (episode_start)."""
    # The question without what it asks for ("what did I run") and how soon ("right after"): what names the
    # anchor.
    naming = _SOON.sub(" ", _ASKING.sub(" ", asked))
    kinds = runs_named(naming)
    shells = [n for n, _ in scored if n.kind == "shell_command"]
    # A kind of run it names ("once CI went red": `gh run watch`) names its runs, those of the list and those
    # of WINDOW the words did not bring; else the commands whose words match it best.
    pool = [n for n in shells if _runs_of(n.ref, kinds) and _in_span(n, window)] if kinds else []
    if kinds and window is not None:
        pool += _runs_between(store, kinds, window, {n.id for n in shells}, as_of, since, until)
    by_kind = bool(pool)
    by_words = False  # no kind named: the commands of WINDOW its words name
    most = 0
    if by_kind:
        # Of those, the ones holding most of its other words ("the session suite": `pytest
        # tests/test_session.py`, not `pytest tests/test_cache.py`); all of them when none holds one.
        words = {w for w in search.terms(naming) if not ignorable(w)} - {
            w for kind in kinds for w in kind.words
        }
        if _WHOLE_RUN.search(naming):
            # "The full test suite": a run of the whole, not one narrowed to a file (`bundle exec rspec`,
            # not `bundle exec rspec spec/jobs/sync_job_spec.rb`).
            pool = [n for n in pool if not _narrowed(n.ref)] or pool
        # A command's words as the index splits them: `tests/test_ws_presence.py` holds "presence".
        held = {n.id: len(naming_head(words, word_parts(n.ref.lower()))) for n in pool}
        most = max(held.values())
        pool = [n for n in pool if held[n.id] == most]
    elif window is not None:
        # No kind named: the commands of WINDOW holding most of its words, split as a command's are and
        # with their inflections ("the export script": `/opt/ml/bin/export_daily.sh`; "tagging the new
        # version": `git tag -s v0.15.0`), the failed ones when it reports a failure; the latest of them, as
        # of a kind's runs.
        spoken = [w for w in search.terms(naming) if w.lower() not in STOPWORDS]
        words = {w for w in spoken if not ignorable(w)}
        # Read from the log's rows (the newest KIND_RUNS), the nodes of the chosen alone.
        rows = list(reversed(store.shell_commands_between(*window, newest=KIND_RUNS)))
        parts = {row[0]: word_parts(row[1].lower()) for row in rows}
        held = {row[0]: len(naming_head(words, parts[row[0]])) for row in rows}
        if failed:
            rows = [row for row in rows if _bad_exit(row[4]) and held[row[0]]] or rows
        most = max((held[row[0]] for row in rows), default=0)
        # Of those, the ones holding most of its words besides ("before starting git bisect": `git bisect
        # start`, not the later `git bisect reset`).
        also = {
            row[0]: len(naming_head(set(spoken), parts[row[0]]))
            for row in rows
            if most and held[row[0]] == most
        }
        chosen = [row[0] for row in rows if row[0] in also and also[row[0]] == max(also.values())]
        # With no time asked, a month of commands: one word in common ("the desktop app's dev mode" and
        # `adb install app-debug.apk`), or the two ends of a "between", are no anchor; the ranking's words are.
        # A word naming its program is ("the serial console": `picocom`).
        programs = {row[1]: command_head(head_words(row[1]))[:1] for row in rows if row[0] in chosen}
        program = any(naming_head(words, head) for head in programs.values())
        if chosen and (timed or (most >= 2 and not between) or (program and not between)):
            nodes = store.get_many(chosen, light=True)
            pool = [nodes[i] for i in chosen if i in nodes and order.within(nodes[i], as_of, since, until)]
            by_words = bool(pool)
    if not by_kind and not by_words:
        # The first results' commands, those of WINDOW first (a month back when no time is asked: not the
        # `npm test -- upload` of last quarter for "the docs upload").
        pool = [n for n, _ in scored[:SEQUENCE_ANCHORS] if n.kind == "shell_command"]
        pool = [n for n in pool if _in_span(n, window)] or pool
    wide = not pool
    if wide:
        # "My push was rejected, what did I do after that?": old commits and docs that say "push" can fill
        # the first results; a command whose words match anywhere among the candidates is still the one the
        # question names.
        pool = [n for n in shells if _lexical(evidence, n) > 0]
    every = pool  # passing and failing: where an episode of failures began (episode_start)
    if failed:  # "after cargo refused to build": the run that failed, not the one that passed later
        failing = [n for n in pool if _exited_badly(n)]
        pool = failing or ([] if wide else pool)  # far down, only a run that failed is the one it names
    best = max((_lexical(evidence, n) for n in pool), default=0.0)
    if by_words:
        named = pool  # what its words name, already chosen
    elif by_kind and not most:
        # None holding another of its words: the ones nearest it by vector ("the android debug build":
        # `./gradlew assembleDebug`, not the `make lint` of yesterday), when the vectors found any.
        near = max((_semantic(evidence, n) for n in pool), default=0.0)
        named = [n for n in pool if _semantic(evidence, n) >= ANCHOR_SHARE * near]
    else:  # those whose words match it nearly as well as the best (the plain run before its variants)
        named = [n for n in pool if _lexical(evidence, n) >= ANCHOR_SHARE * best]
    if not failed and _AT_LAST.search(asked):
        # "Once the migration finally went through": a run that passed after its runs had failed, not a
        # later run that passed first time.
        named = [n for n in named if ended_failures(n, every)] or named
    if not named:
        return scored, None
    # "After `pytest -q` failed": a command whose whole text the question quotes is the one it names, not a
    # longer one sharing its words (`pytest tests/test_cli.py -q -x`).
    said = " ".join(asked.lower().split())
    quoted = [n for n in named if " ".join(n.ref.lower().split()) in said]
    named = quoted or named
    pair = named[:2]
    if between and len(pair) == 2 and abs(pair[0].ts - pair[1].ts) <= SEQUENCE_WINDOW_MS:
        # "In between the two failed builds": what followed the first of the two runs it names.
        anchor = min(pair, key=lambda n: n.ts)
    else:
        # Of a kind's runs, the latest (its words chose none: "once CI went red"); of the words' matches,
        # the best ranked.
        anchor = max(named, key=lambda n: n.ts) if by_kind or by_words or latest else named[0]
        if failed and then == "after":
            anchor = episode_start(anchor, every)
        elif failed and latest:
            # "When the migration choked, what did I check before running it again": its next run.
            anchor = min(
                (n for n in every if n.ref == anchor.ref and n.ts > anchor.ts),
                key=lambda n: n.ts,
                default=anchor,
            )
    top = scored[0][1] if scored else 1.0  # a run of a kind its words did not match: nothing else matched
    ids = store.shell_neighbours(
        anchor, after=then == "after", limit=SEQUENCE_STEPS, window_ms=SEQUENCE_WINDOW_MS, as_of=as_of
    )
    nodes = store.get_many(ids, light=True)
    # One step more than the neighbours: the anchor follows them, above the rest (it may rank far below,
    # beneath old changes that share its words).
    lifted = {
        node_id: order.above(top, len(ids) + 1, step)
        for step, node_id in enumerate(ids)
        if node_id in nodes
        and order.within(nodes[node_id], None, since, until)
        and not order.is_own_line(nodes[node_id])
    }
    if not lifted:
        return scored, None
    out = [(nodes[node_id], value) for node_id, value in lifted.items()]
    out.append((anchor, order.above(top, len(ids) + 1, len(ids))))
    out += [(n, v) for n, v in scored if n.id not in lifted and n.id != anchor.id]
    return order.best_first(out), anchor


# "What failed today?", "which commands broke?": a failure asked about with nothing named beside it is
# answered by the commands that exited non-zero (no node holds the word "failed": a command's failure is
# its exit code), newest first, within the question's time (or --since/--until): every one the budget lets
# through (the footer counts them all), at most FAILURES_LISTED, and a note says how many older ones are left.
FAILURES_LISTED = 100


def _failure_window(
    question: Question, reference: int | None, since: int | None, until: int | None, *, named: bool = False
) -> Window:
    """The window to list failures in: the one the question asks about (asked_window); else the week up
    to the newest record (two days when it speaks of recent work and NAMED no run: "what failed last time I
    ran the tests" asks for the last failed test runs, whichever day of the week they were). And how to say
    it."""
    asked = asked_window(question, since, until)
    if asked is not None:
        return asked
    newest = reference if reference is not None else int(time.time() * 1000)
    days = 2 if question.cue is not None and not named else 7
    return Window(newest - days * 86_400_000, 2**62, f"in the {days} days up to the newest record")


def failures_first(
    store: SearchStore,
    scored: list[tuple[StoredNode, float]],
    question: Question,
    *,
    as_of: int | None,
    since: int | None,
    until: int | None,
    author: str | None = None,
) -> tuple[list[tuple[StoredNode, float]], list[StoredNode], str]:
    """SCORED with the failed shell commands of the question's window put first, newest first (AUTHOR's
    alone: nexusmem.authors); those commands (none: none failed there, and SCORED unchanged); how to say the
    window."""
    low, high, span, _exact = _failure_window(question, store.reference_time(as_of), since, until)
    rows = [row for row in store.shell_commands_between(low, high) if _failed(row)]
    ids = [row[0] for row in reversed(rows)]
    if author is None:
        nodes = store.get_many(ids[:FAILURES_LISTED], light=True)
        failed = [
            nodes[i]
            for i in ids[:FAILURES_LISTED]
            if i in nodes and order.within(nodes[i], as_of, since, until)
        ]
        left = _left_out(len(ids) - len(ids[:FAILURES_LISTED]))
    else:  # read past the other authors' failures
        failed = newest_kept(
            store,
            ids,
            FAILURES_LISTED,
            lambda node: order.passes(node, as_of, since, until, author, store.member),
        )
        left = ""
    return order.listed_first(scored, failed), failed, span + left


def _left_out(count: int) -> str:
    """What a listing note adds for COUNT failed commands older than the FAILURES_LISTED newest listed
    ("" for none)."""
    if count <= 0:
        return ""
    return (
        f", newest first; and {count} earlier failure{'s' if count != 1 else ''} not shown (the newest"
        f" {FAILURES_LISTED} are listed: ask about a narrower window, `--since`/`--until`, or name the run)"
    )


def failed_runs_first(
    store: SearchStore,
    scored: list[tuple[StoredNode, float]],
    question: Question,
    *,
    as_of: int | None,
    since: int | None,
    until: int | None,
    names: frozenset[str] = frozenset(),
    author: str | None = None,
) -> tuple[list[tuple[StoredNode, float]], list[StoredNode], str, bool]:
    """For a failure asked about with what was run named ("which tests failed", "npm test failed", "why did
    the build fail yesterday", "what failed last time I ran the tests"): SCORED with the failed commands of
    the question's window that it names put first, newest first, the rest after them (a fix that mentions
    the tests may follow; an old commit that says "tests" no longer outranks the failed run of minutes
    ago); those commands; how to say what and when. A word of the question names a command when it is its
    program or the word after it (`npm`, `test`, `make`, `push`) or a run it is (intent.runs_named: "tests"
    names `pytest -x`, `node --test t.js`). Listed are the commands most of its words name, when every word
    of the question (but the failure, its time and the like: NOT_A_SUBJECT, and the filler of an account
    of it: text.FILLER_WORDS) names one of them; else none ("why does the date test fail on Windows" asks
    about code, not runs), and SCORED unchanged. When none of the runs it names failed in that window, the
    ones that passed are listed instead, and the last value (else False) says so; when none of them ran in
    a window asked for exactly and the question names only kinds of run, the third value is the note saying
    so (else ""). The project's own NAMES
    (project_names: "which tests failed in cJSON today") name no run. AUTHOR (nexusmem.authors): that
    author's runs alone."""
    words = search.terms(without_names(question.search_text, names))  # with the filler: "did make fail"
    subject = {w for w in words if not ignorable(w)}
    if not subject:
        return scored, [], "", False
    low, high, span, exact = _failure_window(question, store.reference_time(as_of), since, until, named=True)
    everything = store.shell_commands_between(low, high)
    kinds = runs_named(question.text)
    passed = False
    # What follows a failure in the past says how it failed ("ran out of GPU memory", "couldn't find
    # docker"), in words no command line holds: the run it names is what comes before ("which training run").
    head = search.terms(without_names(before_failure(question.search_text), names))
    before = {w for w in head if not ignorable(w)}

    def naming_failures(
        rows: list[tuple[str, str, int, str | None, int | None]],
    ) -> tuple[list[str], set[str], set[str]]:
        """_runs_naming of the failed ROWS by the whole subject, else by what comes before the failure;
        and the subject that named them."""
        found = _runs_naming(rows, subject, kinds)
        if found[0] or not before or before == subject:
            return (*found, subject)
        found = _runs_naming(rows, before, kinds)
        return (*found, before if found[0] else subject)

    best, naming, subject = naming_failures(_ran(store, [row for row in everything if _failed(row)]))
    newest = store.reference_time(as_of)
    if not best and before and newest is not None and asked_window(question, since, until) is None:
        # A failure told in the past with no time said ("my integration tests couldn't find docker at some
        # point"): a month back. Not one said in the present ("why does the parser crash"): about code.
        start = min(low, newest - timecue.CUE_WINDOW_MS)
        older = _ran(store, [row for row in store.shell_commands_between(start, low) if _failed(row)])
        best, naming, subject = naming_failures(older)
        if best:
            span = f"in the {timecue.CUE_WINDOW_MS // 86_400_000} days up to the newest record"
    # A day asked for by name, a date or --since/--until is the window meant: a failure just outside it
    # (yesterday's, for "which tests failed today") does not make the question's runs of that day no answer.
    near = not exact and _named_failure_near(store, question, low, high, subject, kinds, as_of)
    if not best and not near:
        # None of them failed ("what failed last time I ran the tests" after a passing `make test`): its runs,
        # which passed, are the answer (and the note says so), not the words' old commits.
        best, naming = _runs_naming([row for row in everything if row[4] == 0], subject, kinds)
        passed = True
    if not best:
        # Nothing of the kind it names ran in the day, date or --since/--until it names ("which tests failed
        # yesterday", none ran): said, as "what failed yesterday" says it, not a silent list of other days.
        named = " ".join(dict.fromkeys(w for w in words if w in subject))
        said = (
            f"no recorded run of {named} failed {span}" if exact and names_runs_alone(subject, kinds) else ""
        )
        return scored, [], said, False
    ids = best[:FAILURES_LISTED]
    nodes = store.get_many(ids, light=True)
    runs = [
        nodes[i]
        for i in ids
        if i in nodes and order.passes(nodes[i], as_of, since, until, author, store.member)
    ]
    left = _left_out(len(best) - len(ids))
    what = " ".join(w for w in words if w in naming)
    said = f"{what} failed {span}" if passed else f"{what} {span}{left}"
    return order.listed_first(scored, runs, keep=True), runs, said, passed and bool(runs)


# "What fixed the failing test", "how did I fix the test that failed", "which commit fixed the failing
# quarterOf test": memory links a failed command to what fixed it (nexusmem.link: its passing re-run, the
# commit made after it), and those links are the answer, not the old commits whose words say "fix" and
# "failing" ("make failing tests fail the build", 2018). The newest linked failures come first, each with its
# fixes, at most FIXES_LISTED of them; with nothing linked, the ranking answers as before.
FIXES_LISTED = 5
FIX_RELATIONS = ("commit", "retry")
_ASKS_FIX = lazyre.compile(
    r"\bwhat\s+(?:finally\s+|eventually\s+|actually\s+)?fixed\b"
    r"|\bwhich\s+(?:commits?|changes?|runs?|commands?|edits?)\s+(?:finally\s+|eventually\s+|actually\s+)?fixed\b"
    r"|\bhow\s+(?:did|do|have|had)\s+(?:i|we|you|they|someone|somebody)\s+(?:finally\s+|eventually\s+)?fix(?:ed)?\b"
    r"|\bwhat\s+(?:was|is)\s+the\s+fix\b"
    r"|\bhow\s+(?:was|were|got)\b[^?.]*\bfixed\b",
    re.IGNORECASE,
)
# Words of such a question that ask nothing more (with ignorable's).
_FIX_WORDS = frozenset(
    [
        "fix",
        "fixed",
        "fixes",
        "fixing",
        "commit",
        "commits",
        "change",
        "changes",
        "edit",
        "edits",
        "finally",
        "eventually",
        "actually",
        "which",
        "how",
        "get",
        "got",
        "make",
        "made",
        "pass",
        "passing",
        "again",
    ]
)


def _fix_subject(question: Question, names: frozenset[str], also: frozenset[str] = frozenset()) -> set[str]:
    """The words of a question about a fix that name the run it is about: not the project's own NAMES, the
    failure and its time (ignorable), the fix's words (_FIX_WORDS), ALSO, nor filler."""
    words = search.terms(without_names(question.search_text, names))
    return {w for w in words if not ignorable(w) and w not in _FIX_WORDS and w not in also} - FILLER_WORDS


def asks_fix(text: str) -> bool:
    """Whether TEXT asks what fixed something ("what fixed", "how did I fix", "which commit fixed")."""
    return _ASKS_FIX.search(text) is not None


def fixes_first(
    store: SearchStore,
    scored: list[tuple[StoredNode, float]],
    question: Question,
    *,
    as_of: int | None,
    since: int | None,
    until: int | None,
    names: frozenset[str] = frozenset(),
) -> tuple[list[tuple[StoredNode, float]], list[StoredNode], int]:
    """For a question that asks what fixed a failure (asks_fix, and a failure word) naming nothing else, or
    naming the failed run ("the failing quarterOf test": every other word is in its command, or names its
    kind of run, intent.runs_named): SCORED with the newest failed commands memory linked to a fix put first,
    newest first, each followed by its fixes (the commit, then the passing re-run), the rest after them; those
    nodes; how many failures. SCORED unchanged, and none, when no such failure is linked (in the question's
    time, if it names one)."""
    subject = _fix_subject(question, names)
    asked = asked_window(question, since, until)
    low, high = (asked.low, asked.high) if asked is not None else (0, 2**62)
    kinds = runs_named(question.text)
    failed = [row for row in reversed(store.shell_commands_between(low, high)) if resolved.failed(row[4])]
    listed: list[str] = []
    fixed_by: dict[str, str] = {}  # a fix commit's id -> the failed command it is linked from
    seen_fixes: set[tuple[str, frozenset[str]]] = (
        set()
    )  # one failure of a command its fix fixed several times
    failures = 0
    for start in range(0, len(failed), 500):
        chunk = failed[start : start + 500]
        fixes: dict[str, list[tuple[str, str]]] = {}
        for from_id, to_id, relation in store.links_from([row[0] for row in chunk]):
            if relation in FIX_RELATIONS:
                fixes.setdefault(from_id, []).append((to_id, relation))
        for row in chunk:
            linked = fixes.get(row[0])
            if not linked or not _names_run(row[1], subject, kinds):
                continue
            key = (row[1], frozenset(to_id for to_id, _ in linked))
            if key in seen_fixes:
                continue
            seen_fixes.add(key)
            ordered = sorted(linked, key=lambda link: FIX_RELATIONS.index(link[1]))
            listed += [row[0], *(to_id for to_id, _ in ordered if to_id not in listed)]
            fixed_by.update((to_id, row[1]) for to_id, relation in ordered if relation == "commit")
            failures += 1
            if failures >= FIXES_LISTED:
                break
        if failures >= FIXES_LISTED:
            break
    nodes = store.get_many(listed, light=True)
    shown = [
        nodes[i] for i in dict.fromkeys(listed) if i in nodes and order.within(nodes[i], as_of, since, until)
    ]
    if not any(node.kind == "shell_command" for node in shown):
        return scored, [], 0
    # Each fix commit's patch follows it (what the fix changed, not only its file list): not listed, so a
    # large one the budget cannot hold is left out rather than ending the listing (pack's in_order).
    patches = {
        node.id: patch
        for node in shown
        if node.id in fixed_by and node.kind == "git_commit"
        for patch in [fix_patch(store, fixed_by[node.id], node.ref)]
        if patch is not None
    }
    patch_nodes = store.get_many(list(patches.values()), light=True)
    with_patches = [
        shown_node
        for node in shown
        for shown_node in (node, patch_nodes.get(patches.get(node.id, ""), None))
        if shown_node is not None
    ]
    return order.listed_first(scored, with_patches, keep=True), shown, failures


# "How did I finally get npm ci passing again", "what got rid of the state lock", "what made mypy pass": the
# answer is what was done between the run's last failure and the run that then passed (its rerun up to
# WORKING_GAP_MS later): the commands and commits between them, nearest the passing run first, then the two
# runs. Asked with no fix word nor failure word, so no failure → fix link (fixes_first) is read.
_GOT_WORKING = lazyre.compile(
    r"\bhow\s+(?:did|have|had|could)\s+(?:i|we)\s+(?:finally\s+|eventually\s+|actually\s+)?"
    r"(?:(?:get|got|make|made)\b(?!\s+rid)[^?.]*?\b(?:work\w*|pass\w*|go(?:ing)?|through|run(?:ning)?|green"
    r"|solve|build|again|back|up)\b"
    r"|(?:get\s+rid\s+of|clear|unblock|solve|sort\s+out|get\s+past|get\s+around|work\s+around|resolve)\b)"
    r"|\bwhat(?:\s+\w+)?\s+(?:finally\s+)?(?:got\s+rid\s+of|cleared|unblocked|solved|sorted\s+out|resolved"
    r"|made\b[^?.]*?\b(?:work\w*|pass\w*|go\s+through|green))\b",
    re.IGNORECASE,
)
# Words of such a question that say only that it got working (with _FIX_WORDS and ignorable's).
_WORKING_WORDS = frozenset(
    [
        "get",
        "got",
        "make",
        "made",
        "work",
        "works",
        "working",
        "worked",
        "pass",
        "passes",
        "passed",
        "passing",
        "go",
        "going",
        "through",
        "green",
        "solve",
        "solved",
        "again",
        "back",
        "up",
        "rid",
        "clear",
        "cleared",
        "unblock",
        "unblocked",
        "sort",
        "sorted",
        "past",
        "around",
        "resolve",
        "resolved",
        "finally",
        "eventually",
    ]
)
WORKING_LISTED = 6  # the commands and commits between the failure and the passing run, at most
# How long after its last failure a run that passed is what got it working: an evening's work, or the next
# morning's.
WORKING_GAP_MS = 16 * 3_600_000
WORKING_COMMIT_MS = 2 * 3_600_000  # a commit this long after the passing run says what fixed it


def asks_got_working(text: str) -> bool:
    """Whether TEXT asks how something was got working ("how did I finally get the wheel to build", "what
    got rid of the lock", "what change made mypy pass")."""
    return _GOT_WORKING.search(text) is not None


def got_working_first(
    store: SearchStore,
    scored: list[tuple[StoredNode, float]],
    question: Question,
    *,
    as_of: int | None,
    since: int | None,
    until: int | None,
    names: frozenset[str] = frozenset(),
) -> tuple[list[tuple[StoredNode, float]], list[StoredNode], StoredNode | None]:
    """SCORED with what was done between the last failure of the run the question names and that run's
    passing rerun put first (asks_got_working): the commits made between them or up to WORKING_COMMIT_MS
    after, then the commands between them, each nearest the passing run first, at most WORKING_LISTED in
    all, then the passing run and the failure; those nodes; the passing run.
    The run named is a command that passed at most WORKING_GAP_MS after its last failure, in the time asked
    (else timecue.CUE_WINDOW_MS back), holding most of the question's words, split and inflected as a command's
    are, or of the kind of run it names (half of them at least, or one naming its program); the latest of
    those. SCORED unchanged, none, None when no such run holds a word of it."""
    subject = _fix_subject(question, names, _WORKING_WORDS)
    newest = store.reference_time(as_of)
    if not subject or newest is None:
        return scored, [], None
    asked = asked_window(question, since, until)
    low, high = (asked.low, asked.high) if asked is not None else (newest - timecue.CUE_WINDOW_MS, newest)
    kinds = runs_named(question.text)
    rows = store.shell_commands_between(low - WORKING_GAP_MS, high)
    last_failure: dict[str, tuple[str, str, int, str | None, int | None]] = {}
    ended: list[tuple[int, tuple[str, str, int, str | None, int | None], str]] = []
    for row in rows:  # oldest first
        if _failed(row):
            last_failure[row[1]] = row
            continue
        failure = last_failure.pop(row[1], None)
        if row[4] == 0 and failure is not None and row[2] - failure[2] <= WORKING_GAP_MS and row[2] >= low:
            said = command_words(resolved.failed_part(row[1]))
            held = naming_head(subject, word_parts(row[1].lower()))
            held |= {w for runs in kinds if is_run(said, runs) for w in subject & runs.words}
            # Half its words, or its program ("the stale terraform lock": `terraform plan`); not one word of
            # an argument ("the container-based order tests": `kubectl rollout status deploy/order-service`).
            program = command_head(head_words(resolved.failed_part(row[1])))[:1]
            if held and (2 * len(held) >= len(subject) or naming_head(subject, program)):
                ended.append((len(held), failure, row[0]))
    if not ended:
        return scored, [], None
    most = max(count for count, _, _ in ended)
    _, failure, passed_id = [entry for entry in ended if entry[0] == most][-1]
    passed_row = next(row for row in rows if row[0] == passed_id)
    between = [row[0] for row in rows if failure[2] < row[2] < passed_row[2] and row[3] == failure[3]]
    # The commit that says what the fix was is often made once the run passed.
    end = passed_row[2] + WORKING_COMMIT_MS
    commits = store.newest_of_kind("git_commit", failure[2], end, WORKING_LISTED)
    nodes = store.get_many([*between, *commits, passed_id, failure[0]], light=True)
    if passed_id not in nodes or failure[0] not in nodes:
        return scored, [], None

    def nearest(ids: list[str]) -> list[StoredNode]:
        kept = [nodes[i] for i in ids if i in nodes and order.within(nodes[i], as_of, since, until)]
        return sorted(
            (node for node in kept if not order.is_own_line(node)),
            key=lambda node: abs(passed_row[2] - node.ts),
        )

    done = [*nearest(commits), *nearest(between)][:WORKING_LISTED]
    listed = [*done, nodes[passed_id], nodes[failure[0]]]
    return order.listed_first(scored, listed, keep=True), listed, nodes[passed_id]


# "What did I try before the fix?", "what did I try before fixing the easter test": the fix is what memory
# linked to a failure (the commit made after it, the passing re-run: FIX_RELATIONS), and the attempts are
# what was run from the first failure it fixed up to it, oldest first: not what came before a command that
# shares the question's words (a re-run that failed again, the `git commit -m "Fix …"`), nearest first.
_BEFORE_FIX = lazyre.compile(
    r"\bbefore\s+(?:(?:the|my|our|that|this|its)\s+fix\b|fixing\b|(?:i|we|you)\s+fixed\b|it\s+(?:was|got)\s+fixed\b)",
    re.IGNORECASE,
)
ATTEMPTS_LISTED = 20  # the attempts shown at most, the first ones: the failure, then what followed it


def asks_before_fix(text: str) -> bool:
    """Whether TEXT asks what came before a fix ("before the fix", "before fixing the easter test")."""
    return _BEFORE_FIX.search(text) is not None


@dataclass(frozen=True)
class Attempts:
    """What was run between a failure and its fix: FAILURE (the first failed run the fix fixed), then
    TRIED (what was run after it, oldest first), then FIXES (what memory linked to it as its fix)."""

    failure: StoredNode
    tried: list[StoredNode]
    fixes: list[StoredNode]


def attempts_before_fix(
    store: SearchStore,
    question: Question,
    *,
    as_of: int | None,
    since: int | None,
    until: int | None,
    names: frozenset[str] = frozenset(),
) -> Attempts | None:
    """The Attempts before the newest fix memory linked to a failed run the question names (every word of its
    subject is a word of the command or of a name in it, `easter` of `tests/test_easter.py`, or names its kind
    of run: "the easter test"; any failure when it names none), in the question's time; None when no such
    failure is linked to a fix. Commands run in the failure's directory only, as with_neighbours reads them."""
    subject = _fix_subject(question, names)
    asked = asked_window(question, since, until)
    low, high = (asked.low, asked.high) if asked is not None else (0, 2**62)
    kinds = runs_named(question.text)
    rows = store.shell_commands_between(low, high)
    failed = [
        row for row in reversed(rows) if resolved.failed(row[4]) and _names_tried(row[1], subject, kinds)
    ]
    for start in range(0, len(failed), 500):
        chunk = failed[start : start + 500]
        fixes: dict[str, list[str]] = {}
        for from_id, to_id, relation in store.links_from([row[0] for row in chunk]):
            if relation in FIX_RELATIONS:
                fixes.setdefault(from_id, []).append(to_id)
        newest = next((row for row in chunk if row[0] in fixes), None)
        if newest is None:
            continue
        fixed = set(fixes[newest[0]])
        # The first failure the same fix fixed: a re-run that failed again is linked to it too.
        earlier = [
            row
            for row in failed
            if row[3] == newest[3] and newest[2] - SEQUENCE_WINDOW_MS <= row[2] <= newest[2]
        ]
        linked = store.links_from([row[0] for row in earlier])
        firsts = {
            from_id for from_id, to_id, relation in linked if relation in FIX_RELATIONS and to_id in fixed
        }
        first = min((row for row in earlier if row[0] in firsts), key=lambda row: row[2], default=newest)
        fix_nodes = store.get_many(sorted(fixed), light=True)
        shown_fixes = sorted(
            (n for n in fix_nodes.values() if order.within(n, as_of, since, until)),
            key=lambda n: (n.ts, n.kind),
        )
        if not shown_fixes:
            continue
        end = shown_fixes[0].ts
        between = [
            row[0]
            for row in rows
            if row[3] == first[3] and first[2] <= row[2] < end and row[0] not in fixed and row[0] != first[0]
        ]
        nodes = store.get_many([first[0], *between], light=True)
        if first[0] not in nodes:
            continue
        tried = [
            nodes[i]
            for i in between
            if i in nodes and order.within(nodes[i], as_of, None, None) and not order.is_own_line(nodes[i])
        ]
        return Attempts(nodes[first[0]], tried[: ATTEMPTS_LISTED - 1], shown_fixes)
    return None


def _names_tried(command: str, subject: set[str], kinds: list[Runs]) -> bool:
    """_names_run, or every word of SUBJECT a part of a name in COMMAND (`easter` of `tests/test_easter.py`)."""
    if _names_run(command, subject, kinds):
        return True
    said = search.terms(resolved.failed_part(command))
    parts = {part for word in said for part in re.split(r"[_\-]+", word) if part}
    named = {
        w
        for runs in kinds
        if is_run(command_words(resolved.failed_part(command)), runs)
        for w in subject & runs.words
    }
    return all(w in parts or w in named for w in subject)


def fix_patch(store: SearchStore, command: str, sha: str) -> str | None:
    """The id of the diff of the fix commit SHA that ties it to the failed COMMAND, as the linker tied them
    (nexusmem.link): the code a test file it names tests (`pytest tests/test_easter.py` → easter.py), else a
    file it names; else the commit's first diff; None when the commit has none in memory."""
    diffs = [(diff_id, ref.split(":", 1)[-1]) for diff_id, ref in store.diffs_of(sha)]
    if not diffs:
        return None
    from nexusmem.link import tested_names  # the linker's module: only for a failure's fix, when one is shown

    named = [word.split("::", 1)[0].strip("\"'") for word in command.split()]
    tested = {name for word in named for name in tested_names(word)}
    for diff_id, path in diffs:
        if path.rsplit("/", 1)[-1] in tested:
            return diff_id
    for diff_id, path in diffs:
        if any(word and (path == word or path.endswith("/" + word)) for word in named):
            return diff_id
    return diffs[0][0]


def _names_run(command: str, subject: set[str], kinds: list[Runs]) -> bool:
    """Whether every word of SUBJECT is a word of COMMAND (`quarterof` of `node --test
    test/impl/quarterOf.test.mjs`) or names its kind of run ("test" names `pytest -x`)."""
    said = set(search.terms(resolved.failed_part(command)))
    words = command_words(resolved.failed_part(command))
    named = {w for runs in kinds if is_run(words, runs) for w in subject & runs.words}
    return all(w in said or w in named for w in subject)


def _named_failure_near(
    store: SearchStore,
    question: Question,
    low: int,
    high: int,
    subject: set[str],
    kinds: list[Runs],
    as_of: int | None,
) -> bool:
    """Whether a run SUBJECT names failed in the week before the newest record or HIGH (a window the
    question asked for, LOW..HIGH, may have just missed it: "my lint run that failed a few hours ago")."""
    newest = min(high, store.reference_time(as_of) or high)
    start = min(low, newest - 7 * 86_400_000)
    rows = _ran(store, [row for row in store.shell_commands_between(start, high) if _failed(row)])
    return bool(_runs_naming(rows, subject, kinds)[0])


def _failed(row: tuple[str, str, int, str | None, int | None]) -> bool:
    """Whether the command of ROW (id, command, ts, cwd, exit) failed, as precheck reads it: pytest's exit 5
    (no tests collected) failed no test (launchers.no_test_failed)."""
    return resolved.failed(row[4]) and not no_test_failed(row[1], row[4])


def _ran(
    store: SearchStore, rows: list[tuple[str, str, int, str | None, int | None]]
) -> list[tuple[str, str, int, str | None, int | None]]:
    """ROWS without the lines that ran nothing of their command (`time -p pytest` typed in zsh or fish:
    launchers.runs_nothing): no run of pytest failed there."""
    timed = [row[0] for row in rows if row[1].lstrip()[:6] == "time -"]
    if not timed:
        return rows
    nodes = store.get_many(timed, light=True)
    gone = {i for i in timed if i in nodes and runs_nothing(nodes[i].ref, nodes[i].meta.get("shell"))}
    return [row for row in rows if row[0] not in gone]


def _runs_naming(
    rows: list[tuple[str, str, int, str | None, int | None]], subject: set[str], kinds: list[Runs]
) -> tuple[list[str], set[str]]:
    """The ids of the commands of ROWS (oldest first) most words of SUBJECT name, newest first, and the words
    that name them (failed_runs_first); none when those words leave a word of SUBJECT (but the filler of an
    account: text.FILLER_WORDS) naming none of them."""
    best: list[str] = []
    most = 0
    naming: set[str] = set()
    named: dict[str, set[str]] = {}  # a command's words the subject names: a log repeats its commands
    for row in reversed(rows):
        names = named.get(row[1])
        if names is None:
            said = command_words(resolved.failed_part(row[1]))
            names = naming_head(subject, command_head(head_words(resolved.failed_part(row[1]))))
            names.update(w for runs in kinds if is_run(said, runs) for w in subject & runs.words)
            named[row[1]] = names
        if names and len(names) >= most:
            if len(names) > most:
                best, most, naming = [], len(names), set()
            best.append(row[0])
            naming |= names
    if not naming.issuperset(subject - FILLER_WORDS):
        return [], set()
    return best, naming
