"""The rules that answer questions about recent work from the shell log, the commits and the conversations:
what was run next or before a command, which runs failed and what fixed them, how a run was got working, what
was tried before a fix, the work of a time, a file's changes. Each takes the ranked list retrieve.query made
and returns what to put first, with the note that says why."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from nexusmem import authors, lazyre, resolved, timefmt
from nexusmem.retrieve import order, search, timecue
from nexusmem.retrieve.fuse import Evidence
from nexusmem.retrieve.intent import (
    PROGRAM_NAMES,
    ConversationAsk,
    Runs,
    Sequence,
    before_failure,
    command_head,
    command_words,
    head_words,
    is_run,
    is_run_mainly,
    names_runs_alone,
    reports_failure,
    runs_named,
)
from nexusmem.retrieve.question import Question
from nexusmem.sources.shell.launchers import no_test_failed, runs_nothing
from nexusmem.store import StoredNode
from nexusmem.store.interface import SearchStore
from nexusmem.store.nodes import PROJECT_ID_KEY
from nexusmem.text import FILLER_WORDS, STOPWORDS, word_bases, word_parts

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
    (_asked_window), a vague one ("last week", "three days ago") as long again before it (last week's
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


# A run of the whole suite or project a question names ("the full test suite", "the whole build").
_WHOLE_WORDS = frozenset(["full", "whole", "entire", "complete"])
_WHOLE_RUN = lazyre.compile(rf"\b(?:{'|'.join(sorted(_WHOLE_WORDS))})\b", re.IGNORECASE)
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
        words = {w for w in search.terms(naming) if not _ignorable(w)} - {
            w for kind in kinds for w in kind.words
        }
        if _WHOLE_RUN.search(naming):
            # "The full test suite": a run of the whole, not one narrowed to a file (`bundle exec rspec`,
            # not `bundle exec rspec spec/jobs/sync_job_spec.rb`).
            pool = [n for n in pool if not _narrowed(n.ref)] or pool
        # A command's words as the index splits them: `tests/test_ws_presence.py` holds "presence".
        held = {n.id: len(_naming_head(words, word_parts(n.ref.lower()))) for n in pool}
        most = max(held.values())
        pool = [n for n in pool if held[n.id] == most]
    elif window is not None:
        # No kind named: the commands of WINDOW holding most of its words, split as a command's are and
        # with their inflections ("the export script": `/opt/ml/bin/export_daily.sh`; "tagging the new
        # version": `git tag -s v0.15.0`), the failed ones when it reports a failure; the latest of them, as
        # of a kind's runs.
        spoken = [w for w in search.terms(naming) if w.lower() not in STOPWORDS]
        words = {w for w in spoken if not _ignorable(w)}
        # Read from the log's rows (the newest KIND_RUNS), the nodes of the chosen alone.
        rows = list(reversed(store.shell_commands_between(*window, newest=KIND_RUNS)))
        parts = {row[0]: word_parts(row[1].lower()) for row in rows}
        held = {row[0]: len(_naming_head(words, parts[row[0]])) for row in rows}
        if failed:
            rows = [row for row in rows if _bad_exit(row[4]) and held[row[0]]] or rows
        most = max((held[row[0]] for row in rows), default=0)
        # Of those, the ones holding most of its words besides ("before starting git bisect": `git bisect
        # start`, not the later `git bisect reset`).
        also = {
            row[0]: len(_naming_head(set(spoken), parts[row[0]]))
            for row in rows
            if most and held[row[0]] == most
        }
        chosen = [row[0] for row in rows if row[0] in also and also[row[0]] == max(also.values())]
        # With no time asked, a month of commands: one word in common ("the desktop app's dev mode" and
        # `adb install app-debug.apk`), or the two ends of a "between", are no anchor; the ranking's words are.
        # A word naming its program is ("the serial console": `picocom`).
        programs = {row[1]: command_head(head_words(row[1]))[:1] for row in rows if row[0] in chosen}
        program = any(_naming_head(words, head) for head in programs.values())
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
# Words that name no subject beside a failure: "which commands failed", "what went wrong last week".
_NOT_A_SUBJECT = frozenset(
    [
        "command",
        "commands",
        "thing",
        "things",
        "stuff",
        "anything",
        "something",
        "happened",
        "happen",
        "went",
        "wrong",
        "did",
        "do",
        "minute",
        "minutes",
        "hour",
        "hours",
        "day",
        "days",
        "week",
        "weeks",
        "night",
        "nights",
        "month",
        "months",
        "year",
        "years",
        "morning",
        "afternoon",
        "evening",
        "ago",
        "past",
        "last",
        "time",
        "times",
        "ran",
        "run",
        "runs",
        "running",
        "tried",
        "try",
        "recently",
        "earlier",
        "today",
        "yesterday",
        "tonight",
        "now",
        "just",
        "few",
        "couple",
        # Prepositions the stopwords miss ("the install onto my phone").
        "onto",
        "upon",
        "toward",
        "towards",
        # "which of my projects had failing tests", "what did I commit in this repo": one project's memory
        # is asked, and every word of it is about that project (its own names: project_names).
        "project",
        "projects",
        "repo",
        "repos",
        "repository",
        "repositories",
        "codebase",
        "codebases",
        # What a failure to start says of a run, and the contractions of its "wouldn't" and "didn't" (the
        # index splits "wouldn't" into "wouldn" and "t"): "the dev server wouldn't start" names the server.
        "start",
        "started",
        "starting",
        "wouldn",
        "couldn",
        "didn",
        "doesn",
        "don",
        "won",
        "isn",
        "wasn",
        "weren",
        "aren",
        "cannot",
    ]
)
# How much of it ran ("the full test suite": with_neighbours prefers such a run).
_NOT_A_SUBJECT |= _WHOLE_WORDS
_UNIT_MS = {"minute": 60_000, "hour": 3_600_000, "day": 86_400_000, "week": 7 * 86_400_000}
_UNIT_MS |= {"month": 30 * 86_400_000, "year": 365 * 86_400_000}
_COUNT = rf"(\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|{timecue.TENS}|few|a few|couple of|a couple of)"
_LAST_SPAN = lazyre.compile(rf"\b(?:last|past)\s+(?:{_COUNT}\s+)?(minute|hour|day|week|month|year)s?\b", re.I)
# "a week ago", and as people say it: "a week or so ago", "a day or two ago", "two and a half hours ago",
# "a few days back".
_AGO_SPAN = lazyre.compile(
    rf"\b{_COUNT}{timecue.HALF}\s+(minute|hour|day|week|month|year)s?{timecue.HALF}{timecue.LOOSELY}\s+(?:ago|back)\b",
    re.I,
)
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_NUMBERS |= {"eight": 8, "nine": 9, "ten": 10, "few": 3, "a few": 3, "couple of": 2, "a couple of": 2}
_NUMBERS |= {"eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50}
_NUMBERS |= {"forty-five": 45, "forty five": 45, "sixty": 60, "ninety": 90}


def a_subject(words: list[str]) -> bool:
    """Whether the question's search words name something besides the failure itself (and its time)."""
    return not all(map(_ignorable, words))


def _count(text: str | None) -> int:
    if not text:
        return 1
    return int(text) if text.isdigit() else _NUMBERS.get(text.lower(), 1)


# Lunch is today's ("what was I doing before lunch"); the hours a user lunches at are not known.
_LUNCH = lazyre.compile(r"\b(?:before|after|since|at|over|until)\s+lunch(?:time)?\b", re.IGNORECASE)


class Window(NamedTuple):
    """A time a question asks about: LOW..HIGH (epoch ms), how to SAY it, and whether it is EXACT (a day
    asked for by name, a date, --since/--until: the window meant, not a vague "lately")."""

    low: int
    high: int
    said: str
    exact: bool = False


def asked_window(question: Question, since: int | None, until: int | None) -> Window | None:
    """The time the question asks about: --since/--until; else the dates it writes (timecue.asked_dates), a
    date, the day before yesterday, yesterday
    (or last night), today (or this morning, before or after lunch), the last N units, this week, N units
    ago (a unit either side, or a quarter of N); None when it names none. And how to say it. The day words
    are the asker's days, in the local time zone (timecue.local_day); a date written out is a UTC day, as
    --since's."""
    if since is not None or until is not None:
        return Window(since or 0, until or 2**62, "in the window asked", exact=True)
    dated = timecue.asked_dates(question.text)
    if dated is not None:  # "between 2019-05-01 and 2019-06-30", "in March 2021": as --since/--until
        return Window(dated.low, dated.high, dated.phrase, exact=True)
    text = question.text.lower()
    cue = question.cue
    if cue is not None and cue.anchor_ms is not None:  # one ISO date: that (UTC) day
        day = cue.anchor_ms - cue.anchor_ms % 86_400_000
        return Window(
            day, day + 86_400_000 - 1, time.strftime("on %Y-%m-%d", time.gmtime(day / 1000)), exact=True
        )
    if "day before yesterday" in text:
        return Window(*timecue.local_day(2), "the day before yesterday", exact=True)
    if "yesterday" in text or "last night" in text:
        return Window(*timecue.local_day(1), "yesterday", exact=True)
    today = ("today", "tonight", "this morning", "this afternoon", "this evening")
    if any(word in text for word in today) or _LUNCH.search(text):
        return Window(timecue.local_day(0)[0], 2**62, "today", exact=True)
    now = int(time.time() * 1000)
    ago = _AGO_SPAN.search(text)
    if ago is not None:
        n, unit = _count(ago.group(1)), _UNIT_MS[ago.group(2).lower()]
        # A unit either side, or a quarter of the count when that is more: "forty minutes ago" is said of
        # anything from half an hour to fifty minutes back.
        spread = max(unit, n * unit // 4)
        return Window(now - n * unit - spread, now - max(0, n * unit - spread), ago.group(0))
    spanned = _LAST_SPAN.search(text)
    last = spanned or re.search(r"\bthis\s+(week|month|year)\b", text)
    if last is not None:
        unit_name = last.group(last.lastindex or 1).lower()
        n = _count(last.group(1)) if spanned is not None else 1
        said = last.group(0).lower()
        return Window(
            now - n * _UNIT_MS[unit_name], 2**62, said if said.startswith("this") else f"in the {said}"
        )
    return None


# The kinds a day asked for by name narrows: what happened that day (a command run, a question asked, a
# commit made). A doc section or a changelog entry is not of a day.
DAY_KINDS = frozenset({"shell_command", "conversation_turn", "git_commit", "code_diff"})


def named_day(text: str) -> Window | None:
    """The day a question names in words ("yesterday", "last night", "the day before yesterday", "today",
    "this morning", "before lunch"): the asker's local day (timecue.local_day); None when it names none.
    Dates and spans ("last week", "3 days ago") are not days named: recency alone weighs them."""
    lowered = text.lower()
    if "day before yesterday" in lowered:
        return Window(*timecue.local_day(2), "the day before yesterday", exact=True)
    if re.search(r"\b(?:yesterday|last night)\b", lowered):
        return Window(*timecue.local_day(1), "yesterday", exact=True)
    if re.search(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", lowered) or _LUNCH.search(text):
        return Window(timecue.local_day(0)[0], 2**62, "today", exact=True)
    return None


def of_the_day(scored: list[tuple[StoredNode, float]], lexical: set[str], day: Window) -> list[StoredNode]:
    """The nodes of SCORED its words matched (LEXICAL) that happened on DAY, of the kinds a day fits
    (DAY_KINDS), in their order: what a question that names a day ("what did the agent try yesterday for the
    failing test") asks about before anything of another day, however well that matched."""
    return [
        node
        for node, _ in scored
        if node.kind in DAY_KINDS and node.id in lexical and day.low <= node.ts <= day.high
    ]


def window_missed(question: Question, scored: list[tuple[StoredNode, float]], top: int) -> str | None:
    """For a question that reports a failure at a time it names in words (yesterday, today, N days ago, the
    last N weeks), how to say that time when none of the first TOP results happened in or near it;
    None otherwise. Nothing of that time came first: what did is an answer to another question, however many
    words it shares ("what did I do when the docker build failed yesterday", with no build yesterday, drew
    the passing `docker compose up` of other weeks). Only a reported failure: elsewhere such words are as
    often the question's data ("a datetime from 60 minutes ago gives None", "the names they have today",
    eight questions of the real-repository sets, none of them a failure report), and so is a date written
    out ("checking '1963-06-19' crashes"). Nor when it asks how to do something, or a doc section comes first:
    a guide is timeless ("docker build failed yesterday with no space left on device, how do I fix it?" is
    answered by the README's section on it, whenever that was written)."""
    if question.cue is None or question.cue.anchor_ms is not None or not question.failure or not scored:
        return None
    if question.asks == "usage" or scored[0][0].kind == "doc_section":
        return None
    asked = asked_window(question, None, None)
    if asked is None:
        return None
    low, high, span, _exact = asked
    # People speak of time loosely ("yesterday" just after midnight, "last week" for the one before): the
    # window is widened by its own length either side, a day at least, before nothing in it counts.
    end = min(high, int(time.time() * 1000))
    pad = max(86_400_000, end - low)
    if any(low - pad <= node.ts <= high + pad for node, _ in scored[:top]):
        return None
    return span


def _failure_window(
    question: Question, reference: int | None, since: int | None, until: int | None, *, named: bool = False
) -> Window:
    """The window to list failures in: the one the question asks about (_asked_window); else the week up
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
        failed = _newest_kept(
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


# How many nodes _newest_kept reads at a time: a few lists' worth, the author's commands among others'.
KEPT_BATCH = 200


def _newest_kept(
    store: SearchStore, ids: list[str], limit: int, keep: Callable[[StoredNode], bool]
) -> list[StoredNode]:
    """The first LIMIT nodes of IDS (newest first) that KEEP keeps (an --author filter's), read a batch at a
    time: another author's commands are read past."""
    kept: list[StoredNode] = []
    for start in range(0, len(ids), KEPT_BATCH):
        chunk = ids[start : start + KEPT_BATCH]
        nodes = store.get_many(chunk, light=True)
        kept += [nodes[i] for i in chunk if i in nodes and keep(nodes[i])]
        if len(kept) >= limit:
            break
    return kept[:limit]


def by_author(author: str | None) -> str:
    """ "by NAME " for a note under --author AUTHOR ("" without one)."""
    return "" if author is None else f"by {author} "


def nothing_done(author: str | None, span: str) -> str:
    """The note of a recent-work listing that found nothing (SPAN: its window, "held" for all of it)."""
    if author is None:
        return f"no commit or command recorded {span}"
    when = "" if span in ("", "held") else f" {span}"
    return f"no command {by_author(author)}recorded{when}".replace("  ", " ")


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
    of the question (but the failure, its time and the like: _NOT_A_SUBJECT, and the filler of an account
    of it: text.FILLER_WORDS) names one of them; else none ("why does the date test fail on Windows" asks
    about code, not runs), and SCORED unchanged. When none of the runs it names failed in that window, the
    ones that passed are listed instead, and the last value (else False) says so; when none of them ran in
    a window asked for exactly and the question names only kinds of run, the third value is the note saying
    so (else ""). The project's own NAMES
    (project_names: "which tests failed in cJSON today") name no run. AUTHOR (nexusmem.authors): that
    author's runs alone."""
    words = search.terms(without_names(question.search_text, names))  # with the filler: "did make fail"
    subject = {w for w in words if not _ignorable(w)}
    if not subject:
        return scored, [], "", False
    low, high, span, exact = _failure_window(question, store.reference_time(as_of), since, until, named=True)
    everything = store.shell_commands_between(low, high)
    kinds = runs_named(question.text)
    passed = False
    # What follows a failure in the past says how it failed ("ran out of GPU memory", "couldn't find
    # docker"), in words no command line holds: the run it names is what comes before ("which training run").
    head = search.terms(without_names(before_failure(question.search_text), names))
    before = {w for w in head if not _ignorable(w)}

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
# Words of such a question that ask nothing more (with _ignorable's).
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
    failure and its time (_ignorable), the fix's words (_FIX_WORDS), ALSO, nor filler."""
    words = search.terms(without_names(question.search_text, names))
    return {w for w in words if not _ignorable(w) and w not in _FIX_WORDS and w not in also} - FILLER_WORDS


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
# Words of such a question that say only that it got working (with _FIX_WORDS and _ignorable's).
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
            held = _naming_head(subject, word_parts(row[1].lower()))
            held |= {w for runs in kinds if is_run(said, runs) for w in subject & runs.words}
            # Half its words, or its program ("the stale terraform lock": `terraform plan`); not one word of
            # an argument ("the container-based order tests": `kubectl rollout status deploy/order-service`).
            program = command_head(head_words(resolved.failed_part(row[1])))[:1]
            if held and (2 * len(held) >= len(subject) or _naming_head(subject, program)):
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
            names = _naming_head(subject, command_head(head_words(resolved.failed_part(row[1]))))
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


def _naming_head(subject: set[str], head: list[str]) -> set[str]:
    """The words of SUBJECT that name a command whose program and first word are HEAD (command_head): one of
    them, a part of one (`train` of `train.py`, `features` of `build_features.py`), or an inflection of such
    a part either way (_bases: "training" names `train.py`, "feature" `build_features.py`)."""
    parts = {*head, *(part for word in head for part in word_parts(word))}
    inflected = {base for part in parts for base in word_bases(part)}
    return {
        w
        for w in subject
        if w in parts
        or w in inflected
        or not parts.isdisjoint(word_bases(w))
        or not parts.isdisjoint(PROGRAM_NAMES.get(w, ()))
    }


def _ignorable(word: str) -> bool:
    """Whether WORD names nothing besides the failure itself (and its time)."""
    lowered = word.lower()
    return lowered in _NOT_A_SUBJECT or lowered in STOPWORDS or word.isdigit() or reports_failure(word)


def authored_first(
    scored: list[tuple[StoredNode, float]], lexical: set[str]
) -> list[tuple[StoredNode, float]]:
    """SCORED with the commands (and conversation turns) its words matched put first, in their order: a
    question under `--author` asks for that author's work ("what did the agent run on the migrations",
    `--author claude "test_serde"`), which the filter kept but commits and docs sharing its words outranked
    (they pass the filter as context). The rest follows as it was."""
    first = [node for node, _ in scored if node.kind in authors.AUTHORED_KINDS and node.id in lexical]
    return order.put_first(scored, first) if first else scored


# The share of the best matching turn's score a turn needs to come first in conversations_first: a turn that
# shares one common word of the question ("bulk question about buffer advance" of "Chain::advance") is not
# the conversation asked about.
CONVERSATION_SHARE = 0.6


# How many of a day's questions to an agent questions_of_day lists at most (the budget may show fewer).
DAY_QUESTIONS_LISTED = 50


def questions_of_day(
    store: SearchStore, day: Window, agent: str | None, as_of: int | None
) -> list[StoredNode]:
    """The conversation turns of DAY that hold a question the person typed, to AGENT (None: any agent), newest
    first, DAY_QUESTIONS_LISTED at most: what "what did I ask claude yesterday" asks for, whatever their
    words."""
    ids = store.newest_of_kind("conversation_turn", day.low, day.high, DAY_QUESTIONS_LISTED * 4)

    def asked(node: StoredNode) -> bool:
        mine = order.authored(authors.ME, node, store.member)
        return mine and order.within(node, as_of, None, None) and authors.keeps(agent, node.kind, node.meta)

    return _newest_kept(store, ids, DAY_QUESTIONS_LISTED, asked)


def conversations_first(
    scored: list[tuple[StoredNode, float]],
    lexical: set[str],
    asked: ConversationAsk,
    day: Window | None = None,
) -> list[StoredNode]:
    """The conversation turns of SCORED its words matched (LEXICAL) nearly as well as the best one
    (CONVERSATION_SHARE), in their order, to put first for a question that ASKED what was said to an agent:
    those of the agent it names before the others'; only those of the DAY it names (named_day), if any."""
    matched = [
        (node, value) for node, value in scored if node.kind == "conversation_turn" and node.id in lexical
    ]
    if day is not None and any(day.low <= node.ts <= day.high for node, _ in matched):
        matched = [(node, value) for node, value in matched if day.low <= node.ts <= day.high]
    best = matched[0][1] if matched else 0.0
    turns = [node for node, value in matched if value >= CONVERSATION_SHARE * best]
    if asked.agent is None:
        return turns
    named = [node for node in turns if authors.keeps(asked.agent, node.kind, node.meta)]
    ids = {node.id for node in named}
    return named + [node for node in turns if node.id not in ids]


# "What was my last commit?", "what have I been doing?", "what did I run?": recent work asked about with
# nothing named is answered by the newest work of the question's time, newest first (with no time named, the
# newest held): its commits when it asks for commits, its commands when it asks what was run or tried, else
# both, in one timeline. No node holds the word "commit".
ACTIVITY_LISTED = 10
_ASKS_RECENT = lazyre.compile(
    r"\b(?:last|latest|newest|recent|recently|lately|yesterday|today|tonight|ago|so far"
    r"|this (?:morning|afternoon|evening|week|month)|just now)\b",
    re.IGNORECASE,
)
# A question about one's own doings asks about lately by its grammar, with no time word: "what have I been
# doing", "what was I working on", "what did I run", "what have I been up to", "where was I".
_ASKS_OWN_WORK = lazyre.compile(
    r"\bwhat\s+(?:have|had|did|do|was|were|am|are|has|is)\s+(?:i|we|(?:the|my|our)\s+agents?|"
    r"claude(?:\s+code)?|codex|gemini|cursor|copilot)\s+(?:just\s+|been\s+)?"
    r"(?:doing|done|do|did|working|work|worked|up\s+to|busy\s+with|running|run|ran|trying|tried|try"
    r"|committing|committed|commit|changing|changed|change|pushed|push|typing|typed|type)\b"
    r"|^\W*where\s+(?:was|were)\s+(?:i|we)\W*$|\bwhere\s+did\s+(?:i|we)\s+leave\s+off\b",
    re.IGNORECASE,
)
_ASKS_COMMANDS = lazyre.compile(
    r"\b(?:ran|run|runs|running|command|commands|typed|typing|executed|terminal|shell)\b", re.I
)
# What was tried is what was run ("what did I try last"): read only where nothing else is named (the recent-work
# listing); a symptom story's "I tried setting X" is no question about commands.
_ASKS_TRIED = lazyre.compile(r"\b(?:try|tried|tries|trying|attempt|attempted|attempts)\b", re.I)
_ASKS_COMMITS = lazyre.compile(
    r"\b(?:commit|commits|committed|committing|change|changes|changed|changing|merged)\b", re.I
)
# "the last 3 commits": a count of items; "the last 2 days" is a time (_LAST_SPAN), no count.
_LAST_COUNT = lazyre.compile(
    r"\b(?:last|latest|newest|recent)\s+(\d+|two|three|four|five|six|seven|eight|nine|ten)\s+"
    r"(?!(?:minute|min|hour|hr|day|week|wk|month|year|yr)s?\b)\w+",
    re.I,
)


def asked_count(text: str) -> int | None:
    """How many of the newest items TEXT asks for ("show my last 3 commits": 3; activity_first lists that
    many, and so does an answer merged from several projects' listings); None when it names no count."""
    wanted = _LAST_COUNT.search(text)
    return min(_count(wanted.group(1)), ACTIVITY_LISTED * 5) if wanted else None


# Words that name no subject beside the work itself: "what have I been doing", "show my latest commits".
_NOT_A_TOPIC = _NOT_A_SUBJECT | frozenset(
    [
        "commit",
        "commits",
        "committed",
        "committing",
        "change",
        "changes",
        "changed",
        "changing",
        "work",
        "worked",
        "working",
        "doing",
        "done",
        "been",
        "have",
        "has",
        "what",
        "run",
        "ran",
        "runs",
        "typed",
        "typing",
        "tried",
        "try",
        "tries",
        "trying",
        "attempt",
        "attempted",
        "attempts",
        "executed",
        "terminal",
        "shell",
        "push",
        "pushed",
        "merged",
        "latest",
        "newest",
        "recent",
        "lately",
        "show",
        "list",
        "tell",
        "give",
        "activity",
        "history",
        "progress",
        "up",
        "busy",
        "leave",
        "lunch",
        "lunchtime",
    ]
)


# "What changed in bottle.py today?", "what did I change in cJSON.c recently?": a file of the repository and a
# time, with nothing else asked about, are answered by the commits that touched that file in that time, newest
# first (at most FILE_CHANGES_IN_WINDOW), or with no window ("recently") by its newest FILE_CHANGES_LISTED.
# Ranked, old commits whose titles say "changed" won: the file's name is in most of its commits (it weighs
# little), and a time cue lifts a fresh match by 3× at most.
FILE_CHANGES_LISTED = 10
FILE_CHANGES_IN_WINDOW = 50
_ASKS_CHANGED = lazyre.compile(
    r"\bwhat(?:'s|\s+has|\s+have|\s+had)?\s+(?:been\s+|got\s+)?(?:changed|modified|touched)\b"
    r"|\bwhat\s+(?:was|were|got|has\s+been|have\s+been)\s+(?:changed|modified|touched)\b"
    r"|\bwhat\s+(?:did|have|has|had)\s+(?:i|we|you|they|someone|anyone|somebody|anybody)\s+"
    r"(?:change|changed|modify|modified|touch|touched)\b"
    r"|\bwhat\s+changes\s+(?:were|have\s+been|did\s+(?:i|we)|got)\s+(?:made|make)\b"
    r"|\bwhich\s+(?:commits?|changes)\s+(?:changed|modified|touched)\b",
    re.IGNORECASE,
)
# "Who changed toml_file.py last", "when was X last changed", "what changed in X" (no time named), "history of
# X", "X's history", "recent changes to X": the file's history is asked for as much as by "what changed in X
# recently", and is answered by the same listing (newest first, renames followed). Ranked, a 2021 commit
# whose message said "changed" came first, the file's last commit 13th, docs and other files among them.
_ASKS_FILE_HISTORY = lazyre.compile(
    r"\bwho\s+(?:last\s+|most\s+recently\s+)?(?:changed|modified|touched|edited|updated|committed\s+to)\b"
    r"|\bwhen\s+(?:was|were|did)\b.*?\blast\s+(?:changed|modified|touched|edited|updated|change|modify|touch"
    r"|edit|update)\b"
    r"|\bhistory\b|\bgit\s+log\b"
    r"|\b(?:changes|commits|edits)\s+(?:to|in|of|on|touching)\b",
    re.IGNORECASE,
)
# "Who changed X last", "when was X last changed": the last change and its author are said (_last_change_note).
_ASKS_LAST_CHANGE = lazyre.compile(
    r"\bwho\s+(?:last\s+|most\s+recently\s+)?(?:changed|modified|touched|edited|updated|committed\s+to)\b"
    r"|\bwhen\s+(?:was|were|did)\b.*?\blast\s+(?:changed|modified|touched|edited|updated|change|modify|touch"
    r"|edit|update)\b",
    re.IGNORECASE,
)
# A word of a question about a file's changes that asks nothing more (with _NOT_A_TOPIC).
_FILE_CHANGE_WORDS = frozenset(
    [
        "file",
        "files",
        "modified",
        "modify",
        "touched",
        "touch",
        "made",
        "make",
        "got",
        "which",
        "who",
        "when",
        "last",
        "edited",
        "edit",
        "edits",
        "updated",
        "update",
        "log",
        "git",
        "most",
        "ever",
    ]
)
_FILE_LIKE = lazyre.compile(r"[\w.@+-]+(?:/[\w.@+-]+)*")


class NamedFile(NamedTuple):
    """The file a question names (_file_named): its PATH, the WORD that names it, and the OTHER paths that
    word names too (a bare `datetime.js` for `src/datetime.js` and `benchmarks/datetime.js`)."""

    path: str
    word: str
    others: tuple[str, ...] = ()


# At most this many paths sharing one name are compared (_file_named): one query each.
SHARED_NAME_PATHS = 20


def _file_named(store: SearchStore, text: str) -> NamedFile | None:
    """The one file of the repository TEXT names (its path from the root, or a name a commit touched a path
    ending in, in any case: the exact case first), and the word that names it; None when it names none, or
    two files. A name several paths end in ("datetime.js": `src/datetime.js`, `benchmarks/datetime.js`;
    guzzle's `CurlFactory.php`, moved four times) names the one of them changed last that is still in the
    work tree as far as memory knows (_newest_of), and the others are kept to say so."""
    found: dict[str, NamedFile] = {}
    for raw in text.split():
        word = raw.strip("`'\"()[]{}<>,;:!?").removesuffix("'s").rstrip(".").removeprefix("./")
        if not _FILE_LIKE.fullmatch(word) or ("/" not in word and not re.search(r"\w\.\w", word)):
            continue
        paths = store.commit_paths_ending(word.strip("/"))
        whole = [path for path in paths if path == word]  # `bottle.py` beside `test/bottle.py`
        exact = [path for path in paths if path.endswith("/" + word)]
        paths = whole or exact or paths
        if len(paths) == 1:
            found.setdefault(paths[0], NamedFile(paths[0], raw))
        elif paths:
            newest = _newest_of(store, paths[:SHARED_NAME_PATHS])
            if newest is not None:
                found.setdefault(newest, NamedFile(newest, raw, tuple(p for p in paths if p != newest)))
    return next(iter(found.values())) if len(found) == 1 else None


def _newest_of(store: SearchStore, paths: list[str]) -> str | None:
    """Of PATHS, the one a commit changed last, among those the last structure pass found in the work tree
    when it found any of them (a file moved or deleted since is not the one meant); None when none was."""
    # The files of the work tree the structure pass read (a local store's; the team store holds none).
    blobs: Callable[[], dict[str, str]] | None = getattr(store, "import_blobs", None)
    tracked = blobs() if blobs is not None else {}
    kept = [path for path in paths if path in tracked] or paths
    newest: tuple[int, str] | None = None
    for path in kept:
        ids = store.commits_touching([path], 0, 2**62, 1)
        node = store.get_many(ids, light=True).get(ids[0]) if ids else None
        if node is not None and (newest is None or node.ts > newest[0]):
            newest = (node.ts, path)
    return newest[1] if newest is not None else None


def file_changes_first(
    store: SearchStore,
    scored: list[tuple[StoredNode, float]],
    question: Question,
    names: frozenset[str],
    *,
    as_of: int | None,
    since: int | None,
    until: int | None,
) -> tuple[list[tuple[StoredNode, float]], list[StoredNode], str | None]:
    """For a question that asks what changed in one file of the repository (at a time it names, or none) and
    nothing else ("what changed in bottle.py today", "what did I change in cJSON.c recently", "who changed
    bottle.py last", "history of bottle.py"; not "why was the router changed in bottle.py"): SCORED with the commits that touched that file in that window put first,
    newest first (with no window, "recently": its newest FILE_CHANGES_LISTED), and nothing else; those
    commits; the note that says what was listed, or that no commit touched it then (and SCORED unchanged).
    (SCORED, [], None) for any other question. NAMES are the project's (project_names): no topic."""
    if not (_ASKS_CHANGED.search(question.text) or _ASKS_FILE_HISTORY.search(question.text)):
        return scored, [], None
    named = _file_named(store, question.search_text)
    if named is None:
        return scored, [], None
    path, word, others = named
    # "Since 2024-07-01", "in July 2024": the dates written are the window, as --since/--until (not words).
    dated = timecue.dated_window(question.text) if since is None and until is None else None
    said_text = question.search_text.replace(dated.phrase, " ") if dated is not None else question.search_text
    rest = without_names(said_text.replace(word, " "), names)
    if any(
        w not in _NOT_A_TOPIC and w not in _FILE_CHANGE_WORDS and w not in STOPWORDS and not w.isdigit()
        for w in search.terms(rest)
    ):
        return scored, [], None  # something more is asked about: the ranking answers
    asked = (
        Window(dated.low, dated.high, dated.phrase, exact=True)
        if dated is not None
        else asked_window(question, since, until)
    )
    # The file's history goes on under the names it had before a rename (`git log --follow`).
    former = search.former_names(store, path)
    before = (
        " (named " + ", ".join(f"{n.path} before {n.renamed[:10]}" for n in former[1:] if n.renamed) + ")"
        if len(former) > 1
        else ""
    )
    low, high = (0, 2**62) if asked is None else asked[:2]
    ids = _touching(
        store, former, low, high, FILE_CHANGES_LISTED if asked is None else FILE_CHANGES_IN_WINDOW
    )
    said = (
        f"the newest commits that changed {path}{before}"
        if asked is None
        else (f"the commits that changed {path}{before} {asked[2]}")
    )
    # A path renamed away (`git mv src/gamma.py lib/delta.py`) was changed by that rename too, as `git log --
    # src/gamma.py` shows it first (the commit's files name the new path only); and where it went is said.
    away = [(new, sha, ts) for old, new, sha, ts in store.renames_of([path]) if old == path and new != path]
    for _new, sha, ts in away:
        if low <= ts <= high:
            ids += [i for i in store.commits_by_sha(sha) if i not in ids]
    if away:
        question.notes.append(_renamed_away_note(store, path, away, ids))
    # The file's former names are no other file of that name.
    others = tuple(other for other in others if other not in {name.path for name in former})
    nodes = store.get_many(ids, light=True)
    listed = sorted(
        (nodes[i] for i in ids if i in nodes and order.within(nodes[i], as_of, since, until)),
        key=lambda node: (-node.ts, node.id),
    )[: FILE_CHANGES_LISTED if asked is None else FILE_CHANGES_IN_WINDOW]
    # Which of the paths sharing its name was meant is said, and how to ask for another.
    shared = (
        f" ({_bare(word)} also names {_paths_said(others)}: ask with the full path for another)"
        if others
        else ""
    )
    if not listed:
        nothing = f"no commit changed {path}{before} {asked[2] if asked else ''}".rstrip()
        if dated is None:
            return scored, [], nothing + shared
        # "Since 2026-07-01" written in the question: the ranking would answer from every time, with the
        # dates read as words. Nothing of the window is listed, and the note names the file's last change.
        last = store.get_many(_touching(store, former, 0, dated.low - 1, 1), light=True) if dated.low else {}
        said_last = next(
            (
                f"; its last change: {node.ref[:10]} ({timefmt.iso(node.ts)[:10]})"
                for node in last.values()
                if order.within(node, as_of, since, until)
            ),
            "",
        )
        return [], [], nothing + said_last + shared
    if _ASKS_LAST_CHANGE.search(question.text):
        question.notes.append(_last_change_note(path, listed[0]))
    return order.listed_first(scored, listed), listed, f"first: {said}, newest first{shared}"


def renamed_file(store: SearchStore, question: Question, name: str) -> tuple[str, str] | None:
    """(The sha of the rename that took it away, the note) when NAME, asked whether it was removed or is
    still in the code, is a file (the path the question writes) renamed away (`git mv`) with no later file
    of that name: a renamed file was not removed. The note follows its renames (search.later_renames) and
    says whether the last name is in the work tree as far as the structure pass saw it."""
    named = _file_named(store, question.search_text)
    if named is None or name.strip("`") not in named.word:
        return None
    path = named.path
    away = sorted(
        (ts, sha, new) for old, new, sha, ts in store.renames_of([path]) if old == path and new != path
    )
    if not away or store.commits_touching([path], away[0][0] + 1, 2**62, 1):
        return None  # never renamed, or a later file took the name (that file is the one asked about)
    ts, sha, new = away[0]
    steps = [(new, sha, ts), *search.later_renames(store, new, ts)]
    now, renamed = steps[-1][0], search.renames_said(steps)
    blobs: Callable[[], dict[str, str]] | None = getattr(store, "import_blobs", None)
    tracked = blobs() if blobs is not None else {}
    if now in tracked:
        if question.still:
            return sha, f"yes: {path} is still in the code as {now} ({renamed})"
        return sha, f"{path} was not removed: it was {renamed}, and is still in the code as {now}"
    kind = now.rpartition(".")[2]
    if tracked and any(p.rpartition(".")[2] == kind for p in tracked):
        return sha, f"{path} was {renamed}; {now} is not in the work tree any more"
    return sha, f"{path} was not removed: it was {renamed}"


def lifted(store: SearchStore, hits: list[tuple[str, float]], sha: str) -> list[tuple[str, float]]:
    """HITS (id, BM25 score) with the commit SHA scored search.ORIGIN_LEAD × their best (added when HITS
    lacks it), best first: the change a note names comes first, as search.holder puts its own."""
    ids = store.commits_by_sha(sha)
    if not ids or not hits:
        return hits
    best = max(score for _, score in hits)
    scores = dict(hits)
    for node_id in ids:
        scores[node_id] = max(scores.get(node_id, 0.0), best * search.ORIGIN_LEAD)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


def _renamed_away_note(
    store: SearchStore, path: str, away: list[tuple[str, str, int]], ids: list[str]
) -> str:
    """Where the file PATH named went (AWAY: its renames from PATH, newest first), and the name it has now;
    or, when a later file took the name PATH (a commit of IDS touched PATH after that rename), that the
    earlier one went there and when this one was added."""
    new, sha, ts = away[0]
    steps = [(new, sha, ts), *search.later_renames(store, new, ts)]
    now = steps[-1][0]
    nodes = store.get_many(ids, light=True)
    taken = sorted(
        (node for node in nodes.values() if node.ts > ts and path in store.files_of(node.id)),
        key=lambda node: (node.ts, node.id),
    )
    if taken:
        return (
            f"an earlier {path} was {search.renames_said(steps)}; this one was added in {taken[0].ref[:10]}"
        )
    return (
        f"{path} is now {now} (renamed in {sha[:10]})"
        if len(steps) == 1
        else f"{path} is now {now} ({search.renames_said(steps)})"
    )


def _last_change_note(path: str, last: StoredNode) -> str:
    """What "who changed PATH last" asks: the LAST commit that changed it, when, and by whom."""
    author = order.commit_author(last)
    return f"the last change to {path}: {last.ref[:10]} ({timefmt.iso(last.ts)[:10]})" + (
        f" by {author}" if author else ""
    )


def _touching(store: SearchStore, names: list[search.FileName], low: int, high: int, limit: int) -> list[str]:
    """Ids of the LIMIT newest commits (each name's: merged by the caller) that changed the file under one
    of its NAMES while it had that name, within LOW..HIGH."""
    ids: dict[str, None] = {}
    for name in names:
        start, end = max(low, name.low), min(high, name.high)
        if start <= end:
            ids.update(dict.fromkeys(store.commits_touching([name.path], start, end, limit)))
    return list(ids)


def _bare(word: str) -> str:
    return word.strip("`'\"()[]{}<>,;:!?").removesuffix("'s").rstrip(".").removeprefix("./")


def _paths_said(paths: tuple[str, ...], shown: int = 3) -> str:
    said = ", ".join(paths[:shown])
    return said + (f" and {len(paths) - shown} more" if len(paths) > shown else "")


def project_names(store: SearchStore, project: str | None) -> frozenset[str]:
    """What memory knows this project by, lower-cased: PROJECT (its folder's name, as `query` is given it)
    and the last part of the project id its nodes are written under (the origin remote's repository name,
    `github.com/davegamble/cjson` → cjson; a repository with no remote is known by its root, its folder
    again). A store that keeps no id (the team store) gives PROJECT alone."""
    names = {project} if project else set()
    recorded = store.get_meta(PROJECT_ID_KEY)
    if recorded:
        last = recorded.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
        names.add(last.removesuffix(".git"))
    return frozenset(name.lower() for name in names if name.strip())


def without_names(text: str, names: frozenset[str]) -> str:
    """TEXT with each mention of one of NAMES (the project's: project_names) taken out, in any case: a word of
    its own ("what did I commit in cJSON yesterday", "cJSON's tests"), not part of a longer word, a file name
    (`cJSON.c`) or a path (`src/bottle`): "in cJSON" names the project asked anyway, no topic."""
    for name in names:
        text = re.sub(rf"(?<![\w./\\-]){re.escape(name)}(?![\w/\\-]|\.\w)", " ", text, flags=re.IGNORECASE)
    return text


def asks_recent_work(question: Question, words: list[str], since: int | None, until: int | None) -> bool:
    """Whether QUESTION asks what was done lately (or in a window) without naming anything it was about."""
    if question.failure or question.then is not None:
        return False
    timed = question.cue is not None or since is not None or until is not None
    text = question.text
    own = _ASKS_OWN_WORK.search(text)
    if not timed and own is None and not any(rule.search(text) for rule in (_ASKS_RECENT, _LUNCH)):
        return False
    # Who did it ("what did the agent run", "what has codex been doing": with --author) names no topic.
    doer = set(re.findall(r"\w+", own.group(0).lower())) if own is not None else set()
    return not any(
        w.lower() not in _NOT_A_TOPIC and w.lower() not in doer and w not in STOPWORDS and not w.isdigit()
        for w in words
    )


def _asked_kinds(text: str) -> tuple[str, ...]:
    """The kinds of node a recent-work question asks for: commands when it asks what was run or tried, commits
    when it asks for commits (or changes) alone, else both: "what have I been doing", "which push did I do"
    (a push is a command, and what it sent its commits)."""
    commands = _ASKS_COMMANDS.search(text) is not None or _ASKS_TRIED.search(text) is not None
    commits = _ASKS_COMMITS.search(text) is not None
    if commands and not commits:
        return ("shell_command",)
    if commits and not commands:
        return ("git_commit",)
    return ("git_commit", "shell_command")


def activity_first(
    store: SearchStore,
    scored: list[tuple[StoredNode, float]],
    question: Question,
    *,
    as_of: int | None,
    since: int | None,
    until: int | None,
    author: str | None = None,
) -> tuple[list[tuple[StoredNode, float]], list[StoredNode], str]:
    """SCORED with the newest work of the question's window put first, newest first: its commits, its commands
    (when it asks what was run, or when no commit falls in the window), or both interleaved (the newest
    ACTIVITY_LISTED of each) when it asks neither ("what have I been doing"); those listed (none: nothing in
    the window, SCORED unchanged); how to say what was listed. Under AUTHOR (nexusmem.authors) the commands
    are that author's; an agent's work is its commands alone (no commit says which agent made it)."""
    asked = asked_window(question, since, until)
    low, high, span, _exact = asked if asked is not None else Window(0, 2**62, "")
    wanted = asked_count(question.text)
    limit = wanted or ACTIVITY_LISTED
    kinds = _asked_kinds(question.text)
    agent = author is not None and author != authors.ME
    if agent and "shell_command" in kinds:
        kinds = ("shell_command",)

    def newest(kind: str) -> list[StoredNode]:
        return _newest_work(store, kind, low, high, limit, as_of, author)

    if len(kinds) == 1:
        # "What did I run today?" with no command logged today but a commit made: the commit is the work
        # done (the hooks log no command, or none was run here), not "nothing recorded today". Not an
        # agent's, nor yours under --author me when memory holds no command of yours at all: another
        # person's commits are no account of what it (or you) ran.
        other = "shell_command" if kinds[0] == "git_commit" else "git_commit"
        listed = newest(kinds[0]) or ([] if agent or none_held(store, author) else newest(other))
    else:
        both = [*newest("git_commit"), *newest("shell_command")]
        listed = sorted(both, key=lambda node: (-node.ts, node.id))[: limit if wanted else len(both)]
    if not listed:
        return scored, [], span or "held"
    # A run it names comes first among them ("which push did I do about an hour ago": the `git push`).
    subject = {w for w in search.terms(question.search_text) if not _ignorable(w)}
    named = [
        node
        for node in listed
        if node.kind == "shell_command" and _naming_head(subject, command_head(head_words(node.ref)))
    ]
    listed = [*named, *(node for node in listed if node not in named)]
    shown = {node.kind for node in listed}
    what = "commits" if "git_commit" in shown else "commands run"
    if len(shown) > 1:
        what = "commits and commands run"
    none_run = (
        f" (no command {by_author(author)}recorded{f' {span}' if span else ''})"
        if kinds == ("shell_command",) and "git_commit" in shown
        else ""
    )
    return order.listed_first(scored, listed), listed, f"the newest {what} {span}".strip() + none_run


# How many of the newest commands _newest_work reads at most to find an author's among others' (and the work
# among NexusMem's own lines).
AUTHORED_SCAN = 20_000


def none_held(store: SearchStore, author: str | None) -> bool:
    """Whether memory holds no command at all of AUTHOR (None: anyone's, never)."""
    return author is not None and not authors.held_by(author, store.command_authors())


def _newest_work(
    store: SearchStore, kind: str, low: int, high: int, limit: int, as_of: int | None, author: str | None
) -> list[StoredNode]:
    """The LIMIT newest nodes of KIND within LOW..HIGH recorded by AS_OF that AUTHOR's filter keeps, reading
    past other authors' and NexusMem's own lines (`nexusmem query "…" | tee out.txt`: the questions asked of
    it, no work done; is_own_line), AUTHORED_SCAN at most."""
    count = limit * 4
    while True:
        ids = store.newest_of_kind(kind, low, high, count)
        kept = _newest_kept(
            store,
            ids,
            limit,
            lambda node: (
                order.passes(node, as_of, None, None, author, store.member) and not order.is_own_line(node)
            ),
        )
        if len(kept) >= limit or len(ids) < count or count >= AUTHORED_SCAN:
            return kept
        count = min(count * 8, AUTHORED_SCAN)


@dataclass
class Listing:
    """What the recent-work rules put first for a question (listing), and what the answer says of it."""

    scored: list[tuple[StoredNode, float]]
    # What a rule listed in time order (the failures, or the newest work, of the question's time), and its note.
    listed: list[StoredNode]
    note: str | None
    count: int | None  # how many of the newest it asked for (asked_count), when it asked for the newest work
    answered_by: str | None
    pinned: list[str]
    whole: frozenset[str]  # the ids to pack all (what was tried before a fix, the fix and its patch)
    work: bool  # a listing of the newest work (activity_first)
    file_said: bool  # a question about one file's changes, answered by its own note (file_changes_first)


def listing(
    store: SearchStore,
    scored: list[tuple[StoredNode, float]],
    question: Question,
    found: dict[str, Evidence],
    words: list[str],
    project: str | None,
    *,
    answered_by: str | None,
    pinned: list[str],
    as_of: int | None,
    since: int | None,
    until: int | None,
    author: str | None,
) -> Listing:
    """The recent-work rules for QUESTION over SCORED (ranked, with FOUND its evidence and WORDS its searched
    words), in order, each only when none before it answered (ANSWERED_BY: what a rule of retrieve.query put
    first): a file's changes, what was tried before a fix, what was run next or before, the fix of a failure,
    how a run was got working, the failed runs, the newest work. Each appends its note to QUESTION's."""
    listed: list[StoredNode] = []
    listing_note: str | None = None
    listing_count: int | None = None
    whole: frozenset[str] = frozenset()
    # "What did I commit in cJSON yesterday", "which tests failed in this repo": the project's own name says
    # which memory is asked (this one), not what about; the rules below read the question without it.
    names = project_names(store, project) if answered_by is None else frozenset()
    file_said = False  # a question about one file's changes, answered by its own note (file_changes_first)
    if answered_by is None and question.then is None and not question.failure:
        scored, listed, listing_note = file_changes_first(
            store, scored, question, names, as_of=as_of, since=since, until=until
        )
        if listing_note is not None:
            file_said = True
            question.notes.append(listing_note)
            if not listed:
                listing_note = None  # nothing then: said, and answered by the ranking below
    attempts = (
        attempts_before_fix(store, question, as_of=as_of, since=since, until=until, names=names)
        if question.then == "before" and answered_by is None and asks_before_fix(question.text)
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
            for patch in [fix_patch(store, attempts.failure.ref, node.ref)]
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
        whole = frozenset(node.id for node in listed)
        answered_by = attempts.failure.id
        question.notes.append(
            f"first: what was run from `{attempts.failure.ref}` ({exit_text(attempts.failure)},"
            f" {timefmt.iso(attempts.failure.ts)}) up to the fix memory linked to it, oldest first"
        )
    elif question.then is not None:
        ceiling = scored[0][1] if scored else 0.0  # what the commands run next are put above
        scored, anchor = with_neighbours(
            store,
            scored,
            question.then,
            found,
            latest=AGAIN.search(question.text) is not None,
            failed=question.run_failure,
            between=BETWEEN.search(question.text) is not None,
            asked=question.text,
            window=sequence_window(store, question, as_of, since, until),
            timed=asked_window(question, since, until) is not None,
            as_of=as_of,
            since=since,
            until=until,
        )
        if anchor is not None:
            answered_by = anchor.id
            pinned = order.pin([node.id for node, value in scored if value > ceiling], pinned)
            when = "after" if question.then == "after" else "before"
            question.notes.append(
                f"first: what was run {when} `{anchor.ref}` ({exit_text(anchor)}, {timefmt.iso(anchor.ts)})"
            )
    if listed:
        answered_by = listed[0].id
    if answered_by is None and question.then is None and question.failure and asks_fix(question.text):
        scored, listed, failures = fixes_first(
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
    if answered_by is None and question.then is None and asks_got_working(question.text):
        scored, listed, working = got_working_first(
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
    said = set(search.terms(without_names(question.search_text, names))) if names else None
    unnamed = words if said is None else [w for w in words if w in said]
    if asks_failures:
        scored, listed, span, passed = failed_runs_first(
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
    if asks_failures and not listed and not a_subject(unnamed):
        scored, listed, span = failures_first(
            store, scored, question, as_of=as_of, since=since, until=until, author=author
        )
        listing_note = (
            f"first: the commands that failed {span}" + ("" if ", newest first" in span else ", newest first")
            if listed
            else f"no recorded command {by_author(author)}failed {span}"
        )
        question.notes.append(listing_note)
    elif not asks_failures and answered_by is None and asks_recent_work(question, unnamed, since, until):
        recent_work = True
        scored, listed, span = activity_first(
            store, scored, question, as_of=as_of, since=since, until=until, author=author
        )
        listing_count = asked_count(question.text)
        listing_note = f"first: {span}" if listed else nothing_done(author, span)
        question.notes.append(listing_note)
    if listed:
        answered_by = listed[0].id
    return Listing(
        scored, listed, listing_note, listing_count, answered_by, pinned, whole, recent_work, file_said
    )


def exit_text(node: StoredNode) -> str:
    """How a shell command NODE exited, as a note says it: "exit 1", or "exit unknown"."""
    code = node.meta.get("exit")
    return "exit unknown" if code is None else f"exit {code}"
