"""What the recent-work rules (retrieve.runs, retrieve.activity) share: the time a question asks about (`asked_window`,
`named_day`), the words of it that name no run or topic (its failure, its time, the project's own name), how a
word names a command (`naming_head`), and the newest nodes a filter keeps."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import NamedTuple

from nexusmem import lazyre
from nexusmem.retrieve import timecue
from nexusmem.retrieve.intent import PROGRAM_NAMES, reports_failure
from nexusmem.retrieve.question import Question
from nexusmem.store import StoredNode
from nexusmem.store.interface import SearchStore
from nexusmem.store.nodes import PROJECT_ID_KEY
from nexusmem.text import STOPWORDS, word_bases, word_parts

# A run of the whole suite or project a question names ("the full test suite", "the whole build").
WHOLE_WORDS = frozenset(["full", "whole", "entire", "complete"])


# Words that name no subject beside a failure: "which commands failed", "what went wrong last week".
NOT_A_SUBJECT = frozenset(
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
NOT_A_SUBJECT |= WHOLE_WORDS
_UNIT_MS = {"minute": 60_000, "hour": 3_600_000, "day": 86_400_000, "week": 7 * 86_400_000}
_UNIT_MS |= {"month": 30 * 86_400_000, "year": 365 * 86_400_000}
_COUNT = rf"(\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|{timecue.TENS}|few|a few|couple of|a couple of)"
LAST_SPAN = lazyre.compile(rf"\b(?:last|past)\s+(?:{_COUNT}\s+)?(minute|hour|day|week|month|year)s?\b", re.I)
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
    return not all(map(ignorable, words))


def said_count(text: str | None) -> int:
    if not text:
        return 1
    return int(text) if text.isdigit() else _NUMBERS.get(text.lower(), 1)


# Lunch is today's ("what was I doing before lunch"); the hours a user lunches at are not known.
LUNCH = lazyre.compile(r"\b(?:before|after|since|at|over|until)\s+lunch(?:time)?\b", re.IGNORECASE)


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
    if any(word in text for word in today) or LUNCH.search(text):
        return Window(timecue.local_day(0)[0], 2**62, "today", exact=True)
    now = int(time.time() * 1000)
    ago = _AGO_SPAN.search(text)
    if ago is not None:
        n, unit = said_count(ago.group(1)), _UNIT_MS[ago.group(2).lower()]
        # A unit either side, or a quarter of the count when that is more: "forty minutes ago" is said of
        # anything from half an hour to fifty minutes back.
        spread = max(unit, n * unit // 4)
        return Window(now - n * unit - spread, now - max(0, n * unit - spread), ago.group(0))
    spanned = LAST_SPAN.search(text)
    last = spanned or re.search(r"\bthis\s+(week|month|year)\b", text)
    if last is not None:
        unit_name = last.group(last.lastindex or 1).lower()
        n = said_count(last.group(1)) if spanned is not None else 1
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
    if re.search(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", lowered) or LUNCH.search(text):
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


# How many nodes newest_kept reads at a time: a few lists' worth, the author's commands among others'.
KEPT_BATCH = 200


def newest_kept(
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


def naming_head(subject: set[str], head: list[str]) -> set[str]:
    """The words of SUBJECT that name a command whose program and first word are HEAD (command_head): one of
    them, a part of one (`train` of `train.py`, `features` of `build_features.py`), or an inflection of such
    a part either way (text.word_bases: "training" names `train.py`, "feature" `build_features.py`)."""
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


def ignorable(word: str) -> bool:
    """Whether WORD names nothing besides the failure itself (and its time)."""
    lowered = word.lower()
    return lowered in NOT_A_SUBJECT or lowered in STOPWORDS or word.isdigit() or reports_failure(word)


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
