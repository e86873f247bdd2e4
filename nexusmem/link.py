"""Failure → fix linking: for each failed shell command, what later resolved it.

Three independent heuristics, each recorded as its own link relation (a failure may get none, one or all):

- ``retry``: the first later shell command with the same normalised text (whitespace collapsed, trimmed), or
  for a failed pytest node id the same with its file instead (``pytest -q tests/x.py`` for ``pytest -q
  tests/x.py::test_y``), in the same working directory that exited 0 within 24 h (the rule lives in :mod:`nexusmem.resolved`, shared
  with precheck).
- ``commit``: the first git commit made within 24 h after the failure (its committer time, not its author
  time, which an amend, a `--fixup` squashed in or a rebase keep from the commit they rewrite; after the
  failing line ended, not when it started: a commit the line made itself is no fix of it; whole seconds,
  so one of the second the line ended in counts: see :func:`_commits`) that touched a file the failing command
  names (the failure node's ``files``), a file inside a directory it names (``ruff check src/cache``), or the
  file a test file it names tests (``pytest tests/test_cache.py`` → the one ``cache.py`` of the repository,
  ``services/api/tests/test_views.py`` → the one ``views.py`` under ``services/api``; none when there are
  several: the everyday fix edits the code, not its test). The commit may come after the passing retry,
  within an hour of it (edit, re-run, see it pass, commit: the commit records the edit that made it pass),
  but not after the same command failed again once it had passed: that commit answers the later failure.
  Nor is a commit the fix when the next run of the command after it (same normalisation and directory as
  the retry rule) failed again, the command not having passed since the failure and no other commit
  touching those files having come between (:func:`_refuted`): `git commit --no-verify` of the failing
  change is no fix, and the next commit is considered instead. Nor is a commit that replays a change made
  before the failure (meta ``change_made``, :mod:`nexusmem.sources.git.replays`: a rebase or a cherry-pick
  of the commit that broke the test, whose committer time comes after the failure, its patch and author
  time those of a commit made before it). A failure arriving later takes such a link
  away again (its arrival reconsiders the 24 h before it).
- ``discussion``: a conversation turn or session summary that talked about the failure (never a fix:
  precheck does not count it). First the failure's own session (an agent's call: meta ``session`` is its
  turns' ``session_id``): the turn it ran in (the one listing it under "Commands run", else the one under
  way when it ran) or the first one after it, within 24 h, whose own words (not the commands it lists)
  name a word of the command beyond its program (:func:`subject_words`; ``cache`` of ``test_cache``
  is enough). Else the best full-text (BM25) match within ±24 h, of any session, that clearly discusses
  it: its own words hold *every* significant word of the command, and a command whose subject is one word
  (``make docs``, ``npm whoami``) is named as typed ("`make docs` fails"), while a bare program
  (``pytest -x``) is left to its own session. Requiring every word, not any, is what the original learned
  from dogfooding: one shared word as generic as "npm" linked unrelated discussions about half the time;
  the best match alone took a short turn of another session ("fix the giraffe section of the routing
  docs" for ``make docs``) over the turn the command ran in.

Significant words are :func:`nexusmem.text.terms` of the command (English stopwords and one-letter
words removed) minus redaction placeholders, minus the words that only launch each of its commands and
their options (``sudo -u deploy``, ``nice -n 10``, ``time -p``: :mod:`nexusmem.sources.shell.launchers`;
``NAME=value`` settings stay) and minus :data:`GENERIC_WORDS`: launchers, package managers,
interpreters, URL schemes and file-name extensions, which say how something was run rather than what. A command with no
significant word left (``make``, ``npm run``) is never linked by discussion: any turn would match it.

Linking is a pure function of the store: running it twice changes nothing, and the links of every failure it
reconsiders are brought to exactly what the rules give now (stale ones removed). ``since_ms`` limits which
failures are reconsidered; :func:`link_recent` derives it from what was written since the previous run, so a
post-commit auto-sync only looks at the last day or so. "Since" is counted on the store's write sequence
(``Store.write_seq``), not the clock: a millisecond stamp is shared by every write within it, so a clock
watermark either re-reads the writes of its own millisecond or misses some. Callers run these inside
``Store.transaction()``.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from nexusmem import resolved
from nexusmem.redact import PLACEHOLDER_RE
from nexusmem.resolved import DAY_MS
from nexusmem.resolved import normalise as normalise  # re-exported: the rule is shared
from nexusmem.sources.shell.launchers import ASSIGNMENT, command_start, launcher_spans
from nexusmem.store.interface import LinkStore
from nexusmem.text import terms

RETRY = "retry"
COMMIT = "commit"
DISCUSSION = "discussion"
RELATIONS = (COMMIT, DISCUSSION, RETRY)
DISCUSSION_KINDS = ("conversation_turn", "session_summary")
# Kinds whose arrival can create or change a link: failures, retries, commits and discussions.
_LINKED_KINDS = ("shell_command", "git_commit", *DISCUSSION_KINDS)

# How a command was run (or a URL scheme, a file type), not what it was about: never required of a discussion.
GENERIC_WORDS = frozenset(
    {
        "bash",
        "bun",
        "cargo",
        "cfg",
        "cjs",
        "css",
        "deno",
        "env",
        "exec",
        "fish",
        "git",
        "go",
        "html",
        "http",
        "https",
        "ini",
        "js",
        "json",
        "jsx",
        "lock",
        "make",
        "md",
        "mjs",
        "node",
        "npm",
        "npx",
        "pip",
        "pip3",
        "pipx",
        "pnpm",
        "poetry",
        "pwsh",
        "py",
        "python",
        "python3",
        "rs",
        "ruby",
        "run",
        "sh",
        "sudo",
        "time",
        "toml",
        "ts",
        "tsx",
        "txt",
        "uv",
        "uvx",
        "yaml",
        "yarn",
        "yml",
        "zsh",
    }
)


@dataclass
class LinkSummary:
    """What one link run did. ``retry``/``commit``/``discussion`` count the links the rules give for the
    failures considered; ``added``/``removed`` count the rows that changed in the store."""

    since_ms: int | None = None
    failures: int = 0
    retry: int = 0
    commit: int = 0
    discussion: int = 0
    added: int = 0
    removed: int = 0
    seconds: float = 0.0
    skipped: bool = False  # incremental run with nothing new to look at
    notes: list[str] = field(default_factory=list)

    @property
    def links(self) -> int:
        return self.retry + self.commit + self.discussion

    def to_json(self) -> dict[str, Any]:
        """The summary as plain JSON values (for `sync --json`)."""
        return {
            "since": self.since_ms,
            "failures": self.failures,
            "retry": self.retry,
            "commit": self.commit,
            "discussion": self.discussion,
            "added": self.added,
            "removed": self.removed,
            "seconds": round(self.seconds, 3),
            "skipped": self.skipped,
        }


@dataclass(slots=True)
class _Failure:
    id: str
    ts: int  # when the line started
    command: str
    # When it ended (ts + its duration; ts when the log did not say): when the failure was seen.
    ended: int = 0
    retry_id: str | None = None
    retry_ts: int | None = None
    # When the same command (same directory) failed again after passing: a commit from then on is that
    # failure's fix, not this one's.
    failed_again_ts: int | None = None
    # When each run of the same command (same directory, normalised as for a retry) failed, in order: the
    # list its group shares. A commit after which the next run failed again did not fix it (_refuted).
    runs_failed: list[int] = field(default_factory=list)


# A redaction placeholder, typed or short (hooklog.SHORT_PLACEHOLDER, where the typed one does not fit): no
# word of it is a word of the command or of the turn ("redacted" in both is no common subject).
_PLACEHOLDER = re.compile(PLACEHOLDER_RE.pattern + "|«redacted»")


def significant_words(command: str) -> list[str]:
    """The words a discussion must contain, all of them, to be linked to a failure of COMMAND (see module doc)."""
    return [w for w in terms(_unlaunched(_PLACEHOLDER.sub(" ", command))) if w not in GENERIC_WORDS]


def _unlaunched(command: str) -> str:
    """COMMAND without the words that only launch each of its commands (`sudo -u deploy`, `nice -n 10`,
    `time -p`: sources.shell.launchers); its `NAME=value` settings stay."""
    parts = []
    for segment in _SEGMENT_END.split(command):
        words = segment.split()
        dropped = {
            i
            for start, end in launcher_spans(words)
            for i in range(start, end)
            if not ASSIGNMENT.match(words[i])
        }
        parts.append(" ".join(w for i, w in enumerate(words) if i not in dropped) if dropped else segment)
    return " ".join(parts)


def _fts_all(words: list[str]) -> str:
    # Quoted, so FTS5 tokenises each word as it tokenised the text: test_cache becomes the phrase "test cache".
    return " AND ".join('"' + w.replace('"', '""') + '"' for w in words)


def link_failures(store: LinkStore, *, since_ms: int | None = None) -> LinkSummary:
    """Compute failure → fix links for failed shell commands with ts >= SINCE_MS (every one when None).

    Adds missing links (INSERT OR IGNORE) and removes this module's links of those failures that the rules no
    longer give, so the result does not depend on how often or in which order it ran. A full run (SINCE_MS
    None) also records the watermark that :func:`link_recent` starts from. Call inside a transaction.
    """
    started = time.perf_counter()
    stamp = store.write_seq()
    lower = 0 if since_ms is None else since_ms
    summary = LinkSummary(since_ms=since_ms)

    git_runs: list[int] = []
    failures = _retries(store, lower, git_runs)
    summary.failures = len(failures)
    wanted: set[tuple[str, str, str]] = set()
    for f in failures:
        if f.retry_id is not None:
            wanted.add((f.id, f.retry_id, RETRY))
    wanted |= _commits(store, lower, failures, git_runs)
    wanted |= _discussions(store, lower, failures)
    for _, _, relation in wanted:
        if relation == RETRY:
            summary.retry += 1
        elif relation == COMMIT:
            summary.commit += 1
        else:
            summary.discussion += 1

    existing = set(store.failure_links_since(lower, RELATIONS))
    summary.removed = store.delete_links(sorted(existing - wanted))
    summary.added = store.add_links(sorted(wanted - existing))
    relink = store.relink_from()
    if relink is not None and relink >= lower:
        store.clear_relink()  # this run looked at every failure a prune left without its fix
    if since_ms is None:
        store.set_linked_through(stamp)
    summary.seconds = time.perf_counter() - started
    return summary


def incremental_since(store: LinkStore) -> int | None:
    """Where an incremental run must start: 24 h before the oldest event written since the last run.

    None means "everything" (no run recorded yet). Any failure that a node written since then could link,
    or a new failure itself, lies at or after that point: retries and commits come at most 24 h after their
    failure, discussions at most 24 h either side. Returns -1 when nothing relevant was written.
    "Since" is exact: nodes whose write sequence is above the one the previous run saw (runs hold the write
    lock, so no write can fall between reading the sequence and linking).
    """
    mark = store.linked_through()
    if mark is None:
        return None
    oldest = store.min_ts_written_after(mark, _LINKED_KINDS)
    relink = store.relink_from()  # a failure whose fix a prune took away (an amend, a rebase)
    if relink is not None:
        oldest = relink if oldest is None else min(oldest, relink)
    return -1 if oldest is None else oldest - DAY_MS


def link_recent(store: LinkStore) -> LinkSummary:
    """Link only what the nodes written since the previous run can have changed; everything the first time.

    The entry point for hooks (`sync --auto` after a commit): with nothing new it reads one meta row and
    one aggregate. Records the new watermark. Call inside a transaction.
    """
    stamp = store.write_seq()
    since = incremental_since(store)
    if since == -1:
        summary = LinkSummary(skipped=True)
    else:
        summary = link_failures(store, since_ms=since)
    # Linking writes links, never nodes: the sequence read at the start is still the last write.
    store.set_linked_through(stamp)
    return summary


def _retries(store: LinkStore, lower: int, git_runs: list[int] | None = None) -> list[_Failure]:
    """Failures with ts >= LOWER, oldest first, each with its retry (nexusmem.resolved) when there is one.
    GIT_RUNS, when given, gets the times of the commands from a second before LOWER on that may have made a
    commit (_MAKES_A_COMMIT), in order."""
    normalised: dict[tuple[str, str], str] = {}
    durations: dict[str, int] = {}

    def from_lower() -> Iterator[resolved.Command]:
        for node_id, ts, command, cwd, exit_code, duration in store.shell_commands_since(lower - SECOND_MS):
            if git_runs is not None and "git" in command and _MAKES_A_COMMIT.search(command):
                git_runs.append(ts)
            if ts >= lower:
                if isinstance(duration, int) and duration > 0:
                    durations[node_id] = duration
                yield node_id, ts, command, cwd, exit_code

    found, retry_of = resolved.retries(from_lower(), within_ms=DAY_MS, normalised=normalised)
    failures: list[_Failure] = []
    same: dict[tuple[str, str | None], list[_Failure]] = {}
    for node_id, ts, command, cwd, _exit in found:
        failure = _Failure(node_id, ts, command, ts + durations.get(node_id, 0))
        if node_id in retry_of:
            failure.retry_id, failure.retry_ts = retry_of[node_id]
        failures.append(failure)
        text = normalised[(command, cwd)] if cwd is not None else command  # a failure has a folder
        same.setdefault((text, cwd), []).append(failure)
    for runs in same.values():  # oldest first: the first failure after a retry is the "failed again"
        stamps = [g.ts for g in runs]
        for failure in runs:
            failure.runs_failed = stamps
            if failure.retry_ts is not None:
                i = bisect_right(stamps, failure.retry_ts)
                failure.failed_again_ts = stamps[i] if i < len(stamps) else None
    return failures


def _commits(
    store: LinkStore, lower: int, failures: list[_Failure], git_runs: Sequence[int] = ()
) -> set[tuple[str, str, str]]:
    """Commit links: per failure, the earliest commit made after it touching one of its files, a file inside
    a directory it names, or the file a test file it names tests (commits of one second: _in_order). GIT_RUNS: the times of the
    commands that may have made a commit (_retries), in order.

    A commit's time is when it was made (its committer time: an amended fix is made after the failure its
    author time precedes), in whole seconds; the failure's time is when its line ended (its start plus the
    duration the hook logged), as that is when it was seen: a commit made while the line ran is none of its
    fixes (`git commit -qam wip && pytest`: the commit its own line made, the one the test ran on). A commit
    of the second the line ended in may have been made after it, and is taken for its fix unless the line
    itself may make commits, or a command that may started in that second before the line ended."""
    files: dict[str, list[str]] = {}
    named: dict[str, list[str]] = {}  # a tested file's name -> every path a commit gave it (asked once)
    tracked: dict[str, str] | None = None  # the structure pass's files, read when a name is ambiguous
    for node_id, path in store.failure_files_since(lower):
        keys = files.setdefault(node_id, [])
        keys.append(path)
        for name in tested_names(path):
            if name not in named:
                # A test is never the code another test tests (test/main.js beside lib/main.js); of several
                # files of that name, those deleted since (the structure pass no longer holds them) are not
                # either, when that pass reads their language.
                candidates = [p for p in store.commit_paths_ending(name) if not _a_test(p)]
                if len(candidates) > 1:
                    from nexusmem.structure.parse import language as structure_language

                    tracked = store.import_blobs() if tracked is None else tracked
                    alive = [p for p in candidates if p in tracked or structure_language(p) is None]
                    candidates = alive if tracked else candidates
                named[name] = candidates
            subject = _subject(path, name, named[name])
            if subject is not None:
                keys.append(subject)
    if not files:
        return set()
    times: dict[str, list[int]] = {}
    ids: dict[str, list[str]] = {}
    for path, ts, commit_id in store.commit_files_since(lower - SECOND_MS):
        # A commit touching src/cache/lru.py touched what `ruff check src/cache` names, and what a failing
        # tests/test_lru.py tests: index each file under its directories and its name too. Rows come ordered
        # by (time made, id), so every list stays sorted.
        for key in (path, *_parents(path), SUBJECT + path):
            key_ids = ids.setdefault(key, [])
            if key_ids and key_ids[-1] == commit_id:
                continue  # another file of the same commit in this directory
            key_ids.append(commit_id)
            times.setdefault(key, []).append(ts)
    # A commit replaying a change made before it (a rebase, a cherry-pick: meta `change_made`) is no fix of
    # a failure that came after that change was made: the change was there when the command failed.
    replays = store.replays_since(lower - SECOND_MS)
    out: set[tuple[str, str, str]] = set()
    order: dict[str, tuple[int, int]] = {}  # commit id -> (author time, generation), read for ties only
    for f in failures:
        second = f.ended - f.ended % SECOND_MS
        at = bisect_left(git_runs, second)
        ran_on = (  # a commit of this second may have come before the line ended
            at < len(git_runs) and git_runs[at] <= f.ended
        ) or ("git" in f.command and _MAKES_A_COMMIT.search(f.command) is not None)
        after = f.ended if ran_on else second - 1
        # Within 24 h; before the command failed again after passing (that commit answers the later
        # failure); within an hour of the passing re-run (later: a flaky test's pass, then other work).
        until = f.ts + DAY_MS
        if f.failed_again_ts is not None:
            until = min(until, f.failed_again_ts - 1)
        if f.retry_ts is not None:
            until = min(until, f.retry_ts + AFTER_PASS_MS)
        made: dict[str, int] = {}  # every commit in that time touching one of its files
        for path in files.get(f.id, ()):
            path_times = times.get(path)
            if not path_times:
                continue
            path_ids = ids[path]
            for i in range(bisect_right(path_times, after), bisect_right(path_times, until)):
                if replays.get(path_ids[i], path_times[i]) > after:
                    made[path_ids[i]] = path_times[i]
        after_it = _in_order(store, f, made, order)
        for k, (_ts, commit_id) in enumerate(after_it):
            if _refuted(f, after_it, k):
                continue  # the command failed again after it: it did not fix this
            out.add((f.id, commit_id, COMMIT))
            break
    return out


def _in_order(
    store: LinkStore, f: _Failure, made: dict[str, int], order: dict[str, tuple[int, int]]
) -> list[tuple[int, str]]:
    """MADE (commit id -> time made) as (time made, id), in the order to try them as F's fix: by time made;
    among the commits made in one second (a rebase replays every commit in one), one authored at or after
    F's second before one authored before it (the commits the rebase carried along: the one adding the
    failing test, the feature it tests; still the fallback, as a fix squashed into the commit that broke it
    with `--fixup` is), then parent before child (the history's order: the fix before its tidy-up), then id.
    ORDER caches the author times and generations read (only for such ties)."""
    after_it = sorted((ts, commit_id) for commit_id, ts in made.items())
    last = len(after_it) - 1
    tied_ids = {
        commit_id
        for k, (ts, commit_id) in enumerate(after_it)
        if (k > 0 and after_it[k - 1][0] == ts) or (k < last and after_it[k + 1][0] == ts)
    }
    if not tied_ids:
        return after_it
    missing = [commit_id for commit_id in tied_ids if commit_id not in order]
    if missing:
        order.update(store.commit_order(missing))
    second = f.ts - f.ts % SECOND_MS

    def key(commit: tuple[int, str]) -> tuple[int, bool, int, str]:
        if commit[1] not in tied_ids:
            return (commit[0], False, 0, commit[1])
        authored, generation = order.get(commit[1], (commit[0], 0))
        return (commit[0], authored < second, generation, commit[1])

    return sorted(after_it, key=key)


def _refuted(f: _Failure, candidates: list[tuple[int, str]], k: int) -> bool:
    """Whether the next run of F's command after CANDIDATES[k] (time made, id) shows it did not fix F: that
    run (the same command in the same directory, normalised as for a retry, started after the commit's
    second, within 24 h of F) failed, the command did not pass since F, and no other commit touching F's
    files came between the two (the new failure may be that commit's doing). `git commit --no-verify -am
    'refactor'` holding the failing change, then the same test failing again: the commit is no fix."""
    made = candidates[k][0]
    stamps = f.runs_failed
    i = bisect_left(stamps, made + SECOND_MS)
    if i == len(stamps) or stamps[i] - f.ts > DAY_MS:
        return False
    rerun = stamps[i]
    if f.retry_ts is not None and f.retry_ts < rerun:
        return False  # it passed in between: this commit may be the edit that made it pass
    # CANDIDATES are in time order: another made in the same second, or the next one before the re-run.
    between = (k > 0 and candidates[k - 1][0] == made) or (
        k + 1 < len(candidates) and candidates[k + 1][0] < rerun
    )
    return not between


SECOND_MS = 1000  # a commit's times are whole seconds
# A command that may have made a commit: `git commit`, `git -C repo merge`, `git pull` (not `git status`).
_MAKES_A_COMMIT = re.compile(
    r"(?<![\w.-])git\s+(?:-\S+(?:\s+[^-\s;&|]\S*)?\s+)*(?:commit|merge|rebase|cherry-pick|revert|am|pull)(?![\w-])"
)

# How long after the passing re-run a commit may come and still record the edit that made it pass (fail,
# edit, pass, commit): later, it is other work (a flaky test passed by itself, the day went on).
AFTER_PASS_MS = 3_600_000

# The prefix of a key that stands for "the file a test tests" (no repository path has it).
SUBJECT = "\0tested:"
# Folders a test file sits in below the code it tests: services/api/tests/test_views.py tests a views.py
# under services/api; src/test/java/…/CacheTest.java a Cache.java under src.
_TEST_FOLDERS = frozenset(["test", "tests", "spec", "specs", "__tests__", "testing"])


def _a_test(path: str) -> bool:
    """Whether PATH is a test file: named as one (test_cache.py, cache.test.ts) or inside a test folder."""
    return bool(tested_names(path)) or any(part in _TEST_FOLDERS for part in path.split("/")[:-1])


def _scope(test_path: str) -> str:
    """Where the code a test file tests lies: the folders above its first test folder, else its own."""
    parts = test_path.split("/")[:-1]
    for i, part in enumerate(parts):
        if part in _TEST_FOLDERS:
            return "/".join(parts[:i])
    return "/".join(parts)


def _subject(test_path: str, name: str, paths: list[str]) -> str | None:
    """The key of the one file called NAME within TEST_PATH's scope among PATHS (every path a commit gave
    that name, in any case); None when there is none, or several (pkg_a/utils.py and pkg_b/utils.py: which
    one a failing tests/test_utils.py tests is not known)."""
    scope = _scope(test_path)
    inside = [p for p in paths if not scope or p.startswith(scope + "/")]
    # The file of exactly that name; else the one that differs only in case (button.test.tsx tests
    # Button.tsx); never one of several (Modal.js beside modal.js: the one of the test's case).
    exact = [p for p in inside if p.rsplit("/", 1)[-1] == name]
    found = exact if exact else inside
    return SUBJECT + found[0] if len(found) == 1 else None


# A test file's name and the name of the file it tests: test_cache.py, cache_test.go, cache.test.ts,
# cache.spec.js, cache_spec.rb, CacheTest.java, CacheTests.cs → cache.py, cache.go, cache.ts, ….
_TEST_NAME = re.compile(
    r"^(?:test_(?P<a>.+)|(?P<b>.+?)(?:_test|_spec|[._-](?:test|spec)))\.(?P<ext>[A-Za-z0-9]+)$"
    r"|^(?P<c>[A-Z][A-Za-z0-9]*?)Tests?\.(?P<ext2>java|kt|cs|scala|groovy|swift|php)$"
)


_SAME_LANGUAGE = {"js": ("js", "jsx"), "jsx": ("jsx", "js"), "ts": ("ts", "tsx"), "tsx": ("tsx", "ts")}


def tested_names(path: str) -> list[str]:
    """The name of the file a test file tests (tests/test_cache.py → ["cache.py"]); [] for any other file."""
    m = _TEST_NAME.match(path.rsplit("/", 1)[-1])
    if m is None:
        return []
    if m["c"]:
        return [f"{m['c']}.{m['ext2']}"]
    stem, ext = m["a"] or m["b"], m["ext"]
    if not stem:
        return []
    # A component's test is often written in the plain language: Button.test.ts tests Button.tsx.
    return [f"{stem}.{e}" for e in _SAME_LANGUAGE.get(ext, (ext,))]


def _parents(path: str) -> list[str]:
    """src/cache/lru.py → [src/cache, src]."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(len(parts), 0, -1)]


def _discussions(store: LinkStore, lower: int, failures: list[_Failure]) -> set[tuple[str, str, str]]:
    """Discussion links: the failure's own session first (the turn it ran in, or the first one after it that
    names what it was about), else a turn of any session that clearly discusses it (_clearly_discusses), the
    best full-text match of those. One full-text query per distinct set of significant words."""
    if not failures or not store.has_kind_between(DISCUSSION_KINDS, lower - DAY_MS):
        return set()
    words_of: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}  # a few hundred distinct commands
    wanted: list[_Failure] = []
    for f in failures:
        if f.command not in words_of:
            significant = tuple(significant_words(f.command))
            words_of[f.command] = (significant, tuple(subject_words(f.command, significant)))
        if words_of[f.command][1]:
            wanted.append(f)
    if not wanted:
        return set()
    sessions = store.command_sessions([f.id for f in wanted])
    prose: dict[str, _Prose] = {}
    out: set[tuple[str, str, str]] = set()
    found = _own_session(store, wanted, sessions, words_of, prose)
    out.update((f_id, turn_id, DISCUSSION) for f_id, turn_id in found.items())
    groups: dict[tuple[str, ...], list[_Failure]] = {}
    for f in wanted:
        if f.id not in found:
            groups.setdefault(words_of[f.command][0], []).append(f)
    for words, members in groups.items():
        lo = min(f.ts for f in members) - DAY_MS
        hi = max(f.ts for f in members) + DAY_MS
        hits = store.search_fts_kinds(_fts_all(list(words)), DISCUSSION_KINDS, lo, hi)
        if not hits:
            continue
        # Hits arrive best first; index them by time so each failure scans only its own ±24 h window.
        by_time = sorted((ts, rank, node_id) for rank, (node_id, ts) in enumerate(hits))
        stamps = [t for t, _, _ in by_time]
        for f in members:
            start = bisect_left(stamps, f.ts - DAY_MS)
            end = bisect_right(stamps, f.ts + DAY_MS)
            window = sorted(by_time[start:end], key=lambda hit: hit[1])
            _read(store, [node_id for _, _, node_id in window], prose)
            for _, _, node_id in window:
                if node_id in prose and _clearly_discusses(prose[node_id], f.command, *words_of[f.command]):
                    out.add((f.id, node_id, DISCUSSION))
                    break
    return out


# A failure's own turn starts before it ran (the question, then the call); the agent hook records a call at
# its start (when it ended less its duration), so only a few seconds of skew are allowed for.
RAN_SKEW_MS = 5_000
_LISTING = "\n\nCommands run:\n"  # nexusmem.sources.conversation.build: what a turn ran, after its text
# Words as the full-text index reads them (unicode61: letters and digits; `_`, `-`, `.` separate).
_WORD = re.compile(r"[^\W_]+")
# What runs a program named after it: `python -m pytest`, `npx eslint`, `uv run mypy`; past what only
# launches it (sources.shell.launchers: `sudo -u deploy`, `env X=1`, `nice -n 10`).
_RUNNERS = frozenset({"npx", "uvx", "bunx", "pnpx"})
_RUN_SUBCOMMAND = frozenset({"uv", "poetry", "pdm", "hatch", "pipenv", "pipx"})
_SEGMENT_END = re.compile(r"&&|\|\||[;|&\n]")


@dataclass(slots=True)
class _Prose:
    """A turn's or a summary's own words (not the commands it lists): as a sequence and as a set."""

    words: list[str]
    known: frozenset[str]
    body: str


def _tokens(text: str) -> list[str]:
    return _WORD.findall(_PLACEHOLDER.sub(" ", text).lower())


def _program(command: str) -> tuple[str | None, list[str]]:
    """(the program COMMAND runs when it names one on PATH: `pytest` of `python -m pytest x`, `terraform`;
    None for `./run.sh`), and the words of its first command from the program on."""
    words = _SEGMENT_END.split(_PLACEHOLDER.sub(" ", command), 1)[0].split()
    words = words[command_start(words) :]
    if not words or not re.fullmatch(r"[A-Za-z][\w-]*", words[0]):
        return None, words
    name, rest = words[0].lower(), words[1:]
    if name in ("python", "python3") and len(rest) > 1 and rest[0] == "-m":
        name = rest[1].lower()
    elif name in _RUNNERS and rest:
        name = rest[0].lower()
    elif name in _RUN_SUBCOMMAND and len(rest) > 1 and rest[0] == "run":
        name = rest[1].lower()
    return name, words


def subject_words(command: str, significant: Sequence[str] | None = None) -> list[str]:
    """The significant words of COMMAND beyond the program it runs (`pytest tests/test_cache.py` → tests,
    test_cache; `make docs` → docs): what a turn must talk about to discuss its failure. When the program is
    all there is (`pytest -x`, `mypy`), the program."""
    words = list(significant_words(command) if significant is None else significant)
    program, _ = _program(command)
    beyond = [w for w in words if w != program]
    return beyond or words


# Words of a test file's name that say nothing of what it tests (`tests/test_cache.py` is about the cache).
_TEST_WORDS = frozenset({"test", "tests", "spec", "specs"})


def _named_by(subject: Sequence[str]) -> frozenset[str]:
    """The words a turn of the failure's own session may name to be about it: those of SUBJECT (a part of
    `test_cache` is enough: "the cache"), less test and tests when it has others."""
    words = frozenset(t for w in subject for t in _tokens(w))
    return (words - _TEST_WORDS) or words


def _has(known: frozenset[str], word: str) -> bool:
    parts = _tokens(word)
    return bool(parts) and all(p in known for p in parts)


def _clearly_discusses(
    prose: _Prose, command: str, significant: Sequence[str], subject: Sequence[str]
) -> bool:
    """Whether a turn of another session (or one of its own session that _own_session passed over) talks
    about COMMAND: its own words, not the commands it lists, name every significant word; and a command
    whose subject is one word (`make docs`, `npm whoami`, `terraform plan`) is named as typed, from its
    program to that word ("`make docs` fails"): "the routing docs" is not about `make docs`."""
    if not all(_has(prose.known, w) for w in significant):
        return False
    if len(subject) > 1:
        return True
    program, words = _program(command)
    if program is None or subject[0] == program:
        return False  # `pytest -x`: only its own session can say what it was about
    phrase = _tokens(" ".join(words))
    last = _tokens(subject[0])
    for end in range(len(last), len(phrase) + 1):  # from the program through the subject word
        if phrase[end - len(last) : end] == last:
            phrase = phrase[:end]
            break
    n = len(phrase)
    return any(prose.words[i : i + n] == phrase for i in range(len(prose.words) - n + 1))


def _read(store: LinkStore, ids: Sequence[str], prose: dict[str, _Prose]) -> None:
    """Fill PROSE with the own words of the nodes IDS not read yet."""
    missing = [i for i in ids if i not in prose]
    if missing:
        for node_id, body in store.node_bodies(missing).items():
            prose[node_id] = _prose_of(body)


def _prose_of(body: str) -> _Prose:
    cut = body.rfind(_LISTING)
    words = _tokens(body if cut < 0 else body[:cut])
    return _Prose(words, frozenset(words), body)


def _own_session(
    store: LinkStore,
    failures: list[_Failure],
    sessions: dict[str, str],
    words_of: dict[str, tuple[tuple[str, ...], tuple[str, ...]]],
    prose: dict[str, _Prose],
) -> dict[str, str]:
    """{failure id: the turn (or summary) of its own session that reacted to it}: the turn it ran in (the
    one listing it under "Commands run", else the one under way when it ran) or the first after it, within
    24 h, whose own words name a word of the command's subject (_named_by)."""
    mine = [f for f in failures if f.id in sessions]
    if not mine:
        return {}
    lo = min(f.ts for f in mine) - DAY_MS
    hi = max(f.ts for f in mine) + DAY_MS
    turns: dict[str, list[tuple[str, int, str]]] = {}
    for node_id, ts, session, body in store.session_discussions(
        sorted({sessions[f.id] for f in mine}), DISCUSSION_KINDS, lo, hi
    ):
        turns.setdefault(session, []).append((node_id, ts, body))
    stamps = {session: [ts for _, ts, _ in rows] for session, rows in turns.items()}
    found: dict[str, str] = {}
    for f in mine:
        own = turns.get(sessions[f.id])
        if not own:
            continue
        named = _named_by(words_of[f.command][1])
        for node_id, ts, body in own[_ran_in(own, stamps[sessions[f.id]], f) :]:
            if ts > f.ts + DAY_MS:
                break
            if node_id not in prose:
                prose[node_id] = _prose_of(body)
            if not named.isdisjoint(prose[node_id].known):
                found[f.id] = node_id
                break
    return found


def _ran_in(turns: list[tuple[str, int, str]], stamps: list[int], f: _Failure) -> int:
    """The index of the first piece of the turn F ran in among a session's TURNS (in time order, begun at
    STAMPS): the last one begun by then, or the one before it when that one began a few seconds after F's
    recorded start (RAN_SKEW_MS) and does not list F's command; 0 when none had begun."""
    begun = bisect_right(stamps, f.ts + RAN_SKEW_MS)
    if begun == 0:
        return 0
    ran = bisect_left(stamps, stamps[begun - 1])  # its first piece: a long answer's pieces share its time
    if stamps[ran] > f.ts and ran > 0:
        listed = "\n$ " + " ".join(f.command.strip().split("\n", 1)[0].split())[:100]
        if not any(listed in body for _, _, body in turns[ran:begun]):
            ran = bisect_left(stamps, stamps[ran - 1])
    return ran
