"""The rules that answer a question about the work of a time: the newest work (`activity_first`), a file's
changes (`file_changes_first`), a day's questions to an agent and the conversations a question asks about,
an author's own work. Each takes the ranked list and returns what to put first, with what to say of it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from nexusmem import authors, lazyre, timefmt
from nexusmem.retrieve import order, search, timecue
from nexusmem.retrieve.intent import ConversationAsk, command_head, head_words
from nexusmem.retrieve.question import Question
from nexusmem.retrieve.worktime import (
    LUNCH,
    NOT_A_SUBJECT,
    Window,
    asked_window,
    by_author,
    ignorable,
    naming_head,
    newest_kept,
    said_count,
    without_names,
)
from nexusmem.store import StoredNode
from nexusmem.store.interface import SearchStore
from nexusmem.text import STOPWORDS


def nothing_done(author: str | None, span: str) -> str:
    """The note of a recent-work listing that found nothing (SPAN: its window, "held" for all of it)."""
    if author is None:
        return f"no commit or command recorded {span}"
    when = "" if span in ("", "held") else f" {span}"
    return f"no command {by_author(author)}recorded{when}".replace("  ", " ")


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

    return newest_kept(store, ids, DAY_QUESTIONS_LISTED, asked)


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
# "the last 3 commits": a count of items; "the last 2 days" is a time (LAST_SPAN), no count.
_LAST_COUNT = lazyre.compile(
    r"\b(?:last|latest|newest|recent)\s+(\d+|two|three|four|five|six|seven|eight|nine|ten)\s+"
    r"(?!(?:minute|min|hour|hr|day|week|wk|month|year|yr)s?\b)\w+",
    re.I,
)


def asked_count(text: str) -> int | None:
    """How many of the newest items TEXT asks for ("show my last 3 commits": 3; activity_first lists that
    many, and so does an answer merged from several projects' listings); None when it names no count."""
    wanted = _LAST_COUNT.search(text)
    return min(said_count(wanted.group(1)), ACTIVITY_LISTED * 5) if wanted else None


# Words that name no subject beside the work itself: "what have I been doing", "show my latest commits".
_NOT_A_TOPIC = NOT_A_SUBJECT | frozenset(
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


def asks_recent_work(question: Question, words: list[str], since: int | None, until: int | None) -> bool:
    """Whether QUESTION asks what was done lately (or in a window) without naming anything it was about."""
    if question.failure or question.then is not None:
        return False
    timed = question.cue is not None or since is not None or until is not None
    text = question.text
    own = _ASKS_OWN_WORK.search(text)
    if not timed and own is None and not any(rule.search(text) for rule in (_ASKS_RECENT, LUNCH)):
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
    subject = {w for w in search.terms(question.search_text) if not ignorable(w)}
    named = [
        node
        for node in listed
        if node.kind == "shell_command" and naming_head(subject, command_head(head_words(node.ref)))
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
        kept = newest_kept(
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
